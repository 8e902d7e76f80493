"""Expiration and orphan cleanup: paimon_commit vs Paimon Java 1.0 in the same JVM session, on
the same table, side by side in one run.

The table (built once, untimed, by paimon_commit's writer; Java reads it): an append table with
4 partitions and S snapshots (default 720): S - 1 one-row commits and, every 10th commit, an
overwrite of one partition, so that expiration deletes data files as well as manifests,
manifest lists and snapshot files. Each measurement works on a fresh copy (shutil.copytree):
  * expire, ours:  ExpireSnapshots(store, ExpireConfig(retain_min=10, retain_max=10,
                   time_retained_ms=0)).expire() in this process (Table.open included)
  * expire, Java:  FileStoreTable.newExpireSnapshots().config(retainMin 10, retainMax 10,
                   no time limit).expire() in a JVM started once (tests/java/javaoracle.py,
                   py4j; the table is opened inside the timed call). The JVM runs with the
                   full JIT (the oracle's default stops at C1 to start fast) and is warmed
                   by one expiration of another copy before any timing.
  * orphans, ours: OrphanFilesCleaner(CleanContext(copy, older_than_ms=now - 1 s)).clean()
    orphans, Java: OrphanFilesClean(table).olderThan(now - 1 s).clean()
                   (on a copy with 500 planted orphans aged 2 days; same 1 s threshold)
Repetitions alternate the order; medians are reported. Both sides must expire the same
snapshots and delete the same files (and remove the same orphans): a mismatch exits 1.

Targets: ours / Java (median) <= 0.1 for expiration (issue 19); orphan cleanup is reported.
A missed target prints FAIL (exit 0: timings on a shared machine are noisy).

    python benchmarks/bench_java.py            # 720 snapshots, 5 repetitions
    python benchmarks/bench_java.py --quick    # 120 snapshots, 3 repetitions
"""
from __future__ import annotations

from _common import loadavg as _loadavg, ours_version as _ours_version, finish  # noqa: E402
import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from typing import Any, Dict, List, Set, Tuple

_REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
for p in (_REPO, os.path.join(_REPO, "tests", "java")):
    if p not in sys.path:
        sys.path.insert(0, p)

import pyarrow as pa  # noqa: E402

RETAIN = 10
EXPIRE_TARGET = 0.1
ORPHANS = 500
DEFAULT_OUT = os.path.join(_REPO, "benchmarks", "results", "bench_java.json")
SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.int32())])


def build(path: str, n: int) -> None:
    from paimon_commit import Table
    t = Table.create(path, SCHEMA, partition_keys=["p"], options={"write-only": "true"})
    with t.new_commit() as c:
        for i in range(n):
            w = t.new_writer()
            w.write_arrow(pa.table({"id": [i], "p": [i % 4]}, schema=SCHEMA))
            if i % 10 == 9:
                c.overwrite(w.prepare_commit(), {"p": i % 4})
            else:
                c.commit(w.prepare_commit())


def files_under(root: str) -> Set[str]:
    out = set()
    for d, _, files in os.walk(root):
        for f in files:
            out.add(os.path.relpath(os.path.join(d, f), root))
    return out


def ours_expire(path: str) -> Tuple[float, int]:
    from paimon_commit import Table
    from paimon_commit.operations.expire import ExpireConfig, ExpireSnapshots
    t0 = time.perf_counter()
    t = Table.open(path)
    r = ExpireSnapshots(t.store, ExpireConfig(retain_min=RETAIN, retain_max=RETAIN,
                                              time_retained_ms=0,
                                              max_deletes=1_000_000)).expire()
    return time.perf_counter() - t0, r.expired_snapshots


def java_expire(java, path: str) -> Tuple[float, int]:
    t0 = time.perf_counter()
    n = java.expire_snapshots(path, retain_min=RETAIN, retain_max=RETAIN,
                              max_deletes=1_000_000)
    return time.perf_counter() - t0, n


def plant(path: str) -> Set[str]:
    rels = set()
    old = time.time() - 2 * 86_400
    for i in range(ORPHANS):
        rel = f"p={i % 4}/bucket-0/data-{uuid.uuid4()}-0.parquet"
        full = os.path.join(path, rel)
        with open(full, "wb") as f:
            f.write(b"PAR1xxxxxxxxPAR1")
        os.utime(full, (old, old))
        rels.add(rel)
    return rels


def ours_orphans(path: str, older_ms: int) -> Tuple[float, Set[str]]:
    from paimon_commit import CleanContext, OrphanFilesCleaner
    t0 = time.perf_counter()
    r = OrphanFilesCleaner(CleanContext(path, older_than_ms=older_ms,
                                        allow_recent_cutoff=True)).clean()
    return time.perf_counter() - t0, set(r.deleted_paths)


def java_orphans(java, path: str, older_ms: int) -> Tuple[float, Set[str]]:
    t0 = time.perf_counter()
    out = java.remove_orphan_files(path, older_than_ms=older_ms)
    return time.perf_counter() - t0, set(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--snapshots", type=int, default=None, help="default 720")
    ap.add_argument("--reps", type=int, default=None, help="default 5 (--quick 3)")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", default=DEFAULT_OUT)
    ap.add_argument("--keep", action="store_true")
    a = ap.parse_args(argv)
    n = a.snapshots or (120 if a.quick else 720)
    reps = a.reps or (3 if a.quick else 5)
    from javaoracle import JavaOracle
    run_dir = tempfile.mkdtemp(prefix="bench_java_")
    built = os.path.join(run_dir, "wh", "db.db", "built")
    os.makedirs(os.path.dirname(built))
    print(f"bench_java: {n} snapshots, retain {RETAIN}, {reps} repetitions; {run_dir}",
          flush=True)
    t0 = time.perf_counter()
    build(built, n)
    before = files_under(built)
    print(f"  built in {time.perf_counter() - t0:.1f} s: {len(before)} files", flush=True)
    errors: List[str] = []
    java = JavaOracle(jvm_args=["-XX:TieredStopAtLevel=4"])
    copies = iter(range(10_000))

    def copy() -> str:
        dst = os.path.join(os.path.dirname(built), f"c{next(copies)}")
        shutil.copytree(built, dst)
        return dst

    load_before = _loadavg()
    try:
        java_expire(java, copy())        # warm-up (JIT, class loading), discarded
        ours_expire(copy())
        runs: Dict[str, List[float]] = {"ours_expire": [], "java_expire": [],
                                        "ours_orphans": [], "java_orphans": []}
        deleted: Dict[str, Set[str]] = {}
        for rep in range(reps):
            sides = [("ours", lambda p: ours_expire(p)), ("java", lambda p: java_expire(java, p))]
            for side, fn in (sides if rep % 2 == 0 else sides[::-1]):
                p = copy()
                secs, expired = fn(p)
                if expired != n - RETAIN:
                    errors.append(f"{side} expired {expired} snapshots, expected {n - RETAIN}")
                gone = before - files_under(p)
                if side in deleted and deleted[side] != gone:
                    errors.append(f"{side} deleted different files in repetition {rep + 1}")
                deleted[side] = gone
                runs[f"{side}_expire"].append(secs)
                shutil.rmtree(p)
            osides = [("ours", lambda p, ms: ours_orphans(p, ms)),
                      ("java", lambda p, ms: java_orphans(java, p, ms))]
            for side, fn in (osides if rep % 2 == 0 else osides[::-1]):
                p = copy()
                planted = plant(p)
                time.sleep(1.1)
                older = int(time.time() * 1000) - 1000
                secs, removed = fn(p, older)
                if removed != planted:
                    errors.append(f"{side} orphan cleanup removed {len(removed)} files, "
                                  f"expected the {len(planted)} planted")
                runs[f"{side}_orphans"].append(secs)
                shutil.rmtree(p)
            print(f"    rep {rep + 1}/{reps}: " + ", ".join(
                f"{k} {v[-1]:.3f}" for k, v in runs.items()) + " (s)", flush=True)
        if deleted.get("ours") != deleted.get("java"):
            o, j = deleted.get("ours", set()), deleted.get("java", set())
            errors.append(f"ours and Java deleted different files: {len(o - j)} only ours "
                          f"(e.g. {sorted(o - j)[:2]}), {len(j - o)} only Java "
                          f"(e.g. {sorted(j - o)[:2]})")
    finally:
        java.close()
    load_after = _loadavg()
    med = {k: statistics.median(v) for k, v in runs.items()}
    r_exp = med["ours_expire"] / med["java_expire"]
    r_orph = med["ours_orphans"] / med["java_orphans"]
    n_deleted = len(deleted.get("ours", ()))
    print()
    print(f"{'operation':<14}{'ours s':>9}{'Java s':>9}{'ours/Java':>11}   (medians of {reps})")
    print(f"{'expire':<14}{med['ours_expire']:>9.3f}{med['java_expire']:>9.3f}{r_exp:>11.3f}"
          f"   {n - RETAIN} of {n} snapshots, {n_deleted} files deleted")
    print(f"{'orphans':<14}{med['ours_orphans']:>9.3f}{med['java_orphans']:>9.3f}"
          f"{r_orph:>11.3f}   {ORPHANS} planted orphans")
    ok = r_exp <= EXPIRE_TARGET
    print(f"target expire_vs_java (ours / Java in-JVM <= {EXPIRE_TARGET}): {r_exp:.3f}  "
          f"{'PASS' if ok else 'FAIL'}")
    print(f"1-min load average {load_before} before, {load_after} after")
    for e in errors:
        print(f"  ERROR: {e}")
    result = {
        "benchmark": "bench_java",
        "description": f"expire {n - RETAIN} of {n} snapshots ({n_deleted} files) and clean "
                       f"{ORPHANS} orphans: paimon_commit vs Paimon Java 1.0 in one JVM "
                       f"(py4j), fresh copies, medians of {reps}",
        "timestamp_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "config": {"snapshots": n, "retain": RETAIN, "reps": reps, "orphans": ORPHANS,
                   "files_before": len(before)},
        "environment": {"paimon_commit": _ours_version(), "cpu_count": os.cpu_count(),
                        "loadavg_1min_before": load_before, "loadavg_1min_after": load_after},
        "runs": runs, "medians": med,
        "reference_ratios": {"orphans_ours_over_java": r_orph},
        "targets": {"expire_vs_java": {
            "metric": f"ours / Paimon Java in-JVM expiration, median ({n - RETAIN} of {n} "
                      f"snapshots, {n_deleted} files)",
            "value": r_exp, "target": EXPIRE_TARGET, "pass": ok}},
        "verdict": "PASS" if ok else "FAIL",
        "correctness": {"ok": not errors, "errors": errors},
    }
    return finish(result, a.out, run_dir, errors, a.keep)


if __name__ == "__main__":
    sys.exit(main())
