"""`make demo`: the main job. A PySpark pipeline (local[*]) writes 30 daily batches into a
Paimon table partitioned by day, with post-commit snapshot expiration and partition expiration
on; then drops a partition, plants the file a crashed writer would leave, runs orphan cleanup,
and reports what was kept, what was reclaimed, and whether pypaimon reads exactly what Spark
reads. Each step prints what it shows; Spark's progress bars and log lines are switched off so
that the output is only that.
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


def _spark(log_path: str):
    """A local SparkSession whose JVM writes its own log lines (start-up warnings, log4j
    notices) to `log_path` instead of the terminal: the JVM inherits the process's stderr
    when it starts, so stderr points at the log file just for that moment."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession
    sys.stderr.flush()
    saved = os.dup(2)
    with open(log_path, "ab") as log:
        os.dup2(log.fileno(), 2)
        try:
            return _session(SparkSession)
        finally:
            os.dup2(saved, 2)
            os.close(saved)


def _session(SparkSession):
    spark = (SparkSession.builder.master("local[*]").appName("paimon-commit demo")
             .config("spark.ui.enabled", "false")
             # No "[Stage 3:>   (0 + 2) / 2]" fragments glued into the demo's lines, and no
             # INFO/WARN lines from the JVM at start-up (setLogLevel comes after it).
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.log.level", "ERROR")
             .config("spark.sql.shuffle.partitions", "4")
             .config("spark.sql.session.timeZone", "UTC")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    from .spark import register
    register(spark)
    return spark


def _ranges(numbers: List[int]) -> str:
    """[1, 2, 3, 7] -> '1-3, 7'."""
    out: List[str] = []
    for n in numbers:
        if out and out[-1].split("-")[-1] == str(n - 1):
            out[-1] = f"{out[-1].split('-')[0]}-{n}"
        else:
            out.append(str(n))
    return ", ".join(out)


def _shown(path: str) -> str:
    """A path as short as it is clear: relative below the current directory, else absolute."""
    rel = os.path.relpath(path)
    return path if rel.startswith("..") else rel


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
    spark_log = os.path.abspath(os.path.join(args.warehouse, "spark.log"))
    spark = _spark(spark_log)
    print(f"spark {spark.version} started in {time.perf_counter() - start:.1f} s "
          f"(its own log: {_shown(spark_log)})")
    from pyspark.sql import functions as F

    today = datetime.date.today()
    written_files = written_bytes = last_seen = 0
    kinds = {"APPEND": 0, "OVERWRITE": 0}
    dropping_batches: List[int] = []   # batches whose commit also expired a partition
    options = {
        "partition-keys": "dt",
        # Table options, set when the first write creates the table:
        "paimon.snapshot.num-retained.min": "5",
        "paimon.snapshot.num-retained.max": "10",
        "paimon.snapshot.time-retained": "0 s",
        "paimon.partition.expiration-time": "21 d",
        "paimon.partition.timestamp-formatter": "yyyy-MM-dd",
    }
    print()
    print(f"1. Spark writes {args.batches} daily batches of {ROWS_PER_BATCH:,} rows, one per day "
          f"up to today, into")
    print(f"   {_shown(path)}")
    print("   Table options: keep 5 to 10 snapshots (no time retention), drop partitions older "
          "than 21 days.")
    print("   After every write, the commit expires partitions and snapshots on its own.")
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
        # The snapshots this write made: its own APPEND, and an OVERWRITE when partition
        # expiration dropped a day that passed 21 days (at least 5 are kept: none is missed).
        for s in table.snapshots():
            if s.id <= last_seen:
                continue
            kinds[s.commit_kind] = kinds.get(s.commit_kind, 0) + 1
            if s.commit_kind == "APPEND":
                for e in table.store.delta_entries(s):
                    written_files += 1
                    written_bytes += e.file.file_size
            else:
                dropping_batches.append(i + 1)
        last_seen = table.latest_snapshot().id
        if i % 10 == 9 or i == args.batches - 1:
            print(f"   batch {i + 1:>2} ({day}): latest snapshot {last_seen}, "
                  f"{len(table.snapshots())} kept on disk")
    made = kinds["APPEND"] + kinds["OVERWRITE"]
    print(f"   {args.batches} batches made {made} snapshots: {kinds['APPEND']} APPEND (one per "
          f"write) and {kinds['OVERWRITE']} OVERWRITE by partition expiration")
    if dropping_batches:
        print(f"   Batches {_ranges(dropping_batches)} wrote days already more than 21 days old: "
              f"each of those")
        print("   commits' partition expiration dropped that day again, in an OVERWRITE "
              "snapshot of its own.")
    kept = len(table.snapshots())
    print(f"   Snapshot expiration keeps {kept}: with snapshot.time-retained = 0 s nothing is "
          f"kept for its age,")
    print("   so it goes down to snapshot.num-retained.min and deletes the files only the "
          "expired snapshots used.")

    table = Table.open(path)
    drop_day = (today - datetime.timedelta(days=3)).isoformat()
    print()
    print(f"2. Drop the partition dt={drop_day}: one more OVERWRITE snapshot (snapshot "
          f"{last_seen + 1}) marks its files deleted.")
    print("   The files stay on disk while a retained snapshot still reads them.")
    with table.new_commit(commit_user="demo-ops") as c:
        c.drop_partitions([{"dt": drop_day}])

    # A crashed writer left a stray file behind; orphan cleanup takes it (and empty dirs).
    stray_dir = table.store.bucket_dir((today.isoformat(),), 0)
    stray = os.path.join(stray_dir, "data-crashed-writer-0.parquet")
    with open(stray, "wb") as f:
        f.write(b"\0" * 4096)
    print()
    print("3. Plant an orphan: a 4,096-byte data file a writer that crashed before its commit "
          "would leave,")
    print(f"   {os.path.relpath(stray, path)}. No snapshot lists it, so only orphan cleanup "
          f"can remove it.")
    print("   Orphan cleanup only takes files older than its threshold (a day by default, so "
          "that files")
    print("   being written now are safe); the demo waits 1 s and uses a 1 s threshold.")
    time.sleep(1.1)
    before_files = _disk(table)[0]
    orphans = OrphanFilesCleaner(CleanContext(
        path, older_than_ms=int(time.time() * 1000) - 1000,
        allow_recent_cutoff=True)).clean()   # (the demo's files are seconds old)
    after_files, after_bytes, data_files, data_bytes = _disk(table)
    print(f"   removed {orphans.deleted_files} file(s), {orphans.deleted_bytes:,} bytes: "
          f"{', '.join(orphans.deleted_paths) or 'nothing'};")
    print(f"   and {len(orphans.deleted_dirs)} empty directories (dt=.../bucket-0 of the "
          f"expired days, emptied by expiration).")

    snaps = table.snapshots()
    latest = snaps[-1]
    spark_rows = spark.read.format("paimon").load(path).count()
    days = sorted({f.partition["dt"] for f in table.live_files()})
    expired_days = args.batches - len(days) - 1
    print()
    print("4. What is left")
    print(f"   snapshots kept     {len(snaps)} (ids {snaps[0].id}..{latest.id}); "
          f"{snaps[0].id - 1} expired")
    print(f"   partitions live    {len(days)} days ({days[0]} .. {days[-1]}); "
          f"{expired_days} expired, {drop_day} dropped")
    print(f"   data written       {written_files} files, {written_bytes / 1e6:.2f} MB")
    print(f"   data on disk now   {data_files} files, {data_bytes / 1e6:.2f} MB (reclaimed "
          f"{written_files - data_files} files, {(written_bytes - data_bytes) / 1e6:.2f} MB); "
          f"{after_files} files in all ({before_files - after_files} removed by orphan "
          f"cleanup)")
    print(f"   rows readable      {spark_rows:,} via Spark "
          f"(the latest snapshot says {latest.total_record_count:,})")
    ok = spark_rows == latest.total_record_count
    print()
    print("5. Cross-check with another Paimon reader")
    try:
        from pypaimon import CatalogFactory
    except ImportError:
        print("   pypaimon check skipped (pip install pypaimon)")
    else:
        cat = CatalogFactory.create({"warehouse": os.path.abspath(args.warehouse)})
        good = 0
        for s in snaps:
            t = cat.get_table("demo.events").copy({"scan.snapshot-id": str(s.id)})
            rb = t.new_read_builder()
            n = rb.new_read().to_arrow(rb.new_scan().plan().splits()).num_rows
            good += n == s.total_record_count
        print(f"   pypaimon reads {good}/{len(snaps)} retained snapshots with the row counts "
              f"their snapshot files record")
        ok = ok and good == len(snaps)
    spark.stop()
    print()
    print(f"done in {time.perf_counter() - start:.1f} s ({'OK' if ok else 'MISMATCH'})")
    print(f"look inside: paimon-commit report {_shown(path)} --html report.html")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
