"""Compaction and expiration on Spark vs local, side by side on copies of one table.

The table: FILES small data files (10 rows each) in PARTS partitions, committed in COMMITS
appends. On one copy the local path runs, on the other the Spark path (local[2] session):

  1. compaction (`compact_table` vs `paimon_commit.spark.compact`): one COMPACT snapshot;
  2. expiration keeping only the latest snapshot (`ExpireSnapshots` vs
     `spark.expire.DistributedExpireSnapshots`): deletes every small file and the metadata.

Untimed checks: the same files-per-partition after compaction, the same rows (our reader), the
same expiration counts per kind, the same number of files per directory afterwards. A
mismatch exits 1. Results go to benchmarks/results/bench_spark_compact.json (the README's
bench table): the mismatch counts (target 0) and what Spark adds on one machine, in seconds
(spark - local, target OVERHEAD_TARGET_S: a fixed cost of starting jobs, not a cost per file).
On one machine Spark only adds overhead (task start, Python workers, pickling); the point of
the Spark path is tables whose bins do not fit one machine's time. Printed: seconds per step
and the ratio spark/local.

    python benchmarks/bench_spark_compact.py                 # 2,000 files, 10 partitions
    python benchmarks/bench_spark_compact.py --files 10000   # the issue's size
"""
from __future__ import annotations

import argparse
import datetime
import os
import platform
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import pyarrow as pa  # noqa: E402

from benchmarks._common import (ForeignLoad, honest, loadavg, ours_version,  # noqa: E402
                                safe_version, write_results)

OVERHEAD_TARGET_S = 15.0
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results",
                   "bench_spark_compact.json")


def build(path: str, files: int, parts: int, commits: int) -> None:
    from paimon_commit import Table
    schema = pa.schema([("id", pa.int64()), ("s", pa.string()), ("p", pa.int32())])
    t = Table.create(path, schema, partition_keys=["p"],
                     options={"target-file-size": "1 mb", "source.split.open-file-cost": "1 b",
                              "compaction.min.file-num": "2"})
    per_commit = max(1, files // commits)
    i = 0
    while i < files:
        msgs = []
        for _ in range(min(per_commit, files - i)):
            w = t.new_writer()
            ids = list(range(i * 10, i * 10 + 10))
            w.write_arrow(pa.Table.from_pylist(
                [{"id": x, "s": f"row-{x}", "p": i % parts} for x in ids], schema=schema))
            msgs.extend(w.prepare_commit())
            i += 1
        with t.new_commit() as c:
            c.commit(msgs)


def build_more(path: str) -> None:
    from paimon_commit import Table
    t = Table.open(path)
    w = t.new_writer()
    w.write_arrow(pa.Table.from_pylist([{"id": -1, "s": "last", "p": 0}],
                                       schema=t.arrow_schema()))
    with t.new_commit() as c:
        c.commit(w.prepare_commit())


def files_per_dir(root: str):
    """Files per directory (names differ: each compaction names its files afresh)."""
    return sorted((os.path.relpath(d, root), len(names)) for d, _, names in os.walk(root))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=2000)
    ap.add_argument("--parts", type=int, default=10)
    ap.add_argument("--commits", type=int, default=20)
    ap.add_argument("--out", default=OUT)
    args = ap.parse_args()
    load_before = loadavg()
    foreign = ForeignLoad()   # (Spark's JVM and workers are descendants: not counted)
    t_start = time.perf_counter()
    from pyspark.sql import SparkSession

    from paimon_commit import ExpireConfig, ExpireSnapshots, Table
    from paimon_commit.operations.compact import compact_table
    from paimon_commit.spark import compact
    from paimon_commit.spark.expire import DistributedExpireSnapshots

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    spark.sparkContext.parallelize([1, 2], 2).count()  # start the Python workers (untimed)
    run = tempfile.mkdtemp(prefix="bench-spark-compact-")
    errors = []
    try:
        base = os.path.join(run, "wh", "db.db", "base")
        t0 = time.perf_counter()
        build(base, args.files, args.parts, args.commits)
        print(f"built {args.files} files in {args.parts} partitions, {args.commits} commits: "
              f"{time.perf_counter() - t0:.1f} s")
        local, dist = (os.path.join(run, "wh", "db.db", n) for n in ("local", "spark"))
        shutil.copytree(base, local)
        shutil.copytree(base, dist)
        cfg = ExpireConfig(retain_min=1, retain_max=1, time_retained_ms=0,
                           max_deletes=args.commits + 10)
        times = {}
        t0 = time.perf_counter()
        rl = compact_table(local)
        times["compact local"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        rs = compact(spark, dist)
        times["compact spark"] = time.perf_counter() - t0
        if [p.to_dict()["files_after"] for p in rl.partitions] != \
                [p.to_dict()["files_after"] for p in rs.partitions]:
            errors.append("files per partition differ after compaction")
        if sorted(Table.open(local).read_arrow().column("id").to_pylist()) != \
                sorted(Table.open(dist).read_arrow().column("id").to_pylist()):
            errors.append("rows differ after compaction")
        # One more append: the COMPACT snapshot, whose delta DELETEs the small files, is then
        # expired too, so expiration reclaims every small file.
        for p in (local, dist):
            build_more(p)
        t0 = time.perf_counter()
        el = ExpireSnapshots(Table.open(local).store, cfg).expire()
        times["expire local"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        es = DistributedExpireSnapshots(Table.open(dist).store, cfg, spark).expire()
        times["expire spark"] = time.perf_counter() - t0
        # Files per kind, and bytes of data files: the two copies' metadata files hold each
        # compaction's own (randomly named) file names, so their sizes may differ by a byte.
        def same(by_kind):
            return {k: (v["files"], v["bytes"] if k == "data" else None)
                    for k, v in by_kind.items()}
        if same(el.by_kind) != same(es.by_kind):
            errors.append(f"expiration differs: {el.by_kind} vs {es.by_kind}")
        if files_per_dir(local) != files_per_dir(dist):
            errors.append(f"files per directory differ after expiration: "
                          f"{files_per_dir(local)} vs {files_per_dir(dist)}")
        print(f"compaction: {rl.rewritten_files} files -> {rl.written_files}; expiration "
              f"deleted {el.deleted_files} files {el.by_kind}")
        for step in ("compact", "expire"):
            lo, sp = times[f"{step} local"], times[f"{step} spark"]
            print(f"{step:8s} local {lo:7.2f} s   spark {sp:7.2f} s   spark/local "
                  f"{sp / lo:5.2f}x")
        for e in errors:
            print(f"MISMATCH: {e}")
        targets = {}
        for step in ("compact", "expire"):
            mism = [e for e in errors if step[:6] in e]
            targets[f"{step}_same"] = {
                "metric": f"{step} on Spark vs local, mismatches (files per partition/directory, "
                          f"rows, deleted files per kind), {args.files} files",
                "target": 0, "value": len(mism), "pass": not mism}
            over = times[f"{step} spark"] - times[f"{step} local"]
            targets[f"{step}_overhead"] = {
                "metric": f"{step}: Spark (local[2]) seconds - local seconds on one machine, "
                          f"{args.files} files",
                "target": OVERHEAD_TARGET_S, "value": round(over, 2),
                "pass": over <= OVERHEAD_TARGET_S}
        ok = all(t["pass"] for t in targets.values())
        write_results(honest({
            "benchmark": "bench_spark_compact",
            "description": f"compaction and expiration on Spark (local[2]) vs local on copies of "
                           f"one table of {args.files} small files in {args.parts} partitions",
            "timestamp_utc": datetime.datetime.now(datetime.timezone.utc)
            .strftime("%Y-%m-%dT%H:%M:%SZ"),
            "config": {"files": args.files, "partitions": args.parts, "commits": args.commits},
            "environment": {"paimon_commit": ours_version(),
                            "pyspark": safe_version("pyspark"),
                            "python": platform.python_version(),
                            "cpu_count": os.cpu_count(), "loadavg_1min_before": load_before,
                            "loadavg_1min_after": loadavg(),
                            "foreign_load": foreign.value()},
            "seconds": {k: round(v, 3) for k, v in times.items()},
            "expire_deleted_files": el.deleted_files,
            "targets": targets, "errors": errors,
            "verdict": "ERROR" if errors else ("PASS" if ok else "FAIL"),
            "wall_seconds": round(time.perf_counter() - t_start, 3)}), args.out)
        return 0 if ok else 1
    finally:
        spark.stop()
        shutil.rmtree(run, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
