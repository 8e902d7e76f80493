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

Decoupled changelog lifecycle (changelogs retained longer than snapshots): an expiring
snapshot is first written to `changelog/changelog-<id>` and what its changelog readers need is
kept; `expire_changelog` plans their expiration, executed here like a snapshot plan.

The config is in `expire_config`, the plan and result records in `expire_plan`.
"""
from __future__ import annotations

import logging
import time
from concurrent.futures import Executor
from typing import Dict, List, Optional, Set, Tuple

from ..io.deletion import Deleter
from ..errors import CorruptMetadataError
from ..format import paths as P
from ..format.snapshot import Snapshot, Tag
from ..progress import DELETING, READING, emit
from ..reachability import APPEND_SOURCE, Reachability, Root, Unreadable
from ..snapshots import ChangelogManager, SnapshotManager
from ..store import FileStore
from ..tags import ConsumerManager, tag_manager
from .expire_changelog import ChangelogExpiration
from .expire_config import ExpireConfig
from .expire_plan import KINDS, ExpirePlan, ExpireResult

log = logging.getLogger(__name__)

__all__ = ["ExpireConfig", "ExpireSnapshots", "ExpirePlan", "ExpireResult"]


class ExpireSnapshots(ChangelogExpiration):
    """Expires snapshots, then (when the changelog lifecycle is decoupled) long-lived
    changelogs, of one table. Reusable across runs: what it read is carried forward."""

    def __init__(self, store: FileStore, config: Optional[ExpireConfig] = None,
                 executor: Optional[Executor] = None, clock=time.time, progress=None):
        store = getattr(store, "store", store)   # a Table is accepted for its FileStore
        self.store = store
        self.progress = progress   # optional paimon_commit.progress callback
        # The changelog lifecycle is the table's (as Paimon builds ExpireConfig from the
        # table's options): a config that does not set it takes it from the table, so that
        # expiring a decoupled table never drops what its changelog readers still need.
        self.config = (config or ExpireConfig.from_options(store.options)) \
            .with_table_changelog(store.options)
        self.executor = executor
        self.clock = clock
        self.tags = tag_manager(store)
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
            plan.add_expiring(sid, sm.snapshot_path(sid), sizes[sid])

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

    # --- acting --------------------------------------------------------------------------
    def expire(self, dry_run: bool = False) -> ExpireResult:
        """Expire snapshots and then, when the lifecycle is decoupled, changelogs. Returns
        what was expired and deleted (with dry_run: what would be, deleting nothing)."""
        t0 = time.perf_counter()
        # One operation for the deletion gate: directories resolved once, afresh.
        with self.store.io.resolution_scope():
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
            for sid, path in sorted(plan.metadata.items()):
                # Ascending: a crash or a failure leaves a contiguous suffix.
                if keep_as_changelog:
                    if (manager.snapshot_dir, sid) not in self._raw_memo:
                        plan.skip(f"snapshot {sid} is unreadable and cannot be kept as a "
                                  f"changelog; EARLIEST stays at {sid}")
                        earliest = sid
                        break
                    self.changelogs.commit_changelog(sid, self._raw(manager, sid))
                if d.in_order(plan.metadata_kind, [path]) == 0:
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
            return sorted(plan.metadata)
        gone = set(deleted[plan.metadata_kind])
        return [i for i, p in sorted(plan.metadata.items()) if p in gone]
