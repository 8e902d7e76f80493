"""Orphan cleanup's dry run against delta-rs's by the number of listing threads, on one machine.

A diagnostic for the many-core gap (issue 26 item 2): on 2 cores our dry run at 100,000
orphans took 0.29-0.42 s against delta-rs's 0.88-1.08 s, on a 16-core machine 1.11 s against
0.89 s. Our listing threads default to os.cpu_count(): this script times the same dry run
with 1, 2, 4, 8 and 16 threads (`file-operation.thread-num`), each in a fresh subprocess,
interleaved with delta-rs's `vacuum(dry_run=True, full=True)` and the one-thread scandir floor,
and profiles the slowest of ours. Tables as bench_orphan builds them (100 partitions, 1,000
live files, N orphans). Prints a table and writes JSON (--out).

    python benchmarks/orphan_threads.py --orphans 100000 --reps 3
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import bench_orphan as B  # noqa: E402
from _common import loadavg, write_results  # noqa: E402

DAY_MS = 86_400_000


def child(spec):
    side, path, threads = spec["side"], spec["path"], spec.get("threads")
    if side == "ours":
        from paimon_commit import CleanContext, OrphanFilesCleaner
        from paimon_commit.table import Table
        if threads:
            Table.open(path)   # (imports, and the table's options, before the clock)
        older = int(time.time() * 1000) - DAY_MS
        prof = None
        if spec.get("profile"):
            import cProfile
            prof = cProfile.Profile()
            prof.enable()
        t0 = time.perf_counter()
        from concurrent.futures import ThreadPoolExecutor
        ex = ThreadPoolExecutor(threads) if threads else None
        r = OrphanFilesCleaner(CleanContext(path, older_than_ms=older, dry_run=True,
                                            executor=ex)).clean()
        secs = time.perf_counter() - t0
        out = {"seconds": secs, "found": len(r.deleted_paths), "phases": dict(r.seconds)}
        if prof is not None:
            prof.disable()
            import io
            import pstats
            buf = io.StringIO()
            pstats.Stats(prof, stream=buf).sort_stats("tottime").print_stats(20)
            out["profile"] = buf.getvalue()
        return out
    import deltalake
    t0 = time.perf_counter()
    found = deltalake.DeltaTable(path).vacuum(retention_hours=0, dry_run=True,
                                              enforce_retention_duration=False, full=True)
    return {"seconds": time.perf_counter() - t0, "found": len(found)}


def run(spec):
    r = subprocess.run([sys.executable, __file__, "--child", json.dumps(spec)],
                       capture_output=True, text=True, check=True)
    return json.loads(r.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--child")
    ap.add_argument("--orphans", type=int, default=100_000)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--threads", default="1,2,4,8,16")
    ap.add_argument("--out", default=os.path.join(HERE, "results", "orphan_threads.json"))
    a = ap.parse_args(argv)
    if a.child:
        print(json.dumps(child(json.loads(a.child))))
        return 0
    threads = [int(x) for x in a.threads.split(",")]
    run_dir = tempfile.mkdtemp(prefix="orphan_threads_")
    load_before = loadavg()
    live = {"paimon": os.path.join(run_dir, "paimon", "live"),   # (copies go beside each)
            "delta": os.path.join(run_dir, "delta", "live")}
    B.build_paimon_live(live["paimon"])
    B.build_delta_live(live["delta"])
    info = B.build_size(run_dir, live, a.orphans)
    sides = [("ours", t) for t in threads] + [("delta", None)]
    times = {f"{s}{t or ''}": [] for s, t in sides}
    for rep in range(a.reps):
        for side, t in sides[rep % len(sides):] + sides[:rep % len(sides)]:
            kind = "paimon" if side == "ours" else "delta"
            r = run({"side": side, "path": info[kind]["base"], "threads": t})
            assert r["found"] == a.orphans, (side, t, r["found"])
            times[f"{side}{t or ''}"].append(r["seconds"])
    med = {k: statistics.median(v) for k, v in times.items()}
    slowest = max(threads, key=lambda t: med[f"ours{t}"])
    prof = run({"side": "ours", "path": info["paimon"]["base"], "threads": slowest,
                "profile": True})
    print(f"{os.cpu_count()} cpus, {a.orphans:,} orphans, medians of {a.reps}, load "
          f"{load_before} before, {loadavg()} after")
    for k, v in med.items():
        print(f"  {k:<8} {v:6.3f} s   {v / med['delta']:.2f}x delta-rs")
    print(f"profile of ours with {slowest} threads ({prof['seconds']:.2f} s):")
    print(prof["profile"])
    write_results({"benchmark": "orphan_threads", "cpu_count": os.cpu_count(),
                   "loadavg_1min_before": load_before, "loadavg_1min_after": loadavg(),
                   "orphans": a.orphans, "reps": a.reps, "seconds": times, "medians": med,
                   "profile_threads": slowest, "profile": prof["profile"]}, a.out)
    B.remove_tree(run_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
