"""Commit-latency benchmark: paimon_commit vs pypaimon, side by side in one run.

N sequential one-file commits into a 4-partition append table, on both libraries,
interleaved commit by commit (ours commit i, then pypaimon commit i) so that machine noise
hits both equally. Only the commit call is timed; writing the data file and preparing the
commit messages happen outside the timed region.

Then the same N commits of ours into a third table with another library's threads running
in the process (_common.OtherThreads: an idle thread, pyarrow work every 5 ms), as in a Spark
driver or a notebook (issue 26 item 5).

Targets (evaluated at the last window of W commits):
  * flat:   our median commit latency over the last W commits <= 1.5 x over the first W
  * faster: our median over the last W <= 0.2 x pypaimon's median over the same commits
  * flat_thread, vs_pypaimon_thread: the same for the commits with the threads running
    (against pypaimon's medians measured without them)

Afterwards (untimed) both tables are checked: latest snapshot id == N and pypaimon reads
exactly the N rows written (ids 0..N-1). A mismatch exits 1; missing a target only prints
FAIL (exit 0).

    python benchmarks/bench_commit.py            # 2,000 commits, window 200
    python benchmarks/bench_commit.py --quick    # 300 commits, window 50
"""
from __future__ import annotations

from _common import loadavg as _loadavg, ours_version as _ours_version, safe_version as _safe_version, finish, OtherThreads  # noqa: E402,E501
import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from typing import Dict, List, Optional

# Run as a script from anywhere: make the repository importable.
_REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _REPO not in sys.path:
    sys.path.insert(0, _REPO)

import pyarrow as pa  # noqa: E402

N_PARTITIONS = 4
FLAT_TARGET = 1.5      # ours: last-window median <= 1.5 x first-window median
VS_PEER_TARGET = 0.2   # ours <= 0.2 x pypaimon at the same depth (last window)
CURVE_STEP = 100       # commits per point of the medians curve

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string()), ("p", pa.int32())])
DEFAULT_OUT = os.path.join(_REPO, "benchmarks", "results", "bench_commit.json")


def rows_for(i: int) -> pa.Table:
    """Commit i: one row into partition i % 4."""
    return pa.Table.from_pydict({"id": [i], "v": [f"v{i}"], "p": [i % N_PARTITIONS]},
                                schema=SCHEMA)


# --- statistics -------------------------------------------------------------------------
def pctl(xs: List[float], q: float) -> float:
    """Percentile with linear interpolation (q in [0, 100])."""
    s = sorted(xs)
    if len(s) == 1:
        return s[0]
    k = (len(s) - 1) * q / 100.0
    lo = int(k)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def window_stats(ms: List[float]) -> Dict[str, float]:
    return {"median_ms": statistics.median(ms), "p90_ms": pctl(ms, 90),
            "mean_ms": statistics.fmean(ms), "min_ms": min(ms), "max_ms": max(ms),
            "count": len(ms)}


def curve(ms: List[float], step: int) -> List[Dict[str, float]]:
    out = []
    for start in range(0, len(ms), step):
        chunk = ms[start:start + step]
        out.append({"first_commit": start + 1, "last_commit": start + len(chunk),
                    "median_ms": statistics.median(chunk), "p90_ms": pctl(chunk, 90)})
    return out


def ratio(a: float, b: float) -> Optional[float]:
    return a / b if b > 0 else None


# --- the two sides ----------------------------------------------------------------------
class Ours:
    name = "paimon_commit"

    def __init__(self, path: str, name: str = "paimon_commit"):
        self.name = name
        from paimon_commit import Table
        self.table = Table.create(path, SCHEMA, partition_keys=["p"], options={})
        self.commit = self.table.new_commit()   # one long-lived commit object
        self.latencies: List[float] = []        # seconds

    def step(self, data: pa.Table, expected_id: int) -> None:
        w = self.table.new_writer()
        w.write_arrow(data)
        msgs = w.prepare_commit()
        t0 = time.perf_counter()
        sid = self.commit.commit(msgs)
        self.latencies.append(time.perf_counter() - t0)
        if sid != expected_id:
            raise CorrectnessError(f"paimon_commit: commit {expected_id} returned snapshot id "
                                   f"{sid!r}, expected {expected_id}")

    def close(self) -> None:
        self.commit.close()


class Peer:
    name = "pypaimon"

    def __init__(self, warehouse: str, identifier: str):
        from pypaimon import CatalogFactory, Schema
        cat = CatalogFactory.create({"warehouse": warehouse})
        cat.create_database(identifier.split(".")[0], True)
        cat.create_table(identifier, Schema.from_pyarrow_schema(
            SCHEMA, partition_keys=["p"], options={}), False)
        self.table = cat.get_table(identifier)
        self.latencies: List[float] = []
        self.native_commits = 0

    def step(self, data: pa.Table, expected_id: int) -> None:
        # A BatchTableCommit commits only once: a fresh builder / write / commit per commit.
        wb = self.table.new_batch_write_builder()
        w, c = wb.new_write(), wb.new_commit()
        try:
            w.write_arrow(data)
            msgs = w.prepare_commit()
            t0 = time.perf_counter()
            c.commit(msgs)
            self.latencies.append(time.perf_counter() - t0)
            if getattr(c, "_native_commit", None) is not None:
                self.native_commits += 1
        finally:
            w.close()
            c.close()

    def close(self) -> None:
        pass


class CorrectnessError(Exception):
    pass


# --- verification (untimed) -------------------------------------------------------------
def pp_read_ids(warehouse: str, identifier: str) -> List[int]:
    from pypaimon import CatalogFactory
    t = CatalogFactory.create({"warehouse": warehouse}).get_table(identifier)
    rb = t.new_read_builder()
    data = rb.new_read().to_arrow(rb.new_scan().plan().splits())
    return sorted(data.column("id").to_pylist()) if data is not None else []


def pp_latest_id(warehouse: str, identifier: str) -> Optional[int]:
    from pypaimon import CatalogFactory
    t = CatalogFactory.create({"warehouse": warehouse}).get_table(identifier)
    s = t.snapshot_manager().get_latest_snapshot()
    return None if s is None else s.id


def verify(warehouse: str, ours_paths: List[str], n: int) -> List[str]:
    from paimon_commit import Table
    errors: List[str] = []
    expected = list(range(n))

    for path in ours_paths:
        latest = Table.open(path).latest_snapshot()
        name = os.path.basename(path)
        if latest is None or latest.id != n:
            errors.append(f"paimon_commit table {name}: latest snapshot id "
                          f"{None if latest is None else latest.id}, expected {n}")
        if latest is not None and latest.total_record_count != n:
            errors.append(f"paimon_commit table {name}: snapshot totalRecordCount "
                          f"{latest.total_record_count}, expected {n}")
    for label, ident in [(f"paimon_commit table {os.path.basename(p)} (read by pypaimon)",
                          f"db.{os.path.basename(p)}") for p in ours_paths] + \
            [("pypaimon table", "db.peer")]:
        if ident == "db.peer":
            sid = pp_latest_id(warehouse, ident)
            if sid != n:
                errors.append(f"{label}: latest snapshot id {sid}, expected {n}")
        try:
            ids = pp_read_ids(warehouse, ident)
        except Exception as e:  # noqa: BLE001 - report any reader failure as a mismatch
            errors.append(f"{label}: pypaimon failed to read it: {e!r}")
            continue
        if len(ids) != n:
            errors.append(f"{label}: pypaimon reads {len(ids)} rows, expected {n}")
        elif ids != expected:
            first_bad = next(i for i, (a, b) in enumerate(zip(ids, expected)) if a != b)
            errors.append(f"{label}: pypaimon reads the wrong ids (sorted ids differ from "
                          f"0..{n - 1} first at position {first_bad}: {ids[first_bad]})")
    return errors


# --- main -------------------------------------------------------------------------------
def parse_args(argv=None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--commits", type=int, default=None, help="commits per side (default 2000)")
    ap.add_argument("--window", type=int, default=None,
                    help="commits per first/last window (default 200)")
    ap.add_argument("--quick", action="store_true", help="300 commits, window 50")
    ap.add_argument("--dir", default=None,
                    help="parent directory for the run's warehouse (default: system temp)")
    ap.add_argument("--out", default=DEFAULT_OUT, help=f"JSON results (default {DEFAULT_OUT})")
    ap.add_argument("--keep", action="store_true", help="keep the tables after the run")
    ap.add_argument("--raw", action="store_true",
                    help="also store every commit's latency in the JSON")
    a = ap.parse_args(argv)
    if a.commits is None:
        a.commits = 300 if a.quick else 2000
    if a.window is None:
        a.window = 50 if a.quick else 200
    if a.commits < 1 or a.window < 1 or a.window > a.commits:
        ap.error(f"need 1 <= --window ({a.window}) <= --commits ({a.commits})")
    return a


def main(argv=None) -> int:
    args = parse_args(argv)
    import pypaimon  # noqa: F401  (fail early if the peer is missing)
    from importlib.metadata import version

    n, win = args.commits, args.window
    parent = args.dir or tempfile.gettempdir()
    os.makedirs(parent, exist_ok=True)
    run_dir = tempfile.mkdtemp(prefix="bench_commit_", dir=parent)
    warehouse = os.path.join(run_dir, "wh")
    ours_path = os.path.join(warehouse, "db.db", "ours")  # pypaimon can open it as db.ours
    ours_thread_path = os.path.join(warehouse, "db.db", "ours_thread")
    os.makedirs(os.path.dirname(ours_path))

    print(f"bench_commit: {n} one-file commits per side into a {N_PARTITIONS}-partition table, "
          f"window {win}; warehouse {warehouse}", flush=True)
    ours = Ours(ours_path)
    peer = Peer(warehouse, "db.peer")

    load_before = _loadavg()
    wall0 = time.perf_counter()
    progress_every = max(1, n // 10)
    for i in range(n):
        data = rows_for(i)
        ours.step(data, i + 1)
        peer.step(data, i + 1)
        if (i + 1) % progress_every == 0 or i + 1 == n:
            lo = max(0, i + 1 - progress_every)
            print(f"  {i + 1:>6}/{n}  last {i + 1 - lo} commits: median "
                  f"ours {statistics.median(ours.latencies[lo:]) * 1e3:8.2f} ms   "
                  f"pypaimon {statistics.median(peer.latencies[lo:]) * 1e3:8.2f} ms  "
                  f"({time.perf_counter() - wall0:.0f} s)", flush=True)
    wall = time.perf_counter() - wall0
    ours.close()
    peer.close()
    # The same commits of ours with another library's threads running in the process.
    print("  ours again, with another library's threads running", flush=True)
    ours_thread = Ours(ours_thread_path, "paimon_commit_thread")
    other = OtherThreads().start()
    try:
        for i in range(n):
            ours_thread.step(rows_for(i), i + 1)
    finally:
        background = other.stop()
        ours_thread.close()
    load_after = _loadavg()

    # --- numbers ---
    sides = {}
    for side in (ours, peer, ours_thread):
        ms = [x * 1e3 for x in side.latencies]
        first, last = window_stats(ms[:win]), window_stats(ms[-win:])
        sides[side.name] = {
            "commits": len(ms),
            "first_window": first,
            "last_window": last,
            "last_over_first": ratio(last["median_ms"], first["median_ms"]),
            "total_commit_seconds": sum(side.latencies),
            "curve": curve(ms, CURVE_STEP),
        }
        if args.raw:
            sides[side.name]["latencies_ms"] = [round(x, 4) for x in ms]
    o, p, ot = sides["paimon_commit"], sides["pypaimon"], sides["paimon_commit_thread"]
    vs_first = ratio(o["first_window"]["median_ms"], p["first_window"]["median_ms"])
    vs_last = ratio(o["last_window"]["median_ms"], p["last_window"]["median_ms"])
    flat_ok = o["last_over_first"] is not None and o["last_over_first"] <= FLAT_TARGET
    fast_ok = vs_last is not None and vs_last <= VS_PEER_TARGET
    vs_last_thread = ratio(ot["last_window"]["median_ms"], p["last_window"]["median_ms"])
    flat_thread_ok = ot["last_over_first"] is not None and \
        ot["last_over_first"] <= FLAT_TARGET
    fast_thread_ok = vs_last_thread is not None and vs_last_thread <= VS_PEER_TARGET

    print()
    hdr = (f"{'side':<14}{'first ' + str(win) + ' med':>14}{'p90':>9}"
           f"{'last ' + str(win) + ' med':>14}{'p90':>9}{'last/first':>12}")
    print(hdr + "   (ms)")
    print("-" * len(hdr))
    for name, s in sides.items():
        fw, lw = s["first_window"], s["last_window"]
        print(f"{name:<14}{fw['median_ms']:>14.2f}{fw['p90_ms']:>9.2f}"
              f"{lw['median_ms']:>14.2f}{lw['p90_ms']:>9.2f}{s['last_over_first']:>12.2f}")
    print(f"{'ours/pypaimon':<14}{vs_first:>14.3f}{'':>9}{vs_last:>14.3f}")
    print(f"(paimon_commit_thread: ours with another library's threads running, "
          f"{background['threads_at_start']} threads in the process, "
          f"{background['background_ops']} background operations)")
    print()
    print(f"curve (median ms per {CURVE_STEP} commits):")
    for a, b in zip(o["curve"], p["curve"]):
        r = ratio(a["median_ms"], b["median_ms"])
        print(f"  commits {a['first_commit']:>5}-{a['last_commit']:<5}  ours {a['median_ms']:8.2f}"
              f"   pypaimon {b['median_ms']:8.2f}   ratio {r:.3f}")
    print()
    print(f"target flat   (ours last/first <= {FLAT_TARGET}):           "
          f"{o['last_over_first']:.2f}  {'PASS' if flat_ok else 'FAIL'}")
    print(f"target faster (ours/pypaimon at last window <= {VS_PEER_TARGET}): "
          f"{vs_last:.3f}  {'PASS' if fast_ok else 'FAIL'}")
    print(f"target flat_thread (the same, threads running):       "
          f"{ot['last_over_first']:.2f}  {'PASS' if flat_thread_ok else 'FAIL'}")
    print(f"target vs_pypaimon_thread (threads running):           "
          f"{vs_last_thread:.3f}  {'PASS' if fast_thread_ok else 'FAIL'}")
    print(f"wall time {wall:.1f} s (commit time ours {o['total_commit_seconds']:.1f} s, "
          f"pypaimon {p['total_commit_seconds']:.1f} s)", flush=True)
    busy = [x for x in (load_before, load_after)
            if x is not None and x > 0.5 * (os.cpu_count() or 1)]
    if busy:
        print(f"note: the machine was busy (1-min load average {load_before} before, "
              f"{load_after} after, {os.cpu_count()} cpus): absolute latencies and the "
              f"first/last comparison are noisy; ours/pypaimon is interleaved and more robust")

    # --- correctness (untimed) ---
    print("verifying both tables ...", flush=True)
    t0 = time.perf_counter()
    errors = verify(warehouse, [ours_path, ours_thread_path], n)
    verify_s = time.perf_counter() - t0
    print(f"verification: {'OK' if not errors else 'FAILED'} ({verify_s:.1f} s)")
    for e in errors:
        print(f"  ERROR: {e}")

    result = {
        "benchmark": "bench_commit",
        "description": f"{n} sequential one-file commits into a {N_PARTITIONS}-partition "
                       f"append table, paimon_commit and pypaimon interleaved, then "
                       f"paimon_commit with another library's threads running; only the "
                       f"commit call is timed",
        "timestamp_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "config": {"commits": n, "window": win, "partitions": N_PARTITIONS,
                   "rows_per_commit": 1, "curve_step": CURVE_STEP,
                   "ours_commit_object": "one long-lived TableCommit",
                   "pypaimon_commit_object": "fresh BatchWriteBuilder/BatchTableCommit per "
                                             "commit (filesystem catalog)"},
        "environment": {
            "paimon_commit": _ours_version(),
            "pypaimon": version("pypaimon"), "pyarrow": pa.__version__,
            "fastavro": _safe_version("fastavro"),
            "python": platform.python_version(), "platform": platform.platform(),
            "cpu_count": os.cpu_count(),
            "usable_cpus": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
            else None,
            "pypaimon_native_commits": peer.native_commits,
            "loadavg_1min_before": load_before, "loadavg_1min_after": load_after,
            "other_threads": background,
        },
        "wall_seconds": wall,
        "verify_seconds": verify_s,
        "sides": sides,
        "ours_over_pypaimon": {"first_window": vs_first, "last_window": vs_last},
        "targets": {
            "flat": {"metric": "ours last-window median / first-window median",
                     "value": o["last_over_first"], "target": FLAT_TARGET, "pass": flat_ok},
            "vs_pypaimon": {"metric": "ours / pypaimon median at the last window",
                            "value": vs_last, "target": VS_PEER_TARGET, "pass": fast_ok},
            "flat_thread": {"metric": "ours with another library's threads running: "
                                      "last-window median / first-window median",
                            "value": ot["last_over_first"], "target": FLAT_TARGET,
                            "pass": flat_thread_ok},
            "vs_pypaimon_thread": {"metric": "ours with another library's threads running / "
                                             "pypaimon (without them) median at the last "
                                             "window",
                                   "value": vs_last_thread, "target": VS_PEER_TARGET,
                                   "pass": fast_thread_ok},
        },
        "verdict": "PASS" if flat_ok and fast_ok and flat_thread_ok and fast_thread_ok
        else "FAIL",
        "correctness": {"ok": not errors, "errors": errors},
    }
    return finish(result, args.out, run_dir, errors, args.keep)


if __name__ == "__main__":
    sys.exit(main())
