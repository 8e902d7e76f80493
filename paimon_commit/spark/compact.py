"""Distributed compaction of bucket-unaware append tables, for tables too big for one machine.

Same plan, same rewrite and same commit as the local compaction (operations/compact.py), with
the wide part on Spark: the driver plans (AppendCompaction.plan: Paimon's bins per partition),
the bins are spread over executors, each executor rewrites its bins with the very code the
local compaction runs (AppendCompaction.rewrite on a plan holding only its bins) and returns the
new DataFileMeta records, and the driver commits ONCE: one COMPACT snapshot, the same conflict
rules (an input file removed meanwhile fails the commit with CompactionConflictError).

Nothing is left behind. Every file the executors write carries this run's marker in its name
(`data-file.prefix` + `compact-<run id>-`), so the driver can find them all under the planned
partitions' bucket directories, including those of task attempts whose results it never saw (a
failed job's finished tasks, speculative duplicates): after a failed job or a lost conflict
they are all deleted through the FileIO gate; after a commit, those the snapshot does not name.
The run id is fresh for every run: no other writer's file can match it.

Each executor learns the stored-to-input size ratio on its own bins (the local compaction
learns it over all bins in turn), so a bin big enough to be cut into several files may be cut
differently than locally; bins of one output file each come out the same.
"""
from __future__ import annotations

import logging
import time
import uuid
from typing import Any, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Tuple

from ..errors import OptionError, PaimonCommitError
from ..format.manifest import DataFileMeta
from ..format.schema import TableSchema
from ..io import FileIO
from ..io import for_path as file_io_for_path
from ..io.uri import split_credentials
from ..operations.abort import abort_files
from ..operations.compact import AppendCompaction, CompactionConflictError, CompactionError, \
    CompactPlan, CompactResult, CompactTask
from ..operations.compact.job import _NOT_LANDED, _Rewritten
from ..store import FileStore
from .orphan import _shippable, spark_reason

log = logging.getLogger(__name__)

__all__ = ["compact", "DistributedCompaction"]

_Done = Tuple[int, List[DataFileMeta], List[str]]  # bin index, new files, their paths


def _rewrite_bins(path: str, io: FileIO, schema: TableSchema, options: Dict[str, str],
                  base: Optional[int], bins: Iterable[Tuple[int, CompactTask]]
                  ) -> Iterator[_Done]:
    """On an executor: rewrite these bins exactly as the local compaction does (a failing
    bin deletes what this task wrote before raising)."""
    items = list(bins)
    if not items:
        return iter(())
    # The driver's schema, not the latest one: the files must be written with the schema
    # the plan was checked against.
    job = AppendCompaction(FileStore.from_schema(path, io, schema), None, options)
    # Threads, not worker processes: Spark spreads the bins over its own executors.
    done = job.rewrite(CompactPlan(base, tuple(t for _, t in items), {}), processes=False)
    return iter([(i, r.files, r.paths) for (i, _), r in zip(items, done)])


class DistributedCompaction:
    """Compacts one table with the bins rewritten on Spark executors; `run()` returns the
    same CompactResult as the local compaction. Arguments are checked on construction, before
    any I/O (the same errors as AppendCompaction)."""

    def __init__(self, store: FileStore, spark=None,
                 partitions: Optional[Sequence[Mapping[str, Any]]] = None,
                 options: Optional[Mapping[str, Any]] = None,
                 parallelism: Optional[int] = None, commit_user: Optional[str] = None):
        if parallelism is not None and (isinstance(parallelism, bool)
                                        or not isinstance(parallelism, int)
                                        or parallelism < 1):
            raise OptionError(f"parallelism must be a positive integer, got {parallelism!r}")
        self.run_id = uuid.uuid4().hex[:16]
        # The checks (table kind, options, partition specs) with the caller's options.
        base = AppendCompaction(store, partitions, options, commit_user)
        prefix = base.store.options["data-file.prefix"]
        self.marker = f"{prefix}compact-{self.run_id}-"
        self.options = {**{str(k): _text(v) for k, v in (options or {}).items()},
                        "data-file.prefix": self.marker}
        self.job = AppendCompaction(store, partitions, self.options, base.commit_user)
        self.store = self.job.store
        self.spark = spark if spark is not None else _session()
        self.parallelism = parallelism or self.spark.sparkContext.defaultParallelism

    def run(self, dry_run: bool = False) -> CompactResult:
        t0 = time.monotonic()
        job = self.job
        plan = job.plan()
        t1 = time.monotonic()
        seconds = {"plan": t1 - t0}
        if dry_run or not plan.tasks:
            result = job._result(plan, None, dry_run, None, seconds)
            seconds["total"] = time.monotonic() - t0
            log.info("%s", result.message)
            return result
        rewritten = self.rewrite(plan)
        t2 = time.monotonic()
        seconds["rewrite"] = t2 - t1
        # Kept by file name: the snapshot names files by name, and a listing may spell a
        # directory differently than the writer's join did.
        handed = {f.file_name for r in rewritten for f in r.files}
        try:
            commit = job.commit(plan, rewritten)
        except _NOT_LANDED:
            # The commit's verdict that nothing landed: it aborted the files it was given
            # (through the one abort); the sweep takes those of task attempts the driver
            # never heard of, which no commit was handed.
            self._sweep(plan, keep=handed)
            raise
        # Any other failure may have published: every file of the run is kept (orphan
        # cleanup removes those no snapshot uses).
        self._sweep(plan, keep=handed)
        seconds["commit"] = time.monotonic() - t2
        seconds["total"] = time.monotonic() - t0
        result = job._result(plan, rewritten, False, commit, seconds)
        log.info("%s on Spark", result.message)
        return result

    def rewrite(self, plan: CompactPlan) -> List[_Rewritten]:
        """The bins rewritten on executors, in plan order. A failing Spark job raises
        CompactionError (CompactionConflictError when an input file disappeared) after every
        file of this run was deleted."""
        st = self.store
        io = _shippable(st.io)
        path, schema, options = st.path, st.schema, self.options
        base = plan.base_snapshot_id
        items = list(enumerate(plan.tasks))
        n = max(1, min(self.parallelism, len(items)))
        sc = self.spark.sparkContext
        try:
            rows = sc.parallelize(items, n).mapPartitions(
                lambda it: _rewrite_bins(path, io, schema, options, base, it)).collect()
        except Exception as e:  # noqa: BLE001 - a Spark job failed: this library's error
            reason = spark_reason(e)
            n_deleted = self._sweep(plan, keep=())
            what = (f"a Spark job rewriting the {len(items)} bin(s) of {st.path} failed "
                    f"({reason}); nothing is committed; deleted the {n_deleted} file(s) it "
                    f"wrote")
            if "CompactionConflictError" in reason:
                raise CompactionConflictError(what) from None
            raise CompactionError(what) from None
        by_index = {i: (files, paths) for i, files, paths in rows}
        missing = [i for i, _ in items if i not in by_index]
        if missing:  # cannot happen with Spark's collect(); never commit half a plan
            self._sweep(plan, keep=())
            raise CompactionError(f"compaction of {st.path}: no result for bin(s) {missing} "
                                  f"from the Spark job; nothing is committed")
        return [_Rewritten(t, list(by_index[i][0]), list(by_index[i][1])) for i, t in items]

    def _sweep(self, plan: CompactPlan, keep) -> int:
        """Delete this run's files (named with its marker) in the planned partitions, except
        those named in `keep`: files no commit was handed (never in a snapshot), through
        the one abort. Returns how many were deleted."""
        st = self.store
        dirs = sorted({st.bucket_dir(t.values, 0) for t in plan.tasks})
        paths = []
        for d in dirs:
            try:
                statuses = st.io.list_status(d)
            except OSError as e:  # cannot list: leave them to orphan cleanup
                log.warning("compaction of %s: cannot list %s to remove this run's files: %s",
                            st.path, d, e)
                continue
            paths.extend(s.path for s in statuses
                         if not s.is_dir and s.name.startswith(self.marker)
                         and s.name not in keep)
        if not paths:
            return 0
        deleted = abort_files(st, paths, handed_out=False).deleted
        log.info("compaction of %s: deleted %d file(s) of run %s not in a snapshot", st.path,
                 len(deleted), self.run_id)
        return len(deleted)


def _text(v: Any) -> str:
    return str(v).lower() if isinstance(v, bool) else str(v)


def _session():
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        raise OptionError("compaction on Spark needs pyspark (pip install "
                          "'paimon_commit[spark]')") from None
    try:
        return SparkSession.getActiveSession() or SparkSession.builder \
            .appName("paimon-commit compact").getOrCreate()
    except Exception as e:  # noqa: BLE001 - e.g. no Java: one clear error
        raise PaimonCommitError(f"cannot start a Spark session: {spark_reason(e)}") from None


def compact(spark, table_path: str, partitions: Optional[Sequence[Mapping[str, Any]]] = None,
            dry_run: bool = False, options: Optional[Mapping[str, Any]] = None,
            parallelism: Optional[int] = None,
            storage_options: Optional[Mapping[str, str]] = None) -> CompactResult:
    """Compact the small files of a bucket-unaware append table on Spark: the driver plans
    and commits one COMPACT snapshot, executors rewrite the bins.

    Args:
        spark: the SparkSession (None: the active one, or a new one).
        table_path: the table (local path or URI the executors can reach).
        partitions: partition specs (dicts, possibly partial) to compact; None: all.
        dry_run: plan only; nothing is written or committed (no Spark job runs).
        options: dynamic options on top of the table's (target-file-size, ...).
        parallelism: Spark tasks (default: the context's default parallelism).
        storage_options: how to reach the storage (s3.endpoint, ...), sent to executors.

    Returns:
        The same CompactResult as `compact_table`.

    Raises:
        UnsupportedTableError, OptionError: as `compact_table`, before any I/O.
        CompactionConflictError: input files were removed by a concurrent commit; every
            file this run wrote was deleted and nothing was committed.
        CompactionError: a Spark job failed; every file this run wrote was deleted.
    """
    if options is not None and not isinstance(options, Mapping):
        raise OptionError(f"compaction options must be a dict of option names to values, "
                          f"got {options!r}")
    path, storage = split_credentials(str(table_path), dict(storage_options or {}))
    store = FileStore.open(path, file_io_for_path(path, storage))
    return DistributedCompaction(store, spark, partitions, options, parallelism).run(dry_run)
