"""Delete-phase regression check for benchmarks/bench_expire.py's large table: old vs new.

    python audit/perf-expire/compare.py --old /work/wt/perfold --new /work/wt/perfexp \
        [--reps 5] [--live 20000] [--snapshots 1000] [--table DIR] [--out FILE]

Builds the benchmark's large table once (benchmarks/bench_expire.build_table of the
`--new` tree, untimed; `--table` reuses one already built), then alternates old/new: each
run is a fresh subprocess with PYTHONPATH set to that worktree, on a fresh copy
(shutil.copytree) of the built table, opened fresh (Table.open), expiring as the benchmark
does (ExpireSnapshots(store, ExpireConfig(retain_min=1, time_retained_ms=0,
max_deletes=max(5000, n + 10))).expire()), plan and delete seconds taken from
result.seconds as the benchmark reports them, plus the delete phase's process CPU seconds
(all threads, around `_execute`). `/proc/loadavg` is recorded before each run. With
INPROC=k in the environment each subprocess runs k timed expirations one after the other
(fresh copies, one process, as the benchmark's repetitions run): the first is the one
reported, the medians per position are printed too.

Each run is done twice in its subprocess, on two copies: once timed without instruments,
once with cProfile and an audit hook enabled only inside `ExpireSnapshots._execute` (the
delete phase, re-check included), giving deterministic call counts: os.* system calls
(audit events: os.remove, os.rename, os.listdir, os.scandir, open, os.mkdir, ...),
builtins (posix.unlink/stat/lstat/fsync/...), FileIO methods, the marker writes,
checkpoint / lease checks, reachability and manifest reads.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.abspath(__file__)


# --- child: runs inside one worktree -----------------------------------------------------
def child(table: str, work: str) -> None:
    import cProfile
    import pstats
    from collections import Counter

    from paimon_commit import Table
    from paimon_commit.operations import expire as E

    with open(os.path.join(table, ".perf-expire-n")) as f:
        n = int(f.read())

    def cfg():
        return E.ExpireConfig(retain_min=1, time_retained_ms=0, max_deletes=max(5000, n + 10))

    def copy(tag: str) -> str:
        dst = os.path.join(work, tag)
        shutil.copytree(table, dst)
        return dst

    out = {"python": sys.version.split()[0], "module": E.__file__}

    # 1. timed, no instruments (as bench_expire.run_ours); INPROC timed runs in this one
    #    process (the benchmark runs its repetitions in one process), the first reported,
    #    all listed. Delete-phase process CPU (all threads) taken around _execute.
    orig = E.ExpireSnapshots._execute
    cpu_box = [0.0]

    def timed_execute(self, plan):
        c = time.process_time()
        try:
            return orig(self, plan)
        finally:
            cpu_box[0] += time.process_time() - c
    E.ExpireSnapshots._execute = timed_execute
    out["inproc"] = []
    for i in range(int(os.environ.get("INPROC", "1"))):
        path = copy(f"timed{i}")
        t = Table.open(path)
        op = E.ExpireSnapshots(t.store, cfg())
        cpu_box[0] = 0.0
        c0, t0 = time.process_time(), time.perf_counter()
        r = op.expire()
        one = {"wall": time.perf_counter() - t0, "cpu": time.process_time() - c0,
               "plan": r.seconds["plan"], "delete": r.seconds["delete"],
               "delete_cpu": cpu_box[0]}
        out["inproc"].append(one)
        if i == 0:
            out.update(one)
            out["expired"], out["deleted_files"] = r.expired_snapshots, r.deleted_files
            out["by_kind"] = {k: v["files"] for k, v in r.by_kind.items()}
            out["skipped"] = r.skipped
        shutil.rmtree(path, ignore_errors=True)
    E.ExpireSnapshots._execute = orig

    # 2. profiled: cProfile + audit events only inside _execute (the delete phase)
    path = copy("profiled")
    t = Table.open(path)
    op = E.ExpireSnapshots(t.store, cfg())
    prof = cProfile.Profile()
    events: Counter = Counter()
    state = {"on": False}

    def hook(event, args):
        if state["on"] and (event.startswith("os.") or event in ("open", "shutil.rmtree")):
            events[event] += 1
    sys.addaudithook(hook)
    calls = {"execute": 0, "execute_seconds": []}

    def wrapped(self, plan):
        calls["execute"] += 1
        state["on"] = True
        t1 = time.perf_counter()
        prof.enable()
        try:
            return orig(self, plan)
        finally:
            prof.disable()
            calls["execute_seconds"].append(time.perf_counter() - t1)
            state["on"] = False
    E.ExpireSnapshots._execute = wrapped
    r2 = op.expire()
    E.ExpireSnapshots._execute = orig
    shutil.rmtree(path, ignore_errors=True)
    st = pstats.Stats(prof)
    funcs = {}
    for (fn, line, name), (cc, nc, tt, ct, _callers) in st.stats.items():
        if fn == "~":
            key = name
        else:
            rel = fn
            for marker in ("paimon_commit/", "site-packages/", "lib/python3"):
                i = fn.find(marker)
                if i >= 0:
                    rel = fn[i:]
                    break
            key = f"{rel}:{name}"
        f = funcs.setdefault(key, [0, 0.0, 0.0])
        f[0] += nc
        f[1] += tt
        f[2] += ct
    out["profile"] = {k: {"calls": v[0], "tottime": v[1], "cumtime": v[2]}
                      for k, v in funcs.items()}
    out["audit_events"] = dict(events)
    out["execute_calls"] = calls["execute"]
    out["profiled_execute_seconds"] = calls["execute_seconds"]
    out["profiled_delete"] = r2.seconds["delete"]
    print("RESULT " + json.dumps(out))


# --- parent --------------------------------------------------------------------------------
KEY_PATTERNS = [
    "posix.unlink", "posix.remove", "posix.stat", "posix.lstat", "posix.fstat",
    "posix.listdir", "posix.scandir", "posix.open", "posix.close", "posix.fsync",
    "posix.replace", "posix.rename", "posix.write", "posix.read", "posix.mkdir",
    "io.open", "built-in method io.open",
    "io/local.py:", "io/base.py:", "io/metered.py:", "io/deletion.py:", "expiring.py:",
    "lease.py:", "reachability.py:", "manifest", "operations/expire.py:",
]


def loadavg() -> str:
    with open("/proc/loadavg") as f:
        return f.read().strip()


def run_child(tree: str, table: str, parent: str) -> dict:
    work = tempfile.mkdtemp(prefix="run_", dir=parent)
    env = dict(os.environ, PYTHONPATH=tree)
    try:
        p = subprocess.run([os.path.join(tree, ".venv", "bin", "python"), HERE, "--child",
                            table, "--work", work], cwd=tree, env=env, capture_output=True,
                           text=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if p.returncode != 0:
        raise SystemExit(f"child in {tree} failed:\n{p.stdout}\n{p.stderr}")
    line = [x for x in p.stdout.splitlines() if x.startswith("RESULT ")][-1]
    return json.loads(line[len("RESULT "):])


def build(tree: str, parent: str, live: int, snapshots: int) -> str:
    sys.path.insert(0, os.path.join(tree, "benchmarks"))
    sys.path.insert(0, tree)
    import bench_expire  # noqa: E402
    path = os.path.join(parent, "large_built")
    t0 = time.perf_counter()
    info = bench_expire.build_table(path, live, snapshots)
    with open(os.path.join(path, ".perf-expire-n"), "w") as f:
        f.write(str(snapshots))
    print(f"built {path} in {time.perf_counter() - t0:.1f} s: "
          f"{ {k: v for k, v in info.items() if k not in ('expected_ids',)} }", flush=True)
    return path


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--child")
    ap.add_argument("--work")
    ap.add_argument("--old")
    ap.add_argument("--new")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--live", type=int, default=20000)
    ap.add_argument("--snapshots", type=int, default=1000)
    ap.add_argument("--table", help="an already built table (with its .perf-expire-n)")
    ap.add_argument("--dir", default=None)
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    if a.child:
        child(a.child, a.work)
        return 0
    parent = tempfile.mkdtemp(prefix="perf_expire_", dir=a.dir)
    table = a.table or build(a.new, parent, a.live, a.snapshots)
    sides = {"old": a.old, "new": a.new}
    runs = {"old": [], "new": []}
    for rep in range(a.reps):
        order = ["old", "new"] if rep % 2 == 0 else ["new", "old"]
        for side in order:
            load = loadavg()
            r = run_child(sides[side], table, parent)
            r["loadavg_before"] = load
            r["loadavg_after"] = loadavg()
            runs[side].append(r)
            print(f"rep {rep + 1} {side}: plan {r['plan']:.3f} delete {r['delete']:.3f} "
                  f"(cpu {r['delete_cpu']:.3f}) "
                  f"wall {r['wall']:.3f} cpu {r['cpu']:.3f}  (profiled delete "
                  f"{r['profiled_delete']:.3f}; loadavg before: {load})"
                  + (f"; in-process deletes "
                     f"{[round(x['delete'], 3) for x in r['inproc']]}"
                     if len(r["inproc"]) > 1 else ""), flush=True)

    def med(side, key):
        return statistics.median(r[key] for r in runs[side])
    summary = {}
    print("\nmedians of", a.reps)
    for side in sides:
        summary[side] = {k: med(side, k) for k in ("plan", "delete", "delete_cpu", "wall",
                                                    "cpu")}
        summary[side]["min_delete"] = min(r["delete"] for r in runs[side])
        summary[side]["min_delete_cpu"] = min(r["delete_cpu"] for r in runs[side])
        if len(runs[side][0]["inproc"]) > 1:
            k = len(runs[side][0]["inproc"])
            summary[side]["inproc_delete_by_position"] = [
                statistics.median(r["inproc"][i]["delete"] for r in runs[side])
                for i in range(k)]
        print(f"  {side}: " + "  ".join(
            f"{k} {v:.3f}" if isinstance(v, float) else f"{k} {[round(x, 3) for x in v]}"
            for k, v in summary[side].items()))

    # Call counts: deterministic? (the same in every run of a side)
    def counts(side, what):
        per = [{k: (v["calls"] if isinstance(v, dict) else v) for k, v in r[what].items()}
               for r in runs[side]]
        keys = set().union(*per)
        return {k: sorted({p.get(k, 0) for p in per}) for k in keys}
    diff = {}
    for what in ("profile", "audit_events"):
        o, n = counts("old", what), counts("new", what)
        rows = []
        for k in sorted(set(o) | set(n)):
            ov, nv = o.get(k, [0]), n.get(k, [0])
            if ov != nv:
                rows.append((k, ov, nv))
        diff[what] = rows
        print(f"\n{what}: {len(rows)} entries whose call counts differ (old -> new; a list "
              f"where the runs of one side differ)")
        for k, ov, nv in rows:
            fo = ov[0] if len(ov) == 1 else ov
            fn = nv[0] if len(nv) == 1 else nv
            print(f"  {k:<90} {fo!s:>10} -> {fn!s:<10}")
    print("\nkey functions (calls old -> new, median tottime/cumtime ms new):")
    o, n = counts("old", "profile"), counts("new", "profile")
    for k in sorted(set(o) | set(n)):
        if any(p in k for p in KEY_PATTERNS):
            ct = statistics.median(r["profile"].get(k, {"cumtime": 0})["cumtime"]
                                   for r in runs["new"]) * 1e3
            cto = statistics.median(r["profile"].get(k, {"cumtime": 0})["cumtime"]
                                    for r in runs["old"]) * 1e3
            print(f"  {k:<90} {o.get(k, [0])!s:>8} -> {n.get(k, [0])!s:<8} cum "
                  f"{cto:7.1f} -> {ct:7.1f} ms")
    print("\naudit events (old -> new):")
    o, n = counts("old", "audit_events"), counts("new", "audit_events")
    for k in sorted(set(o) | set(n)):
        print(f"  {k:<30} {o.get(k, [0])!s:>10} -> {n.get(k, [0])!s}")
    if a.out:
        with open(a.out, "w") as f:
            json.dump({"summary": summary, "runs": runs, "diff": diff, "table": table}, f,
                      indent=1, default=str)
    print(f"\ntable kept at {table}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
