"""Snapshot expiration: ExpireConfig and ExpireSnapshots.

Plan, then act. The plan decides the range `[begin, end)` (Paimon 2.x rules: retain min/max,
time retained measured on the *successor* snapshot, consumers, per-run limit) and lists every
file to delete. Execution deletes in the crash-safe order: data files, changelog files, empty
directories, manifests and lists, snapshot files, and EARLIEST last, so a rerun after a crash
anywhere finishes the job.

Protection model (stricter than the reference):
- a data file DELETEd in delta k (begin < k <= end) is kept if any later ADD of the same file
  exists in the deltas up to the latest snapshot (a re-add: rollback-to-as-latest, manual
  re-commit), or if it is live in a tag taken before `end`;
- manifests and lists are kept if any retained snapshot (end .. latest) or any tag uses them;
- anything that cannot be read makes the plan smaller, never larger: an unreadable delta skips
  the candidates it could have protected, an unreadable tag or retained list skips that whole
  step. What is skipped is left for orphan cleanup and reported.
"""
from __future__ import annotations

import logging
import os
import time
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Mapping, Optional, Set, Tuple

from ..errors import CorruptMetadataError, OptionError
from ..format import paths as P
from ..format.manifest import FileKind, ManifestEntry
from ..format.snapshot import Snapshot, Tag
from ..options import INT_MAX
from ..store import FileStore
from ..tags import ConsumerManager, TagManager

log = logging.getLogger(__name__)

__all__ = ["ExpireConfig", "ExpireSnapshots", "ExpirePlan", "ExpireResult", "DeletionSet",
           "run_deletions"]

KINDS = ("data", "changelog", "manifest", "manifest-list", "index", "statistics", "snapshot",
         "directory")


@dataclass(frozen=True)
class ExpireConfig:
    retain_min: int = 10
    retain_max: int = INT_MAX
    time_retained_ms: int = 3_600_000
    max_deletes: int = 10
    older_than_ms: Optional[int] = None   # explicit cutoff; default now - time_retained
    clean_empty_directories: bool = False
    thread_num: Optional[int] = None

    def __post_init__(self) -> None:
        def bad(name: str, value: Any, rule: str) -> None:
            raise OptionError(f"option '{name}' = {value!r}: {rule}")
        for name, value in (("snapshot.num-retained.min", self.retain_min),
                            ("snapshot.num-retained.max", self.retain_max),
                            ("snapshot.time-retained", self.time_retained_ms),
                            ("snapshot.expire.limit", self.max_deletes)):
            if isinstance(value, bool) or not isinstance(value, int):
                bad(name, value, "must be an integer")
        if self.retain_min < 1:
            bad("snapshot.num-retained.min", self.retain_min, "must be >= 1")
        if self.retain_max < self.retain_min:
            raise OptionError(f"option 'snapshot.num-retained.max' = {self.retain_max} must be "
                              f">= 'snapshot.num-retained.min' = {self.retain_min}")
        if self.time_retained_ms < 0:
            bad("snapshot.time-retained", self.time_retained_ms, "must be >= 0")
        if self.max_deletes < 0:
            bad("snapshot.expire.limit", self.max_deletes, "must be >= 0")
        if self.thread_num is not None and self.thread_num < 1:
            bad("file-operation.thread-num", self.thread_num, "must be >= 1")

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
        )
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)


@dataclass
class DeletionSet:
    """Files of one kind to delete: path -> size (bytes; 0 when unknown)."""
    kind: str
    files: Dict[str, int] = field(default_factory=dict)

    def add(self, path: str, size: int = 0) -> None:
        self.files.setdefault(path, size or 0)

    def __len__(self) -> int:
        return len(self.files)


@dataclass
class ExpirePlan:
    earliest: Optional[int]
    latest: Optional[int]
    begin: Optional[int] = None
    end: Optional[int] = None
    expiring: List[int] = field(default_factory=list)
    data: DeletionSet = field(default_factory=lambda: DeletionSet("data"))
    changelog: DeletionSet = field(default_factory=lambda: DeletionSet("changelog"))
    manifests: DeletionSet = field(default_factory=lambda: DeletionSet("manifest"))
    lists: DeletionSet = field(default_factory=lambda: DeletionSet("manifest-list"))
    index: DeletionSet = field(default_factory=lambda: DeletionSet("index"))
    statistics: DeletionSet = field(default_factory=lambda: DeletionSet("statistics"))
    snapshots: DeletionSet = field(default_factory=lambda: DeletionSet("snapshot"))
    bucket_dirs: Set[str] = field(default_factory=set)
    tag_names: List[str] = field(default_factory=list)
    skipped: List[str] = field(default_factory=list)

    def skip(self, reason: str) -> None:
        log.warning("expire: %s", reason)
        self.skipped.append(reason)


@dataclass
class ExpireResult:
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

    def to_dict(self) -> Dict[str, Any]:
        return {"expired_snapshots": self.expired_snapshots, "expired_ids": self.expired_ids,
                "deleted_files": self.deleted_files, "deleted_bytes": self.deleted_bytes,
                "by_kind": self.by_kind, "earliest": self.earliest, "latest": self.latest,
                "dry_run": self.dry_run, "skipped": self.skipped, "seconds": self.seconds}


def run_deletions(io, paths: Iterable[str], executor: Optional[Executor]) -> List[str]:
    """Delete quietly, in parallel when an executor is given; returns what was deleted.

    One task per chunk of paths, not per path: a local unlink is cheaper than handing a task
    to a thread, while object stores still get several deletes in flight."""
    paths = list(paths)
    if not paths:
        return []
    if executor is None or len(paths) < 64:
        return [p for p in paths if io.delete_quietly(p)]
    workers = getattr(executor, "_max_workers", 4)
    size = max(32, -(-len(paths) // (workers * 4)))
    chunks = [paths[i:i + size] for i in range(0, len(paths), size)]
    out: List[str] = []
    for done in executor.map(lambda chunk: [p for p in chunk if io.delete_quietly(p)], chunks):
        out.extend(done)
    return out


def still_there(io, planned: Iterable[str], deleted: Iterable[str]) -> List[str]:
    """What run_deletions did not delete and still exists (a failed delete, not a vanished
    file): the callers keep their records of these so that a rerun can retry."""
    gone = set(deleted)
    return [p for p in planned if p not in gone and io.exists(p)]


class ExpireSnapshots:
    def __init__(self, store: FileStore, config: Optional[ExpireConfig] = None,
                 executor: Optional[Executor] = None, clock=time.time):
        self.store = store
        self.config = config or ExpireConfig.from_options(store.options)
        self.executor = executor
        self.clock = clock
        self.tags = TagManager(store.io, store.root)
        self.consumers = ConsumerManager(store.io, store.root)
        # Kept from one run to the next (TableCommit reuses its expirer after every commit),
        # so that a run decodes only what is new since the last one instead of every retained
        # snapshot's lists and delta. Keyed by file names, which are unique and never reused;
        # pruned after each run to what that run touched. Snapshot files are re-read every
        # run (rollback can re-create an id) and only their parse is reused.
        self._list_memo: Dict[str, Any] = {}
        self._delta_memo: Dict[str, List[ManifestEntry]] = {}
        self._raw_memo: Dict[int, Tuple[bytes, Snapshot]] = {}
        self._touched: Set[str] = set()

    # --- deciding the range --------------------------------------------------------------
    def plan(self) -> ExpirePlan:
        self._snapshot_memo: Dict[int, Optional[Snapshot]] = {}
        self._snapshot_sizes: Dict[int, int] = {}
        self._touched = set()
        try:
            return self._plan()
        finally:
            if self._touched:   # a run with nothing to expire keeps the memo as it was
                self._prune_memo()

    def _prune_memo(self) -> None:
        for memo in (self._list_memo, self._delta_memo):
            for name in [n for n in memo if n not in self._touched]:
                del memo[name]
        for sid in [i for i in self._raw_memo if i not in self._snapshot_memo]:
            del self._raw_memo[sid]

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
        ids = sm.list_snapshot_ids()
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
                successor = self._read_snapshot(sid + 1)
            except CorruptMetadataError as e:
                log.warning("expire: cannot read %s; keeping snapshot %d", e.path, sid)
                return sid
            # A snapshot stays readable for time-retained after it stopped being the latest,
            # i.e. after its successor was committed (Paimon 2.x rule).
            if time_limited and successor is not None and successor.time_millis >= older_than:
                return sid
        return hi

    # --- reading, once per run -----------------------------------------------------------
    def _read_snapshot(self, sid: int) -> Optional[Snapshot]:
        """A snapshot (None if absent), read at most once per run; checks id vs name."""
        if sid in self._snapshot_memo:
            return self._snapshot_memo[sid]
        path = self.store.snapshots.snapshot_path(sid)
        try:
            data = self.store.io.read_bytes(path)
        except FileNotFoundError:
            self._snapshot_memo[sid] = None
            return None
        known = self._raw_memo.get(sid)
        if known is not None and known[0] == data:
            snap = known[1]
        else:
            snap = Snapshot.from_json(data, path)
            self._raw_memo[sid] = (data, snap)
        if snap.id != sid:
            raise CorruptMetadataError(path, f"holds id {snap.id}, but its name says {sid}")
        self._snapshot_memo[sid] = snap
        self._snapshot_sizes[sid] = len(data)
        return snap

    def _read_list(self, name: str):
        """A manifest list, decoded at most once per run (a run can touch more lists than
        the shared cache holds)."""
        self._touched.add(name)
        metas = self._list_memo.get(name)
        if metas is None:
            metas = self._list_memo[name] = self.store.manifests.read_list_refs(name)
        return metas

    def _read_delta(self, s: Snapshot) -> List[ManifestEntry]:
        name = s.delta_manifest_list
        self._touched.add(name)
        entries = self._delta_memo.get(name)
        if entries is None:
            entries = self._delta_memo[name] = self.store.manifests.read_entries(
                self._read_list(name))
        return entries

    # --- listing what to delete ----------------------------------------------------------
    def _plan_until(self, plan: ExpirePlan, ids: List[int], end: int) -> None:
        store, sm = self.store, self.store.snapshots
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
                snap = self._read_snapshot(sid)
                if snap is None:
                    continue  # expired concurrently
                snaps[sid] = snap
                sizes[sid] = self._snapshot_sizes[sid]
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

        self._plan_data(plan, snaps, ids, end, tags)
        self._plan_metadata(plan, snaps, end, tags)
        for sid in plan.expiring:
            plan.snapshots.add(sm.snapshot_path(sid), sizes[sid])

    def _plan_data(self, plan: ExpirePlan, snaps: Dict[int, Snapshot], ids: List[int],
                   end: int, tags: List[Tag]) -> None:
        store = self.store
        last_id = max(snaps)
        # Positions of every ADD after `begin`, and DELETE candidates in (begin, end].
        last_add: Dict[str, Tuple[int, int]] = {}
        candidates: List[Tuple[Tuple[int, int], str, ManifestEntry]] = []
        blind_before = 0  # candidates deleted before an unreadable delta cannot be judged
        for sid in range(plan.begin + 1, last_id + 1):
            s = snaps.get(sid)
            if s is None:
                blind_before = sid
                continue
            try:
                entries = self._read_delta(s)
            except (FileNotFoundError, CorruptMetadataError) as e:
                plan.skip(f"delta of snapshot {sid} is unreadable ({e}); data files deleted "
                          f"at or before it are left for orphan cleanup")
                blind_before = sid
                continue
            for pos, e in enumerate(entries):
                try:
                    path = self._data_path(e)
                except ValueError as err:
                    plan.skip(f"snapshot {sid}: {err}")
                    continue
                if e.kind == FileKind.ADD:
                    last_add[path] = (sid, pos)
                elif sid <= end and path is not None:
                    candidates.append(((sid, pos), path, e))
        if not candidates:
            return
        try:
            tagged = self._tag_files(t for t in tags if t.id < end)
        except (FileNotFoundError, CorruptMetadataError) as e:
            plan.skip(f"cannot read the files of a tag ({e}); no data file is deleted")
            return
        io = store.io
        for pos, path, e in candidates:
            if pos[0] <= blind_before or path in tagged or last_add.get(path, (0, -1)) > pos:
                continue
            refused = io.deletion_refused(path)
            if refused:
                plan.skip(f"snapshot {pos[0]}: {refused}")
                continue
            plan.data.add(path, e.file.file_size)
            for extra in e.file.extra_files:
                try:
                    P.validate_bare_file_name(extra, "extra file name")
                except ValueError as err:
                    plan.skip(f"data file {path}: {err}")
                    continue
                plan.data.add(store.io.join(os.path.dirname(path), extra), 0)
            plan.bucket_dirs.add(os.path.dirname(path))

    def _data_path(self, e: ManifestEntry) -> Optional[str]:
        if e.file.external_path:
            return None  # outside the table root: never ours to delete
        return self.store.data_file_path(e)

    def _tag_files(self, tags: Iterable[Tag]) -> Set[str]:
        out: Set[str] = set()
        for t in tags:
            for e in self.store.live_entries(t.snapshot):
                path = self._data_path(e)
                if path is not None:
                    out.add(path)
        return out

    def _metadata_names(self, s: Snapshot) -> Tuple[Set[str], Set[str], Set[str]]:
        """(lists, manifests, other manifest-dir names) a snapshot uses. Raises if unreadable."""
        mio = self.store.manifests
        lists = set(s.manifest_lists())
        manifests: Set[str] = set()
        for name in lists:
            manifests.update(m.file_name for m in self._read_list(name))
        other = {s.index_manifest} if s.index_manifest else set()
        return lists, manifests, other

    def _plan_metadata(self, plan: ExpirePlan, snaps: Dict[int, Snapshot], end: int,
                       tags: List[Tag]) -> None:
        io, mio = self.store.io, self.store.manifests
        keep: Set[str] = set()
        keep_stats: Set[str] = set()
        try:
            for s in [s for sid, s in snaps.items() if sid >= end] + [t.snapshot for t in tags]:
                lists, manifests, other = self._metadata_names(s)
                keep |= lists | manifests | other
                if s.statistics:
                    keep_stats.add(s.statistics)
                if s.index_manifest:
                    keep |= set(self.store.manifests.read_index_file_names(s.index_manifest))
        except (FileNotFoundError, CorruptMetadataError) as e:
            plan.skip(f"cannot read what retained snapshots and tags use ({e}); no manifest "
                      f"is deleted")
            return
        for sid in plan.expiring:
            s = snaps.get(sid)
            if s is None:
                continue
            sizes = {s.base_manifest_list: s.base_manifest_list_size,
                     s.delta_manifest_list: s.delta_manifest_list_size,
                     s.changelog_manifest_list: s.changelog_manifest_list_size}
            for name in s.manifest_lists():
                if name in keep:
                    continue
                try:
                    metas = self._read_list(name)
                except FileNotFoundError:
                    continue  # deleted by an earlier, interrupted run
                except CorruptMetadataError as e:
                    plan.skip(f"{e}; its manifests are left for orphan cleanup")
                    metas = []
                for m in metas:
                    if m.file_name not in keep:
                        plan.manifests.add(mio.path(m.file_name), m.file_size)
                if name == s.changelog_manifest_list:
                    self._plan_changelog(plan, metas)
                plan.lists.add(mio.path(name), sizes.get(name) or 0)
            if s.index_manifest and s.index_manifest not in keep:
                try:
                    files = self.store.manifests.read_index_file_names(s.index_manifest)
                except (FileNotFoundError, CorruptMetadataError) as e:
                    plan.skip(f"index manifest {s.index_manifest} is unreadable ({e}); kept")
                else:
                    for f in files:
                        if f not in keep:
                            plan.index.add(io.join(self.store.root, "index", f), 0)
                    plan.index.add(mio.path(s.index_manifest), 0)
            if s.statistics and s.statistics not in keep_stats:
                P.validate_bare_file_name(s.statistics, "statistics file name")
                plan.statistics.add(io.join(self.store.root, "statistics", s.statistics), 0)

    def _plan_changelog(self, plan: ExpirePlan, metas) -> None:
        try:
            for e in self.store.manifests.read_entries(metas):
                path = self._data_path(e)
                if e.kind == FileKind.ADD and path is not None:
                    plan.changelog.add(path, e.file.file_size)
        except (FileNotFoundError, CorruptMetadataError) as err:
            plan.skip(f"changelog manifest unreadable ({err}); its files are left")

    # --- acting --------------------------------------------------------------------------
    def expire(self, dry_run: bool = False) -> ExpireResult:
        t0 = time.perf_counter()
        self.store.io.forget_resolved_dirs()
        plan = self.plan()
        t1 = time.perf_counter()
        deleted: Dict[str, List[str]] = {k: [] for k in KINDS}
        if not dry_run and plan.end is not None:
            deleted = self._execute(plan)
        elif plan.end is not None:
            for ds in self._sets(plan):
                deleted[ds.kind] = list(ds.files)
        t2 = time.perf_counter()
        return self._result(plan, deleted, dry_run, {"plan": t1 - t0, "delete": t2 - t1})

    @staticmethod
    def _sets(plan: ExpirePlan) -> List[DeletionSet]:
        return [plan.data, plan.changelog, plan.manifests, plan.lists, plan.index,
                plan.statistics, plan.snapshots]

    def _execute(self, plan: ExpirePlan) -> Dict[str, List[str]]:
        io = self.store.io
        deleted: Dict[str, List[str]] = {k: [] for k in KINDS}
        # The plan is only as good as the tag listing it saw. List again right before the
        # first delete: a tag created meanwhile, or a listing that came back short (object
        # stores can list stale), shows up as a difference, and nothing is deleted.
        now = sorted(self.tags.tag_names())
        if now != plan.tag_names:
            changed = sorted(set(now) ^ set(plan.tag_names))
            plan.skip(f"the tags changed while planning ({', '.join(changed)}); nothing is "
                      f"deleted, the next run plans again")
            return deleted
        own_pool = None
        executor = self.executor
        if executor is None:
            own_pool = executor = ThreadPoolExecutor(self.config.thread_num or os.cpu_count()
                                                     or 1)
        try:
            # Order is the crash-safety mechanism: each step deletes only what later steps
            # no longer need to find.
            deleted["data"] = run_deletions(io, plan.data.files, executor)
            deleted["changelog"] = run_deletions(io, plan.changelog.files, executor)
            left = still_there(io, set(plan.data.files) | set(plan.changelog.files),
                                     deleted["data"] + deleted["changelog"])
            if left:
                # The manifests and snapshots are the only record of these files: keep them,
                # so that the next run (or a retry) deletes what failed now.
                plan.skip(f"{len(left)} data file(s) could not be deleted (e.g. {left[0]}); "
                          f"manifests and snapshot files are kept for the next run")
                return deleted
            if self.config.clean_empty_directories:
                deleted["directory"] = self._clean_dirs(plan.bucket_dirs)
            for ds in (plan.manifests, plan.lists, plan.index, plan.statistics):
                deleted[ds.kind] = run_deletions(io, ds.files, executor)
        finally:
            if own_pool is not None:
                own_pool.shutdown(wait=True)
        earliest = plan.end
        for sid, path in zip(plan.expiring, plan.snapshots.files):
            # Ascending: a crash or a failure leaves a contiguous suffix.
            if io.delete_quietly(path):
                deleted["snapshot"].append(path)
            elif io.exists(path):
                plan.skip(f"snapshot file {path} could not be deleted; EARLIEST stays at {sid}")
                earliest = sid
                break
        self.store.snapshots.commit_earliest_hint(earliest)
        return deleted

    def _clean_dirs(self, bucket_dirs: Set[str]) -> List[str]:
        io, root = self.store.io, self.store.root.rstrip("/")
        removed = []
        parents: Set[str] = set()
        for d in sorted(bucket_dirs, key=len, reverse=True):
            if io.delete_empty_dir(d):
                removed.append(d)
                parents.add(os.path.dirname(d))
        while parents:
            deepest = sorted(parents, key=lambda p: p.count("/"), reverse=True)
            parents = set()
            for d in deepest:
                if d.rstrip("/") == root or not d.startswith(root + "/"):
                    continue
                if io.delete_empty_dir(d):
                    removed.append(d)
                    parents.add(os.path.dirname(d))
        return removed

    def _result(self, plan: ExpirePlan, deleted: Dict[str, List[str]], dry_run: bool,
                seconds: Dict[str, float]) -> ExpireResult:
        sizes: Dict[str, int] = {}
        for ds in self._sets(plan):
            sizes.update(ds.files)
        by_kind = {}
        total_files = total_bytes = 0
        paths: List[str] = []
        for kind in KINDS:
            files = deleted.get(kind, [])
            b = sum(sizes.get(p, 0) for p in files)
            if files:
                by_kind[kind] = {"files": len(files), "bytes": b}
            if kind != "directory":
                total_files += len(files)
                total_bytes += b
            paths.extend(files)
        gone = set(deleted["snapshot"])
        expired = [sid for sid in plan.expiring
                   if self.store.snapshots.snapshot_path(sid) in gone]
        if dry_run:
            expired = list(plan.expiring)
        earliest = plan.earliest
        if expired and not dry_run:
            earliest = self.store.snapshots.earliest_snapshot_id()
        return ExpireResult(len(expired), expired, total_files, total_bytes, by_kind,
                            earliest, plan.latest, dry_run, plan.skipped, paths, seconds)
