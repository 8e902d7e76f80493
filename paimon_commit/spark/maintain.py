"""Warehouse maintenance on Spark, for warehouses that outgrow one machine.

The driver finds the tables (`<warehouse>/<db>.db/<table>`); the tables are spread over
executors, one task per group of tables, each maintained exactly as `maintain_warehouse` does
(warehouse.maintain_table: what the table's options ask for; a failing or unreadable table is
reported, never stops the others). Orphan cleanup runs either inside each table's task
(`orphan_mode="per-table"`, right for many small tables) or afterwards, table by table, with
the distributed cleaner that spreads one table's listing, manifest reading and deletes over the
executors (`orphan_mode="distributed"`, for tables with millions of files).

Spark's Python workers must run a Python that has `paimon_commit` installed. The storage
options (and the credentials of a `s3://KEY:SECRET@bucket/wh` warehouse, moved into them by
io.uri.split_credentials) travel with each task; no path, result or log line carries them.
"""
from __future__ import annotations

import logging
from typing import Any, Dict, Iterable, Iterator, List, Optional, Tuple

from ..io.uri import split_credentials
from ..warehouse import TableMaintenanceResult, TableRef, find_tables, maintain_table

log = logging.getLogger(__name__)

__all__ = ["maintain_warehouse_spark"]


def _maintain_partition(items: Iterable[Tuple[str, str]], orphans: bool,
                        older_than_ms: Optional[int], dry_run: bool,
                        storage_options: Dict[str, str], allow_recent_cutoff: bool = False
                        ) -> Iterator[Dict[str, Any]]:
    for path, name in items:
        yield maintain_table(path, name, orphans, older_than_ms, dry_run,
                             storage_options=storage_options,
                             allow_recent_cutoff=allow_recent_cutoff).__dict__


def maintain_warehouse_spark(warehouse: str, spark=None, database: Optional[str] = None,
                             table_glob: Optional[str] = None, orphans: bool = False,
                             older_than_ms: Optional[int] = None, dry_run: bool = False,
                             parallelism: Optional[int] = None,
                             orphan_mode: str = "per-table",
                             tables: Optional[List[TableRef]] = None,
                             storage_options: Optional[Dict[str, str]] = None,
                             allow_recent_cutoff: bool = False
                             ) -> List[TableMaintenanceResult]:
    """Maintain every table of a warehouse with the tables spread over Spark executors.

    Args:
        warehouse: the warehouse directory (local path or URI reachable from executors).
        spark: the SparkSession (default: the active one, or a new one).
        database: only this database (glob accepted).
        table_glob: only tables whose name (or `db.table`) matches.
        orphans: also remove orphan files.
        older_than_ms: orphan age threshold (epoch ms; default a day before now).
        dry_run: report only.
        parallelism: Spark tasks (default: the context's default parallelism).
        orphan_mode: `per-table` (inside each table's task) or `distributed` (each table's
            listing spread over executors, after the other steps).
        tables: maintain exactly these (skips discovery).
        storage_options: how to reach the storage (`s3.endpoint`, ...), sent to executors.
        allow_recent_cutoff: accept an `older_than_ms` less than an hour (or a table's
            commit.timeout) before now, refused otherwise (only when no writer is running).

    Returns:
        One TableMaintenanceResult per table, sorted by `db.table`.

    Raises:
        ValueError: unknown orphan_mode, or a bad argument (OptionError, e.g. a cutoff
            newer than the floor: RecentCutoffError), before any I/O.
        TableNotFoundError: the warehouse does not exist.
    """
    if orphan_mode not in ("per-table", "distributed"):
        raise ValueError(f"orphan_mode must be 'per-table' or 'distributed', got "
                         f"{orphan_mode!r}")
    from ..warehouse import check_maintenance_args
    # Before any I/O or Spark job: a cutoff every table's task would refuse.
    check_maintenance_args(orphans=orphans, older_than_ms=older_than_ms, dry_run=dry_run,
                           allow_recent_cutoff=allow_recent_cutoff)
    if spark is None:
        from pyspark.sql import SparkSession
        spark = SparkSession.getActiveSession() or SparkSession.builder \
            .appName("paimon-commit maintain").getOrCreate()
    warehouse, storage = split_credentials(str(warehouse), storage_options)
    sc = spark.sparkContext
    refs = list(tables) if tables is not None else \
        find_tables(warehouse, database, table_glob, storage_options=storage)
    if not refs:
        return []
    n = max(1, min(parallelism or sc.defaultParallelism, len(refs)))
    inline_orphans = orphans and orphan_mode == "per-table"
    items = [(r.path, r.full_name) for r in refs]
    rows = sc.parallelize(items, n).mapPartitions(
        lambda it: _maintain_partition(it, inline_orphans, older_than_ms, dry_run, storage,
                                       allow_recent_cutoff)
    ).collect()
    results = [TableMaintenanceResult(**row) for row in rows]
    if orphans and orphan_mode == "distributed":
        for r in results:
            if r.status == "ok":
                _distributed_orphans(r, spark, older_than_ms, dry_run, parallelism, storage,
                                     allow_recent_cutoff)
    results.sort(key=lambda r: r.table)
    log.info("maintained %d table(s) of %s on Spark: %d not ok", len(results), warehouse,
             sum(r.status != "ok" for r in results))
    return results


def _distributed_orphans(r: TableMaintenanceResult, spark, older_than_ms: Optional[int],
                         dry_run: bool, parallelism: Optional[int],
                         storage_options: Dict[str, str], allow_recent_cutoff: bool = False
                         ) -> None:
    from ..errors import PaimonCommitError
    from ..io import for_path as file_io_for_path
    from ..operations.orphan import CleanContext
    from .orphan import DistributedOrphanFilesCleaner
    try:
        orr = DistributedOrphanFilesCleaner(
            CleanContext(r.path, older_than_ms=older_than_ms, dry_run=dry_run,
                         file_io=file_io_for_path(r.path, storage_options),
                         allow_recent_cutoff=allow_recent_cutoff), spark=spark,
            parallelism=parallelism).clean()
    except (PaimonCommitError, OSError, ValueError) as e:
        r.status, r.reason = "failed", f"orphan cleanup: {type(e).__name__}: {e}"
        return
    r.orphans_deleted = orr.deleted_files
    r.deleted_files += orr.deleted_files
    r.deleted_bytes += orr.deleted_bytes
    d = orr.to_dict()
    d.pop("files", None)
    r.steps["orphans"] = d
