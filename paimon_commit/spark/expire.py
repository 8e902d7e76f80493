"""Snapshot expiration with the data files deleted on Spark executors (issue 19, item 4).

The driver keeps what decides safety: the plan (ExpireSnapshots.plan: which snapshots expire,
which data files no retained snapshot, tag, changelog or consumer needs), the tag re-check
right before the first delete, and the crash-safe order. Only the wide part moves to the
executors: deleting the data (and changelog) files, which is most of the deletes of a large
expiration. Then the driver runs the local execution for the rest — manifests and lists,
then snapshot files in ascending order, then the EARLIEST hint — so a crash at any point
leaves what the local mode leaves, and the result is the local mode's on the same table.

A data file an executor could not delete (or a Spark job failing part-way) stops the run
before any manifest or snapshot file is deleted, as locally: they are the only record of the
files still there, and the next run deletes them. The files the executors deleted are recorded
in the driver's FileIO deletion log, as the driver's own deletes are.

Not distributed (yet): reading the expired manifests while planning — that stays in the
driver's planner (reachability.py), which streams them with bounded memory.
"""
from __future__ import annotations

import logging
from typing import Dict, List, Optional, Tuple

from ..errors import OptionError
from ..io import for_path as file_io_for_path
from ..io.deletion import checkpoint, still_there
from ..io.uri import split_credentials
from ..operations.expire import ExpireSnapshots
from ..operations.expire_config import ExpireConfig
from ..operations.expire_plan import ExpirePlan, ExpireResult
from ..store import FileStore
from .orphan import _delete_paths, _shippable, spark_reason

log = logging.getLogger(__name__)

__all__ = ["DistributedExpireSnapshots", "expire_snapshots"]

_WIDE = ("data", "changelog")  # the kinds deleted by executors, before any metadata


class DistributedExpireSnapshots(ExpireSnapshots):
    def __init__(self, store: FileStore, config: Optional[ExpireConfig] = None, spark=None,
                 parallelism: Optional[int] = None, **kwargs):
        if parallelism is not None and (isinstance(parallelism, bool)
                                        or not isinstance(parallelism, int)
                                        or parallelism < 1):
            raise OptionError(f"parallelism must be a positive integer, got {parallelism!r}")
        super().__init__(store, config, **kwargs)
        if spark is None:
            from .compact import _session
            spark = _session()
        self.spark = spark
        self.parallelism = parallelism or spark.sparkContext.defaultParallelism

    def _execute(self, plan: ExpirePlan) -> bool:
        """As the local execution (True when all of the plan is gone: the next chunk may
        follow), with the data and changelog files deleted on executors first."""
        wide = {k: list(plan.files[k]) for k in _WIDE if plan.files.get(k)}
        if plan.end is None or not wide:
            return super()._execute(plan)
        if not self._unchanged(plan):
            # What the plan kept, a tag or a consumer changed (the re-check says which, in
            # the plan): nothing is deleted. The local execution below checks again.
            plan.deleted = {}
            return False
        # The re-check took out what a branch uses (_spare_branches): what is left goes.
        wide = {k: list(plan.files[k]) for k in _WIDE if plan.files.get(k)}
        plan.deleting = True   # (the marker stays from here until the range is gone)
        deleted: Dict[str, List[str]] = {}
        for kind, paths in wide.items():
            plan.deleted = deleted   # (what a stop at the next safe point reports)
            # The driver holds the maintenance lease: checked before each executor job.
            try:
                checkpoint()
            except BaseException:
                if not plan.deleted_elsewhere:   # (nothing deleted yet: the mark goes)
                    plan.deleting = False
                    self._unmark_untouched(plan)
                raise
            plan.deleted_elsewhere = True
            done, failed = self._delete_on_executors(plan, kind, paths)
            deleted[kind] = done
            if failed:
                plan.deleted = deleted
                return False
            left = still_there(self.store.io, paths, done)
            if left:
                plan.deleted = deleted
                plan.skip(f"{len(left)} data file(s) could not be deleted (e.g. {left[0]}); "
                          f"manifests and snapshot files are kept for the next run")
                return False
        # Data first (done), then the local execution for manifests, lists, snapshot files
        # and EARLIEST, with the wide kinds already gone.
        saved = {k: plan.files[k] for k in wide}
        for k in wide:
            plan.files[k] = {}
        try:
            return super()._execute(plan)
        finally:
            plan.files.update(saved)
            for k, done in deleted.items():
                plan.deleted[k] = done + plan.deleted.get(k, [])

    def _delete_on_executors(self, plan: ExpirePlan, kind: str, paths: List[str]
                             ) -> Tuple[List[str], bool]:
        """The paths deleted by executors (recorded in the driver's deletion log), and
        whether the Spark job failed part-way (then the paths gone count as deleted and the
        plan says why)."""
        io = _shippable(self.store.io)
        sc = self.spark.sparkContext
        n = max(1, min(self.parallelism, len(paths)))
        try:
            done = sc.parallelize(paths, n).mapPartitions(
                lambda it: _delete_paths(io, it)).collect()
        except Exception as e:  # noqa: BLE001 - a task failed after others may have deleted
            try:
                gone = [p for p in paths if not self.store.io.exists(p)]
            except OSError:
                gone = []
            self._record(gone)
            plan.skip(f"deleting {kind} files on Spark executors failed ({spark_reason(e)}); "
                      f"{len(gone)} of {len(paths)} had been deleted; manifests and snapshot "
                      f"files are kept for the next run")
            return gone, True
        self._record(done)
        return list(done), False

    def _record(self, deleted: List[str]) -> None:
        if self.store.io.deletion_log is not None:
            self.store.io.deletion_log.extend(deleted)


def expire_snapshots(spark, table_path: str, config: Optional[ExpireConfig] = None,
                     dry_run: bool = False, parallelism: Optional[int] = None,
                     storage_options: Optional[Dict[str, str]] = None) -> ExpireResult:
    """Expire snapshots of a table with the data files deleted on Spark executors; the same
    ExpireResult as `ExpireSnapshots(...).expire()` (a dry run starts no Spark job).

    Args:
        spark: the SparkSession (None: the active one, or a new one).
        table_path: the table (local path or URI the executors can reach).
        config: retention (default: the table's options, as the local mode).
        dry_run: plan only, delete nothing.
        parallelism: Spark tasks (default: the context's default parallelism).
        storage_options: how to reach the storage (s3.endpoint, ...), sent to executors.
    """
    path, storage = split_credentials(str(table_path), dict(storage_options or {}))
    store = FileStore.open(path, file_io_for_path(path, storage))
    return DistributedExpireSnapshots(store, config, spark, parallelism).expire(dry_run)
