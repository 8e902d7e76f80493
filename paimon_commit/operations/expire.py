"""Snapshot and changelog expiration: ExpireConfig and ExpireSnapshots.

Plan, then act. The plan decides the range `[begin, end)` (Paimon 2.x rules: retain min/max,
time retained measured on the *successor* snapshot, consumers, per-run limit) and lists every
file to delete; what is still needed is decided by `reachability`, and the deletion runs in
`deletion`'s crash-safe order: data and changelog files, empty directories, manifests and
lists, snapshot files, and EARLIEST last, so a rerun after a crash anywhere finishes the job.

Protection model (stricter than the reference):
- a data file DELETEd in delta k (begin < k <= end) is kept if any later ADD of the same file
  exists in the deltas up to the latest snapshot (a re-add: rollback-to-as-latest, manual
  re-commit), or if it is live in a tag taken before `end`;
- metadata is kept if any retained snapshot, tag or long-lived changelog uses it;
- anything that cannot be read makes the plan smaller, never larger (see reachability).

Decoupled changelog lifecycle (Paimon's `changelog.num-retained.*`, `changelog.time-retained`
larger than the snapshot values): an expiring snapshot is first written to
`changelog/changelog-<id>`, and what its changelog readers need is kept: its changelog list
and files (and with `changelog-producer` = none its lists and the APPEND files its deltas
delete). Changelog expiration then removes those in Paimon's order and moves
`changelog/EARLIEST`.
"""
from __future__ import annotations

import logging
import os
import time
from concurrent.futures import Executor
from dataclasses import dataclass, field, replace
from typing import Any, Dict, List, Mapping, Optional, Set, Tuple

from ..io.deletion import Deleter
from ..errors import CorruptMetadataError, OptionError
from ..format import paths as P
from ..format.snapshot import Snapshot, Tag
from ..options import INT_MAX
from ..progress import DELETING, READING, emit
from ..reachability import APPEND_SOURCE, Reachability, Root, Unreadable
from ..snapshots import ChangelogManager, SnapshotManager
from ..store import FileStore
from ..tags import ConsumerManager, TagManager

log = logging.getLogger(__name__)

__all__ = ["ExpireConfig", "ExpireSnapshots", "ExpirePlan", "ExpireResult"]

_CHANGELOG_OPTIONS = (("changelog_retain_min", "changelog.num-retained.min"),
                      ("changelog_retain_max", "changelog.num-retained.max"),
                      ("changelog_time_retained_ms", "changelog.time-retained"),
                      ("changelog_producer", "changelog-producer"))
KINDS = ("data", "changelog", "manifest", "manifest-list", "index", "statistics", "snapshot",
         "long-lived-changelog", "directory")


@dataclass(frozen=True)
class ExpireConfig:
    """Retention of snapshots (and of changelogs, which default to the snapshot values).

    A changelog retained longer than snapshots (any changelog value above its snapshot
    value) makes the lifecycle *decoupled*, as in Paimon."""
    retain_min: int = 10
    retain_max: int = INT_MAX
    time_retained_ms: int = 3_600_000
    max_deletes: int = 10
    older_than_ms: Optional[int] = None   # explicit cutoff; default now - time_retained
    clean_empty_directories: bool = False
    thread_num: Optional[int] = None
    changelog_retain_min: Optional[int] = None
    changelog_retain_max: Optional[int] = None
    changelog_time_retained_ms: Optional[int] = None
    changelog_producer: Optional[str] = None   # None: the table's `changelog-producer`

    def __post_init__(self) -> None:
        def bad(name: str, value: Any, rule: str) -> None:
            raise OptionError(f"option '{name}' = {value!r}: {rule}")
        for name, value in (("snapshot.num-retained.min", self.retain_min),
                            ("snapshot.num-retained.max", self.retain_max),
                            ("snapshot.time-retained", self.time_retained_ms),
                            ("snapshot.expire.limit", self.max_deletes),
                            ("changelog.num-retained.min", self.cl_min),
                            ("changelog.num-retained.max", self.cl_max),
                            ("changelog.time-retained", self.cl_time_ms)):
            if isinstance(value, bool) or not isinstance(value, int):
                bad(name, value, "must be an integer")
        for prefix, lo, hi in (("snapshot", self.retain_min, self.retain_max),
                               ("changelog", self.cl_min, self.cl_max)):
            if lo < 1:
                bad(f"{prefix}.num-retained.min", lo, "must be >= 1")
            if hi < lo:
                raise OptionError(f"option '{prefix}.num-retained.max' = {hi} must be >= "
                                  f"'{prefix}.num-retained.min' = {lo}")
        if self.time_retained_ms < 0:
            bad("snapshot.time-retained", self.time_retained_ms, "must be >= 0")
        if self.cl_time_ms < 0:
            bad("changelog.time-retained", self.cl_time_ms, "must be >= 0")
        if self.max_deletes < 0:
            bad("snapshot.expire.limit", self.max_deletes, "must be >= 0")
        if self.thread_num is not None and self.thread_num < 1:
            bad("file-operation.thread-num", self.thread_num, "must be >= 1")

    @property
    def cl_min(self) -> int:
        """changelog.num-retained.min, falling back to the snapshot value (Paimon)."""
        return self.retain_min if self.changelog_retain_min is None else self.changelog_retain_min

    @property
    def cl_max(self) -> int:
        """changelog.num-retained.max, falling back to the snapshot value (Paimon)."""
        return self.retain_max if self.changelog_retain_max is None else self.changelog_retain_max

    @property
    def cl_time_ms(self) -> int:
        """changelog.time-retained, falling back to the snapshot value (Paimon)."""
        return self.time_retained_ms if self.changelog_time_retained_ms is None \
            else self.changelog_time_retained_ms

    @property
    def changelog_decoupled(self) -> bool:
        """Whether changelogs outlive snapshots (then expiring snapshots become long-lived
        changelogs, expired separately)."""
        return self.cl_max > self.retain_max or self.cl_min > self.retain_min \
            or self.cl_time_ms > self.time_retained_ms

    @classmethod
    def from_options(cls, options: Mapping[str, Any], **overrides: Any) -> "ExpireConfig":
        """`options` are parsed table options (FileStore.options); overrides that are None
        fall back to them."""
        values = dict(
            retain_min=options["snapshot.num-retained.min"],
            retain_max=options["snapshot.num-retained.max"],
            time_retained_ms=options["snapshot.time-retained"],
            max_deletes=options["snapshot.expire.limit"],
            clean_empty_directories=options["snapshot.clean-empty-directories"],
            thread_num=options["file-operation.thread-num"],
            changelog_retain_min=options.get("changelog.num-retained.min"),
            changelog_retain_max=options.get("changelog.num-retained.max"),
            changelog_time_retained_ms=options.get("changelog.time-retained"),
            changelog_producer=options.get("changelog-producer"),
        )
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)


@dataclass
class ExpirePlan:
    """What one run would delete: kind -> path -> size (0 when unknown), kinds in deletion
    order. For changelog expiration (`changelogs`) the ids are long-lived changelog ids."""
    earliest: Optional[int]
    latest: Optional[int]
    begin: Optional[int] = None
    end: Optional[int] = None
    expiring: List[int] = field(default_factory=list)
    changelogs: bool = False
    files: Dict[str, Dict[str, int]] = field(default_factory=lambda: {k: {} for k in KINDS})
    bucket_dirs: Set[str] = field(default_factory=set)
    tag_names: List[str] = field(default_factory=list)
    skipped: List[str] = field(default_factory=list)
    deleted: Dict[str, List[str]] = field(default_factory=dict)   # filled by execution

    def skip(self, reason: str) -> None:
        """Record (and log) something the run leaves for later, with the reason."""
        log.warning("expire: %s", reason)
        self.skipped.append(reason)

    def add(self, kind: str, files: Dict[str, int]) -> None:
        """Plan to delete `files` (path -> size) of one kind."""
        for path, size in files.items():
            self.files[kind].setdefault(path, size or 0)
            if kind in ("data", "changelog"):
                self.bucket_dirs.add(os.path.dirname(path))

    def add_metadata(self, files: Dict[str, Tuple[str, int]]) -> None:
        """Plan to delete metadata files (path -> (kind, size))."""
        for path, (kind, size) in files.items():
            self.files[kind].setdefault(path, size or 0)

    @property
    def metadata_files(self) -> Dict[str, int]:
        """The snapshot (or long-lived changelog) files, ascending."""
        return self.files["long-lived-changelog" if self.changelogs else "snapshot"]


@dataclass
class ExpireResult:
    """What a run expired and deleted (or would, with dry_run)."""
    expired_snapshots: int
    expired_ids: List[int]
    deleted_files: int
    deleted_bytes: int
    by_kind: Dict[str, Dict[str, int]]
    earliest: Optional[int]
    latest: Optional[int]
    dry_run: bool
    skipped: List[str]
    deleted_paths: List[str]
    seconds: Dict[str, float]
    expired_changelogs: List[int] = field(default_factory=list)

    def to_dict(self) -> Dict[str, Any]:
        """The result as a JSON-ready dict (what the CLI prints with --json)."""
        return {"expired_snapshots": self.expired_snapshots, "expired_ids": self.expired_ids,
                "expired_changelogs": self.expired_changelogs,
                "deleted_files": self.deleted_files, "deleted_bytes": self.deleted_bytes,
                "by_kind": self.by_kind, "earliest": self.earliest, "latest": self.latest,
                "dry_run": self.dry_run, "skipped": self.skipped, "seconds": self.seconds}


class ExpireSnapshots:
    """Expires snapshots, then (when the changelog lifecycle is decoupled) long-lived
    changelogs, of one table. Reusable across runs: what it read is carried forward."""

    def __init__(self, store: FileStore, config: Optional[ExpireConfig] = None,
                 executor: Optional[Executor] = None, clock=time.time, progress=None):
        self.store = store
        self.progress = progress   # optional paimon_commit.progress callback
        # The changelog lifecycle is the table's (as Paimon builds ExpireConfig from the
        # table's options): a config that does not set it takes it from the table, so that
        # expiring a decoupled table never drops what its changelog readers still need.
        config = config or ExpireConfig.from_options(store.options)
        table = {k: store.options.get(o) for k, o in _CHANGELOG_OPTIONS}
        table["changelog_producer"] = table["changelog_producer"] or "none"
        self.config = replace(config, **{k: v for k, v in table.items()
                                         if v is not None and getattr(config, k) is None})
        self.executor = executor
        self.clock = clock
        self.tags = TagManager(store.io, store.root)
        self.consumers = ConsumerManager(store.io, store.root)
        self.changelogs = ChangelogManager(store.io, store.root)
        # Kept from one run to the next (TableCommit reuses its expirer after every commit),
        # so that a run decodes only what is new since the last one. Snapshot files are
        # re-read every run (rollback can re-create an id) and only their parse is reused.
        self.reach = Reachability(store)
        # (dir, id) -> (bytes, parsed, version when read): a file whose listed version
        # (FileIO.file_versions: inode + mtime locally, the ETag on object stores) is
        # unchanged is not read again; one listing replaces a GET per retained snapshot.
        self._raw_memo: Dict[Tuple[str, int], Tuple[bytes, Snapshot, Optional[str]]] = {}
        self._versions: Dict[Tuple[str, int], str] = {}

    # --- deciding the range --------------------------------------------------------------
    def plan(self) -> ExpirePlan:
        """The snapshot expiration this run would do (nothing is deleted)."""
        self._memo: Dict[Tuple[str, int], Optional[Snapshot]] = {}
        self._versions = {}
        self.reach.start()
        try:
            return self._plan()
        finally:
            if not self.config.changelog_decoupled:   # else after plan_changelogs()
                self._prune()

    def _prune(self) -> None:
        self.reach.prune()
        for key in [k for k in self._raw_memo if k not in self._memo]:
            del self._raw_memo[key]

    def _plan(self) -> ExpirePlan:
        sm = self.store.snapshots
        # Hints first (checked against their neighbours): after every commit, a run that
        # has nothing to expire must not list a snapshot directory that grows with history.
        latest = sm.latest_snapshot_id()
        earliest = sm.earliest_snapshot_id()
        if latest is None or earliest is None:
            return ExpirePlan(None, None)
        now_ms = int(self.clock() * 1000)
        consumer_min = self.consumers.min_next_snapshot()
        end = self._end(earliest, latest, now_ms, consumer_min)
        if end <= earliest:
            return ExpirePlan(earliest, latest)
        ids = self._list_with_versions(sm)
        if not ids:
            return ExpirePlan(None, None)
        if ids[0] != earliest or ids[-1] > latest:
            # The listing decides (a gap below the earliest hint, a newer snapshot).
            earliest, latest = ids[0], max(latest, ids[-1])
            end = self._end(earliest, latest, now_ms, consumer_min)
        plan = ExpirePlan(earliest, latest)
        if end <= earliest:
            return plan
        self._plan_until(plan, ids, end)
        return plan

    def _end(self, earliest: int, latest: int, now_ms: int, consumer_min: Optional[int]) -> int:
        """The first snapshot to keep: from retain min/max, consumers, the limit, and time."""
        cfg = self.config
        older_than = cfg.older_than_ms if cfg.older_than_ms is not None \
            else now_ms - cfg.time_retained_ms
        lo = max(latest - cfg.retain_max + 1, earliest)
        hi = latest - cfg.retain_min + 1
        if consumer_min is not None:
            hi = min(hi, consumer_min)
        hi = min(hi, earliest + cfg.max_deletes)
        # time-retained 0 (and no older-than) means no time condition at all; with the bare
        # rule a successor committed in the current millisecond, or stamped ahead by a
        # writer's skewed clock, would still hold its predecessor back.
        time_limited = cfg.older_than_ms is not None or cfg.time_retained_ms > 0
        for sid in range(lo, hi):
            try:
                successor = self._read(self.store.snapshots, sid + 1)
            except CorruptMetadataError as e:
                log.warning("expire: cannot read %s; keeping snapshot %d", e.path, sid)
                return sid
            # A snapshot stays readable for time-retained after it stopped being the latest,
            # i.e. after its successor was committed (Paimon 2.x rule).
            if time_limited and successor is not None and successor.time_millis >= older_than:
                return sid
        return hi

    def _read(self, manager: SnapshotManager, sid: int) -> Optional[Snapshot]:
        """A snapshot or changelog (None if absent), read at most once per run."""
        key = (manager.snapshot_dir, sid)
        if key in self._memo:
            return self._memo[key]
        path = manager.snapshot_path(sid)
        version = self._versions.get(key)
        known = self._raw_memo.get(key)
        if version is not None and known is not None and known[2] == version:
            self._memo[key] = known[1]
            return known[1]
        try:
            data = self.store.io.read_bytes(path)
        except FileNotFoundError:
            self._memo[key] = None
            return None
        if known is not None and known[0] == data:
            snap = known[1]
        else:
            snap = SnapshotManager.parse(data, path, sid)
        self._raw_memo[key] = (data, snap, version)
        self._memo[key] = snap
        return snap

    def _list_with_versions(self, manager: SnapshotManager) -> List[int]:
        """The snapshot ids in a directory, noting each file's version where the storage
        lists one (then unchanged files are not read again)."""
        versions = self.store.io.file_versions(manager.snapshot_dir)
        if versions is None:
            return manager.list_snapshot_ids()
        ids = []
        for name, version in versions.items():
            sid = P.parse_snapshot_id(name)
            if sid is not None:
                ids.append(sid)
                self._versions[(manager.snapshot_dir, sid)] = version
        return sorted(ids)

    def _raw(self, manager: SnapshotManager, sid: int) -> bytes:
        return self._raw_memo[(manager.snapshot_dir, sid)][0]

    # --- listing what to delete ----------------------------------------------------------
    def _plan_until(self, plan: ExpirePlan, ids: List[int], end: int) -> None:
        sm = self.store.snapshots
        if end not in ids:
            later = [i for i in ids if i > end]
            if not later:
                return
            # Nothing exists in [end, later[0]): keeping later[0] expires exactly the same set,
            # and does not get stuck on a missing snapshot (the reference's #4743).
            end = later[0]
        expiring_ids = [i for i in ids if i < end]
        if not expiring_ids:
            return
        plan.begin, plan.end = expiring_ids[0], end
        snaps: Dict[int, Snapshot] = {}
        sizes: Dict[int, int] = {}
        for sid in [i for i in ids if i >= plan.begin]:
            try:
                snap = self._read(sm, sid)
                if snap is None:
                    continue  # expired concurrently
                snaps[sid] = snap
                sizes[sid] = len(self._raw(sm, sid))
            except CorruptMetadataError:
                if sid >= end:
                    raise  # the table is damaged: fail loudly, before deleting anything
                plan.skip(f"expiring snapshot {sid} is unreadable; its files are left for "
                          f"orphan cleanup")
                sizes[sid] = 0
        if end not in snaps:
            plan.skip(f"snapshot {end} vanished while planning; nothing is deleted")
            plan.begin = plan.end = None
            return
        plan.expiring = [i for i in expiring_ids if i in sizes]
        tags = self.tags.tags()  # an unreadable tag raises here, before any deletion
        plan.tag_names = sorted(t.name for t in tags)
        cfg = self.config
        keep_append = cfg.changelog_decoupled and cfg.changelog_producer == "none"
        lineage = [(i, snaps.get(i)) for i in range(plan.begin + 1, max(snaps) + 1)]
        plan.add("data", self.reach.deleted_files(
            lineage, end, lambda: self._tag_data(tags, end), plan.skip,
            # The deltas are the changelog: APPEND files wait for changelog expiration.
            (lambda e: e.file.file_source in (None, APPEND_SOURCE)) if keep_append
            else (lambda e: False)))
        roots = [Root(sm.snapshot_path(i), s, names_only=() if i == end else
                      (s.delta_manifest_list, s.changelog_manifest_list))
                 for i, s in snaps.items() if i >= end]
        try:
            keep = self.reach.kept_metadata(roots + self._tag_roots(tags)
                                            + self._changelog_roots())
        except Unreadable as e:
            plan.skip(f"{e}; no manifest is deleted")
            keep = None
        for sid in plan.expiring:
            s = snaps.get(sid)
            if s is None or keep is None:
                continue
            if not cfg.changelog_decoupled:
                lists = s.manifest_lists()
                if s.changelog_manifest_list and s.changelog_manifest_list not in keep:
                    plan.add("changelog", self.reach.added_files(s.changelog_manifest_list,
                                                                 plan.skip))
            elif cfg.changelog_producer != "none":
                lists = (s.base_manifest_list, s.delta_manifest_list)
            else:
                lists = ()
            plan.add_metadata(self.reach.unused_metadata(s, lists, keep, plan.skip))
        for sid in plan.expiring:
            plan.add("snapshot", {sm.snapshot_path(sid): sizes[sid]})

    def _tag_data(self, tags: List[Tag], end: int) -> Set[str]:
        out: Set[str] = set()
        for t in tags:
            if t.id < end:
                out |= self.reach.live_data(t.snapshot, f"tag {t.name}")
        return out

    def _tag_roots(self, tags: List[Tag]) -> List[Root]:
        return [Root(self.tags.tag_path(t.name), t.snapshot, "tag") for t in tags]

    def _changelog_roots(self) -> List[Root]:
        """Every long-lived changelog (an unreadable one raises: nothing is deleted)."""
        cm = self.changelogs
        if not self.config.changelog_decoupled and not self.store.io.exists(cm.snapshot_dir):
            return []   # (not listed after every commit where there can be none)
        read = ((cid, self._read(cm, cid)) for cid in cm.list_snapshot_ids())
        return [Root(cm.snapshot_path(cid), c, "changelog") for cid, c in read if c]

    # --- changelog expiration (Paimon's ExpireChangelogImpl) -----------------------------
    def plan_changelogs(self) -> ExpirePlan:
        """The changelog expiration this run would do (nothing is deleted). Runs after
        `plan()`: what both read stays cached for the next run."""
        self._memo = {}
        try:
            return self._plan_changelogs()
        finally:
            self._prune()

    def _plan_changelogs(self) -> ExpirePlan:
        cfg, sm, cm = self.config, self.store.snapshots, self.changelogs
        latest, earliest_snap = sm.latest_snapshot_id(), sm.earliest_snapshot_id()
        ids = cm.list_snapshot_ids()
        plan = ExpirePlan(ids[0] if ids else None, ids[-1] if ids else None, changelogs=True)
        if latest is None or earliest_snap is None or not ids:
            return plan
        earliest, latest_cl = ids[0], ids[-1]
        lo = max(latest - cfg.cl_max + 1, earliest)
        hi = min(latest - cfg.cl_min + 1, earliest + cfg.max_deletes, latest_cl)
        consumer_min = self.consumers.min_next_snapshot()
        if consumer_min is not None:
            hi = min(hi, consumer_min)
        if hi <= earliest:
            return plan
        end = hi
        older_than = int(self.clock() * 1000) - cfg.cl_time_ms
        for cid in range(lo, hi + 1):
            # Paimon measures a changelog's age on its own commit time.
            try:
                c = self._read(cm, cid)
            except CorruptMetadataError as e:
                log.warning("expire: cannot read %s; keeping changelog %d", e.path, cid)
                end = cid
                break
            if cfg.cl_time_ms > 0 and c is not None and c.time_millis >= older_than:
                end = cid
                break
        end = min([i for i in ids if i >= end] or [end])   # a missing end: the next one
        expiring = [i for i in ids if i < end]
        if not expiring or end not in ids:
            return plan
        changelogs = {i: self._read(cm, i) for i in ids}   # unreadable raises: no deletion
        tags = self.tags.tags()
        plan.tag_names = sorted(t.name for t in tags)
        plan.begin, plan.end, plan.expiring = expiring[0], end, expiring
        roots = [Root(cm.snapshot_path(i), c, "changelog") for i, c in changelogs.items()
                 if i >= end and c is not None]
        for sid in sm.list_snapshot_ids():
            s = self._read(sm, sid)
            if s is not None:
                roots.append(Root(sm.snapshot_path(sid), s))
        try:
            keep = self.reach.kept_metadata(roots + self._tag_roots(tags))
        except Unreadable as e:
            plan.skip(f"{e}; no changelog is expired")
            plan.begin = plan.end = None
            plan.expiring = []
            return plan
        # Without a changelog list (producer none) a changelog's delta is its changelog:
        # the files its delta deletes were kept for it, and go now unless a tag or a later
        # re-add needs them.
        if cfg.changelog_producer == "none" and any(
                c is not None and not c.changelog_manifest_list
                for c in (changelogs[i] for i in expiring)):
            # One lineage, changelogs then snapshots; a hole hides what it may re-add.
            lineage = [(i, changelogs.get(i) if i <= latest_cl else self._read(sm, i))
                       for i in range(earliest, latest + 1)]
            plan.add("data", self.reach.deleted_files(
                lineage, end - 1, lambda: self._tag_data(tags, end), plan.skip))
        for cid in expiring:
            c = changelogs[cid]
            if c is None:
                continue
            if c.changelog_manifest_list:
                if c.changelog_manifest_list not in keep:
                    plan.add("changelog", self.reach.added_files(c.changelog_manifest_list,
                                                                 plan.skip))
                lists: Tuple[str, ...] = (c.changelog_manifest_list,)
            else:
                lists = (c.delta_manifest_list, c.base_manifest_list)
            # Index and statistics files belong to the snapshot: its expiration removed them.
            plan.add_metadata(self.reach.unused_metadata(c, lists, keep, plan.skip,
                                                         index_and_statistics=False))
            plan.add("long-lived-changelog", {cm.snapshot_path(cid): 0})
        return plan

    # --- acting --------------------------------------------------------------------------
    def expire(self, dry_run: bool = False) -> ExpireResult:
        """Expire snapshots and then, when the lifecycle is decoupled, changelogs. Returns
        what was expired and deleted (with dry_run: what would be, deleting nothing)."""
        t0 = time.perf_counter()
        self.store.io.forget_resolved_dirs()
        emit(self.progress, READING, 0, None, "snapshots")
        plans = [self.plan()]
        n = len(plans[0].expiring)
        emit(self.progress, READING, n, n, "snapshots")
        t1 = time.perf_counter()
        if not dry_run:
            self._execute(plans[0])
        if self.config.changelog_decoupled:
            plans.append(self.plan_changelogs())
            if not dry_run:
                self._execute(plans[1])
        return self._result(plans, dry_run, {"plan": t1 - t0,
                                             "delete": time.perf_counter() - t1})

    def _execute(self, plan: ExpirePlan) -> None:
        plan.deleted = {}
        if plan.end is None:
            return
        # The plan is only as good as the tag listing it saw. List again right before the
        # first delete: a tag created meanwhile, or a listing that came back short (object
        # stores can list stale), shows up as a difference, and nothing is deleted.
        now = sorted(self.tags.tag_names())
        if now != plan.tag_names:
            changed = sorted(set(now) ^ set(plan.tag_names))
            plan.skip(f"the tags changed while planning ({', '.join(changed)}); nothing is "
                      f"deleted, the next run plans again")
            return
        manager = self.changelogs if plan.changelogs else self.store.snapshots
        keep_as_changelog = self.config.changelog_decoupled and not plan.changelogs
        earliest = plan.end
        total = len({p for v in plan.files.values() for p in v} | set(plan.metadata_files))

        def deleting() -> None:
            emit(self.progress, DELETING, sum(len(v) for v in d.deleted.values()), total)
        with Deleter(self.store.io, self.executor, self.config.thread_num) as d:
            plan.deleted = d.deleted
            if not all([d.files(k, list(plan.files[k]), must_finish=True)
                        for k in ("data", "changelog")]):
                # The manifests and snapshot files are the only record of these files: keep
                # them, so that the next run (or a retry) deletes what failed now.
                plan.skip(f"{len(d.left)} data file(s) could not be deleted (e.g. "
                          f"{d.left[0]}); manifests and snapshot files are kept for the next "
                          f"run")
                return
            if self.config.clean_empty_directories:
                d.dirs(self.store.root, plan.bucket_dirs)
            deleting()
            for kind in ("manifest", "manifest-list", "index", "statistics"):
                d.files(kind, list(plan.files[kind]))
            deleting()
            kind = "long-lived-changelog" if plan.changelogs else "snapshot"
            for sid, path in zip(plan.expiring, plan.metadata_files):
                # Ascending: a crash or a failure leaves a contiguous suffix.
                if keep_as_changelog:
                    if (manager.snapshot_dir, sid) not in self._raw_memo:
                        plan.skip(f"snapshot {sid} is unreadable and cannot be kept as a "
                                  f"changelog; EARLIEST stays at {sid}")
                        earliest = sid
                        break
                    self.changelogs.commit_changelog(sid, self._raw(manager, sid))
                if d.in_order(kind, [path]) == 0:
                    plan.skip(f"{path} could not be deleted; EARLIEST stays at {sid}")
                    earliest = sid
                    break
            deleting()
        manager.commit_earliest_hint(earliest)

    def _result(self, plans: List[ExpirePlan], dry_run: bool,
                seconds: Dict[str, float]) -> ExpireResult:
        sizes: Dict[str, int] = {p: n for plan in plans for f in plan.files.values()
                                 for p, n in f.items()}
        deleted: Dict[str, List[str]] = {k: [] for k in KINDS}
        for plan in plans:
            for kind, paths in (plan.files if dry_run else plan.deleted).items():
                deleted[kind].extend(paths)
        by_kind = {k: {"files": len(v), "bytes": sum(sizes.get(p, 0) for p in v)}
                   for k, v in deleted.items() if v}
        files = [k for k in KINDS if k != "directory"]
        expired = [self._expired(plan, deleted, dry_run) for plan in plans] + [[]]
        earliest = plans[0].earliest
        if expired[0] and not dry_run:
            earliest = self.store.snapshots.earliest_snapshot_id()
        return ExpireResult(len(expired[0]), expired[0],
                            sum(by_kind.get(k, {}).get("files", 0) for k in files),
                            sum(by_kind.get(k, {}).get("bytes", 0) for k in files), by_kind,
                            earliest, plans[0].latest, dry_run,
                            [s for p in plans for s in p.skipped],
                            [p for k in KINDS for p in deleted[k]], seconds, expired[1])

    @staticmethod
    def _expired(plan: ExpirePlan, deleted: Dict[str, List[str]], dry_run: bool) -> List[int]:
        if dry_run:
            return list(plan.expiring)
        gone = set(deleted["long-lived-changelog" if plan.changelogs else "snapshot"])
        return [i for i, p in zip(plan.expiring, plan.metadata_files) if p in gone]
