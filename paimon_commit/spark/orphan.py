"""Distributed orphan cleanup for tables with millions of files.

Same algorithm and safety rules as OrphanFilesCleaner, with the wide parts on Spark: bucket
directories are listed by executors, manifests are read by executors, the candidates-minus-used
anti-join runs as a Spark join, and executors delete through the same FileIO gate. The driver
still lists the (few) metadata and partition directories, reads snapshots and tags, applies the
age threshold and the veto, and removes empty directories, so the result is identical to the
local mode on the same table.

Failures of Spark jobs are this library's errors, never raw Spark exceptions: before any
delete, OrphanCleanAborted (nothing was deleted); while executors delete, DistributedDeleteFailed
after the driver has recorded, in its FileIO's deletion log, every orphan no longer there (the
CLI then lists them and exits 1, not "invalid input, nothing touched"). Files the executors
delete are recorded in that log too, as the driver's own deletes are.
"""
from __future__ import annotations

import logging
import re
from typing import Iterable, Iterator, List, Optional, Tuple

from ..errors import OptionError, PaimonCommitError
from ..io import FileIO, FileStatus
from ..io.deletion import checkpoint
from ..operations.orphan import OrphanFilesCleaner
from ..operations.orphan_context import (
    Candidate, CleanContext, OrphanCleanAborted, OrphanCleanResult, classify,
)
from ..reachability import Reachability, Unreadable, manifest_names

log = logging.getLogger(__name__)

__all__ = ["DistributedOrphanFilesCleaner", "DistributedDeleteFailed"]


class DistributedDeleteFailed(PaimonCommitError):
    """A Spark job deleting orphans failed part-way: the orphans no longer there were recorded
    in the FileIO's deletion log; the others are still there (a later run deletes them)."""


_EXCEPTION_LINE = re.compile(r"^\s*([\w.]*(Error|Exception|Interrupt)): .+")


def spark_reason(error: BaseException) -> str:
    """One line saying why a Spark job failed: the last `SomeError: message` line of the
    Python worker's traceback (Spark wraps it in pages of Java stack), else the first line."""
    text = str(error).strip()
    lines = [ln.strip() for ln in text.splitlines() if _EXCEPTION_LINE.match(ln)]
    reason = lines[-1] if lines else (text.splitlines() or [type(error).__name__])[0]
    return reason[:500]

_Row = Tuple[str, str, int, int, str]  # path, name, size, mtime_ms, kind


# Executors get the driver's FileIO (pickled): the storage options it was opened with (an
# object store's endpoint and credentials) travel with it, no executor environment needed.

def _list_bucket_files(io: FileIO, dirs: Iterable[str]) -> Iterator[_Row]:
    for d in dirs:
        listing = io.list_files(d)   # regular files only, with their status
        prefix = d.rstrip("/") + "/"
        for name, size, mtime in zip(listing.names, listing.sizes, listing.mtimes_ms):
            yield prefix + name, name, size, mtime, classify(name, "data")


def _used_names_of_manifests(table_path: str, io: FileIO,
                             manifests: Iterable[Tuple[str, bool]]
                             ) -> Iterator[str]:
    from ..store import FileStore
    mio = FileStore.open(table_path, io).manifests
    for name, needed in manifests:
        yield from manifest_names(mio, name, needed)


def _delete_paths(io: FileIO, paths: Iterable[str]) -> Iterator[str]:
    return iter(io.delete_files(list(paths)))


def _shippable(io: FileIO) -> FileIO:
    """A copy of the driver's FileIO for the executors, without its deletion log (the driver
    records what the executors report as deleted)."""
    import copy
    out = copy.copy(io)
    out.deletion_log = None
    return out


class DistributedOrphanFilesCleaner(OrphanFilesCleaner):
    def __init__(self, context: CleanContext, spark=None, parallelism: Optional[int] = None):
        if context.file_list is not None:   # (the executors list the table themselves)
            raise OptionError("a file list (file_list=, --file-list) is not supported by the "
                              "distributed orphan cleanup; run it locally")
        super().__init__(context)
        if spark is None:
            try:
                from pyspark.sql import SparkSession
            except ImportError:
                raise OptionError("distributed orphan cleanup needs pyspark (pip install "
                                  "'paimon_commit[spark]')") from None
            try:
                spark = SparkSession.getActiveSession() or SparkSession.builder \
                    .appName("paimon-commit remove-orphan-files").getOrCreate()
            except Exception as e:  # noqa: BLE001 - e.g. no Java: one clear error
                raise PaimonCommitError(f"cannot start a Spark session: {spark_reason(e)}") \
                    from None
        self.spark = spark
        self.parallelism = parallelism or spark.sparkContext.defaultParallelism

    def find_orphans(self, executor, result: OrphanCleanResult
                     ) -> Tuple[List[Candidate], List[FileStatus]]:
        try:
            return self._find_orphans(executor, result)
        except (PaimonCommitError, OSError):
            raise
        except Exception as e:  # noqa: BLE001 - a Spark job failed before any delete
            raise OrphanCleanAborted(f"a Spark job listing or selecting the orphans of "
                                     f"{self.ctx.table_path} failed ({spark_reason(e)}); "
                                     f"nothing was deleted") from None

    def _find_orphans(self, executor, result: OrphanCleanResult
                      ) -> Tuple[List[Candidate], List[FileStatus]]:
        import time

        from pyspark.sql import types as T
        sc, path, n = self.spark.sparkContext, self.ctx.table_path, self.parallelism
        io = _shippable(self.io)
        t0 = time.perf_counter()
        # 1. Candidates first. Metadata directories are few and small: the driver lists them
        # (a partition-scoped run lists none: only branch/ and tag/, for the roots check).
        if self.scope is None:
            meta = [(c.status.path, c.status.name, c.status.size, c.status.mtime_ms, c.kind)
                    for c in self.list_metadata_candidates()]
        else:
            meta = self._list_roots_first()
        buckets, dirs = self.list_bucket_dirs(executor)
        bucket_paths = [b.path for b in buckets]
        data = sc.parallelize(bucket_paths, max(1, min(n, len(bucket_paths)))) \
            .mapPartitions(lambda it: _list_bucket_files(io, it))
        schema = T.StructType([T.StructField("path", T.StringType()),
                               T.StructField("name", T.StringType()),
                               T.StructField("size", T.LongType()),
                               T.StructField("mtime_ms", T.LongType()),
                               T.StructField("kind", T.StringType())])
        candidates = self.spark.createDataFrame(sc.parallelize(meta, 1).union(data), schema) \
            .cache()
        result.candidates = candidates.count()   # materialise the listing before phase 2
        t1 = time.perf_counter()

        # 2. Used names: roots and lists on the driver, manifests on executors.
        roots = self.roots()
        try:
            reach = Reachability(self.store, full_lists=self.scope is not None)
            names, manifests = reach.used_metadata(roots)
        except Unreadable as e:
            candidates.unpersist()
            raise OrphanCleanAborted(f"{e}; nothing was deleted") from None
        if self.scope is not None:   # only the manifests that can hold a listed partition
            manifests = self._prune_manifests(reach, manifests)
            result.partitions_listed = self.scope.partitions
            result.manifests_read, result.manifests_skipped = self._manifests_pruned
        manifest_list = sorted(manifests.items())
        try:
            used_rdd = sc.parallelize(sorted(names), 1).union(
                sc.parallelize(manifest_list, max(1, min(n, len(manifest_list))))
                .mapPartitions(lambda it: _used_names_of_manifests(path, io, it)))
            used = self.spark.createDataFrame(used_rdd.map(lambda x: (x,)), "name string") \
                .distinct().cache()
            result.used = used.count()
        except Exception as e:  # noqa: BLE001 - a task could not read a manifest
            candidates.unpersist()
            raise OrphanCleanAborted(f"reading manifests on executors failed ({e}); nothing "
                                     f"was deleted") from None
        if roots and result.used == 0:
            raise OrphanCleanAborted("the used-file set is empty although the table has "
                                     "snapshots; nothing was deleted")
        t2 = time.perf_counter()

        # 3. Anti-join on file name (as the reference), then the same filters as local mode.
        unused_rows = candidates.join(used, "name", "left_anti").collect()
        candidates.unpersist()
        used.unpersist()
        unused = [Candidate(FileStatus(r["path"], r["name"], r["size"], r["mtime_ms"], False),
                            r["kind"]) for r in unused_rows]
        orphans = self.filter_unused(unused, result)
        result.seconds.update({"list": t1 - t0, "read_used": t2 - t1,
                               "select": time.perf_counter() - t2})
        return orphans, dirs

    def delete(self, orphans: List[Candidate], executor) -> List[Candidate]:
        if not orphans:
            return []
        sc, io = self.spark.sparkContext, _shippable(self.io)
        paths = [c.status.path for c in orphans]
        # The driver holds the maintenance lease: checked once before the one delete job
        # (executors cannot stop it half-way; the job is this run's one delete step).
        checkpoint()
        # What a commit published since the plan is kept (as locally, before each batch).
        left = set(self._not_committed_since_plan(paths))
        if len(left) < len(paths):
            orphans = [c for c in orphans if c.status.path in left]
            paths = [c.status.path for c in orphans]
        if not paths:
            return []
        try:
            deleted = set(sc.parallelize(paths, max(1, min(self.parallelism, len(paths))))
                          .mapPartitions(lambda it: _delete_paths(io, it)).collect())
        except Exception as e:  # noqa: BLE001 - a task failed after others may have deleted
            gone = self._no_longer_there(paths)
            said = "an unknown number" if gone is None else str(len(gone))
            raise DistributedDeleteFailed(
                f"deleting the orphans of {self.ctx.table_path} on Spark executors failed "
                f"({spark_reason(e)}); {said} of {len(paths)} had been deleted") from None
        self._record(p for p in paths if p in deleted)
        return [c for c in orphans if c.status.path in deleted]

    def _record(self, deleted: Iterable[str]) -> None:
        """Executors deleted with a copy of the FileIO that has no log: record it here."""
        if self.io.deletion_log is not None:
            self.io.deletion_log.extend(deleted)

    def _no_longer_there(self, paths: List[str]) -> Optional[List[str]]:
        """After a failed delete job: the orphans gone (recorded as deleted), or None when
        the storage cannot tell."""
        try:
            gone = [p for p in paths if not self.io.exists(p)]
        except (OSError, PaimonCommitError) as e:
            log.warning("cannot tell which orphans of %s were deleted: %s",
                        self.ctx.table_path, e)
            return None
        self._record(gone)
        return gone
