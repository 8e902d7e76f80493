"""Snapshot-expiration benchmark: paimon_commit's expire() vs a plain-Python floor, at two
retained-table sizes, in one run.

Each table is built once (untimed): N live one-row data files over 4 partitions (a few bulk
commits), one churn commit, an expiration that leaves only that churn snapshot, then C churn
commits that each add one new file and delete the oldest live file of the same partition.
The table then has exactly C + 1 snapshots; expiring with retain_min = 1 expires C of them
and deletes C data files plus the manifests, manifest lists and snapshot files only they used.

Every measurement runs on a fresh copy of the built table (shutil.copytree), opened fresh
(Table.open), so that nothing is cached in-process:
  * ours:  ExpireSnapshots(store, ExpireConfig(retain_min=1, time_retained_ms=0)).expire()
  * ours_thread: the same, in the same process, with another library's threads alive and
           working from before Table.open until expire() returns, as in a Spark driver, a
           notebook kernel or an Airflow worker (issue "Fast where users run it": every
           operation is measured both without and with another library's threads running).
           The threads (_common.OtherThreads): (a) one idle daemon thread, blocked on an
           event; (b) a daemon thread that every 5 ms builds a 512-row table
           (pa.Table.from_pydict: it holds the GIL briefly), aggregates it
           (Table.group_by().aggregate(): Acero, on pyarrow's own CPU thread pool) and sums a
           pyarrow.compute expression over it: about 0.1-0.3 ms of work per 5 ms, a few
           percent of one core, kept small on purpose so that what is measured is our
           expiration sharing the process (GIL hand-offs, a live foreign pool), not a CPU
           taken by the load itself. Both threads are stopped after each run; the process's
           thread count at the start and the background operations done meanwhile are
           recorded. Its process CPU seconds include those threads' (not used for a target).
  * floor: for the same snapshots, read each snapshot JSON, its delta manifest list and the
           manifests in it (plain file read + fastavro.reader, every record decoded), then
           os.unlink, one by one, exactly the files our run deleted (same relative paths).
Each is repeated R times (new copies each time; the order of ours/ours_thread/floor rotates
per repetition, ours first in the first) and medians are reported. ours and ours_thread run
in the benchmark's own process (after an untimed warm-up run), the floor too.

Targets:
  * floor: ours median <= 1.3 x the floor median, at both sizes (issue 19; floor_small,
           floor_large), and the same for ours_thread (floor_thread_small,
           floor_thread_large: "a process with other threads running")
  * scale: ours at the large size <= 1.5 x ours at the small size (cost follows the
           number of expired snapshots, not the size of the retained table), in median
           process CPU seconds: a ratio of one tool at two sizes, measured minutes apart,
           which wall time on a shared machine does not give reliably (a run at load 7 had
           1.57 wall and 1.33 CPU; the floor's own wall ratio was 1.31); the wall ratio is
           printed beside it

Afterwards (untimed) every expired copy is checked: C snapshots expired, C data files
deleted, every file the latest snapshot references exists, the same files deleted in every
repetition, and (first repetition) pypaimon reads exactly the expected rows from the latest
snapshot. A mismatch exits 1; missing a target only prints FAIL (exit 0). A missed floor
target profiles our expire() (cProfile, top 25, the calling thread only) on the worst table:
ours for floor_*, ours with the other threads running for floor_thread_*.

    python benchmarks/bench_expire.py            # 1,000 snapshots; 1,000 / 20,000 live files
    python benchmarks/bench_expire.py --quick    # 200 snapshots; 500 / 5,000 live files

Overwrite-heavy memory (issue 26 item 3), `--overwrite 100000,400000`: for each size N, an
overwrite table of N data files (benchmarks/scale_tables.build_overwrite_table, 50 files per
snapshot: every snapshot replaces every live file, so its delta DELETEs 50 files and ADDs 50)
is expired down to 10 snapshots in a fresh subprocess per size; reported: its peak RSS
(VmHWM) over its RSS after imports and Table.open, per data file of backlog, and the CPU
seconds per file (linear time). Target: <= 500 B per file of backlog at every size.
"""
from __future__ import annotations

from _common import loadavg as _loadavg, ours_version as _ours_version, safe_version as _safe_version, finish  # noqa: E402,E501
import argparse
import cProfile
import io
import json
import os
import platform
import pstats
import shutil
import statistics
import sys
import tempfile
import time
from collections import deque
from typing import Any, Deque, Dict, List, Optional, Set, Tuple

# Run as a script from anywhere: make the repository importable.
_REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _REPO not in sys.path:
    sys.path.insert(0, _REPO)

import fastavro  # noqa: E402
from _common import OTHER_PERIOD_S, OTHER_ROWS, OtherThreads  # noqa: E402  (ours_thread)
import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

N_PARTITIONS = 4
BULK_COMMITS = 4         # commits that load the initial live files
FLOOR_TARGET = 1.3       # ours <= 1.3 x floor (issue 19)
SCALE_TARGET = 1.5       # ours(large) <= 1.5 x ours(small)
SIDES = ("ours", "ours_thread", "floor")
OURS = ("ours", "ours_thread")   # ours_thread: the same expire() with other threads running
PROFILE_TOP = 25

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string()), ("p", pa.int32())])
DEFAULT_OUT = os.path.join(_REPO, "benchmarks", "results", "bench_expire.json")


class CorrectnessError(Exception):
    pass


def ratio(a: float, b: float) -> Optional[float]:
    return a / b if b > 0 else None


def fmt_ratio(x: Optional[float], digits: int = 2) -> str:
    return "n/a" if x is None else f"{x:.{digits}f}"


# --- building a table (untimed) ---------------------------------------------------------
def expire_config(n_expire: int):
    from paimon_commit.operations.expire import ExpireConfig
    return ExpireConfig(retain_min=1, time_retained_ms=0, max_deletes=max(5000, n_expire + 10))


def build_table(path: str, n_live: int, n_churn: int) -> Dict[str, Any]:
    """Build the table at `path`; returns facts about it (expected ids, snapshot ids, ...)."""
    from paimon_commit import CommitMessage, Table
    from paimon_commit.operations.expire import ExpireSnapshots

    t0 = time.perf_counter()
    t = Table.create(path, SCHEMA, partition_keys=["p"], options={"write-only": "true"})
    store = t.store

    # 1. bulk: n_live one-row files in BULK_COMMITS commits. One writer per 4 rows (one row per
    #    partition): a writer keeps one open file per partition until prepare_commit.
    next_id = 0
    per_commit = -(-n_live // BULK_COMMITS)
    with t.new_commit() as c:
        while next_id < n_live:
            msgs = []
            stop = min(n_live, next_id + per_commit)
            while next_id < stop:
                k = min(N_PARTITIONS, stop - next_id)
                ids = list(range(next_id, next_id + k))
                w = t.new_writer()
                w.write_arrow(pa.Table.from_pydict(
                    {"id": ids, "v": [f"v{i}" for i in ids],
                     "p": [i % N_PARTITIONS for i in ids]}, schema=SCHEMA))
                msgs.extend(w.prepare_commit())
                next_id += k
            c.commit(msgs)
    bulk_s = time.perf_counter() - t0

    live = t.live_entries()
    if len(live) != n_live:
        raise CorrectnessError(f"{path}: {len(live)} live files after the bulk load, "
                               f"expected {n_live}")
    # Oldest first, per partition: (partition bytes, DataFileMeta).
    queues: Dict[bytes, Deque[Tuple[bytes, Any]]] = {}
    for e in live:
        queues.setdefault(e.partition, deque()).append((e.partition, e.file))
    by_values = {store.manifests.decode_partition(pb): pb for pb in queues}
    expected_ids: Set[int] = set(range(n_live))

    def churn(c, i: int) -> int:
        nonlocal next_id
        p = i % N_PARTITIONS
        pb = by_values[(p,)]
        old_pb, old = queues[pb].popleft()
        old_path = store.data_file_path(_entry(old_pb, old))
        old_ids = pq.ParquetFile(old_path).read(columns=["id"]).column("id").to_pylist()
        w = t.new_writer()
        w.write_arrow(pa.Table.from_pydict({"id": [next_id], "v": [f"v{next_id}"], "p": [p]},
                                           schema=SCHEMA))
        (m,) = w.prepare_commit()
        if m.partition_bytes != old_pb:
            raise CorrectnessError(f"partition bytes differ for partition {p}")
        sid = c.commit([CommitMessage(m.partition, m.partition_bytes, 0, -1,
                                      new_files=m.new_files, deleted_files=(old,))])
        queues[pb].append((m.partition_bytes, m.new_files[0]))
        expected_ids.difference_update(old_ids)
        expected_ids.add(next_id)
        next_id += 1
        return sid

    # 2. one churn commit, then expire everything before it: the bulk snapshots (whose deltas
    #    hold every initial file) are gone, the timed runs expire only churn snapshots.
    t1 = time.perf_counter()
    with t.new_commit() as c:
        first = churn(c, 0)
    pre = ExpireSnapshots(store, expire_config(BULK_COMMITS)).expire()
    if pre.expired_snapshots != first - 1:
        raise CorrectnessError(f"{path}: pre-expiration expired {pre.expired_snapshots} "
                               f"snapshots, expected {first - 1}")

    # 3. the churn that the timed runs expire
    with t.new_commit() as c:
        progress = max(1, n_churn // 5)
        for i in range(1, n_churn + 1):
            churn(c, i)
            if i % progress == 0:
                print(f"    churn {i}/{n_churn} ({time.perf_counter() - t1:.0f} s)", flush=True)
    churn_s = time.perf_counter() - t1

    t2 = Table.open(path)
    latest = t2.latest_snapshot()
    snaps = t2.snapshots()
    if [s.id for s in snaps] != list(range(first, first + n_churn + 1)):
        raise CorrectnessError(f"{path}: snapshots {snaps[0].id}..{snaps[-1].id} "
                               f"({len(snaps)}), expected {first}..{first + n_churn}")
    live = t2.live_entries()
    if len(live) != n_live:
        raise CorrectnessError(f"{path}: {len(live)} live files after the churn, expected "
                               f"{n_live}")
    base = store.manifests.read_list(latest.base_manifest_list)
    return {"path": path, "live_files": n_live, "churn_commits": n_churn,
            "first_snapshot": first, "latest_snapshot": latest.id,
            "expected_rows": len(expected_ids), "expected_ids": expected_ids,
            "latest_base_manifests": len(base),
            "latest_base_manifest_bytes": sum(m.file_size for m in base),
            "bulk_seconds": bulk_s, "churn_seconds": churn_s,
            "disk_bytes": _du(path)}


def _entry(partition: bytes, meta):
    from paimon_commit.format.manifest import FileKind, ManifestEntry
    return ManifestEntry(FileKind.ADD, partition, 0, -1, meta)


def _du(path: str) -> int:
    total = 0
    for d, _, files in os.walk(path):
        for f in files:
            try:
                total += os.lstat(os.path.join(d, f)).st_size
            except OSError:
                pass
    return total


# --- the two sides (timed) --------------------------------------------------------------
def run_ours(copy: str, n_expire: int, profile: bool = False, other_threads: bool = False):
    """Our expire() on `copy`: (result, wall seconds, profiler or None, facts about the other
    threads or None). other_threads: the ours_thread side, with another library's threads
    (_common.OtherThreads) started before the table is opened and stopped after."""
    from paimon_commit import Table  # noqa: F401  (imported before the threads start)
    from paimon_commit.operations.expire import ExpireSnapshots  # noqa: F401
    other = OtherThreads().start() if other_threads else None
    try:
        res = _run_ours(copy, n_expire, profile)
    finally:
        facts = other.stop() if other is not None else None
    return res + (facts,)


def _run_ours(copy: str, n_expire: int, profile: bool):
    from paimon_commit import Table
    from paimon_commit.operations.expire import ExpireSnapshots
    t = Table.open(copy)  # fresh: no manifest cache from building
    op = ExpireSnapshots(t.store, expire_config(n_expire))
    prof = cProfile.Profile() if profile else None
    c0, t0 = time.process_time(), time.perf_counter()
    if prof is not None:
        prof.enable()
    r = op.expire()
    if prof is not None:
        prof.disable()
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    r.seconds["cpu"] = cpu  # process CPU (user + sys, all threads): less sensitive to load
    return r, wall, prof


def run_floor(copy: str, snapshot_ids: List[int], rel_paths: List[str]) -> Dict[str, float]:
    """Read the delta manifests that name the deleted files, then unlink the same files."""
    snap_dir = os.path.join(copy, "snapshot")
    man_dir = os.path.join(copy, "manifest")
    entries = 0
    c0, t0 = time.process_time(), time.perf_counter()
    for sid in snapshot_ids:
        with open(os.path.join(snap_dir, f"snapshot-{sid}"), "rb") as f:
            snap = json.loads(f.read())
        with open(os.path.join(man_dir, snap["deltaManifestList"]), "rb") as f:
            metas = list(fastavro.reader(io.BytesIO(f.read())))
        for m in metas:
            with open(os.path.join(man_dir, m["_FILE_NAME"]), "rb") as f:
                entries += len(list(fastavro.reader(io.BytesIO(f.read()))))
    t1 = time.perf_counter()
    for rel in rel_paths:
        os.unlink(os.path.join(copy, rel))
    t2, c2 = time.perf_counter(), time.process_time()
    return {"seconds": t2 - t0, "read_seconds": t1 - t0, "unlink_seconds": t2 - t1,
            "cpu_seconds": c2 - c0,
            "delta_entries_read": entries, "files_unlinked": len(rel_paths)}


# --- verification (untimed) -------------------------------------------------------------
def verify_expired(copy: str, info: Dict[str, Any], r, read_rows: bool,
                   warehouse: str, identifier: str) -> List[str]:
    from paimon_commit import Table
    errors: List[str] = []
    n = info["churn_commits"]
    if r.skipped:
        errors.append(f"expire skipped work: {r.skipped}")
    if r.expired_snapshots != n:
        errors.append(f"expired {r.expired_snapshots} snapshots, expected {n}")
    data = r.by_kind.get("data", {}).get("files", 0)
    if data != n:
        errors.append(f"deleted {data} data files, expected {n}")
    t = Table.open(copy)
    snaps = t.snapshots()
    if [s.id for s in snaps] != [info["latest_snapshot"]]:
        errors.append(f"snapshots left: {[s.id for s in snaps][:10]}, expected only "
                      f"{info['latest_snapshot']}")
    missing = [f.path for f in t.live_files() if not os.path.exists(f.path)]
    if missing:
        errors.append(f"{len(missing)} data files referenced by the latest snapshot are "
                      f"missing, e.g. {missing[0]}")
    latest = t.latest_snapshot()
    mio = t.store.manifests
    for name in latest.manifest_lists():
        if not os.path.exists(mio.path(name)):
            errors.append(f"manifest list {name} of the latest snapshot is missing")
            continue
        for m in mio.read_list(name):
            if not os.path.exists(mio.path(m.file_name)):
                errors.append(f"manifest {m.file_name} of the latest snapshot is missing")
    if read_rows:
        try:
            from pypaimon import CatalogFactory
            pt = CatalogFactory.create({"warehouse": warehouse}).get_table(identifier)
            rb = pt.new_read_builder()
            out = rb.new_read().to_arrow(rb.new_scan().plan().splits())
            ids = [] if out is None else out.column("id").to_pylist()
        except Exception as e:  # noqa: BLE001 - any reader failure is a mismatch
            errors.append(f"pypaimon failed to read the expired table: {e!r}")
        else:
            if len(ids) != info["expected_rows"]:
                errors.append(f"pypaimon reads {len(ids)} rows, expected "
                              f"{info['expected_rows']}")
            elif set(ids) != info["expected_ids"] or len(set(ids)) != len(ids):
                errors.append("pypaimon reads the right number of rows but the wrong ids")
    return errors


# --- one table size ---------------------------------------------------------------------
def measure_size(label: str, info: Dict[str, Any], warehouse: str, reps: int,
                 errors: List[str]) -> Dict[str, Any]:
    built = info["path"]
    db_dir = os.path.dirname(built)
    n = info["churn_commits"]
    runs: Dict[str, List[Dict[str, Any]]] = {side: [] for side in SIDES}
    floor_runs = runs["floor"]
    rel_paths: Optional[List[str]] = None
    delta_ids: Optional[List[int]] = None
    by_kind: Dict[str, Any] = {}

    def ours_once(rep: int, side: str) -> None:
        nonlocal rel_paths, delta_ids, by_kind
        name = f"{label}_{side}_{rep}"
        copy = os.path.join(db_dir, name)
        shutil.copytree(built, copy)
        r, wall, _, other = run_ours(copy, n, other_threads=side == "ours_thread")
        rels = sorted(os.path.relpath(p, copy) for p in r.deleted_paths)
        errs = verify_expired(copy, info, r, read_rows=(rep == 0 and side == "ours"),
                              warehouse=warehouse, identifier=f"db.{name}")
        if rel_paths is None:
            rel_paths = [os.path.relpath(p, copy) for p in r.deleted_paths]  # our order
            delta_ids = list(range(r.expired_ids[0] + 1, r.earliest + 1)) if r.expired_ids \
                else []
            by_kind = r.by_kind
        elif rels != sorted(rel_paths):
            errs.append(f"repetition {rep} deleted a different set of files "
                        f"({len(rels)} vs {len(rel_paths)})")
        errors.extend(f"{label} table, {side} repetition {rep}: {e}" for e in errs)
        runs[side].append({"seconds": wall, "plan_seconds": r.seconds["plan"],
                           "delete_seconds": r.seconds["delete"],
                           "cpu_seconds": r.seconds["cpu"],
                           "expired_snapshots": r.expired_snapshots,
                           "deleted_files": r.deleted_files, **(other or {})})
        shutil.rmtree(copy, ignore_errors=True)

    def floor_once(rep: int) -> None:
        copy = os.path.join(db_dir, f"{label}_floor_{rep}")
        shutil.copytree(built, copy)
        try:
            floor_runs.append(run_floor(copy, delta_ids, rel_paths))
        except FileNotFoundError as e:
            errors.append(f"{label} table, floor repetition {rep}: {e}")
        shutil.rmtree(copy, ignore_errors=True)

    for rep in range(reps):
        # The order rotates per repetition; ours runs first in the first one (the floor
        # deletes what ours deleted).
        order = SIDES[rep % len(SIDES):] + SIDES[:rep % len(SIDES)]
        for side in order:
            if side == "floor":
                floor_once(rep)
            else:
                ours_once(rep, side)
        parts = []
        for side in OURS:
            o = runs[side][-1]
            parts.append(f"{side} {o['seconds']:.3f} s (plan {o['plan_seconds']:.3f} + "
                         f"delete {o['delete_seconds']:.3f})")
        f = floor_runs[-1] if floor_runs else None
        if f:
            parts.append(f"floor {f['seconds']:.3f} s (read {f['read_seconds']:.3f} + unlink "
                         f"{f['unlink_seconds']:.3f})")
        print(f"    rep {rep + 1}/{reps}: " + ", ".join(parts), flush=True)

    def med(runs: List[Dict[str, Any]], key: str) -> float:
        return statistics.median(x[key] for x in runs) if runs else float("nan")

    def ours_of(side_runs: List[Dict[str, Any]]) -> Dict[str, Any]:
        return {"median_seconds": med(side_runs, "seconds"),
                "median_plan_seconds": med(side_runs, "plan_seconds"),
                "median_delete_seconds": med(side_runs, "delete_seconds"),
                "median_cpu_seconds": med(side_runs, "cpu_seconds"),
                "min_seconds": min(x["seconds"] for x in side_runs),
                "runs": side_runs}

    files = len(rel_paths or [])
    ours, ours_thread = ours_of(runs["ours"]), ours_of(runs["ours_thread"])
    floor = {"median_seconds": med(floor_runs, "seconds"),
             "median_read_seconds": med(floor_runs, "read_seconds"),
             "median_unlink_seconds": med(floor_runs, "unlink_seconds"),
             "median_cpu_seconds": med(floor_runs, "cpu_seconds"),
             "min_seconds": min((x["seconds"] for x in floor_runs), default=float("nan")),
             "delta_snapshots_read": len(delta_ids or []), "runs": floor_runs}
    for o in (ours, ours_thread):
        o["files_per_second"] = files / o["median_seconds"]
    floor["files_per_second"] = files / floor["median_seconds"] if floor_runs else None
    return {
        "live_files": info["live_files"],
        "expired_snapshots": runs["ours"][0]["expired_snapshots"],
        "deleted_files": files,
        "deleted_by_kind": by_kind,
        "ours": ours, "ours_thread": ours_thread, "floor": floor,
        "ours_over_floor": ratio(ours["median_seconds"], floor["median_seconds"])
        if floor_runs else None,
        "ours_over_floor_best": ratio(ours["min_seconds"], floor["min_seconds"])
        if floor_runs else None,
        "ours_over_floor_cpu": ratio(ours["median_cpu_seconds"], floor["median_cpu_seconds"])
        if floor_runs else None,
        # the same for ours with another library's threads running (its CPU seconds include
        # theirs: process CPU counts every thread)
        "ours_thread_over_floor": ratio(ours_thread["median_seconds"], floor["median_seconds"])
        if floor_runs else None,
        "ours_thread_over_floor_best": ratio(ours_thread["min_seconds"], floor["min_seconds"])
        if floor_runs else None,
        "ours_thread_over_ours": ratio(ours_thread["median_seconds"], ours["median_seconds"]),
        "build": {k: v for k, v in info.items() if k not in ("expected_ids", "path")},
    }


def profile_ours(built: str, n: int, other_threads: bool = False) -> str:
    copy = built + "_profile"
    shutil.copytree(built, copy)
    try:
        _, wall, prof, _ = run_ours(copy, n, profile=True, other_threads=other_threads)
    finally:
        shutil.rmtree(copy, ignore_errors=True)
    buf = io.StringIO()
    pstats.Stats(prof, stream=buf).sort_stats("cumulative").print_stats(PROFILE_TOP)
    busy = ", other threads running (calling thread profiled)" if other_threads else ""
    return f"profiled expire() on a copy of {os.path.basename(built)}{busy}: {wall:.3f} s wall " \
           f"(profiler overhead included)\n" + buf.getvalue()


# --- main -------------------------------------------------------------------------------
OVERWRITE_PER_SNAPSHOT = 50
MEMORY_TARGET = 500   # bytes of peak RSS per data file of backlog (issue 26 item 3)


def _vm(key: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key):
                return int(line.split()[1])
    return 0


def overwrite_child(path: str) -> None:
    """In a fresh process: expire all but 10 snapshots of `path`, print the figures."""
    from paimon_commit import Table
    from paimon_commit.operations.expire import ExpireConfig, ExpireSnapshots
    t = Table.open(path)
    base = _vm("VmRSS")
    c0, t0 = time.process_time(), time.perf_counter()
    r = ExpireSnapshots(t.store, ExpireConfig(retain_min=10, retain_max=10, time_retained_ms=0,
                                              max_deletes=1 << 30)).expire()
    print(json.dumps({"seconds": time.perf_counter() - t0, "cpu_seconds": time.process_time() - c0,
                      "expired_snapshots": r.expired_snapshots, "deleted_files": r.deleted_files,
                      "data_files": r.by_kind.get("data", {}).get("files", 0),
                      "rss_after_open_kb": base, "peak_rss_kb": _vm("VmHWM"),
                      "skipped": r.skipped, "loadavg_1min": _loadavg()}))


def overwrite_memory(sizes: List[int], parent: str) -> Dict[str, Any]:
    import subprocess
    from scale_tables import build_overwrite_table
    out: Dict[str, Any] = {"per_snapshot": OVERWRITE_PER_SNAPSHOT, "retain": 10, "sizes": {}}
    for n in sizes:
        path = os.path.join(parent, f"overwrite_{n}")
        print(f"  building an overwrite table of {n} files ...", flush=True)
        build_overwrite_table(path, n, OVERWRITE_PER_SNAPSHOT)
        proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--overwrite-child",
                               path], capture_output=True, text=True, check=True)
        m = json.loads(proc.stdout.strip().splitlines()[-1])
        over = (m["peak_rss_kb"] - m["rss_after_open_kb"]) * 1024
        m["bytes_per_file_of_backlog"] = over / max(1, m["data_files"])
        m["cpu_us_per_file"] = m["cpu_seconds"] * 1e6 / max(1, m["data_files"])
        out["sizes"][str(n)] = m
        print(f"    {n} files: expired {m['expired_snapshots']} snapshots, {m['data_files']} "
              f"data files; peak RSS +{over / 2**20:.1f} MB = "
              f"{m['bytes_per_file_of_backlog']:.0f} B per file; {m['cpu_seconds']:.2f} s CPU "
              f"({m['cpu_us_per_file']:.1f} us per file), load {m['loadavg_1min']}", flush=True)
        shutil.rmtree(path, ignore_errors=True)
    worst = max(v["bytes_per_file_of_backlog"] for v in out["sizes"].values())
    out["target"] = {"metric": "peak RSS over baseline per data file of backlog (bytes), worst "
                     "size", "value": worst, "target": MEMORY_TARGET,
                     "pass": worst <= MEMORY_TARGET}
    print(f"target memory (<= {MEMORY_TARGET} B per file of backlog): {worst:.0f}  "
          f"{'PASS' if worst <= MEMORY_TARGET else 'FAIL'}")
    return out


def parse_args(argv=None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--snapshots", type=int, default=None,
                    help="snapshots to expire, one churn commit each (default 1000)")
    ap.add_argument("--small", type=int, default=None,
                    help="live files of the small table (default 1000)")
    ap.add_argument("--large", type=int, default=None,
                    help="live files of the large table (default 20000)")
    ap.add_argument("--reps", type=int, default=7,
                    help="repetitions per side (default 7: with 3, the floor alone varied "
                         "0.23-0.43 s between repetitions on the 2-core VM, and the medians "
                         "of two runs differed by up to 0.3)")
    ap.add_argument("--quick", action="store_true", help="200 snapshots; 500 / 5,000 live files")
    ap.add_argument("--profile", action="store_true",
                    help="always profile our expire() on the large table (default: only when "
                         "the floor target is missed)")
    ap.add_argument("--dir", default=None,
                    help="parent directory for the run's warehouse (default: system temp)")
    ap.add_argument("--out", default=DEFAULT_OUT, help=f"JSON results (default {DEFAULT_OUT})")
    ap.add_argument("--keep", action="store_true", help="keep the built tables after the run")
    ap.add_argument("--overwrite", default=None,
                    help="only the overwrite-heavy memory measurement, at these comma-separated "
                         "numbers of data files (e.g. 100000,400000)")
    ap.add_argument("--overwrite-child", default=None, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.snapshots is None:
        a.snapshots = 200 if a.quick else 1000
    if a.small is None:
        a.small = 500 if a.quick else 1000
    if a.large is None:
        a.large = 5000 if a.quick else 20000
    if a.snapshots < 1 or a.reps < 1 or a.small < 2 * N_PARTITIONS or a.large < a.small:
        ap.error("need --snapshots >= 1, --reps >= 1, --small >= 8, --large >= --small")
    return a


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.overwrite_child:
        overwrite_child(args.overwrite_child)
        return 0
    if args.overwrite:
        parent = tempfile.mkdtemp(prefix="bench_expire_ov_", dir=args.dir)
        load_before = _loadavg()
        res = overwrite_memory([int(x) for x in args.overwrite.split(",")], parent)
        target = res.pop("target")
        result = {"benchmark": "bench_expire_overwrite",
                  "description": "peak memory of expiring an overwrite-heavy table down to 10 "
                                 "snapshots, per data file of backlog, in a fresh subprocess "
                                 "per size (memory does not depend on load; times do)",
                  "timestamp_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                  "environment": {"paimon_commit": _ours_version(),
                                  "python": platform.python_version(),
                                  "cpu_count": os.cpu_count(),
                                  "loadavg_1min_before": load_before,
                                  "loadavg_1min_after": _loadavg()},
                  "config": res, "targets": {"memory_per_file": target},
                  "verdict": "PASS" if target["pass"] else "FAIL"}
        out = args.out if args.out != DEFAULT_OUT else DEFAULT_OUT.replace(
            ".json", "_overwrite.json")
        return finish(result, out, parent, [], args.keep)
    import pypaimon  # noqa: F401  (fail early if the verifier is missing)

    n = args.snapshots
    parent = args.dir or tempfile.gettempdir()
    os.makedirs(parent, exist_ok=True)
    run_dir = tempfile.mkdtemp(prefix="bench_expire_", dir=parent)
    warehouse = os.path.join(run_dir, "wh")
    db_dir = os.path.join(warehouse, "db.db")  # pypaimon opens <wh>/db.db/<name> as db.<name>
    os.makedirs(db_dir)
    sizes = {"small": args.small, "large": args.large}

    print(f"bench_expire: expire {n} snapshots (each adds one file, deletes an older one) from "
          f"tables of {args.small} and {args.large} live files, {args.reps} repetitions; "
          f"warehouse {warehouse}", flush=True)
    load_before = _loadavg()
    wall0 = time.perf_counter()
    errors: List[str] = []
    infos: Dict[str, Dict[str, Any]] = {}
    for label, n_live in sizes.items():
        print(f"  building {label} table: {n_live} live files, {n} churn commits ...",
              flush=True)
        try:
            infos[label] = build_table(os.path.join(db_dir, f"{label}_built"), n_live, n)
        except CorrectnessError as e:
            errors.append(f"{label} table build: {e}")
            break
        b = infos[label]
        print(f"    built in {b['bulk_seconds'] + b['churn_seconds']:.1f} s (bulk "
              f"{b['bulk_seconds']:.1f} s, churn {b['churn_seconds']:.1f} s); latest base list "
              f"has {b['latest_base_manifests']} manifests "
              f"({b['latest_base_manifest_bytes'] / 1e6:.2f} MB)", flush=True)

    results: Dict[str, Any] = {}
    if not errors:
        # Warm-up (untimed, discarded): first-call costs (imports, thread pool) land here.
        warm = os.path.join(db_dir, "warmup")
        shutil.copytree(infos["small"]["path"], warm)
        run_ours(warm, n)
        shutil.rmtree(warm, ignore_errors=True)
        for label in sizes:
            print(f"  measuring {label} table ...", flush=True)
            results[label] = measure_size(label, infos[label], warehouse, args.reps, errors)
    wall = time.perf_counter() - wall0
    load_after = _loadavg()

    if len(results) < len(sizes) or not all(
            r["floor"]["runs"] and r["ours"]["runs"] and r["ours_thread"]["runs"]
            for r in results.values()):
        print("run aborted:")
        for e in errors:
            print(f"  ERROR: {e}")
        print(f"tables kept for inspection under {run_dir}")
        return 1

    # --- numbers ---
    s, l_ = results["small"], results["large"]
    scale_ours = ratio(l_["ours"]["median_seconds"], s["ours"]["median_seconds"])
    scale_cpu = ratio(l_["ours"]["median_cpu_seconds"], s["ours"]["median_cpu_seconds"])
    scale_floor = ratio(l_["floor"]["median_seconds"], s["floor"]["median_seconds"])
    def floor_pass(v: Optional[float]) -> bool:
        return v is not None and v <= FLOOR_TARGET

    floor_ok = all(floor_pass(r["ours_over_floor"]) for r in results.values())
    thread_ok = all(floor_pass(r["ours_thread_over_floor"]) for r in results.values())
    scale_ok = scale_cpu is not None and scale_cpu <= SCALE_TARGET

    print()
    hdr = (f"{'table':<7}{'live':>7}{'expired':>9}{'files':>7}{'ours s':>9}{'plan':>8}"
           f"{'delete':>8}{'files/s':>9}{'floor s':>9}{'read':>8}{'unlink':>8}"
           f"{'files/s':>9}{'ours/floor':>12}")
    print(hdr + f"   (medians of {args.reps})")
    print("-" * len(hdr))
    for label, r in results.items():
        o, f = r["ours"], r["floor"]
        print(f"{label:<7}{r['live_files']:>7}{r['expired_snapshots']:>9}{r['deleted_files']:>7}"
              f"{o['median_seconds']:>9.3f}{o['median_plan_seconds']:>8.3f}"
              f"{o['median_delete_seconds']:>8.3f}{o['files_per_second']:>9.0f}"
              f"{f['median_seconds']:>9.3f}{f['median_read_seconds']:>8.3f}"
              f"{f['median_unlink_seconds']:>8.3f}{f['files_per_second']:>9.0f}"
              f"{fmt_ratio(r['ours_over_floor']):>12}")
    print("with another library's threads running (an idle one, pyarrow work every "
          f"{OTHER_PERIOD_S * 1000:g} ms; medians):")
    for label, r in results.items():
        o = r["ours_thread"]
        counts = [x["threads_at_start"] for x in o["runs"]]
        threads = f"{min(counts)}" if min(counts) == max(counts) else \
            f"{min(counts)}-{max(counts)}"
        ops = statistics.median(x.get("background_ops", 0) for x in o["runs"])
        print(f"  {label}: ours_thread {o['median_seconds']:.3f} s (plan "
              f"{o['median_plan_seconds']:.3f} + delete {o['median_delete_seconds']:.3f}), "
              f"ours_thread/floor {fmt_ratio(r['ours_thread_over_floor'])}, ours_thread/ours "
              f"{fmt_ratio(r['ours_thread_over_ours'])}; {threads} threads in the process at "
              f"the start, {ops:g} background operations meanwhile")
    print(f"large/small  ours {fmt_ratio(scale_ours)} (CPU {fmt_ratio(scale_cpu)})   "
          f"floor {fmt_ratio(scale_floor)}")
    print("less sensitive to machine load: best of the repetitions (wall), and median process "
          "CPU seconds (user + sys, all threads):")
    for label, r in results.items():
        print(f"  {label}: best ours {r['ours']['min_seconds']:.3f} floor "
              f"{r['floor']['min_seconds']:.3f} ratio {fmt_ratio(r['ours_over_floor_best'])};"
              f"  cpu ours {r['ours']['median_cpu_seconds']:.3f} floor "
              f"{r['floor']['median_cpu_seconds']:.3f} ratio "
              f"{fmt_ratio(r['ours_over_floor_cpu'])}")
    for label, r in results.items():
        kinds = ", ".join(f"{k} {v['files']}" for k, v in r["deleted_by_kind"].items())
        print(f"  {label}: deleted {kinds}")
    print()
    for side, key in (("ours", "ours_over_floor"), ("ours_thread", "ours_thread_over_floor")):
        for label, r in results.items():
            print(f"target floor ({label}: {side}/floor <= {FLOOR_TARGET}):"
                  f"{' ' * (20 - len(side) - len(label))}{fmt_ratio(r[key])}  "
                  f"{'PASS' if floor_pass(r[key]) else 'FAIL'}")
    print(f"target scale (ours large/small CPU s <= {SCALE_TARGET}):    "
          f"{fmt_ratio(scale_cpu)}  {'PASS' if scale_ok else 'FAIL'}  (wall "
          f"{fmt_ratio(scale_ours)})")
    print(f"wall time {wall:.1f} s", flush=True)
    busy = [x for x in (load_before, load_after)
            if x is not None and x > 0.5 * (os.cpu_count() or 1)]
    if busy:
        print(f"note: the machine was busy (1-min load average {load_before} before, "
              f"{load_after} after, {os.cpu_count()} cpus): absolute times are noisy; ours and "
              f"the floor alternate within each repetition")

    profile_text = None
    if args.profile or not floor_ok:
        worst = max(results, key=lambda k: results[k]["ours_over_floor"] or 0)
        print(f"\nprofiling our expire() on the {worst} table "
              f"({'requested' if args.profile else 'floor target missed'}) ...", flush=True)
        profile_text = profile_ours(infos[worst]["path"], n)
        print(profile_text)
    profile_thread_text = None
    if not thread_ok:
        worst = max(results, key=lambda k: results[k]["ours_thread_over_floor"] or 0)
        print(f"\nprofiling our expire() on the {worst} table with other threads running "
              f"(ours_thread floor target missed) ...", flush=True)
        profile_thread_text = profile_ours(infos[worst]["path"], n, other_threads=True)
        print(profile_thread_text)

    print(f"verification: {'OK' if not errors else 'FAILED'}")
    for e in errors:
        print(f"  ERROR: {e}")

    from importlib.metadata import version
    result = {
        "benchmark": "bench_expire",
        "description": f"expire {n} snapshots (each adding one file and deleting an older "
                       f"one) from append tables of {args.small} and {args.large} live files; "
                       f"ours = ExpireSnapshots.expire() on a fresh copy opened fresh, floor = "
                       f"read the same delta manifests with fastavro + os.unlink the same "
                       f"files on another fresh copy; ours also with another library's "
                       f"threads running; medians of {args.reps}",
        "timestamp_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "config": {"snapshots": n, "small_live_files": args.small,
                   "large_live_files": args.large, "repetitions": args.reps,
                   "partitions": N_PARTITIONS, "bulk_commits": BULK_COMMITS,
                   "rows_per_file": 1,
                   "expire_config": {"retain_min": 1, "time_retained_ms": 0,
                                     "max_deletes": max(5000, n + 10),
                                     "thread_num": "default (cpu_count)"},
                   "floor": "per snapshot: read snapshot JSON, delta manifest list and its "
                            "manifests (open().read() + fastavro.reader, all records); then "
                            "os.unlink each file ours deleted, sequentially",
                   "ours_thread": "ours, with other threads alive and working in the process "
                                  "from before Table.open to after expire(): one idle daemon "
                                  f"thread and one that every {OTHER_PERIOD_S * 1000:g} ms "
                                  f"builds a {OTHER_ROWS}-row table (pa.Table.from_pydict), "
                                  "group_by().aggregate()s it on pyarrow's CPU thread pool "
                                  "and sums a pyarrow.compute expression (its cpu_seconds "
                                  "include theirs)"},
        "environment": {
            "paimon_commit": _ours_version(), "pypaimon": version("pypaimon"),
            "pyarrow": pa.__version__, "fastavro": _safe_version("fastavro"),
            "python": platform.python_version(), "platform": platform.platform(),
            "cpu_count": os.cpu_count(),
            "usable_cpus": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
            else None,
            "loadavg_1min_before": load_before, "loadavg_1min_after": load_after,
        },
        "wall_seconds": wall,
        "sizes": results,
        "large_over_small": {"ours": scale_ours, "floor": scale_floor, "ours_cpu": scale_cpu},
        "targets": {
            **{f"floor_{label}": {"metric": "ours median / floor median (the benchmark's "
                                            "own process, no background work started)",
                                  "value": r["ours_over_floor"], "target": FLOOR_TARGET,
                                  "pass": floor_pass(r["ours_over_floor"])}
               for label, r in results.items()},
            **{f"floor_thread_{label}": {"metric": "ours median in a process with other "
                                                   "threads running (an idle one, pyarrow "
                                                   "work) / floor median",
                                         "value": r["ours_thread_over_floor"],
                                         "target": FLOOR_TARGET,
                                         "pass": floor_pass(r["ours_thread_over_floor"])}
               for label, r in results.items()},
            "scale": {"metric": "ours median CPU seconds at the large size / at the small "
                                "size", "value": scale_cpu, "wall_value": scale_ours,
                      "target": SCALE_TARGET, "pass": scale_ok},
        },
        "verdict": "PASS" if floor_ok and thread_ok and scale_ok else "FAIL",
        "profile": profile_text,
        "profile_thread": profile_thread_text,
        "correctness": {"ok": not errors, "errors": errors},
    }
    return finish(result, args.out, run_dir, errors, args.keep)


if __name__ == "__main__":
    sys.exit(main())
