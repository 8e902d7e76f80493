"""Warehouse maintenance benchmark: `maintain_warehouse` over T tables of S snapshots each, vs
the same tables maintained one at a time.

Build (untimed): one template append table (2 partitions) with S one-file snapshots committed
write-only, options `snapshot.num-retained.min = 10`, `snapshot.time-retained = 0 ms`,
`snapshot.expire.limit = S`, plus a tag whose retention is over; it is copied T times into
`<wh>/db<k>.db/t<i>` (4 databases). Maintaining a table expires S - 10 snapshots and the tag.

Measured R times (order alternating; medians reported), each on its own fresh copy of the
warehouse (the machine is shared: alternating repetitions keep a load spike from landing on one
side only):
  * per-table: `maintain_table(path)` for every table, one after the other, in this process;
    the sum of the per-table wall times is the work;
  * maintain:  `maintain_warehouse(wh, parallelism=P)` (worker processes), wall time including
    starting the workers;
  * maintain_thread: the same in a child process where another library's threads run
    (_common.OtherThreads: an idle thread, pyarrow work every 5 ms), as in a notebook or an
    Airflow worker: its workers cannot be forked safely there, so they start through a fork
    server (issue 26 item 5). A child, so that pyarrow's pool threads started by the other
    library do not turn this process's later `maintain` runs away from fork.

Targets: maintain <= 1.5 x (sum of per-table runs / P), and the same for maintain_thread.

Checked (untimed): every table ok with exactly 10 snapshots and no tag left, the same in both
runs, and pypaimon reads the expected rows of the latest snapshot of the first and last table.
A mismatch exits 1; missing the target prints FAIL (exit 0).

    python benchmarks/bench_maintain.py            # 100 tables x 100 snapshots, P = 2
    python benchmarks/bench_maintain.py --quick    # 20 tables x 30 snapshots
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from typing import Any, Dict, List

_REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
for _p in (_REPO, os.path.dirname(os.path.abspath(__file__))):
    if _p not in sys.path:
        sys.path.insert(0, _p)

from _common import OtherThreads, finish, loadavg, ours_version, safe_version  # noqa: E402

import pyarrow as pa  # noqa: E402

DEFAULT_OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results",
                           "bench_maintain.json")
RETAIN = 10
TARGET = 1.5
SCHEMA = pa.schema([("id", pa.int64()), ("part", pa.int32())])


def build_template(path: str, snapshots: int) -> None:
    from paimon_commit import Table
    from paimon_commit.format.snapshot import Tag
    from paimon_commit.tags import TagManager
    t = Table.create(path, SCHEMA, ["part"], {
        "snapshot.num-retained.min": str(RETAIN), "snapshot.time-retained": "0 ms",
        "snapshot.expire.limit": str(snapshots), "write-only": "false"})
    with t.new_commit(commit_user="bench", options={"write-only": "true"}) as c:
        for i in range(1, snapshots + 1):
            w = t.new_writer()
            w.write_arrow(pa.table({"id": [i], "part": [i % 2]}, schema=SCHEMA))
            c.commit(w.prepare_commit(), i)
    TagManager(t.store.io, t.store.root).create(
        Tag("expired", t.snapshot(snapshots // 2), datetime.datetime(2001, 1, 1), 1000))


def build_warehouse(root: str, template: str, tables: int) -> str:
    wh = os.path.join(root, "wh")
    for i in range(tables):
        shutil.copytree(template, os.path.join(wh, f"db{i % 4}.db", f"t{i:03d}"))
    return wh


def check(wh: str, results, snapshots: int, errors: List[str], read_back: bool) -> None:
    from paimon_commit import Table
    bad = [r.table for r in results if r.status != "ok"]
    if bad:
        errors.append(f"tables not ok: {bad[:5]} ({results[0].reason if results else ''})")
    for r in results:
        t = Table.open(r.path)
        ids = [s.id for s in t.snapshots()]
        if ids != list(range(snapshots - RETAIN + 1, snapshots + 1)) or t.tags():
            errors.append(f"{r.table}: snapshots {ids[:3]}..., tags {[x.name for x in t.tags()]}")
            break
    if read_back and results:
        from tests.oracle import pp_read
        for r in (results[0], results[-1]):
            got = sorted(pp_read(r.path).column("id").to_pylist())
            if got != list(range(1, snapshots + 1)):
                errors.append(f"{r.table}: pypaimon read {len(got)} rows")


def thread_child(wh: str, par: int) -> None:
    """maintain_warehouse(wh) with another library's threads running; prints one JSON line:
    wall seconds, CPU seconds of this process and its workers, what each table got."""
    import resource
    from paimon_commit.warehouse import maintain_warehouse
    other = OtherThreads().start()
    r0, c0 = resource.getrusage(resource.RUSAGE_CHILDREN), time.process_time()
    t = time.perf_counter()
    try:
        res = maintain_warehouse(wh, parallelism=par)
    finally:
        wall = time.perf_counter() - t
        background = other.stop()
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = time.process_time() - c0 + (r1.ru_utime + r1.ru_stime) - (r0.ru_utime + r0.ru_stime)
    print(json.dumps({"wall": wall, "cpu": cpu, "background": background,
                      "tables": [{"table": r.table, "path": r.path, "status": r.status,
                                  "reason": r.reason, "deleted_files": r.deleted_files}
                                 for r in res]}))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tables", type=int, default=None, help="tables (default 100)")
    ap.add_argument("--snapshots", type=int, default=None, help="snapshots per table (100)")
    ap.add_argument("--parallelism", type=int, default=2, help="maintain parallelism (2)")
    ap.add_argument("--reps", type=int, default=3, help="repetitions per side (default 3)")
    ap.add_argument("--quick", action="store_true", help="20 tables x 30 snapshots")
    ap.add_argument("--dir", default=None, help="where to build (default: a temp dir)")
    ap.add_argument("--out", default=DEFAULT_OUT, help=f"JSON results (default {DEFAULT_OUT})")
    ap.add_argument("--keep", action="store_true", help="keep the warehouses after the run")
    ap.add_argument("--thread-child", nargs=2, metavar=("WH", "P"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.thread_child:
        thread_child(args.thread_child[0], int(args.thread_child[1]))
        return 0
    n_tables = args.tables or (20 if args.quick else 100)
    n_snaps = args.snapshots or (30 if args.quick else 100)
    par = args.parallelism
    from paimon_commit.warehouse import find_tables, maintain_table, maintain_warehouse

    run_dir = tempfile.mkdtemp(prefix="bench_maintain-", dir=args.dir)
    load_before = loadavg()
    t_start = time.perf_counter()
    template = os.path.join(run_dir, "template", "db.db", "t")
    t0 = time.perf_counter()
    build_template(template, n_snaps)
    build_s = time.perf_counter() - t0
    print(f"built a template table of {n_snaps} snapshots in {build_s:.1f} s")

    errors: List[str] = []
    works: List[float] = []
    walls: List[float] = []
    per_table: List[float] = []
    seq_results = par_results = []

    cpu_seq: List[float] = []
    cpu_par: List[float] = []

    def sequential(wh: str, first: bool) -> None:
        nonlocal seq_results
        times, res = [], []
        c0 = time.process_time()
        for ref in find_tables(wh):
            t = time.perf_counter()
            res.append(maintain_table(ref.path, ref.full_name))
            times.append(time.perf_counter() - t)
        works.append(sum(times))
        cpu_seq.append(time.process_time() - c0)
        per_table.extend(times)
        check(wh, res, n_snaps, errors, read_back=False)
        seq_results = res

    walls_thread: List[float] = []
    cpu_thread: List[float] = []
    thread_results: List[Any] = []
    backgrounds: List[Dict[str, Any]] = []

    def parallel_thread(wh: str) -> None:
        import subprocess
        from types import SimpleNamespace
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(
            [_REPO] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
        out = subprocess.run([sys.executable, os.path.abspath(__file__), "--thread-child", wh,
                              str(par)], env=env, check=True, stdout=subprocess.PIPE,
                             text=True).stdout
        d = json.loads(out.strip().splitlines()[-1])
        walls_thread.append(d["wall"])
        cpu_thread.append(d["cpu"])
        backgrounds.append(d["background"])
        res = [SimpleNamespace(**r) for r in d["tables"]]
        check(wh, res, n_snaps, errors, read_back=False)
        thread_results[:] = res

    def parallel(wh: str) -> None:
        nonlocal par_results
        import resource
        r0, c0 = resource.getrusage(resource.RUSAGE_CHILDREN), time.process_time()
        t = time.perf_counter()
        res = maintain_warehouse(wh, parallelism=par)
        walls.append(time.perf_counter() - t)
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu_par.append(time.process_time() - c0 + (r1.ru_utime + r1.ru_stime)
                       - (r0.ru_utime + r0.ru_stime))
        check(wh, res, n_snaps, errors, read_back=False)
        par_results = res

    for r in range(args.reps):
        wh_a = build_warehouse(os.path.join(run_dir, f"a{r}"), template, n_tables)
        wh_b = build_warehouse(os.path.join(run_dir, f"b{r}"), template, n_tables)
        wh_c = build_warehouse(os.path.join(run_dir, f"c{r}"), template, n_tables)
        if r % 2 == 0:
            sequential(wh_a, r == 0)
            parallel(wh_b)
            parallel_thread(wh_c)
        else:
            parallel_thread(wh_c)
            parallel(wh_b)
            sequential(wh_a, False)
        print(f"rep {r + 1}: per-table sum {works[-1]:.2f} s (cpu {cpu_seq[-1]:.2f} s), "
              f"maintain {walls[-1]:.2f} s (cpu {cpu_par[-1]:.2f} s in all processes), "
              f"with another library's threads {walls_thread[-1]:.2f} s (cpu "
              f"{cpu_thread[-1]:.2f} s) (load {loadavg()})")
        if r == 0:
            # pypaimon starts threads: read back only after every timed run (maintain forks
            # its workers only from a process without extra threads, like a fresh CLI)
            read_back = [seq_results[0], seq_results[-1]]
            continue
        if not args.keep:
            shutil.rmtree(wh_a, ignore_errors=True)
            shutil.rmtree(wh_b, ignore_errors=True)
            shutil.rmtree(wh_c, ignore_errors=True)
    from tests.oracle import pp_read
    for res in read_back:
        got = sorted(pp_read(res.path).column("id").to_pylist())
        if got != list(range(1, n_snaps + 1)):
            errors.append(f"{res.table}: pypaimon read {len(got)} rows")
    if [(r.table, r.deleted_files) for r in seq_results] != \
            [(r.table, r.deleted_files) for r in par_results]:
        errors.append("the parallel run deleted other files than the per-table runs")
    if [(r.table, r.deleted_files) for r in seq_results] != \
            [(r.table, r.deleted_files) for r in thread_results]:
        errors.append("the run with other threads deleted other files than the per-table runs")
    import statistics
    work = statistics.median(works)
    wall = statistics.median(walls)
    bound = work / par
    ratio = wall / bound if bound else float("inf")
    wall_thread = statistics.median(walls_thread)
    ratio_thread = wall_thread / bound if bound else float("inf")
    ok_thread = ratio_thread <= TARGET
    ok = ratio <= TARGET
    print(f"per-table runs: sum {work:.2f} s (median of {args.reps}; one table "
          f"{sorted(per_table)[len(per_table) // 2]:.3f} s); maintain --parallelism {par}: "
          f"{wall:.2f} s; sum/parallelism {bound:.2f} s")
    print(f"ratio maintain / (sum / parallelism) = {ratio:.2f} (target <= {TARGET}): "
          f"{'PASS' if ok else 'FAIL'}")
    print(f"with another library's threads running: maintain {wall_thread:.2f} s, ratio "
          f"{ratio_thread:.2f} (target <= {TARGET}): {'PASS' if ok_thread else 'FAIL'}")
    for e in errors:
        print(f"ERROR: {e}")
    result: Dict[str, Any] = {
        "benchmark": "bench_maintain",
        "description": f"maintain a warehouse of {n_tables} tables x {n_snaps} snapshots "
                       f"(expire {n_snaps - RETAIN} snapshots and one tag per table) with "
                       f"parallelism {par} (also in a process with another library's threads "
                       f"running), vs the sum of per-table runs / {par}; medians of "
                       f"{args.reps} alternating repetitions",
        "timestamp_utc": datetime.datetime.now(datetime.timezone.utc)
        .strftime("%Y-%m-%dT%H:%M:%SZ"),
        "config": {"tables": n_tables, "snapshots": n_snaps, "parallelism": par,
                   "repetitions": args.reps,
                   "retain_min": RETAIN, "workers": "process (spawn)"},
        "environment": {"paimon_commit": ours_version(), "pypaimon": safe_version("pypaimon"),
                        "python": platform.python_version(), "platform": platform.platform(),
                        "cpu_count": os.cpu_count(), "loadavg_1min_before": load_before,
                        "loadavg_1min_after": loadavg()},
        "build_seconds": round(build_s, 3),
        "per_table_sum_seconds": round(work, 3),
        "per_table_sum_seconds_all": [round(x, 3) for x in works],
        "maintain_seconds_all": [round(x, 3) for x in walls],
        # CPU seconds (all processes): the parallel run's extra work, free of the machine's
        # load; wall time on this shared VM is dominated by waiting for CPU and disk.
        "per_table_cpu_seconds_all": [round(x, 3) for x in cpu_seq],
        "maintain_cpu_seconds_all": [round(x, 3) for x in cpu_par],
        "per_table_median_seconds": round(sorted(per_table)[len(per_table) // 2], 4),
        "maintain_seconds": round(wall, 3),
        "ratio": round(ratio, 3),
        "maintain_thread_seconds_all": [round(x, 3) for x in walls_thread],
        "maintain_thread_cpu_seconds_all": [round(x, 3) for x in cpu_thread],
        "maintain_thread_seconds": round(wall_thread, 3),
        "other_threads": backgrounds,
        "deleted_files_per_table": par_results[0].deleted_files if par_results else 0,
        "targets": {"parallel": {
            "metric": f"maintain wall / (sum of per-table runs / {par}), {n_tables} tables x "
                      f"{n_snaps} snapshots",
            "target": TARGET, "value": round(ratio, 3), "pass": ok},
            "parallel_thread": {
                "metric": f"maintain wall in a process with another library's threads running "
                          f"/ (sum of per-table runs / {par}), {n_tables} tables x {n_snaps} "
                          f"snapshots",
                "target": TARGET, "value": round(ratio_thread, 3), "pass": ok_thread}},
        "errors": errors,
        "verdict": "ERROR" if errors else ("PASS" if ok and ok_thread else "FAIL"),
        "wall_seconds": round(time.perf_counter() - t_start, 3),
    }
    return finish(result, args.out, run_dir, errors, args.keep)


if __name__ == "__main__":
    sys.exit(main())
