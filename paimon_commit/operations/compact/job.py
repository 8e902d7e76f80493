"""Compaction of bucket-unaware append tables: rewrite the small files of each partition into
files of about `target-file-size`, and commit one COMPACT snapshot.

Paimon Java's semantics (AppendCompactCoordinator, AppendCompactTask,
BaseAppendFileStoreWrite.compactRewrite): the planner (`plan.py`) picks bins of
small files per partition; each bin is read and written again as new files with file source
COMPACT, the table's current schema id (rows of files written under older schemas are read
through schema evolution: columns matched by field id, later columns as null) and sequence
numbers counted on from the bin's first file; the snapshot DELETEs the old files and ADDs the
new ones, so the row count does not change and every earlier snapshot still reads as before.
The old files stay on storage until snapshot expiration finds no retained snapshot or tag
using them.

Conflicts are detected, never resolved by losing data: when the commit finds that an input
file is no longer live (an overwrite, a dropped partition, another compaction or a rollback
removed it meanwhile), the compaction fails with CompactionConflictError naming every file
that moved, and deletes the files it wrote. An append racing with it simply lands too.
"""
from __future__ import annotations

import logging
import math
import os
import threading
import time
import uuid
from dataclasses import replace
from typing import Any, Collection, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from ...io.metered import billed
from ...errors import AtomicCreateUnsupportedError, CommitConflictError, CommitFailedError, \
    LeaseHeldError, LeaseRecordError, OptionError, PublishOutcomeUnknownError
from ...format.manifest import FileKind, ManifestEntry
from ...format.schema import TableSchema
from ...format.snapshot import BATCH_COMMIT_IDENTIFIER, CommitKind, Snapshot
from ...options import validate_options
from ...progress import COMMITTING, COMPACTING, READING, ProgressCallback, Throttle, emit
from ...store import FileStore, PartitionSpec
from ...reachability import collector_paused
from ...lease import maintenance_lease
from ..abort import abort_files
from ..commit import CommitConfig, CommitResult, FileStoreCommit, _AttemptState
from ..publish import built_on_check
from .plan import CompactOptions, CompactPlan, evolution_problem, plan_compaction
from .result import CompactionConflictError, CompactionError, CompactResult, \
    PartitionCompaction
from .pool import rewrite_bins, start_workers_early
from .spawn import stop_workers
from .rewrite import COMPACT_SOURCE, BinRewriter, Rewritten as _Rewritten

log = logging.getLogger(__name__)

__all__ = ["compact_table", "AppendCompaction", "CompactResult", "PartitionCompaction",
           "CompactionConflictError", "CompactionError", "COMPACT_SOURCE"]

# A commit's verdicts that its snapshot surely did not land: only then are the new files
# deleted (through the one abort, which still keeps any file a snapshot or tag names).
_NOT_LANDED = (CommitConflictError, AtomicCreateUnsupportedError)


class AppendCompaction:
    """Compacts one bucket-unaware append table: `plan()`, `rewrite(plan)`, `commit(...)`;
    `run()` does all three. Every argument is checked on construction, before any I/O.

    Raises (on construction):
        UnsupportedTableError: a table this library does not write (primary-key, fixed
            bucket, ...), with the same message as a write.
        OptionError: a bad option (e.g. target-file-size) or partition spec.
    """

    def __init__(self, store: FileStore, partitions: Optional[Sequence[Mapping[str, Any]]] = None,
                 options: Optional[Mapping[str, Any]] = None,
                 commit_user: Optional[str] = None,
                 partition_rows: Optional[Collection[bytes]] = None,
                 progress: Optional[ProgressCallback] = None):
        """Args beyond the class docstring's: `partition_rows`, serialized partitions (as
        in the manifests) to look at instead of `partitions`, e.g. those a commit just
        wrote (one without small files is simply left alone: no error); `progress`, an
        optional paimon_commit.progress callback."""
        # Set by post-commit maintenance: an abort then does not wait for the maintenance
        # lease (a commit is not held up by another process's maintenance).
        self.post_commit = False
        overrides = _option_strings(options)
        merged = {**store.schema.options, **overrides}
        try:
            parsed = validate_options(merged)
        except OptionError as e:
            raise OptionError(f"compaction of {store.path}: {e}") from None
        self.options = CompactOptions.from_options(merged)
        # The writer reads data-file.prefix, file.compression, ... from the store's options:
        # a copy carries the dynamic options without changing the caller's store.
        self.store = replace(store, options=parsed)
        self.store.check_writable()
        self.specs = _partition_specs(self.store, partitions)
        self.partition_rows = None if partition_rows is None else frozenset(partition_rows)
        self.commit_user = commit_user or f"compact-{uuid.uuid4()}"
        self.progress = progress
        self._throttle = Throttle(progress)
        self._rewriter = BinRewriter(self.store, self.options.target_file_size)
        # Spawned workers started before planning, for the next rewrite (run)
        self._started: List[Any] = []

    # --- planning ------------------------------------------------------------------------
    def plan(self) -> CompactPlan:
        """Which small files of which partitions are rewritten together (reads metadata)."""
        st = self.store
        latest = st.snapshots.latest_snapshot()
        matched = [False] * len(self.specs)

        def wanted(values: Tuple[Any, ...]) -> bool:
            if not self.specs:
                return True
            hit = False
            for i, spec in enumerate(self.specs):
                if spec.matches(values):
                    matched[i] = hit = True
            return hit

        emit(self.progress, READING, 0, None, "snapshots", st.path)
        if latest is None:
            plan = CompactPlan(None, (), {})
        else:
            # Deletion vectors hide rows of live files: a rewrite ignoring them would bring
            # deleted rows back.
            st.check_readable(latest)
            # Kept raw: the commit writes a DELETE per input file by copying its record
            # bytes (format/entry_codec), not by encoding it again.
            entries = st.live_entries(latest, keep_raw=True)
            if self.partition_rows is not None:
                entries = [e for e in entries if e.partition in self.partition_rows]
            plan = plan_compaction(entries, self.options, st.manifests.decode_partition,
                                   wanted, self._schema_problem, latest.id)
            plan = replace(plan, base_lists=_lists_of(latest))
        unknown = [s for s, hit in zip(self.specs, matched) if not hit]
        if unknown:
            where = f"snapshot {latest.id}" if latest else "the table (it has no snapshot)"
            names = "; ".join(_spec_text(s, st.default_partition_name) for s in unknown)
            raise OptionError(f"compaction of {st.path}: no data files in partition(s) "
                              f"{names} in {where}")
        for name, why in plan.skipped:
            log.warning("compaction of %s leaves %s alone: %s", st.path, name, why)
        return plan

    def _schema(self, schema_id: int) -> TableSchema:
        return self._rewriter.schema(schema_id)

    def _schema_problem(self, schema_id: int) -> Optional[str]:
        current = self.store.schema
        if schema_id == current.id:
            return None
        if schema_id > current.id:
            return (f"written with schema {schema_id}, newer than the schema {current.id} "
                    f"this compaction writes")
        return evolution_problem(self._schema(schema_id), current)

    # --- rewriting -----------------------------------------------------------------------
    def rewrite(self, plan: CompactPlan, processes: Optional[bool] = None) -> List[_Rewritten]:
        """Read every bin and write its rows as new files (`rewrite.py`). On any
        failure the files written so far are deleted and the error is raised.

        Bins are independent: up to `file-operation.thread-num` (default: one per CPU) are
        rewritten at once (`pool.py`): on local storage in worker processes (decoding small
        files is CPU work, and threads share one interpreter lock), forked when no other
        thread runs, spawned otherwise when the work is worth their start-up; on threads
        with their input files fetched ahead otherwise (`processes=False` forces threads,
        e.g. inside a Spark executor). Spawned workers `run` started before planning are
        used or stopped here. Memory stays bounded by what the bins in flight hold, never by
        the table."""
        started, self._started = self._started, []
        done: List[_Rewritten] = []
        self._rewritten_inputs = 0
        self._total_inputs = sum(len(t.files) for t in plan.tasks)
        self._throttle(COMPACTING, 0, self._total_inputs, "files", self.store.path)
        tasks = list(plan.tasks)
        if not tasks:
            stop_workers(started)
            return done
        workers = self._workers()
        lock = threading.Lock()

        def on_files(n: int) -> None:
            with lock:
                self._rewritten_inputs += n
                self._throttle(COMPACTING, self._rewritten_inputs, self._total_inputs,
                               "files", self.store.path)

        try:
            rewrite_bins(self._rewriter, tasks, workers, done, on_files, processes, started)
        except BaseException:
            self.abort(done)
            raise
        order = {id(t): i for i, t in enumerate(tasks)}
        done.sort(key=lambda r: order[id(r.task)])
        return done

    def _workers(self) -> int:
        return self.store.options["file-operation.thread-num"] or os.cpu_count() or 1

    def abort(self, rewritten: Sequence[_Rewritten], committed_on: Optional[int] = None) -> int:
        """Delete the files a rewrite wrote, through the one abort (`abort.abort_files`).

        `committed_on`: the snapshot a commit of these files was computed from, if one was
        attempted (0 for none). Then the abort deletes only what no snapshot, tag or
        changelog names, and nothing at all if this compaction's commit user published a
        snapshot since that base: a file a snapshot reads is never deleted on the word of a
        verdict alone."""
        paths = [p for r in rewritten for p in r.paths]
        if not paths:
            return 0
        # Under the table's maintenance lease (lease.py): waited for as by any explicit
        # operation; after a commit (`post_commit`) not waited for. Not had, the files stay
        # (orphan cleanup removes them once nothing can need them): never deleted unleased.
        try:
            with maintenance_lease(self.store, "compaction abort",
                                   skip_if_held=self.post_commit) as held:
                if held is None:
                    log.info("compaction of %s: left the %d file(s) it wrote for orphan "
                             "cleanup (another process holds the maintenance lease)",
                             self.store.path, len(paths))
                    return 0
                if committed_on is not None:
                    result = abort_files(self.store, paths, commit_user=self.commit_user,
                                         since_snapshot=committed_on)
                else:   # never handed to a commit: no snapshot can name them
                    result = abort_files(self.store, paths, handed_out=False)
        except LeaseHeldError as e:
            log.warning("compaction of %s: left the %d file(s) it wrote for orphan cleanup: "
                        "%s", self.store.path, len(paths), e)
            return 0
        except LeaseRecordError as e:
            if not self.post_commit:
                raise   # an explicit compaction refuses with it, as explicit maintenance
            # After a commit: a damaged lease record must not fail the commit's turn (see
            # TableCommit._run_maintenance); the files wait for orphan cleanup.
            log.warning("compaction of %s: left the %d file(s) it wrote for orphan cleanup: "
                        "%s", self.store.path, len(paths), e)
            return 0
        log.info("compaction of %s: deleted %d of the %d file(s) it wrote", self.store.path,
                 len(result.deleted), len(paths))
        return len(result.deleted)

    # --- committing ----------------------------------------------------------------------
    def commit(self, plan: CompactPlan, rewritten: Sequence[_Rewritten]) -> CommitResult:
        """One COMPACT snapshot: DELETE every input file, ADD every new one. A conflict
        (an input file no longer live) raises CompactionConflictError after deleting the
        new files. Only the commit's verdict that the snapshot did not land deletes them:
        any other failure keeps them (orphan cleanup removes them if no snapshot uses them)
        and raises; PublishOutcomeUnknownError when the commit could not tell."""
        st = self.store
        total_buckets = st.options["bucket"]
        inputs = [e for r in rewritten for e in r.task.files]
        adds = [ManifestEntry(FileKind.ADD, r.task.partition, 0, total_buckets, f)
                for r in rewritten for f in r.files]
        changes = [e.as_delete() for e in inputs] + adds
        partitions = {e.partition for e in inputs}

        def at(latest: Optional[Snapshot]) -> List[ManifestEntry]:
            # Checked on every attempt, against the snapshot it builds on; names every
            # file that moved (FileStoreCommit's own check stops at the first one).
            if latest is not None and latest.index_manifest:
                # The base had none (plan() refuses them): deletion vectors written
                # meanwhile may hide rows of our inputs, which the new files still hold.
                raise CompactionConflictError(
                    f"compaction of {st.path} conflicts with snapshot {latest.id}: it has "
                    f"an index manifest ({latest.index_manifest}), written meanwhile; "
                    f"nothing is committed")
            if latest is not None and plan.base_lists and \
                    _lists_of(latest) == plan.base_lists:
                # The very snapshot that was planned (manifest list names are unique, so a
                # snapshot re-created with the same id after a rollback differs): every
                # input is live in it. FileStoreCommit checks again.
                return changes
            live = set() if latest is None else {
                e.identifier for e in st.live_entries(latest) if e.partition in partitions}
            moved = [st.data_file_path(e) for e in inputs if e.identifier not in live]
            if moved:
                where = f"snapshot {latest.id}" if latest else "the table (no snapshot)"
                shown = ", ".join(moved[:10]) + (f" and {len(moved) - 10} more"
                                                 if len(moved) > 10 else "")
                raise CompactionConflictError(
                    f"compaction of {st.path} conflicts: {len(moved)} of its {len(inputs)} "
                    f"input files are no longer live in {where} (removed by a concurrent "
                    f"overwrite, partition drop, compaction or rollback): {shown}; nothing "
                    f"is committed", moved)
            return changes

        committer = FileStoreCommit(st, self.commit_user, CommitConfig.from_options(st.options))
        emit(self.progress, COMMITTING, 0, 1, "snapshots", st.path)
        state = _AttemptState()
        try:
            return committer._run(at, CommitKind.COMPACT, BATCH_COMMIT_IDENTIFIER,
                                  check_conflicts=True, state=state)
        except _NOT_LANDED as e:
            if state.uncertains:
                # An earlier attempt's publish failed with an I/O error: not landed when the
                # conflict was found is not never (a create can still land on the store
                # later, whenever its name is free), and that snapshot names the new files.
                kept = (f"its {len(adds)} new file(s) are kept, as an earlier publish of it "
                        f"failed with an I/O error and may still land (orphan cleanup removes "
                        f"them if no snapshot uses them)")
                log.warning("compaction of %s: %s: %s", st.path, kept, e)
                raise type(e)(f"{e}; {kept}", *([e.moved_files] if isinstance(
                    e, CompactionConflictError) else [])) from e
            # The commit's verdict: its snapshot did not land (a conflict is found before
            # a publish is attempted, and no publish of it failed with an I/O error; a
            # refused create created nothing).
            n = self.abort(rewritten, committed_on=plan.base_snapshot_id or 0)
            if isinstance(e, CompactionConflictError):
                total = sum(len(r.paths) for r in rewritten)
                done = f"deleted the {n} file(s) it wrote" if n == total else \
                    (f"deleted {n} of the {total} file(s) it wrote (the others are named by "
                     f"the table or could not be checked: kept)")
                raise CompactionConflictError(f"{e}; {done}", e.moved_files) from None
            raise
        except Exception as e:
            # Anything else leaves the outcome open (a lost reply, an outcome the commit
            # could not settle, a snapshot that exists outside the lineage, a budget that ran
            # out mid-publish): the new files may be read by a snapshot, so none is deleted.
            landed = self._landed(plan.base_snapshot_id)
            if landed is not None:
                log.warning("compaction of %s failed (%s) but its snapshot %d is in the "
                            "table's lineage", st.path, e, landed)
                return CommitResult(landed, 0, CommitKind.COMPACT, len(adds), len(inputs))
            kept = (f"compaction of {st.path}: its {len(adds)} new file(s) are kept, as its "
                    f"snapshot may have landed (orphan cleanup removes them if no snapshot "
                    f"uses them)")
            log.warning("%s: %s", kept, e)
            if type(e) in (CommitFailedError, PublishOutcomeUnknownError):
                raise type(e)(f"{kept}: {e}") from e
            raise

    def _landed(self, base: Optional[int]) -> Optional[int]:
        """This compaction's snapshot, if a publish the commit could not confirm (a lost
        reply, a budget that ran out mid-publish) landed and is in the lineage later
        snapshots build on; None otherwise, or when that cannot be told (the files are then
        kept). Being a COMPACT snapshot of our commit user is not enough: a re-created id
        that could not be removed is one too, outside the lineage (the commit's verdict on it
        stands)."""
        st = self.store
        sm = st.snapshots
        try:
            latest = sm.latest_snapshot_id()
            for sid in range((base or 0) + 1, (latest or 0) + 1):
                s = sm.try_snapshot(sid)
                if s is None or s.commit_user != self.commit_user \
                        or s.commit_kind != CommitKind.COMPACT:
                    continue
                data = st.io.read_bytes(sm.snapshot_path(sid))
                if sm.in_lineage(sid, data, built_on_check(st, s)):
                    return sid
        except Exception as e:  # noqa: BLE001 - cannot tell: not landed as far as we know
            log.warning("compaction of %s: cannot tell whether its snapshot landed: %s",
                        st.path, e)
        return None

    # --- all of it -----------------------------------------------------------------------
    @billed   # result.requests: what it asked of the storage
    def run(self, dry_run: bool = False) -> CompactResult:
        t0 = time.monotonic()
        # Worker processes that would be spawned for the bins start now and import while
        # this thread plans (pool.start_workers_early); only for a whole-table compaction
        # (a post-commit one looks at the partitions just written: little work).
        started = [] if dry_run or self.specs or self.partition_rows is not None else \
            start_workers_early(self._rewriter, self._workers())
        try:
            # Planning and committing decode and encode an entry per input file (allocation
            # bound, like expiration: the collector's walks cost a fifth of it). The rewrite
            # runs with the collector on: its workers are forked from this state.
            with collector_paused():
                plan = self.plan()
            t1 = time.monotonic()
            seconds = {"plan": t1 - t0}
            if dry_run or not plan.tasks:
                stop_workers(started)
                result = self._result(plan, None, dry_run, None, seconds)
                seconds["total"] = time.monotonic() - t0
                log.info("%s", result.message)
                return result
            # The rewrite uses or stops them (a subclass's or a test's rewrite may not).
            self._started, started = started, []
            rewritten = self.rewrite(plan)
        finally:
            stop_workers(self._started)
            self._started = []
            stop_workers(started)
        t2 = time.monotonic()
        seconds["rewrite"] = t2 - t1
        with collector_paused():
            commit = self.commit(plan, rewritten)
        seconds["commit"] = time.monotonic() - t2
        seconds["total"] = time.monotonic() - t0
        result = self._result(plan, rewritten, False, commit, seconds)
        log.info("%s", result.message)
        return result

    def _result(self, plan: CompactPlan, rewritten: Optional[Sequence[_Rewritten]],
                dry_run: bool, commit: Optional[CommitResult],
                seconds: Dict[str, float]) -> CompactResult:
        st = self.store
        target = self.options.target_file_size
        per: Dict[bytes, List[int]] = {}
        for task in plan.tasks:
            p = per.setdefault(task.partition, [0, 0, 0, 0, 0])
            p[0] += 1
            p[1] += len(task.files)
            p[2] += task.input_bytes
            if rewritten is None:  # a dry run estimates: about target-size files
                p[3] += max(1, math.ceil(task.input_bytes / target))
                p[4] += task.input_bytes
        for r in rewritten or ():
            p = per[r.task.partition]
            p[3] += len(r.files)
            p[4] += sum(f.file_size for f in r.files)
        parts = []
        for partition, (tasks, nfiles, nbytes, wfiles, wbytes) in per.items():
            before = plan.live[partition]
            parts.append(PartitionCompaction(
                st.partition_dict(st.manifests.decode_partition(partition)), tasks,
                before[0], before[1], nfiles, nbytes, wfiles, wbytes))
        return CompactResult(st.path, dry_run, plan.base_snapshot_id,
                             commit.snapshot_id if commit else None, tuple(parts),
                             plan.remaining, plan.skipped, seconds,
                             commit.attempts if commit else 0)


def _lists_of(snapshot: Snapshot) -> Tuple[str, ...]:
    return (snapshot.base_manifest_list, snapshot.delta_manifest_list)


def _option_strings(options: Optional[Mapping[str, Any]]) -> Dict[str, str]:
    if options is None:
        return {}
    if not isinstance(options, Mapping):
        raise OptionError(f"compaction options must be a dict of option names to values, "
                          f"got {options!r}")
    return {str(k): str(v).lower() if isinstance(v, bool) else str(v)
            for k, v in options.items()}


def _spec_text(spec: PartitionSpec, default_name: str) -> str:
    """A partition spec as the command line takes it: `dt=2024-01-01,hr=7`."""
    return ",".join(f"{k}={default_name if v is None else v}" for k, v in spec.spec.items())


def _partition_specs(store: FileStore, partitions: Optional[Sequence[Mapping[str, Any]]]
                     ) -> List[PartitionSpec]:
    if partitions is None:
        return []
    if isinstance(partitions, Mapping) or not isinstance(partitions, (list, tuple)):
        raise OptionError(f"partitions must be a list of partition specs (dicts), got "
                          f"{partitions!r}")
    if not partitions:
        raise OptionError("partitions is empty: name at least one partition spec, or pass "
                          "None to compact every partition")
    specs = []
    for p in partitions:
        try:
            specs.append(store.partition_spec(p))
        except (TypeError, ValueError) as e:
            raise OptionError(f"bad partition spec {p!r} for table {store.path}: {e}") \
                from None
    return specs


def compact_table(table_or_store: Union[Any, str], partitions: Optional[Sequence[Mapping[
                  str, Any]]] = None, dry_run: bool = False,
                  options: Optional[Mapping[str, Any]] = None,
                  progress: Optional[ProgressCallback] = None) -> CompactResult:
    """Compact the small files of a bucket-unaware append table (Paimon's rules and options:
    target-file-size, compaction.small-file-ratio, compaction.min.file-num,
    compaction.file-num-limit, source.split.open-file-cost).

    Args:
        table_or_store: a Table, a FileStore, or a table path.
        partitions: partition specs (dicts, possibly partial) to compact; None: all.
        dry_run: plan only; nothing is written or committed.
        options: dynamic options on top of the table's, for this compaction only.
        progress: optional paimon_commit.progress callback (reading metadata, compacting
            files, committing).

    Returns:
        CompactResult; `nothing_to_compact` when no partition has enough small files
        (then no snapshot is committed).

    Raises:
        UnsupportedTableError: a table this library does not write (before any I/O).
        OptionError: a bad option or partition spec (before any I/O), or a partition with
            no data files.
        CompactionConflictError: input files were removed by a concurrent commit; the new
            files were deleted and nothing was committed.
    """
    if isinstance(table_or_store, FileStore):
        store = table_or_store
    elif isinstance(getattr(table_or_store, "store", None), FileStore):
        store = table_or_store.store
    elif isinstance(table_or_store, str):
        store = FileStore.open(table_or_store)
    else:
        raise TypeError(f"compact_table expects a Table, a FileStore or a path, got "
                        f"{type(table_or_store).__name__}")
    return AppendCompaction(store, partitions, options, progress=progress).run(dry_run=dry_run)
