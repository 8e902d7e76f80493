"""`make demo`: the main job in small. Writes 30 daily batches into a partitioned Paimon table,
overwrites one day, drops another, and cross-checks every snapshot with pypaimon.

(The PySpark pipeline with post-commit expiration replaces the writer loop once the Spark data
source lands; the report stays the same.)
"""
from __future__ import annotations

import argparse
import datetime
import os
import shutil
import sys
import time

import pyarrow as pa

from . import Table

SCHEMA = pa.schema([("event_id", pa.int64()), ("user", pa.string()), ("amount", pa.float64()),
                    ("dt", pa.string())])


def batch(i: int, rows: int = 1000) -> pa.Table:
    day = (datetime.date(2026, 1, 1) + datetime.timedelta(days=i // 3)).isoformat()
    return pa.table({"event_id": pa.array(range(i * rows, (i + 1) * rows), pa.int64()),
                     "user": [f"user-{j % 97}" for j in range(rows)],
                     "amount": [j * 0.5 for j in range(rows)],
                     "dt": [day] * rows}, schema=SCHEMA)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--warehouse", default="demo-warehouse")
    ap.add_argument("--batches", type=int, default=30)
    args = ap.parse_args(argv)
    path = os.path.abspath(os.path.join(args.warehouse, "demo.db", "events"))
    if os.path.isdir(os.path.join(path, "schema")):
        shutil.rmtree(path)  # the demo's own table from an earlier run
    os.makedirs(os.path.dirname(path), exist_ok=True)
    start = time.perf_counter()

    table = Table.create(path, SCHEMA, partition_keys=["dt"])
    commit_ms = []
    with table.new_commit(commit_user="demo") as commit:
        for i in range(args.batches):
            writer = table.new_writer()
            writer.write_arrow(batch(i))
            t0 = time.perf_counter()
            commit.commit(writer.prepare_commit(), commit_identifier=i + 1)
            commit_ms.append((time.perf_counter() - t0) * 1000)
        writer = table.new_writer()
        writer.write_arrow(batch(0, rows=10))
        overwritten = commit.overwrite(writer.prepare_commit(), commit_identifier=1000)
        dropped = commit.drop_partitions([{"dt": "2026-01-02"}], commit_identifier=1001)

    latest = table.latest_snapshot()
    data = table.read_arrow()
    print(f"table            {path}")
    print(f"snapshots        {len(table.snapshots())} (latest {latest.id}: {latest.commit_kind}; "
          f"overwrite = {overwritten}, drop = {dropped})")
    print(f"live files       {len(table.live_files())}")
    print(f"rows readable    {data.num_rows} (snapshot says {latest.total_record_count})")
    commit_ms.sort()
    print(f"commit latency   median {commit_ms[len(commit_ms) // 2]:.1f} ms over "
          f"{len(commit_ms)} commits")
    ok = data.num_rows == latest.total_record_count
    try:
        from pypaimon import CatalogFactory
    except ImportError:
        print("pypaimon check   skipped (pip install pypaimon)")
    else:
        cat = CatalogFactory.create({"warehouse": os.path.abspath(args.warehouse)})
        mismatches = 0
        for s in table.snapshots():
            t = cat.get_table("demo.events").copy({"scan.snapshot-id": str(s.id)})
            rb = t.new_read_builder()
            n = rb.new_read().to_arrow(rb.new_scan().plan().splits()).num_rows
            mismatches += n != table.read_arrow(s.id).num_rows
        print(f"pypaimon check   {len(table.snapshots()) - mismatches}/{len(table.snapshots())} "
              f"snapshots read back identically")
        ok = ok and mismatches == 0
    print(f"done in          {time.perf_counter() - start:.1f} s")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
