"""`make demo`: the main job. A PySpark pipeline (local[*]) writes 30 daily batches into a
Paimon table partitioned by day, with post-commit snapshot expiration and partition expiration
on; then drops a partition, runs orphan cleanup, and reports what was kept, what was
reclaimed, and whether pypaimon reads exactly what Spark reads.
"""
from __future__ import annotations

import argparse
import datetime
import os
import sys
import time
from typing import List

from .errors import TableNotFoundError
from .io import walk_files
from .io.deletion import remove_empty_dirs
from .operations.orphan import CleanContext, OrphanFilesCleaner
from .table import Table

ROWS_PER_BATCH = 20_000
DEMO_COLUMNS = ["event_id", "user", "amount", "dt"]


def _spark():
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession
    spark = (SparkSession.builder.master("local[*]").appName("paimon-commit demo")
             .config("spark.ui.enabled", "false")
             .config("spark.sql.shuffle.partitions", "4")
             .config("spark.sql.session.timeZone", "UTC")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    from .spark import register
    register(spark)
    return spark


def _disk(table: Table):
    """(files, bytes) on disk, and the data-file part of them."""
    files = list(walk_files(table.store.io, table.store.root))
    data = [f for f in files if f.name.endswith(".parquet")]
    return len(files), sum(f.size for f in files), len(data), sum(f.size for f in data)


def _remove_previous_run(path: str) -> None:
    """Delete the demo's own table from an earlier run, and nothing else: only a Paimon table
    with the demo's columns and partitioning, file by file through the storage's deletion
    gate (never a recursive delete: symlinks are removed as links, not followed), then its
    empty directories, deepest first. Anything else at `path` stops the demo."""
    try:
        table = Table.open(path)
    except TableNotFoundError:
        if os.path.isdir(path) and os.listdir(path):
            raise SystemExit(f"{path} exists and is not a Paimon table; refusing to touch it "
                             f"(choose another --warehouse)") from None
        return
    if table.arrow_schema().names != DEMO_COLUMNS or list(table.partition_keys) != ["dt"]:
        raise SystemExit(f"{path} is a Paimon table, but not the demo's (columns "
                         f"{table.arrow_schema().names}); refusing to delete it (choose "
                         f"another --warehouse)")
    io = table.store.io
    files: List[str] = []
    dirs: List[str] = []
    pending = [io.root]
    while pending:
        for st in io.list_status(pending.pop()):
            if st.is_dir and not st.is_symlink:
                dirs.append(st.path)
                pending.append(st.path)
            else:
                files.append(st.path)
    io.delete_files(files)
    remove_empty_dirs(io, io.root, dirs)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--warehouse", default="demo-warehouse")
    ap.add_argument("--batches", type=int, default=30)
    args = ap.parse_args(argv)
    path = os.path.abspath(os.path.join(args.warehouse, "demo.db", "events"))
    _remove_previous_run(path)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    start = time.perf_counter()
    spark = _spark()
    print(f"spark {spark.version} started in {time.perf_counter() - start:.1f} s")
    from pyspark.sql import functions as F

    today = datetime.date.today()
    written_files = written_bytes = last_seen = 0
    options = {
        "partition-keys": "dt",
        # Table options, set when the first write creates the table:
        "paimon.snapshot.num-retained.min": "5",
        "paimon.snapshot.num-retained.max": "10",
        "paimon.snapshot.time-retained": "0 s",
        "paimon.partition.expiration-time": "21 d",
        "paimon.partition.timestamp-formatter": "yyyy-MM-dd",
    }
    for i in range(args.batches):
        day = today - datetime.timedelta(days=args.batches - 1 - i)
        df = (spark.range(i * ROWS_PER_BATCH, (i + 1) * ROWS_PER_BATCH)
              .withColumnRenamed("id", "event_id")
              .withColumn("user", F.concat(F.lit("user-"), (F.col("event_id") % 97)
                                           .cast("string")))
              .withColumn("amount", (F.col("event_id") % 1000) / F.lit(10.0))
              .withColumn("dt", F.lit(day.isoformat())))
        df.write.format("paimon").options(**options).mode("append").save(path)
        table = Table.open(path)
        # The write's own snapshot (partition expiration may have added one after it).
        mine = [s for s in table.snapshots() if s.commit_kind == "APPEND"
                and s.id > last_seen]
        for s in mine:
            for e in table.store.delta_entries(s):
                written_files += 1
                written_bytes += e.file.file_size
        last_seen = table.latest_snapshot().id
        if i % 10 == 9:
            print(f"batch {i + 1:>2}: latest snapshot {table.latest_snapshot().id}, "
                  f"{len(table.snapshots())} kept")

    table = Table.open(path)
    drop_day = (today - datetime.timedelta(days=3)).isoformat()
    with table.new_commit(commit_user="demo-ops") as c:
        c.drop_partitions([{"dt": drop_day}])
    # A crashed writer left a stray file behind; orphan cleanup takes it (and empty dirs).
    stray_dir = table.store.bucket_dir((today.isoformat(),), 0)
    with open(os.path.join(stray_dir, "data-crashed-writer-0.parquet"), "wb") as f:
        f.write(b"\0" * 4096)
    time.sleep(1.1)
    before_files = _disk(table)[0]
    orphans = OrphanFilesCleaner(CleanContext(
        path, older_than_ms=int(time.time() * 1000) - 1000)).clean()
    after_files, after_bytes, data_files, data_bytes = _disk(table)

    snaps = table.snapshots()
    latest = snaps[-1]
    spark_rows = spark.read.format("paimon").load(path).count()
    days = sorted({f.partition["dt"] for f in table.live_files()})
    print()
    print(f"table              {path}")
    print(f"snapshots kept     {len(snaps)} (ids {snaps[0].id}..{latest.id}; "
          f"{latest.id - len(snaps)} expired)")
    print(f"partitions live    {len(days)} days ({days[0]} .. {days[-1]}); "
          f"{args.batches - len(days) - 1} expired, {drop_day} dropped")
    print(f"data written       {written_files} files, {written_bytes / 1e6:.2f} MB")
    print(f"data on disk now   {data_files} files, {data_bytes / 1e6:.2f} MB (reclaimed "
          f"{written_files - data_files} files, {(written_bytes - data_bytes) / 1e6:.2f} MB); "
          f"{after_files} files in all")
    print(f"orphan cleanup     {orphans.deleted_files} file(s), {orphans.deleted_bytes} bytes, "
          f"{len(orphans.deleted_dirs)} empty dir(s) removed "
          f"({before_files - after_files} files)")
    print(f"rows readable      {spark_rows} via Spark "
          f"(snapshot says {latest.total_record_count})")
    ok = spark_rows == latest.total_record_count
    try:
        from pypaimon import CatalogFactory
    except ImportError:
        print("pypaimon check     skipped (pip install pypaimon)")
    else:
        cat = CatalogFactory.create({"warehouse": os.path.abspath(args.warehouse)})
        good = 0
        for s in snaps:
            t = cat.get_table("demo.events").copy({"scan.snapshot-id": str(s.id)})
            rb = t.new_read_builder()
            n = rb.new_read().to_arrow(rb.new_scan().plan().splits()).num_rows
            good += n == s.total_record_count
        print(f"pypaimon check     {good}/{len(snaps)} retained snapshots read back with the "
              f"expected row counts")
        ok = ok and good == len(snaps)
    spark.stop()
    print(f"done in            {time.perf_counter() - start:.1f} s "
          f"({'OK' if ok else 'MISMATCH'})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
