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

import contextlib
import logging
import os
import time
from concurrent.futures import Executor
from typing import Dict, List, Optional, Set, Tuple

from ..io import read_ahead
from ..io.metered import billed
from ..io.metered import ContextExecutor
from ..dynamic_options import refuse_other_changelog_producer
from ..io.deletion import Deleter, StopDeleting
from ..expiring import ExpiringMarkers
from ..lease import maintenance_lease
from ..errors import CorruptMetadataError, PaimonCommitError
from ..format import paths as P
from ..format.snapshot import Snapshot, Tag
from ..progress import DELETING, READING, emit
from ..reachability import (APPEND_SOURCE, BranchUse, KeptIndex, Reachability, ReAdds,
                            Root, Unreadable, collector_paused)
from ..snapshots import ChangelogManager, SnapshotManager
from ..store import FileStore
from ..tags import ConsumerManager, tag_manager
from .expire_changelog import ChangelogExpiration
from .expire_config import ExpireConfig
from .expire_plan import ExpirePlan, ExpireResult, ExpireTotals, tag_changes
from .limits import (MAX_DELETES, MAX_DURATION, MEMORY, OUT_OF_MEMORY, Deadline,
                     is_out_of_memory)

# A large expiration goes in chunks, the next ones sized after the last so that each deletes
# about CHUNK_FILES files (at most CHUNK_SNAPSHOTS snapshots): what is held at once follows
# the chunk. The first is sized the same way before anything is known of the rates, from its
# snapshots' delta lists, which the plan reads anyway (their manifests' counts: `_first_limit`),
# FIRST_CHUNK snapshots at least; FIRST_CHUNK_FILES is what it is sized for. A fixed first
# chunk of 100 snapshots made a run of 1,000 small ones two plans and two deletions where one
# holds no more: 20% of bench_expire's time went to the second chunk's overhead...
FIRST_CHUNK = 100
CHUNK_SNAPSHOTS = 2000
CHUNK_FILES = 20_000
FIRST_CHUNK_FILES: Optional[int] = None   # None: CHUNK_FILES
# Files counted for each snapshot besides the data files its delta deletes: its file, its
# lists and the delta's manifests (counted from the list); the merged manifests and index
# files it may also hold are not known before its base list is read.
FILES_PER_SNAPSHOT = 4
FIRST_LIMIT_WAVE = 64   # delta lists read ahead at once for that count (an object store)
# ...but each expires at least one snapshot for every HELD_PER_EXPIRED snapshots from its
# start to the latest, or FILES_PER_HELD files for each of them, whichever is less
# (next_chunk). Every chunk lists, reads (from the cache) and re-checks each of those
# snapshots, so with chunks of a fixed size a backlog of S snapshots cost about
# S / chunk x S / 2 of those steps: bench_scale's 2M-file table (20,000 snapshots, 106
# chunks) spent 1.06M of them, ~25 of its 77 CPU seconds, and expired 1.44x slower per file
# than at 200k. With the floor, the steps of a run add up to at most HELD_PER_EXPIRED x the
# snapshots or 1 / FILES_PER_HELD x the files it expires: in proportion to the backlog, at
# any size. A chunk grows only with what the run already holds for those snapshots (parsed,
# and their metadata names): its files stay within FILES_PER_HELD per held snapshot.
HELD_PER_EXPIRED = 6
FILES_PER_HELD = 15


def next_chunk(expired: int, files: int, held: int) -> int:
    """Snapshots the next chunk expires, after a chunk that expired `expired` snapshots and
    deleted `files` files (its rate: files per snapshot), with `held` snapshots from its end
    to the latest (what the next chunk lists, reads and re-checks): about CHUNK_FILES files
    (at most CHUNK_SNAPSHOTS snapshots), or more where the held snapshots ask for it: held /
    HELD_PER_EXPIRED snapshots or FILES_PER_HELD x held files, whichever is fewer."""
    files = max(1, files)
    by_files = min(CHUNK_SNAPSHOTS, CHUNK_FILES * expired // files)
    by_held = min(held // HELD_PER_EXPIRED, FILES_PER_HELD * held * expired // files)
    return max(1, by_files, by_held)


log = logging.getLogger(__name__)


def _duration(ms: int) -> str:
    from ..options import format_duration_ms
    return format_duration_ms(ms)

__all__ = ["ExpireConfig", "ExpireSnapshots", "ExpirePlan", "ExpireResult"]


#: Snapshot files an expirer keeps cached across runs (a commit object's: `_prune`), at most
#: about this many beyond what its last plan read (a few hundred bytes each, parsed).
RAW_MEMO_CAP = 10_000


class ExpireSnapshots(ChangelogExpiration):
    """Expires snapshots, then (when the changelog lifecycle is decoupled) long-lived
    changelogs, of one table. Reusable across runs: what it read is carried forward."""

    def __init__(self, store: FileStore, config: Optional[ExpireConfig] = None,
                 executor: Optional[Executor] = None, clock=time.time, progress=None):
        store = getattr(store, "store", store)   # a Table is accepted for its FileStore
        if config is not None and config.changelog_producer is not None:
            # What expiration keeps for the long-lived changelogs follows the producer they
            # were written with, which is the table's: another value (given for this run)
            # would delete what they read. Refused before any I/O.
            refuse_other_changelog_producer(config.changelog_producer,
                                            store.options.get("changelog-producer"),
                                            f"ExpireSnapshots of {store.path}")
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
        self._markers = ExpiringMarkers(store.io, store.root)   # expirations in progress
        # Kept from one run to the next (TableCommit reuses its expirer after every commit),
        # so that a run decodes only what is new since the last one. Snapshot files are
        # re-read every run (rollback can re-create an id) and only their parse is reused.
        self.reach = Reachability(store)
        # What the branches use (their roots read again before every delete, their
        # manifests only when their roots changed): never deleted (_spare_branches).
        self.branches = BranchUse(store)
        # How the kept_because lines name each setting: the table's option names, unless a
        # caller passed its own words (the CLI: `--retain-min 5`, the API: `retain_min=5`).
        self.labels: Dict[str, str] = {}
        # Explicit runs explain what they kept; the run after every commit does not (it
        # would read the consumers once more per commit, for a result nobody prints).
        self.explain = False
        # (dir, id) -> (bytes, parsed, version when read): a file whose listed version
        # (FileIO.file_versions: inode + mtime locally, the ETag on object stores) is
        # unchanged is not read again; one listing replaces a GET per retained snapshot.
        self._raw_memo: Dict[Tuple[str, int], Tuple[bytes, Snapshot, Optional[str]]] = {}
        self._versions: Dict[Tuple[str, int], str] = {}
        # What the plans since the last prune read, and the directories they listed: a prune
        # drops only files of a listed directory that no plan since read (gone, or no longer
        # in any range). A plan that stopped before listing (nothing to expire: the second
        # chunk of most post-commit runs) dropped the whole cache, and the next commit's run
        # read every retained snapshot again (bench_s3: 212 GETs where 8 do).
        self._seen: Set[Tuple[str, int]] = set()
        self._listed_dirs: Set[str] = set()
        self._pruned_memo: Optional[Dict[Tuple[str, int], Optional[Snapshot]]] = None
        self._plan_earliest: Optional[int] = None   # the earliest snapshot the plan found
        self._limit: Optional[int] = None   # snapshots this plan may expire (a chunk)
        self._horizon: Optional[int] = None   # the first snapshot this run keeps, at most
        self._size_first = False   # whether this run's first chunk is sized (_first_limit)
        self._readds: Optional[ReAdds] = None   # ADD positions, kept across chunks
        self._kept: Optional[KeptIndex] = None   # what later snapshots use, across chunks
        # (earliest, latest) when the earliest snapshot's lists were all there (see
        # _head_half_expired): not checked again after every commit.
        self._complete_head: Optional[Tuple[int, int]] = None
        # Per plan: the consumers' positions (the floor no half-expired snapshot is moved
        # past), and the names in manifest/ once listed to confirm an absence (see
        # _missing_list; False: the listing failed or came back empty).
        self._consumer_list: List = []
        self._consumer_min: Optional[int] = None
        self._manifest_names = None

    # --- deciding the range --------------------------------------------------------------
    def plan(self) -> ExpirePlan:
        """The snapshot expiration this run would do (nothing is deleted); during expire(),
        one chunk of it (at most `_limit` snapshots from the earliest)."""
        self._keep_seen()
        self._plan_earliest = None
        self._memo: Dict[Tuple[str, int], Optional[Snapshot]] = {}
        self._versions = {}
        self._manifest_names = None   # (listed at most once per plan, and only if needed)
        self.reach.start()
        try:
            return self._plan()
        finally:
            if not self.config.changelog_decoupled:   # else after plan_changelogs()
                self._prune()

    def _keep_seen(self) -> None:
        """Before a plan starts a fresh `_memo`: what the last one read counts as seen for
        the next prune (unless a prune already judged it)."""
        memo = getattr(self, "_memo", None)
        if memo is not None and memo is not self._pruned_memo:
            self._seen.update(memo)

    def _prune(self) -> None:
        """Drop cached snapshot files no plan since the last prune read: those of a
        directory listed since (gone, or out of every range), those below the earliest
        snapshot the last plan found, and, past RAW_MEMO_CAP files, any (a commit object
        whose runs expire nothing never lists, and each of its runs reads the newest
        snapshots: audit issue26a F2)."""
        self.reach.prune()
        seen, listed = self._seen | set(self._memo), self._listed_dirs
        floor, snapshots = self._plan_earliest, self.store.snapshots.snapshot_dir
        cap = len(self._raw_memo) > RAW_MEMO_CAP
        for key in [k for k in self._raw_memo if k not in seen and (
                cap or k[0] in listed or
                (floor is not None and k[0] == snapshots and k[1] < floor))]:
            del self._raw_memo[key]
        self._seen, self._listed_dirs, self._pruned_memo = set(), set(), self._memo

    def _plan(self) -> ExpirePlan:
        sm = self.store.snapshots
        # Hints first (checked against their neighbours): after every commit, a run that
        # has nothing to expire must not list a snapshot directory that grows with history.
        latest = sm.latest_snapshot_id()
        earliest = self._plan_earliest = sm.earliest_snapshot_id()
        if latest is None or earliest is None:
            return ExpirePlan(None, None)
        now_ms = int(self.clock() * 1000)
        # (one listing and a GET per consumer, as min_next_snapshot: the list is kept to
        # name the consumer that holds a half-expired snapshot back)
        self._consumer_list = self.consumers.consumers()
        consumer_min = self._consumer_min = min(
            (c.next_snapshot for c in self._consumer_list), default=None)
        # A later chunk of a run (its horizon set by the first) has more to expire: the
        # snapshot ids are listed first, with their versions, so that the range's reads below
        # skip the files the last chunk read and the listing shows unchanged (on local disk
        # that was every held snapshot read again per chunk: 2,800 reads to expire 1,000).
        ids = self._list_with_versions(sm) if self._horizon is not None else None
        end = self._end(earliest, latest, now_ms, consumer_min)
        if end <= earliest and not self._head_half_expired(earliest, latest):
            return ExpirePlan(earliest, latest)
        if self._limit and self._readds is not None and self._readds.memo_from is None:
            limit, self._limit = self._limit, None   # where the whole run ends
            try:
                self._readds.memo_from = self._end(earliest, latest, now_ms, consumer_min)
            finally:
                self._limit = limit
            # And there the run stops: snapshots that become expirable while it runs are the
            # next run's. A run chasing a busy stream, chunk after chunk of a few snapshots
            # each, held the maintenance lease for as long as the writers wrote (the
            # object-store soak: over 4 minutes, while an orphan cleanup waited in vain).
            self._horizon = self._readds.memo_from
            # The run's first chunk, sized by what its snapshots' deltas delete; FIRST_CHUNK
            # snapshots under a time limit, which lets the first chunk run whatever the time
            # (audit issue26h F4: a larger one held the lease longer than asked).
            first = self._first_limit(earliest, self._horizon) if self._size_first else 0
            if first > self._limit:
                self._limit = first
                end = self._end(earliest, latest, now_ms, consumer_min)
        if ids is None:
            ids = self._list_with_versions(sm)
        # A manifest/ listing taken before the snapshot ids were listed (by the head check
        # above) does not show the lists of snapshots committed since: listed again if
        # needed (audit issue25h, hardening).
        self._manifest_names = None
        if not ids:
            return ExpirePlan(None, None)
        if ids[0] != earliest or ids[-1] > latest:
            # The listing decides (a gap below the earliest hint, a newer snapshot).
            earliest, latest = ids[0], max(latest, ids[-1])
            end = self._end(earliest, latest, now_ms, consumer_min)
        plan = ExpirePlan(earliest, latest)
        if end <= earliest and not self._head_half_expired(earliest, latest):
            return plan
        end = max(end, earliest)   # (_plan_until moves it past the half-expired ones)
        self._plan_until(plan, ids, end)
        if plan.end is not None:
            plan.consumer_floor = min(plan.end, consumer_min) if consumer_min is not None \
                else plan.end
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
        if self._limit:
            hi = min(hi, earliest + self._limit)
        if self._horizon is not None:
            hi = min(hi, self._horizon)
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

    def _first_limit(self, earliest: int, horizon: int) -> int:
        """Snapshots the run's first chunk may expire, from `earliest`: as many as delete
        about FIRST_CHUNK_FILES files by their delta lists' counts, at most CHUNK_SNAPSHOTS
        or up to the run's `horizon`; 0 where that is not more than FIRST_CHUNK (the caller
        keeps its limit). An expiring snapshot counts FILES_PER_SNAPSHOT files, its delta's
        manifests, and the data files its successor's delta deletes (what expiring it frees,
        as next_chunk counts a chunk's files); the count stops at a snapshot with a
        changelog list or an index manifest, whose files its delta list does not count. It
        reads what the plan reads next anyway (each file once a run): the range's
        snapshots, most of which `_end` read for the horizon, and their delta lists, a wave
        at a time read ahead on an object store. One that is missing or unreadable ends the
        count there (the plan meets it at its turn)."""
        stop = min(horizon, earliest + CHUNK_SNAPSHOTS)
        if stop - earliest <= FIRST_CHUNK:
            return 0
        sm = self.store.snapshots
        # (`_end` read the successors of the snapshots it judged: not the earliest one, nor
        # those retain-max expires whatever their time)
        todo = [i for i in range(earliest, stop + 1)
                if (sm.snapshot_dir, i) not in self._memo]
        with contextlib.closing(self._read_ahead(sm, todo)) as reads:
            for sid, fetched in reads:
                try:
                    self._read(sm, sid, fetched)
                except CorruptMetadataError:
                    break
        snaps: List[Snapshot] = []
        for sid in range(earliest, stop + 1):
            s = self._memo.get((sm.snapshot_dir, sid))
            if s is None:
                break
            snaps.append(s)
        budget = total = CHUNK_FILES if FIRST_CHUNK_FILES is None else FIRST_CHUNK_FILES
        ahead, last = 0, None   # (the lists of snaps[:ahead] were read ahead)
        n = len(snaps) - 1      # snaps[n] is the first kept snapshot of the chunk
        for j, s in enumerate(snaps):
            if j == ahead:
                # A wave of as many lists as the budget left still counts at the rate so
                # far: a list read ahead and not counted would be a read the run never made.
                rate = max(FILES_PER_SNAPSHOT, (total - budget) // j if j else 0)
                ahead = j + min(FIRST_LIMIT_WAVE, budget // rate + 2)
                self.reach.prefetch(x.delta_manifest_list for x in snaps[j:ahead])
            try:
                metas = self.reach.manifests(s.delta_manifest_list)
            except (OSError, CorruptMetadataError):
                n = j - 1
                break
            if last is not None:   # expiring snaps[j - 1]
                budget -= FILES_PER_SNAPSHOT + len(last) + sum(
                    getattr(m, "num_deleted_files", 0) or 0 for m in metas)
                if budget < 0:
                    n = j - 1
                    break
            if s.changelog_manifest_list or s.index_manifest:
                # What expiring it deletes besides is not in its delta list (changelog
                # files, deletion vectors, a hash index: tens to hundreds of files a
                # snapshot on a bucketed table; audit issue26h F2): the count stops before
                # it, and where that is within FIRST_CHUNK, the first chunk is FIRST_CHUNK.
                n = j
                break
            last = metas
        # The lists read ahead past where the count stopped are of snapshots this run
        # expires in a later chunk, which reads them then: kept, not read twice.
        self.reach.keep_lists(x.delta_manifest_list for x in snaps[n + 1:ahead])
        return n if n > FIRST_CHUNK else 0

    def _read(self, manager: SnapshotManager, sid: int, fetched=None) -> Optional[Snapshot]:
        """A snapshot or changelog (None if absent), read at most once per run.
        `fetched`: its file's read, made ahead (`_read_ahead`); its outcome stands for the
        read (an error is raised here, at the snapshot's turn)."""
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
            # With the version of exactly these bytes where the storage tells it (local disk:
            # the descriptor's; an object store: the GET's ETag): the re-check and the next
            # chunk's plan then skip reading again a file a later listing shows unchanged. A
            # listed version stands for bytes read after the listing only if it is theirs.
            got = fetched.result() if fetched is not None else None
            data, read = got if got is not None else \
                self.store.io.read_bytes_versioned(path)
            if read is not None:
                version = read
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

    def _read_ahead(self, manager: SnapshotManager, sids: List[int]):
        """(id, fetched) for each id in order, for `_read(manager, id, fetched)`: the files
        `_read` would read are read a few in flight at once on an object store
        (io/read_ahead.py: ids whose parse is known are not read). On local storage
        `fetched` is None and each is read at its turn, as before."""
        workers = read_ahead.concurrency_of(self.store.io)
        if workers <= 1:
            for sid in sids:
                yield sid, None
            return
        need = set()
        for sid in sids:
            key = (manager.snapshot_dir, sid)
            version = self._versions.get(key)
            known = self._raw_memo.get(key)
            if key not in self._memo and (version is None or known is None
                                          or known[2] != version):
                need.add(sid)
        io = self.store.io

        def fetch(sid: int) -> Optional[Tuple[bytes, Optional[str]]]:
            return io.read_bytes_versioned(manager.snapshot_path(sid)) if sid in need \
                else None
        got = read_ahead.ordered(fetch, sids, workers)
        try:
            for sid, fetched in zip(sids, got):
                yield sid, fetched
        finally:
            got.close()

    def _list_with_versions(self, manager: SnapshotManager) -> List[int]:
        """The snapshot ids in a directory, noting each file's version where the storage
        lists one (then unchanged files are not read again)."""
        versions = self.store.io.file_versions(manager.snapshot_dir)
        self._listed_dirs.add(manager.snapshot_dir)
        if versions is None:
            return manager.list_snapshot_ids()
        ids = []
        for name, version in versions.items():
            sid = manager._parse_id(name)   # (snapshot-<id>, or changelog-<id>)
            if sid is not None:
                ids.append(sid)
                self._versions[(manager.snapshot_dir, sid)] = version
        return sorted(ids)

    def _raw(self, manager: SnapshotManager, sid: int) -> bytes:
        return self._raw_memo[(manager.snapshot_dir, sid)][0]

    def _keep(self, plan: ExpirePlan, manager: SnapshotManager, sid: int, what: str) -> None:
        """Note a snapshot (or changelog) the plan keeps, with the bytes it was planned
        with, for the re-check right before the first delete."""
        key = (manager.snapshot_dir, sid)
        if key not in self._raw_memo:
            return   # (not read: vanished while planning, which the plan already handled)
        data, _, version = self._raw_memo[key]
        name = manager.snapshot_path(sid).rsplit("/", 1)[-1]
        plan.kept[(manager.snapshot_dir, name)] = (what, data, version)

    def _head_half_expired(self, earliest: int, latest: int) -> bool:
        """Whether the earliest snapshot is half expired (a manifest list it names is
        absent), for a run whose retention keeps every snapshot: it must still finish what
        an interrupted run left (_past_half_expired, which _plan_until then applies), else
        a rollback far back or a larger retain-max would keep an unreadable snapshot. The
        same rules: never the latest; never a snapshot at or after a consumer's position;
        only a list the snapshot names that the storage says is absent, twice (_missing_list),
        counts; an unreadable snapshot, or a list that cannot be asked about, is left as it is.

        A consumer at the earliest snapshot holds it whatever its lists (_past_half_expired
        would not move past it): the run after every commit then asks nothing (no GET, no
        HEAD, no LIST per commit for an answer it could not act on); an explicit run
        (`explain`) still asks, so that its result says the snapshot looks half expired and
        which consumer keeps it.

        After every commit this runs where nothing is to expire, so it costs a GET of the
        earliest snapshot and a HEAD per list the first time only: that snapshot `earliest`
        was complete while the latest was `latest` or more is remembered (the expirer is
        reused across post-commit runs, table_commit.py). It is checked again when the
        earliest changes or the latest is seen below `latest` (a rollback: what turns a
        half-expired snapshot into a kept one). What the memo trades: lists of that
        snapshot deleted after the check by another process's expiration that was then
        interrupted are not seen by this expirer while its retention keeps everything and
        it sees no smaller latest (a rollback followed by as many commits before its next
        run hides in between); that process's rerun, or any run of a new expirer, finishes
        them, and so does this one once its retention expires anything (_past_half_expired
        asks the storage on every plan)."""
        if latest <= earliest:
            return False   # (never the latest)
        if self._consumer_min is not None and self._consumer_min <= earliest \
                and not self.explain:
            return False   # (held by a consumer: nothing this run could finish)
        memo = self._complete_head
        if memo is not None and memo[0] == earliest and latest >= memo[1]:
            return False
        try:
            snap = self._read(self.store.snapshots, earliest)
        except CorruptMetadataError:
            return False
        if snap is None:
            return False   # (expired meanwhile: the listing path decides)
        if self._missing_list(snap) is not None:
            return True
        self._complete_head = (earliest, latest)
        return False

    def _missing_list(self, snap: Snapshot) -> Optional[str]:
        """The first manifest list `snap` names that is absent from the storage, or None:
        all there, or one that cannot be asked about (a hostile name, the storage failing:
        not ours to conclude from). Asked with `exists` (a HEAD; a stat locally), not
        `file_size`, which an object store answers from the sizes of the files it wrote.

        An absence makes the plan larger (the snapshot is expired whatever the retention
        says), so one answer is not enough: a false 404 (a stale negative cache of an
        S3-compatible store, an HDFS failover, an NFS lookup miss) on a healthy list would
        expire a snapshot that retention keeps and delete the files it reads. It is
        confirmed by a second, independent answer: the list must also be missing from a
        listing of manifest/ (a LIST, not the HEAD's path; made once per plan, and only when
        a HEAD said absent, so the usual run does not pay it). A listing that fails, or
        comes back empty (the kept snapshots' lists are in that directory), or shows the
        list, confirms nothing: the snapshot is left as it is."""
        for name in (snap.base_manifest_list, snap.delta_manifest_list):
            if not name:
                continue
            try:
                if self.store.io.exists(self.store.manifests.path(name)):
                    continue
            except (ValueError, OSError):
                return None
            listed = self._listed_manifest_names()
            if not listed:
                log.warning("expire: the storage says manifest list %s of snapshot %d is "
                            "absent, but a listing of %s could not confirm it; the snapshot "
                            "is not treated as half expired", name, snap.id,
                            self.store.manifests.manifest_dir)
                return None
            if name in listed:
                log.warning("expire: the storage said manifest list %s of snapshot %d is "
                            "absent, but the listing of %s shows it (a false 404?); the "
                            "snapshot is not treated as half expired", name, snap.id,
                            self.store.manifests.manifest_dir)
                continue
            return name
        return None

    def _listed_manifest_names(self):
        """The names in manifest/ (one listing per plan, made on first need), or False when
        the listing failed or came back empty."""
        if self._manifest_names is None:
            try:
                names = set(self.store.io.list_names(self.store.manifests.manifest_dir))
            except (ValueError, OSError) as e:
                log.warning("expire: cannot list %s: %s", self.store.manifests.manifest_dir, e)
                names = set()
            self._manifest_names = names or False
        return self._manifest_names

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
        end = self._past_half_expired(ids, end, plan)
        expiring_ids = [i for i in ids if i < end]
        if not expiring_ids:
            return
        plan.begin, plan.end = expiring_ids[0], end
        snaps: Dict[int, Snapshot] = {}
        sizes: Dict[int, int] = {}
        # (Read a few in flight on an object store, each handled at its turn.)
        with contextlib.closing(self._read_ahead(sm, [i for i in ids if i >= plan.begin])) \
                as reads:
            for sid, fetched in reads:
                try:
                    snap = self._read(sm, sid, fetched)
                    if snap is None:
                        continue  # expired concurrently
                    snaps[sid] = snap
                    sizes[sid] = len(self._raw(sm, sid))
                except CorruptMetadataError:
                    if sid >= end:
                        raise  # the table is damaged: fail loudly, before deleting anything
                    plan.skip(f"expiring snapshot {sid} is unreadable; its files are left "
                              f"for orphan cleanup")
                    sizes[sid] = 0
        if end not in snaps:
            plan.skip(f"snapshot {end} vanished while planning; nothing is deleted")
            plan.begin = plan.end = None
            return
        plan.expiring = [i for i in expiring_ids if i in sizes]
        tags = self.tags.tags()  # an unreadable tag raises here, before any deletion
        plan.tag_names = sorted(t.name for t in tags)
        plan.tags = {t.name: t.snapshot for t in tags}
        for sid in snaps:
            if sid >= end:
                self._keep(plan, sm, sid, f"snapshot {sid}")
        cfg = self.config
        others = self._tag_roots(tags) + self._changelog_roots()
        # Long-lived changelogs already in changelog/ read the APPEND files of their deltas
        # whatever the retention says now (it may have been lowered since they were made:
        # dynamic or altered options): while any exists, those files wait for changelog
        # expiration too; one no changelog reads is left to orphan cleanup at worst.
        keep_append = cfg.changelog_producer == "none" and (
            cfg.changelog_decoupled or any(r.kind == "changelog" for r in others))
        lineage = [(i, snaps.get(i)) for i in range(plan.begin + 1, max(snaps) + 1)]
        plan.add("data", self.reach.deleted_files(
            lineage, end, lambda: self._tag_data(tags, end), plan.skip,
            # The deltas are the changelog: APPEND files wait for changelog expiration.
            (lambda e: e.file_source in (None, APPEND_SOURCE)) if keep_append
            else (lambda e: False), self._readds))
        try:
            keep = self.reach.kept_after(
                end, {i: s for i, s in snaps.items() if i > end},
                lambda i, s: Root(sm.snapshot_path(i), s,
                                  names_only=(s.delta_manifest_list, s.changelog_manifest_list)),
                [Root(sm.snapshot_path(end), snaps[end])] + others, self._kept)
        except Unreadable as e:
            plan.skip(f"{e}; no manifest or index file is deleted (left for orphan "
                      f"cleanup): only the expiring snapshots' changelog files and their "
                      f"lists, index manifests and statistics files that no retained "
                      f"snapshot, tag or changelog names")
            keep = None
        # Which lists, index manifest and statistics file a retained root uses is known
        # without reading them: each one names them in its file. The manifests its lists
        # that still read name are added: a name in an expiring snapshot's JSON is not
        # trusted to be of the kind its field says (damage, a hostile writer).
        if keep is not None:
            named = keep
        else:
            roots = [Root(sm.snapshot_path(i), s, names_only=() if i == end else
                          (s.delta_manifest_list, s.changelog_manifest_list))
                     for i, s in snaps.items() if i >= end]
            named = self._named_by_roots(roots + others)
        todo = []   # (snapshot, its lists that may go, its changelog list to read or None)
        for sid in plan.expiring:
            s = snaps.get(sid)
            if s is None:
                continue
            changelog = None
            if not cfg.changelog_decoupled:
                lists = s.manifest_lists()
                if s.changelog_manifest_list and s.changelog_manifest_list not in named:
                    changelog = s.changelog_manifest_list
            elif cfg.changelog_producer != "none":
                lists = (s.base_manifest_list, s.delta_manifest_list)
            else:
                lists = ()
            todo.append((s, lists, changelog))
        # What the loop reads (the lists, index manifests), read ahead on an object store.
        self.reach.prefetch(
            [n for s, lists, changelog in todo
             for n in ((changelog,) + (tuple(lists) if keep is not None else ()))
             if n and (n == changelog or n not in keep)],
            [s.index_manifest for s, _, _ in todo if keep is not None
             and s.index_manifest and s.index_manifest not in keep])
        for s, lists, changelog in todo:
            if changelog is not None:
                plan.add("changelog", self.reach.added_files(changelog, plan.skip))
            if keep is None:
                plan.add_metadata(self._unnamed_metadata(s, lists, named, plan))
                continue
            plan.add_metadata(self.reach.unused_metadata(s, lists, keep, plan.skip))
        for sid in plan.expiring:
            plan.add_expiring(sid, sm.snapshot_path(sid), sizes[sid])

    def _past_half_expired(self, ids: List[int], end: int,
                           plan: Optional[ExpirePlan] = None) -> int:
        """The first snapshot to keep, moved past snapshots an earlier, interrupted run had
        half expired. A run stopped (killed, a lost lease, a failed lease check) after its
        list step and before its snapshot-file step leaves snapshot files whose lists are
        gone, at the head of the history; the next run must finish them whatever its
        retention says now: a rollback since (the latest moved back), or a larger
        retain-max, would otherwise keep them, and a retained snapshot would not read
        (interleaving seed 892431: expire#28 deleted snapshot 3's lists and stopped; a
        rollback to 5 removed 6; the rerun with retain-max 3 kept 3). Only snapshots after
        which every snapshot before is expiring are moved past (a half-expired one is
        always at the head), never the latest, and only when a manifest list a snapshot
        names is absent (FileNotFoundError, not damage: a corrupt file is not ours to
        conclude from). Whether they are there is asked of the storage (a HEAD each, two
        per plan): the reads of them are cached (by this expirer across runs, by the
        store for lists it wrote), and a cached list may have been deleted since by another
        process's interrupted run. An absence is acted on only once a listing of manifest/
        confirms it (_missing_list): this makes the plan larger, and a partial view may
        only make a plan smaller.

        Never past a consumer's position (the bound `_end` applies too): a consumer whose
        next snapshot is `end` holds it, half expired or not (its reader, or whoever resets
        it, decides; a listing that merely looked half expired must not cost a streaming
        reader its snapshot). Such a snapshot is kept and the plan says so (`skip`)."""
        sm = self.store.snapshots
        later = [i for i in ids if i >= end]
        for following in later[1:]:   # (never past the latest)
            try:
                snap = self._read(sm, end)
            except CorruptMetadataError:
                return end
            if snap is None:
                return end
            missing = self._missing_list(snap)
            if missing is None:
                return end
            floor = self._consumer_min
            if floor is not None and end >= floor:
                holders = sorted(c.consumer_id for c in self._consumer_list
                                 if c.next_snapshot <= end)
                reason = (f"snapshot {end} looks half expired (its manifest list {missing} is "
                          f"absent) but is kept for consumer(s) {', '.join(holders)} (next "
                          f"snapshot {floor}): expiration never moves past a consumer's "
                          f"position")
                if plan is not None:
                    plan.skip(reason)
                else:
                    log.warning("expire: %s", reason)
                return end
            log.warning("expire: snapshot %d is half expired (its manifest list %s is gone: "
                        "an earlier run was stopped before deleting its snapshot file); it "
                        "is expired now whatever the retention says", end, missing)
            end = following
        return end

    def _named_by_roots(self, roots: List[Root]) -> Set[str]:
        """Every list, index manifest and statistics file the roots name in their JSON, and
        every manifest their lists that can still be read name (read already, or cached,
        by kept_metadata: the lists are small)."""
        named = {n for r in roots for n in (*r.snapshot.manifest_lists(),
                                            r.snapshot.index_manifest,
                                            r.snapshot.statistics) if n}
        for r in roots:
            for name in r.snapshot.manifest_lists():
                try:
                    named.update(m.file_name for m in self.reach.manifests(name))
                except (ValueError, OSError, CorruptMetadataError):
                    continue   # (unreadable: what the by-name path is taken for)
        return named

    # The file-name prefix each field of a snapshot names (Java and we write them so): the
    # by-name path deletes nothing else, so a field naming a file of another kind (a data
    # manifest as `indexManifest`, say) never gets that file deleted.
    _KIND_PREFIX = {"manifest-list": P.MANIFEST_LIST_PREFIX,
                    "index": P.INDEX_MANIFEST_PREFIX, "statistics": "stat-"}

    def _unnamed_metadata(self, s: Snapshot, lists, named: Set[str],
                          plan: ExpirePlan) -> Dict[str, Tuple[str, int]]:
        """What of `s`'s metadata may go, by name alone, when what the retained roots use
        could not be read: its lists, index manifest and statistics file that no root names
        and whose names are of the kind their field says.

        Its snapshot file is the only record of them: deleting it while they stay leaks
        them. Nothing but a root uses one of them, by name (an earlier, interrupted run may
        already have deleted what they list). The manifests and index files they list stay
        (left for orphan cleanup): whether a root uses them is what could not be read."""
        out: Dict[str, Tuple[str, int]] = {}
        size = {s.base_manifest_list: s.base_manifest_list_size,
                s.delta_manifest_list: s.delta_manifest_list_size,
                s.changelog_manifest_list: s.changelog_manifest_list_size}
        wanted = [("manifest-list", "manifest-list", n) for n in lists] + [
            ("manifest", "index", s.index_manifest), ("statistics", "statistics", s.statistics)]
        for where, kind, name in wanted:
            if not name or name in named:
                continue
            if not name.startswith(self._KIND_PREFIX[kind]):
                plan.skip(f"snapshot {s.id} names {name!r} as its {kind} file, which is not "
                          f"a {self._KIND_PREFIX[kind]}… name; it is kept")
                continue
            try:
                out[self.reach.path(where, name)] = (kind, size.get(name) or 0)
            except ValueError as e:   # a hostile name: never deleted
                plan.skip(str(e))
        return out

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
        # One listing, also where there can be none (an absent directory lists empty): on an
        # object store, asking whether a directory exists is a HEAD and a LIST.
        with contextlib.closing(self._read_ahead(cm, cm.list_snapshot_ids())) as reads:
            read = ((cid, self._read(cm, cid, f)) for cid, f in reads)
            return [Root(cm.snapshot_path(cid), c, "changelog") for cid, c in read if c]

    # --- acting --------------------------------------------------------------------------
    @billed   # result.requests: what it asked of the storage
    def expire(self, dry_run: bool = False, max_duration_ms: Optional[int] = None
               ) -> ExpireResult:
        """Expire snapshots and then, when the lifecycle is decoupled, changelogs. Returns
        what was expired and deleted (with dry_run: what would be, deleting nothing).

        A large range is expired in chunks of snapshots, each planned and deleted in the
        crash-safe order before the next is planned (as consecutive runs with a limit
        would), so that memory follows the chunk, not the range: what a chunk planned is
        folded into the result and dropped. The ADD positions of the deltas are scanned
        once for all chunks (ReAdds).

        Limits (operations/limits.py): with `max_duration_ms`, the run stops at the first
        chunk boundary after that long (the chunk being deleted finishes first; the first
        chunk always runs); out of memory, it stops where it is (as a crash there would:
        the next run finishes it). Either way the result says `complete=False`,
        `stopped_by` ("max-duration", "memory"), and what was done; reaching
        snapshot.expire.limit with more to expire says `stopped_by="max-deletes"`.

        Raises:
            OptionError: `max_duration_ms` is not an integer > 0 (before any I/O).
        """
        # Data file paths (what the run deletes) must be computable, before any I/O.
        self.store.check_layout("expire snapshots of")
        deadline = Deadline.after(max_duration_ms)
        own = None
        if self.executor is None and not dry_run:
            # One pool for every chunk (not one each): its threads start once, at the first
            # chunk. A thread that cannot start once memory is short hangs the pool in
            # CPython (the start waits for a bootstrap that died of a MemoryError).
            own = self.executor = ContextExecutor(self.config.thread_num or
                                                     os.cpu_count() or 1)
        self._totals, self._running = ExpireTotals(), None
        out_of_memory = False
        stopped: Optional[StopDeleting] = None
        # The table's maintenance lease (lease.py) for the whole run, planning included; a
        # dry run deletes nothing and takes none. Joined when post-commit maintenance or
        # `maintain` holds it already.
        lease = contextlib.nullcontext() if dry_run else \
            maintenance_lease(self.store, "expire-snapshots")
        try:
            # One operation for the deletion gate: directories resolved once, afresh.
            with lease, self.store.io.resolution_scope(), collector_paused():
                try:
                    return self._expire(dry_run, deadline)
                except OUT_OF_MEMORY as e:
                    if not is_out_of_memory(e):
                        raise
                    # (Reported below, outside the except block: its traceback holds the
                    # frames, and the memory, of whatever ran out.)
                    out_of_memory = True
                except StopDeleting as e:
                    # A safe point (a lost lease, an interrupt) stopped it before a delete
                    # step: what is left is what a crash there leaves, which a rerun finishes.
                    stopped = e
                if out_of_memory:
                    return self._out_of_memory(dry_run)
                return self._stopped_at_safe_point(dry_run, stopped)
        finally:
            self._totals = self._running = None
            if own is not None:
                self.executor = None
                own.shutdown(wait=True)

    def _expire(self, dry_run: bool, deadline: Optional[Deadline] = None) -> ExpireResult:
        emit(self.progress, READING, 0, None, "snapshots")
        totals = self._totals = getattr(self, "_totals", None) or ExpireTotals()
        self._readds, self._kept = ReAdds(), KeptIndex()
        self._size_first = deadline is None
        seconds = self._seconds = {"plan": 0.0, "delete": 0.0}
        chunk = FIRST_CHUNK
        self._first_kept = None
        self._known_earliest = None
        stop: Optional[str] = None
        steps, last_end = 0, None   # chunks executed (the first always runs), first kept
        try:
            while True:
                # snapshot.expire.limit counts for the whole run, not per chunk.
                limit = None if dry_run else min(chunk, self.config.max_deletes
                                                 - len(totals.expired))
                if limit is not None and limit <= 0:
                    break
                if deadline is not None and steps and deadline.reached():
                    stop = MAX_DURATION   # between two chunks: nothing is half done
                    break
                t1 = time.perf_counter()
                self._limit = limit
                plan = self.plan()
                t2 = time.perf_counter()
                seconds["plan"] += t2 - t1
                self._running = plan   # (out of memory while deleting: reported too)
                if dry_run:
                    self._spare_branches(plan)   # (what a run would delete: as _unchanged)
                done = not dry_run and self._execute(plan)
                self._running = None
                if plan.expiring:
                    # Everything below plan.end is gone and EARLIEST says so: the run's result
                    # reports it without reading the hint back (3 requests on an object
                    # store); under the lease no other process moves it meanwhile.
                    self._known_earliest = plan.end if done else None
                seconds["delete"] += time.perf_counter() - t2
                totals.add(plan, dry_run)
                n = len(totals.expired)
                emit(self.progress, READING, n, n, "snapshots")
                steps, last_end = (steps + 1, plan.end) if plan.expiring else (steps, last_end)
                if not done or not plan.expiring:
                    break
                if self._horizon is not None and plan.end is not None \
                        and plan.end >= self._horizon:
                    # The chunk reached the run's end (fixed by its first plan: what becomes
                    # expirable meanwhile is the next run's), so another plan finds nothing;
                    # it cost a post-commit run 14 of its requests on an object store.
                    break
                # The next chunk holds about CHUNK_FILES files (the last one's rate), or a
                # share of the snapshots it holds from its start to the latest (next_chunk).
                files = sum(len(v) for v in plan.deleted.values())
                held = plan.latest - plan.end + 1 if plan.latest is not None else 0
                chunk = next_chunk(len(plan.expiring), files, held)
                del plan
        finally:
            self._readds = self._kept = self._limit = self._horizon = None
            self._size_first = False
        self._first_kept = last_end
        if stop is None and 0 < self.config.max_deletes <= len(totals.expired) \
                and last_end is not None and self._more_expirable(last_end):
            stop = MAX_DELETES
        if self.config.changelog_decoupled and deadline is not None and steps \
                and deadline.reached():
            stop = MAX_DURATION   # changelog expiration is the next step: left for a rerun
        if self.config.changelog_decoupled and stop != MAX_DURATION:
            t1 = time.perf_counter()
            plan = self.plan_changelogs()
            if dry_run:
                self._spare_branches(plan)
            else:
                self._running = plan
                self._execute(plan)
                self._running = None
            seconds["delete"] += time.perf_counter() - t1
            totals.add(plan, dry_run)
        return self._result(dry_run, stop, deadline)

    def _result(self, dry_run: bool, stop: Optional[str] = None,
                deadline: Optional[Deadline] = None) -> ExpireResult:
        """The run's result from what it folded in, marked stopped when a limit stopped it."""
        totals = self._totals
        earliest = totals.earliest
        if (totals.expired or stop == MEMORY) and not dry_run:
            known = self._known_earliest
            earliest = known if known is not None else \
                self.store.snapshots.earliest_snapshot_id()
        result = totals.result(earliest, dry_run, self._seconds)
        if self.explain:
            result.kept_because = self.kept_because(self._first_kept, stop)
        if stop is not None:
            result.complete, result.stopped_by = False, stop
            result.message = self._stopped_message(result, stop, deadline)
            (log.info if stop == MAX_DELETES else log.warning)("expire %s: %s",
                                                               self.store.root, result.message)
        return result

    _first_kept: Optional[int] = None   # the end of the last chunk of the run (its plan's)
    _known_earliest: Optional[int] = None   # EARLIEST as the run's last chunk left it

    def _label(self, key: str, option: str, value: str) -> str:
        """`snapshot.num-retained.min = 10`, or the caller's words (`--retain-min 5`)."""
        label = self.labels.get(key)
        if label is None:
            return f"{option} = {value}"
        return f"{label} {value}" if label.startswith("-") else f"{label}={value}"

    def kept_because(self, first_kept: Optional[int] = None,
                     stop: Optional[str] = None) -> List[str]:
        """Why the snapshots from `first_kept` (default: the earliest) to the latest were
        kept, one line per rule of `_end`, in the order it applies them: the minimum
        retained, consumers, time, then the per-run limit. Read only; a report, so an
        unreadable snapshot or consumer gives no line rather than an error."""
        try:
            sm = self.store.snapshots
            latest = sm.latest_snapshot_id()
            first = first_kept if first_kept is not None else sm.earliest_snapshot_id()
            if latest is None or first is None or first > latest:
                return []
            cfg, out = self.config, []
            bound = max(latest - cfg.retain_min + 1, first)   # first kept by the minimum
            n = latest - bound + 1
            if n > 0:
                out.append(f"{n} snapshot(s) kept by " + self._label(
                    "retain_min", "snapshot.num-retained.min", str(cfg.retain_min)))
            consumers = [c for c in self.consumers.consumers() if c.next_snapshot < bound]
            if consumers:
                slowest = min(consumers, key=lambda c: c.next_snapshot)
                start = max(slowest.next_snapshot, first)
                out.append(f"{bound - start} snapshot(s) kept for consumer(s) "
                           f"{', '.join(sorted(c.consumer_id for c in consumers))} (the "
                           f"slowest reads from snapshot {slowest.next_snapshot})")
                bound = start
            young = bound
            if cfg.older_than_ms is not None or cfg.time_retained_ms > 0:
                older_than = cfg.older_than_ms if cfg.older_than_ms is not None \
                    else int(self.clock() * 1000) - cfg.time_retained_ms
                young = first
                while young < bound:
                    successor = self._read(sm, young + 1)
                    if successor is not None and successor.time_millis >= older_than:
                        break
                    young += 1
                if bound > young:
                    rule = self._label("older_than", "older_than", "(the cutoff)") \
                        if cfg.older_than_ms is not None else self._label(
                            "time_retained", "snapshot.time-retained",
                            _duration(cfg.time_retained_ms))
                    out.append(f"{bound - young} snapshot(s) younger than {rule}")
            if young > first and stop in (None, MAX_DELETES):
                out.append(f"{young - first} snapshot(s) left by " + self._label(
                    "max_deletes", "snapshot.expire.limit", str(cfg.max_deletes)) +
                    " (snapshots expired per run at most; a rerun continues)")
            return out
        except (OSError, PaimonCommitError) as e:
            log.info("expire: cannot tell why snapshots were kept: %s", e)
            return []

    def _out_of_memory(self, dry_run: bool) -> ExpireResult:
        """The result of a run that ran out of memory: what it did, the chunk it was
        deleting included; what it carries forward is dropped (it may be half updated)."""
        self._forget()
        if self._running is not None:
            self._totals.add(self._running, dry_run)
            self._running = None
        return self._result(dry_run, MEMORY)

    def _stopped_at_safe_point(self, dry_run: bool, stop: StopDeleting) -> ExpireResult:
        """The result of a run a safe point stopped (`stopped_by` = its cause): what it
        did, the chunk it was deleting included, as after running out of memory."""
        self._forget()
        if self._running is not None:
            self._totals.add(self._running, dry_run)
            self._running = None
        self._stop_reason = stop.reason
        return self._result(dry_run, stop.cause)

    def _more_expirable(self, first_kept: int) -> bool:
        """Whether a run that went on from `first_kept` would expire more (the retention
        rules of `_end`, as the next run applies them); read only."""
        try:
            latest = self.store.snapshots.latest_snapshot_id()
            if latest is None:
                return False
            # (The versions listed by the last chunk still hold: unchanged snapshot files
            # are not read again.)
            self._memo = {}
            return self._end(first_kept, latest, int(self.clock() * 1000),
                             self.consumers.min_next_snapshot()) > first_kept
        except (OSError, PaimonCommitError) as e:   # a report only: the run has done its work
            log.info("expire: cannot tell whether more snapshots can expire: %s", e)
            return False

    def _forget(self) -> None:
        """After a run stopped inside a step (out of memory), what this expirer carries to
        its next run may be half updated: start afresh (which also frees it)."""
        self._memo, self._versions, self._raw_memo = {}, {}, {}
        self._seen, self._listed_dirs = set(), set()
        self._known_earliest = None   # (stopped inside a step: EARLIEST is read back)
        self.reach = Reachability(self.store)

    def _stopped_message(self, r: ExpireResult, stop: str, deadline: Optional[Deadline]) -> str:
        """What a stopped run did, and how the user goes on (one line)."""
        verb = "would expire" if r.dry_run else "expired"
        did = (f"{verb} {r.expired_snapshots} snapshot(s), "
               f"{'would delete' if r.dry_run else 'deleted'} {r.deleted_files} file(s) "
               f"({r.deleted_bytes} bytes); the earliest snapshot is {r.earliest}")
        if stop == MAX_DELETES:
            return (f"stopped at snapshot.expire.limit (--max-deletes, max_deletes=) "
                    f"{self.config.max_deletes}: {did}; more snapshots can expire, a rerun "
                    f"continues")
        if stop == MAX_DURATION:
            return (f"stopped by {deadline.describe() if deadline else 'the time limit'} "
                    f"between two chunks: {did}; the table is consistent, a rerun continues")
        if stop != MEMORY:   # a safe point: a lost maintenance lease, an interrupt
            return (f"stopped before a delete step: {getattr(self, '_stop_reason', stop)}; "
                    f"{did}; the table is consistent, a rerun continues")
        return (f"ran out of memory: {did}; the table is consistent (a rerun finishes what "
                f"was being deleted). Expire fewer snapshots per run: rerun with a smaller "
                f"--max-deletes (max_deletes=, option snapshot.expire.limit; now "
                f"{self.config.max_deletes}), or with fewer threads (file-operation.thread-num); "
                f"what retained snapshots and tags use is held in any case")

    def _unchanged(self, plan: ExpirePlan) -> bool:
        """Whether what the plan rests on is as it was planned, read again right before the
        first delete (called from `_execute`, as late as possible: the re-check narrows the
        window in which another process changes the table under the plan, it cannot close
        it; the maintenance lease closes it for this library's own operations). Content is
        compared, not names: every snapshot and long-lived changelog the plan keeps (its
        bytes; an unchanged listed version stands for them, as when planning), every tag's
        target snapshot, and every consumer's position. A rollback (a kept snapshot gone or
        re-created), a tag deleted and created again under its name on another snapshot, a
        tag listing that came back short, a consumer reset below the plan's end: any of them
        is recorded in the plan and nothing is deleted; the next run plans again.

        A snapshot plan first writes its marker (expiring.py), before anything is read
        again: a tag created after the re-check read the tags then finds the marker (or,
        once the marker is removed, its snapshot gone) and takes itself back."""
        if not plan.changelogs and plan.expiring and plan.marker is None:
            plan.marker = self._markers.write(min(plan.expiring), plan.end,
                                              self._snapshot_bytes(plan.end))
        try:
            changes = self._changes(plan)
            if not changes:
                self._spare_branches(plan)
        except BaseException:   # (an unreadable tag, an interrupt: nothing is deleted)
            self._unmark_untouched(plan)
            raise
        if changes:
            plan.skip(f"the table changed while planning ({', '.join(changes)}); nothing is "
                      f"deleted, the next run plans again")
            self._unmark_untouched(plan)
            return False
        return True

    def _spare_branches(self, plan: ExpirePlan) -> None:
        """Take out of the plan every file a branch's snapshot, tag or long-lived changelog
        uses (reachability.BranchUse: branches are roots of every deletion, as of orphan
        cleanup). Called by the re-check, after what the plan rests on was read again: the
        branches are listed and their roots read as late as possible (one listing of
        branch/ on a table without branches). If a branch cannot be read, no data, manifest,
        index or statistics file is deleted; the snapshot (changelog) files still are (no
        branch uses main's: a branch holds copies)."""
        groups = [files for kind, files in plan.files.items() if kind != plan.metadata_kind]
        self.branches.spare(groups, plan.skip,
                            "changelog expiration" if plan.changelogs else "expiration")

    def _unmark_untouched(self, plan: ExpirePlan) -> None:
        """Take back the plan's marker while nothing of the plan was deleted (its snapshots
        are whole); once deletes may have begun it stays."""
        if plan.marker is not None and not plan.deleting:
            try:
                if self._markers.remove(plan.marker):
                    plan.marker = None
            except Exception as e:   # (it stays: a later run removes it)
                log.warning("expire: could not remove marker %s: %s", plan.marker.name, e)

    def _changes(self, plan: ExpirePlan) -> List[str]:
        """How what the plan rests on changed since it was planned (see _unchanged)."""
        io = self.store.io
        changes: List[str] = []
        by_dir: Dict[str, List[Tuple[str, str, bytes, Optional[str]]]] = {}
        for (directory, name), (what, data, version) in plan.kept.items():
            by_dir.setdefault(directory, []).append((name, what, data, version))
        # The first kept snapshot's bytes are compared whatever its version says (one read
        # per chunk): a rollback below the plan's end takes that file away, and a re-commit
        # re-creates it with other bytes, which a validator could miss where change times
        # are coarse and inode numbers reused (audit issue26g).
        first = None
        if not plan.changelogs and plan.end is not None:
            sm = self.store.snapshots
            first = (sm.snapshot_dir, sm.snapshot_path(plan.end).rsplit("/", 1)[-1])
        for directory, entries in by_dir.items():
            versions = io.file_versions(directory) \
                if any(e[3] is not None for e in entries) else None
            for name, what, data, version in entries:
                if versions is not None and version is not None \
                        and versions.get(name) == version and (directory, name) != first:
                    continue
                try:
                    now = io.read_bytes(io.join(directory, name))
                except FileNotFoundError:
                    changes.append(f"{what} is gone")
                    continue
                if now != data:
                    changes.append(f"{what} was replaced")
        # (An unreadable tag or consumer file raises here: nothing is deleted.)
        changes += tag_changes(plan.tags, {t.name: t.snapshot for t in self.tags.tags()})
        if plan.consumer_floor is not None:
            for c in sorted(self.consumers.consumers(), key=lambda c: c.consumer_id):
                if c.next_snapshot < plan.consumer_floor:
                    changes.append(f"consumer {c.consumer_id} is at snapshot "
                                   f"{c.next_snapshot}, below the plan's first kept "
                                   f"snapshot {plan.end}")
        return changes

    def _snapshot_bytes(self, sid: int) -> Optional[bytes]:
        """Snapshot `sid`'s file as planned with (read now if the plan did not), or None."""
        known = self._raw_memo.get((self.store.snapshots.snapshot_dir, sid))
        if known is not None:
            return known[0]
        try:
            return self.store.io.read_bytes(self.store.snapshots.snapshot_path(sid))
        except FileNotFoundError:
            return None

    def _finished(self, plan: ExpirePlan) -> None:
        """Every snapshot below `plan.end` is gone: remove this run's marker and any an
        interrupted run left whose range lies below (those snapshots are gone too)."""
        try:
            stale = [m for m in self._markers.listed() if m.end <= plan.end]
        except OSError as e:
            log.warning("expire: cannot list the markers of expirations in progress: %s", e)
            stale = [plan.marker] if plan.marker is not None else []
        for m in stale:   # (one failing never stops the others: this run's own among them)
            try:
                removed = self._markers.remove(m)
            except Exception as e:  # noqa: BLE001 -- never into a published commit
                log.warning("expire: could not remove the marker %s: %s", m.name, e)
                continue
            if not removed and m.name not in self._markers.by_hand:   # (that one: logged)
                log.warning("expire: the marker %s could not be removed; tags and rollbacks "
                            "on snapshots below %d are refused until a later run removes it",
                            m.name, m.end)
        plan.marker = None

    def _execute(self, plan: ExpirePlan) -> bool:
        """Delete what `plan` lists in the crash-safe order; True when all of it is gone
        and EARLIEST moved to the plan's end."""
        plan.deleted = {}
        if plan.end is None:
            return False
        if not self._unchanged(plan):
            return False
        plan.deleting = True
        manager = self.changelogs if plan.changelogs else self.store.snapshots
        keep_as_changelog = self.config.changelog_decoupled and not plan.changelogs
        total = len({p for v in plan.files.values() for p in v} | set(plan.metadata_files))
        d = Deleter(self.store.io, self.executor, self.config.thread_num)
        try:
            return self._delete(plan, d, manager, keep_as_changelog, total)
        except BaseException:
            if d.attempted == 0 and not plan.deleted_elsewhere:
                # Stopped at the first safe point (an interrupt, a lost lease): nothing of
                # the plan is gone, so its mark goes too, else a later run would finish a
                # range nobody deleted from (audit issue25m m2).
                plan.deleting = False
                self._unmark_untouched(plan)
            raise

    def _delete(self, plan: ExpirePlan, d: Deleter, manager, keep_as_changelog: bool,
                total: int) -> bool:
        """`_execute`'s deletes, in the crash-safe order."""
        earliest = plan.end

        def deleting() -> None:
            emit(self.progress, DELETING, sum(len(v) for v in d.deleted.values()), total)
        with d:
            plan.deleted = d.deleted
            if not all([d.files(k, list(plan.files[k]), must_finish=True)
                        for k in ("data", "changelog")]):
                # The manifests and snapshot files are the only record of these files: keep
                # them, so that the next run (or a retry) deletes what failed now.
                plan.skip(f"{len(d.left)} data file(s) could not be deleted (e.g. "
                          f"{d.left[0]}); manifests and snapshot files are kept for the next "
                          f"run")
                return False
            if self.config.clean_empty_directories:
                d.dirs(self.store.root, plan.bucket_dirs)
            deleting()
            # Each step deletes only what no later step needs to find (a kill in the middle
            # of a parallel step leaves any subset of it): manifests, then index files, then
            # the index manifests that name them, statistics, and the lists last, so that a
            # snapshot whose lists are gone has nothing else left to delete. A step that
            # could not delete a file (a failure, not a kill) stops the run there, as the
            # data step does: the lists, index manifests and snapshot files that name what
            # is left are kept, and the next run (or a retry) deletes it.
            index_dir = self.store.io.join(self.store.root, P.INDEX_DIR) + "/"
            index = list(plan.files["index"])
            steps = [("manifest", list(plan.files["manifest"])),
                     ("index", [p for p in index if p.startswith(index_dir)]),
                     ("index", [p for p in index if not p.startswith(index_dir)]),
                     ("statistics", list(plan.files["statistics"])),
                     ("manifest-list", list(plan.files["manifest-list"]))]
            for kind, paths in steps:
                if not d.files(kind, paths, must_finish=True):
                    deleting()
                    plan.skip(f"{len(d.left)} metadata file(s) could not be deleted (e.g. "
                              f"{d.left[0]}); the files naming them and the snapshot files "
                              f"are kept for the next run")
                    return False
            deleting()
            # The snapshot files go one by one; the lease is checked before the first and
            # then every GUARD_EVERY_FILES files or GUARD_EVERY_S (io/deletion.py), where
            # each file names lists this run already deleted. Where each is first kept as a
            # long-lived changelog, which still reads its lists, before each one's changelog
            # is written (audit issue26a F1: past a lost lease, changelogs the new holder had
            # expired came back, naming lists it had deleted; one before this spacing).
            d.guard_next()
            for sid, path in sorted(plan.metadata.items()):
                # Ascending: a crash or a failure leaves a contiguous suffix.
                if keep_as_changelog:
                    if (manager.snapshot_dir, sid) not in self._raw_memo:
                        plan.skip(f"snapshot {sid} is unreadable and cannot be kept as a "
                                  f"changelog; EARLIEST stays at {sid}")
                        earliest = sid
                        break
                    d.checkpoint()   # (then in_order below runs no second one)
                    self.changelogs.commit_changelog(sid, self._raw(manager, sid))
                if d.in_order(plan.metadata_kind, [path], spaced=True) == 0:
                    plan.skip(f"{path} could not be deleted; EARLIEST stays at {sid}")
                    earliest = sid
                    break
            deleting()
        manager.commit_earliest_hint(earliest)
        if earliest == plan.end and not plan.changelogs and plan.expiring:
            self._finished(plan)
        return earliest == plan.end
