"""Maintenance at the size where tables hurt: expiration and orphan cleanup at three table
sizes (default 20k, 200k and 2M data files), each run in a child process whose time and peak
RSS are measured.

  * expire: an overwrite-heavy table of N files in N / 100 snapshots (each OVERWRITE replaces
    the table's 100 files); expire all but 10 snapshots, so ~N data files and ~5 N / 100
    metadata files are deleted (ExpireSnapshots with retain 10, time-retained 0, no limit).
  * orphan: an append table of N live files in 100 snapshots plus 1,000 stray files; orphan
    cleanup dry run (OrphanFilesCleaner, default threshold: every file is two days old).

Tables are built quickly (benchmarks/scale_tables.py: metadata through our format layer,
data files as hard links of one tiny parquet file per partition); a small one of each shape
is first read back with pypaimon and our reader, and expired, as a check.

Per size: wall seconds, peak RSS (the child's VmHWM), the child's RSS before the
operation (imports, table opened) and bytes per file = (peak - before) / N. Expiration runs
--expire-reps times per size (default 3), each on a hard-linked copy of the built table that
is synced to disk first; the run of median CPU time stands for the size, the worst peak RSS
for its memory. Every size is built before the first run, and the runs go round by round
(each size's first run, then each size's second, ...): a ratio compares runs minutes apart
on a machine that drifts. After each run, the floor: the same files unlinked by a bare loop
in another copy (the file system's own part of the cost; its ratio is printed beside ours).

Targets (exit 1 when one fails or a check fails):
  * linear: cost at the largest size / cost at the middle size <= 1.1 x the size ratio
    (<= 11 for 2M / 200k), for CPU time (user + sys of the child: wall time on a shared
    machine follows the load) and for memory above the child's start, both operations;
  * expire_rss / orphan_rss: peak RSS at the largest size < 1 GB;
  * expire_bytes_per_file: (peak - before) / N <= 500 at the largest size.

    python benchmarks/bench_scale.py                      # 20k, 200k, 2M files (~20 min)
    python benchmarks/bench_scale.py --sizes 2000,20000,200000
    python benchmarks/bench_scale.py --ops orphan     # orphan cleanup only; the expiration
                                                     # results already in --out are kept
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Any, Dict, List, Optional, Tuple

_HERE = os.path.dirname(os.path.abspath(__file__))
_REPO = os.path.dirname(_HERE)
for _p in (_HERE, _REPO):
    if _p not in sys.path:
        sys.path.insert(0, _p)

from _common import finish, loadavg, ours_version, safe_version  # noqa: E402

DEFAULT_OUT = os.path.join(_HERE, "results", "bench_scale.json")
GB = 1 << 30
RSS_TARGET = GB
BYTES_PER_FILE_TARGET = 500
LINEAR_SLACK = 1.1      # cost ratio <= 1.1 x size ratio


# --- the child: one operation, measured -----------------------------------------------------
def _rss_kb(field: str = "VmRSS") -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def _floor_groups(path: str, paths_file: str) -> Dict[str, List[str]]:
    """The files an expiration deleted (relative paths, in its order), by directory in the
    order each first appears."""
    groups: Dict[str, List[str]] = {}
    with open(paths_file) as f:
        for line in f:
            d, _, name = os.path.join(path, line.rstrip("\n")).rpartition("/")
            groups.setdefault(d, []).append(name)
    return groups


def _floor(groups: Dict[str, List[str]]) -> Dict[str, Any]:
    """The file system's own part: the same unlinks in a bare loop (relative to each
    directory's descriptor, as our local storage unlinks), no metadata read, no checks."""
    n = 0
    for d, names in groups.items():
        fd = os.open(d, os.O_RDONLY | os.O_DIRECTORY)
        try:
            for name in names:
                os.unlink(name, dir_fd=fd)
        finally:
            os.close(fd)
        n += len(names)
    return {"deleted_files": n, "directories": len(groups)}


def child(op: str, path: str, retain: int, paths_out: Optional[str] = None) -> None:
    import logging
    logging.basicConfig(level=logging.WARNING)
    from paimon_commit.store import FileStore
    store = FileStore.open(path)
    groups = _floor_groups(path, paths_out) if op == "floor" else None
    before_kb = _rss_kb()
    c0, t0 = time.process_time(), time.perf_counter()
    if op == "floor":
        out = _floor(groups)
    elif op == "expire":
        from paimon_commit.operations.expire import ExpireConfig, ExpireSnapshots
        cfg = ExpireConfig(retain_min=retain, retain_max=retain, time_retained_ms=0,
                           max_deletes=1 << 30)
        r = ExpireSnapshots(store, cfg).expire()
        out = {"expired": r.expired_snapshots, "deleted_files": r.deleted_files,
               "by_kind": r.by_kind, "skipped": r.skipped, "earliest": r.earliest}
    elif op == "orphan":
        from paimon_commit.operations.orphan import CleanContext, OrphanFilesCleaner
        r = OrphanFilesCleaner(CleanContext(path, dry_run=True, file_io=store.io)).clean()
        out = {"orphans": r.deleted_files, "candidates": r.candidates, "used": r.used,
               "by_kind": r.by_kind, "seconds": r.seconds}
    else:
        raise SystemExit(f"unknown operation {op!r}")
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    if op == "expire" and paths_out:
        # (after the measurement) what the floor unlinks
        with open(paths_out, "w") as f:
            for p in r.deleted_paths:
                f.write(os.path.relpath(p, path) + "\n")
    print(json.dumps({"seconds": seconds, "cpu_seconds": cpu, "before_kb": before_kb,
                      "hwm_kb": _rss_kb("VmHWM"),
                      "result": out}))


def run_child(op: str, path: str, retain: int,
              paths_out: Optional[str] = None) -> Dict[str, Any]:
    """Run one operation in a fresh interpreter; peak RSS from the kernel (wait4).
    paths_out: where an expiration writes the paths it deleted, and the floor reads them."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [_REPO] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    t0 = time.perf_counter()
    extra = ["--paths", paths_out] if paths_out else []
    p = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--child", op, path,
                          "--retain", str(retain)] + extra, stdout=subprocess.PIPE, env=env)
    out = p.stdout.read()
    p.stdout.close()
    _, status, usage = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        raise RuntimeError(f"{op} child on {path} exited {p.returncode}")
    d = json.loads(out.decode().strip().splitlines()[-1])
    # The child's own high-water mark: wait4's ru_maxrss also counts the parent's pages the
    # child had between fork and exec.
    d["peak_rss"] = d.pop("hwm_kb") * 1024
    d["ru_maxrss"] = usage.ru_maxrss * 1024
    d["before_rss"] = d.pop("before_kb") * 1024
    d["process_seconds"] = wall
    d["process_cpu_seconds"] = usage.ru_utime + usage.ru_stime   # with interpreter start
    return d


# --- checks -----------------------------------------------------------------------------------
def small_check(work: str, retain: int) -> List[str]:
    """Both shapes at a small size: pypaimon and our reader read the expected rows, the
    expiration child leaves exactly the retained snapshots, orphan cleanup finds the strays."""
    from scale_tables import build_append_table, build_overwrite_table
    from paimon_commit import Table
    from pypaimon import CatalogFactory
    errors: List[str] = []
    wh = os.path.join(work, "check")
    ov = build_overwrite_table(os.path.join(wh, "db.db", "ov"), 600, per_snapshot=20)
    ap = build_append_table(os.path.join(wh, "db.db", "ap"), 600, snapshots=10, strays=7,
                            manifest_entries=25)
    cat = CatalogFactory.create({"warehouse": wh})

    def rows(name: str) -> int:
        t = cat.get_table(f"db.{name}")
        rb = t.new_read_builder()
        return rb.new_read().to_arrow(rb.new_scan().plan().splits()).num_rows

    for name, info, expected in (("ov", ov, 20), ("ap", ap, 600)):
        for reader, n in (("pypaimon", rows(name)),
                          ("paimon_commit", Table.open(info["path"]).read_arrow().num_rows)):
            if n != expected:
                errors.append(f"check: {reader} reads {n} rows of the {name} table, expected "
                              f"{expected}")
    r = run_child("expire", ov["path"], retain)
    t = Table.open(ov["path"])
    if [s.id for s in t.snapshots()] != list(range(31 - retain, 31)):
        errors.append(f"check: expire left snapshots {[s.id for s in t.snapshots()]}")
    if rows("ov") != 20:
        errors.append("check: pypaimon reads the wrong rows after expiration")
    from scale_tables import count_data_files
    if count_data_files(ov["path"]) != retain * 20:
        errors.append(f"check: {count_data_files(ov['path'])} data files left after expire, "
                      f"expected {retain * 20}")
    if r["result"]["skipped"]:
        errors.append(f"check: expire skipped {r['result']['skipped']}")
    o = run_child("orphan", ap["path"], retain)
    if o["result"]["orphans"] != 7:
        errors.append(f"check: orphan cleanup found {o['result']['orphans']} strays, expected 7")
    shutil.rmtree(wh, ignore_errors=True)
    return errors


# --- the sizes ---------------------------------------------------------------------------
def measure(work: str, args: argparse.Namespace, errors: List[str]) -> Dict[int, Dict[str, Any]]:

    def say(msg: str) -> None:
        print(f"    {msg}", flush=True)

    results: Dict[int, Dict[str, Any]] = {n: {"files": n} for n in args.sizes}
    if "expire" in args.ops:
        print("  expiration", flush=True)
        _measure_expire(args.sizes, work, args, errors, results, say)
    if "orphan" in args.ops:
        for n in args.sizes:
            if not errors:
                print(f"  orphan cleanup, {n:,} files", flush=True)
                _measure_orphan(n, work, args, errors, results[n], say)
    for n, out in results.items():
        for op in args.ops:
            r = out.get(op)
            if r is not None:
                r["bytes_per_file"] = max(0, r["peak_rss"] - r["before_rss"]) / r["files"]
    return {n: out for n, out in results.items() if all(op in out for op in args.ops)}


def _link_copy(src: str, dst: str) -> None:
    """A copy of a built table whose files are hard links of the built ones (expiration
    deletes the copy's names, the built table stays for the next repetition)."""
    for top, dirs, files in os.walk(src):
        rel = os.path.relpath(top, src)
        target = dst if rel == "." else os.path.join(dst, rel)
        os.makedirs(target, exist_ok=True)
        for name in files:
            os.link(os.path.join(top, name), os.path.join(target, name))


def _expire_run(n: int, built: str, info: Dict[str, Any], rep: int, work: str,
                args: argparse.Namespace, errors: List[str], say) -> Dict[str, Any]:
    """One expiration of a hard-linked copy of the built table (written to disk first: a
    backlog is expired days after it was written, not while the kernel still writes back the
    build, which cost the runs' sys time up to ~25% here, unevenly); then the floor, the same
    files unlinked by a bare loop in another copy."""
    from scale_tables import count_data_files
    path = os.path.join(work, f"ov_{n}_run{rep}")
    paths = os.path.join(work, f"ov_{n}_deleted.txt")
    _link_copy(built, path)
    os.sync()
    e = run_child("expire", path, args.retain, paths_out=paths)
    left = count_data_files(path)
    expect_left = args.retain * args.per_snapshot
    if left != expect_left:
        errors.append(f"{n}: {left} data files left after expiration, expected {expect_left}")
    if e["result"]["expired"] != info["snapshots"] - args.retain:
        errors.append(f"{n}: expired {e['result']['expired']} snapshots, expected "
                      f"{info['snapshots'] - args.retain}")
    if e["result"]["skipped"]:
        errors.append(f"{n}: expiration skipped work: {e['result']['skipped'][:3]}")
    shutil.rmtree(path, ignore_errors=True)
    _link_copy(built, path)
    os.sync()
    e["floor"] = run_child("floor", path, args.retain, paths_out=paths)
    if e["floor"]["result"]["deleted_files"] != e["result"]["deleted_files"] \
            or count_data_files(path) != expect_left:
        errors.append(f"{n}: the floor unlinked {e['floor']['result']['deleted_files']} "
                      f"files, the expiration {e['result']['deleted_files']}")
    shutil.rmtree(path, ignore_errors=True)
    os.unlink(paths)
    say(f"{n:,} files, run {rep + 1}: {e['seconds']:.2f} s, {e['cpu_seconds']:.2f} CPU s "
        f"(floor {e['floor']['cpu_seconds']:.2f}), peak RSS {e['peak_rss'] / 1e6:.0f} MB, "
        f"{e['result']['deleted_files']} files deleted")
    return e


def _measure_expire(sizes: List[int], work: str, args: argparse.Namespace,
                    errors: List[str], results: Dict[int, Dict[str, Any]], say) -> None:
    """Every size's table is built first; then the repetitions run round by round (the first
    run of each size, then the second, ...), so that the sizes a ratio compares were measured
    minutes apart, not a quarter of an hour: this shared box drifts (the same 2M-file run took
    54 to 68 CPU s over one morning, and a 200k median moved 13% between two sittings, which
    flipped the linear target)."""
    from scale_tables import build_overwrite_table
    built: Dict[int, Tuple[str, Dict[str, Any]]] = {}
    for n in sizes:
        path = os.path.join(work, f"ov_{n}")
        t0 = time.perf_counter()
        info = build_overwrite_table(path, n, args.per_snapshot, progress=say)
        results[n]["expire_build_seconds"] = time.perf_counter() - t0
        say(f"built overwrite table: {info['files']} files, {info['snapshots']} snapshots in "
            f"{results[n]['expire_build_seconds']:.1f} s")
        built[n] = (path, info)
    runs: Dict[int, List[Dict[str, Any]]] = {n: [] for n in sizes}
    for rep in range(args.expire_reps):
        for n in sizes:
            if not errors:
                runs[n].append(_expire_run(n, built[n][0], built[n][1], rep, work, args,
                                           errors, say))
    for n in sizes:
        shutil.rmtree(built[n][0], ignore_errors=True)
        if not runs[n]:
            continue
        # The run of median CPU time stands for the size (the time target compares medians);
        # the memory targets take the worst run's peak; the floor its median.
        e = dict(sorted(runs[n], key=lambda r: r["cpu_seconds"])[len(runs[n]) // 2])
        worst = max(runs[n], key=lambda r: r["peak_rss"] - r["before_rss"])
        e["peak_rss"], e["before_rss"] = worst["peak_rss"], worst["before_rss"]
        e["runs_cpu_seconds"] = [r["cpu_seconds"] for r in runs[n]]
        e["runs_peak_rss"] = [r["peak_rss"] for r in runs[n]]
        e["runs_rss_above_start"] = [r["peak_rss"] - r["before_rss"] for r in runs[n]]
        floors = sorted(r["floor"]["cpu_seconds"] for r in runs[n])
        e["floor_cpu_seconds"] = floors[len(floors) // 2]
        e["runs_floor_cpu_seconds"] = [r["floor"]["cpu_seconds"] for r in runs[n]]
        e.pop("floor")
        e["files"] = built[n][1]["files"]
        e["snapshots"] = built[n][1]["snapshots"]
        results[n]["expire"] = e


def _measure_orphan(n: int, work: str, args: argparse.Namespace, errors: List[str],
                    out: Dict[str, Any], say) -> None:
    from scale_tables import build_append_table
    path = os.path.join(work, f"ap_{n}")
    t0 = time.perf_counter()
    info = build_append_table(path, n, args.orphan_snapshots, strays=args.strays,
                              progress=say)
    out["orphan_build_seconds"] = time.perf_counter() - t0
    say(f"built append table: {info['files']} live files, {info['snapshots']} snapshots in "
        f"{out['orphan_build_seconds']:.1f} s")
    runs = []
    for _ in range(args.reps):
        o = run_child("orphan", path, args.retain)
        if o["result"]["orphans"] != args.strays:
            errors.append(f"{n}: orphan cleanup found {o['result']['orphans']} orphans, "
                          f"expected {args.strays}")
        runs.append(o)
        say(f"orphan dry run: {o['seconds']:.2f} s, peak RSS {o['peak_rss'] / 1e6:.0f} MB")
    runs.sort(key=lambda r: r["seconds"])
    o = dict(runs[len(runs) // 2])
    o["files"] = info["files"]
    o["runs_seconds"] = [r["seconds"] for r in runs]
    out["orphan"] = o
    shutil.rmtree(path, ignore_errors=True)


def _keep_other_ops(args: argparse.Namespace, results: Dict[int, Dict[str, Any]],
                    targets: Dict[str, Dict[str, Any]]) -> Optional[str]:
    """With --ops naming one operation: the other's results and targets from the previous
    results file (same sizes only), merged into `results` and `targets` in place (targets
    in the usual order). Returns the timestamp of the run they come from, or None."""
    other = [op for op in ("expire", "orphan") if op not in args.ops]
    if not other:
        return None
    try:
        with open(args.out) as f:
            prev = json.load(f)
    except (OSError, ValueError):
        return None
    sizes = prev.get("sizes") or {}
    if sorted(int(n) for n in sizes) != sorted(args.sizes):
        print(f"  (previous results in {args.out} are for other sizes: "
              f"{', '.join(other)} not kept)")
        return None
    for n in args.sizes:
        for op in other:
            if op in sizes[str(n)]:
                results[n][op] = sizes[str(n)][op]
    # A kept target says where it was measured: the earlier run's machine and load, not
    # this run's (the README's machine column; a target kept twice keeps its first).
    env = prev.get("environment") or {}
    measured = {"timestamp_utc": prev.get("timestamp_utc"),
                "loadavg_1min_before": env.get("loadavg_1min_before"),
                "loadavg_1min_after": env.get("loadavg_1min_after"),
                "cpu_count": env.get("cpu_count"), "foreign_load": env.get("foreign_load")}
    merged = {k: dict(t, measured=t.get("measured") or measured)
              for k, t in (prev.get("targets") or {}).items() if k.split("_")[0] in other}
    merged.update(targets)
    order = sorted(merged, key=lambda k: (k.split("_")[0] != "expire",
                                          k == "expire_bytes_per_file"))
    ours = dict(targets)
    targets.clear()
    targets.update({k: ours.get(k, merged[k]) for k in order})
    return prev.get("timestamp_utc")


def parse_args(argv=None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="20000,200000,2000000",
                    help="three data-file counts, ascending (default 20000,200000,2000000)")
    ap.add_argument("--per-snapshot", type=int, default=100,
                    help="files each overwrite snapshot replaces (default 100)")
    ap.add_argument("--retain", type=int, default=10, help="snapshots kept (default 10)")
    ap.add_argument("--orphan-snapshots", type=int, default=100,
                    help="snapshots of the append table (default 100)")
    ap.add_argument("--strays", type=int, default=1000, help="orphans to find (default 1000)")
    ap.add_argument("--reps", type=int, default=1,
                    help="orphan dry runs per size, median reported (default 1)")
    ap.add_argument("--expire-reps", type=int, default=3,
                    help="expirations per size, each of a copy of the built table: the "
                         "median CPU time and the worst peak RSS reported (default 3)")
    ap.add_argument("--ops", default="expire,orphan",
                    help="operations to measure (default expire,orphan); with one of them, "
                         "the other's results and targets already in --out are kept")
    ap.add_argument("--dir", default=None, help="where tables are built (default: temp)")
    ap.add_argument("--out", default=DEFAULT_OUT, help=f"JSON results (default {DEFAULT_OUT})")
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    ap.add_argument("--child", nargs=2, metavar=("OP", "TABLE"), help=argparse.SUPPRESS)
    ap.add_argument("--paths", default=None, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child:
        return a
    a.ops = [x for x in a.ops.split(",") if x]
    if not a.ops or any(x not in ("expire", "orphan") for x in a.ops):
        ap.error(f"--ops must name expire and/or orphan, got {','.join(a.ops)!r}")
    try:
        a.sizes = [int(x) for x in a.sizes.split(",")]
    except ValueError:
        ap.error(f"--sizes must be three integers separated by commas, got {a.sizes!r}")
    least = max((a.retain + 10) * a.per_snapshot, a.orphan_snapshots)
    if len(a.sizes) != 3 or a.sizes != sorted(a.sizes) or a.sizes[0] < least:
        ap.error(f"--sizes needs three ascending counts, the smallest >= (--retain + 10) x "
                 f"--per-snapshot and >= --orphan-snapshots ({least}); got {a.sizes}")
    if a.retain < 1 or a.per_snapshot < 1 or a.reps < 1 or a.expire_reps < 1 \
            or a.orphan_snapshots < 1:
        ap.error("--retain, --per-snapshot, --reps, --expire-reps and --orphan-snapshots "
                 "must be >= 1")
    return a


def _fmt_mb(b: float) -> str:
    return f"{b / 1e6:.0f} MB"


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.child:
        child(args.child[0], args.child[1], args.retain, args.paths)
        return 0
    parent = args.dir or tempfile.gettempdir()
    os.makedirs(parent, exist_ok=True)
    work = tempfile.mkdtemp(prefix="bench_scale_", dir=parent)
    print(f"bench_scale: sizes {args.sizes}, work directory {work}", flush=True)
    load_before = loadavg()
    wall0 = time.perf_counter()
    errors = small_check(work, args.retain)
    print(f"  small check (pypaimon, our reader, expire, orphan): "
          f"{'OK' if not errors else errors}", flush=True)
    results: Dict[int, Dict[str, Any]] = measure(work, args, errors) if not errors else {}
    load_after = loadavg()
    if len(results) < 3:
        for e in errors:
            print(f"  ERROR: {e}")
        return finish({"benchmark": "bench_scale", "verdict": "FAIL", "targets": {},
                       "correctness": {"ok": False, "errors": errors}},
                      args.out, work, errors or ["incomplete"], args.keep)

    small, mid, large = args.sizes
    size_ratio = large / mid
    print()
    hdr = f"{'operation':<10}{'files':>10}{'seconds':>10}{'cpu s':>9}{'peak RSS':>11}" \
          f"{'start RSS':>11}{'B/file':>9}" + (f"{'floor s':>9}" if "expire" in args.ops else "")
    print(hdr)
    print("-" * len(hdr))
    for op in args.ops:
        for n in args.sizes:
            r = results[n][op]
            floor = f"{r['floor_cpu_seconds']:>9.2f}" if "floor_cpu_seconds" in r else ""
            print(f"{op:<10}{n:>10,}{r['seconds']:>10.2f}{r['cpu_seconds']:>9.2f}"
                  f"{_fmt_mb(r['peak_rss']):>11}"
                  f"{_fmt_mb(r['before_rss']):>11}{r['bytes_per_file']:>9.0f}{floor}")
    targets: Dict[str, Dict[str, Any]] = {}
    for op in args.ops:
        a, b = results[mid][op], results[large][op]
        # CPU seconds of the operation (user + sys of every thread, unlinks included): on a
        # shared machine wall time follows the neighbours' load more than the size.
        t_ratio = b["cpu_seconds"] / a["cpu_seconds"] if a["cpu_seconds"] > 0 else None
        m_ratio = (b["peak_rss"] - b["before_rss"]) / max(1, a["peak_rss"] - a["before_rss"])
        limit = LINEAR_SLACK * size_ratio
        targets[f"{op}_time_linear"] = {
            "metric": f"{op} CPU seconds at {large:,} files / at {mid:,}", "value": t_ratio,
            "target": limit, "pass": t_ratio is not None and t_ratio <= limit}
        if op == "expire":
            # For reading the verdict, not part of it: each round's own ratio (the spread the
            # median hides) and the floor's ratio (what the file system's unlinks alone do).
            targets["expire_time_linear"]["runs_ratio"] = [
                y / x for x, y in zip(a["runs_cpu_seconds"], b["runs_cpu_seconds"]) if x > 0]
            if a.get("floor_cpu_seconds"):
                targets["expire_time_linear"]["floor_value"] = \
                    b["floor_cpu_seconds"] / a["floor_cpu_seconds"]
        targets[f"{op}_memory_linear"] = {
            "metric": f"{op} peak RSS above start at {large:,} files / at {mid:,}",
            "value": m_ratio, "target": limit, "pass": m_ratio <= limit}
        targets[f"{op}_rss"] = {
            "metric": f"{op} peak RSS (GiB) at {large:,} files", "value": b["peak_rss"] / GB,
            "target": RSS_TARGET / GB, "pass": b["peak_rss"] < RSS_TARGET}
    if "expire" in args.ops:
        b = results[large]["expire"]
        targets["expire_bytes_per_file"] = {
            "metric": f"expire (peak - start RSS) / files at {large:,} files "
                      f"({b['snapshots']:,} snapshots)", "value": b["bytes_per_file"],
            "target": BYTES_PER_FILE_TARGET,
            "pass": b["bytes_per_file"] <= BYTES_PER_FILE_TARGET}
    ours_now = set(targets)
    kept_from = _keep_other_ops(args, results, targets)
    print()
    for k, t in targets.items():
        print(f"target {k:<24} {t['metric']}: {t['value']:.3g} (<= {t['target']:.3g}) "
              f"{'PASS' if t['pass'] else 'FAIL'}")
        if "runs_ratio" in t and k in ours_now:
            floor = f", the floor (unlinks alone) {t['floor_value']:.3g}" \
                if "floor_value" in t else ""
            print(f"       each round: {', '.join(f'{x:.3g}' for x in t['runs_ratio'])}{floor}")
    ok = all(t["pass"] for t in targets.values()) and not errors
    for e in errors:
        print(f"  ERROR: {e}")
    result = {
        "benchmark": "bench_scale",
        "description": f"expire all but {args.retain} snapshots of an overwrite table "
                       f"({args.per_snapshot} files per snapshot) and orphan cleanup dry run "
                       f"of an append table ({args.orphan_snapshots} snapshots), at "
                       f"{', '.join(f'{n:,}' for n in args.sizes)} files, each in a child "
                       f"process",
        "timestamp_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "config": {k: v for k, v in vars(args).items() if k not in ("child", "out", "dir")},
        "environment": {"paimon_commit": ours_version(), "fastavro": safe_version("fastavro"),
                        "python": platform.python_version(), "platform": platform.platform(),
                        "cpu_count": os.cpu_count(), "loadavg_1min_before": load_before,
                        "loadavg_1min_after": load_after},
        "wall_seconds": time.perf_counter() - wall0,
        "kept_from": kept_from,
        "sizes": {str(n): r for n, r in results.items()},
        "targets": targets,
        "verdict": "PASS" if ok else "FAIL",
        "correctness": {"ok": not errors, "errors": errors},
    }
    code = finish(result, args.out, work, errors, args.keep)
    return code or (0 if ok else 1)


if __name__ == "__main__":
    sys.exit(main())
