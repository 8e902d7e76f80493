"""The delete phase of orphan cleanup alone, against the bare unlinks of the same files.

Builds N synced 16-byte files over 100 directories (bench_orphan's layout: p=i/bucket-0),
then times, each run in a fresh subprocess on a fresh tree:
  bare   bench_orphan's unlink_real: unlinkat relative to a directory descriptor, 16
         threads, slices of 256 names of one directory, directories interleaved;
  ours   OrphanFilesCleaner.delete of the same files (directory-major, as a listing gives
         them) on a 16-thread ContextExecutor under a request meter, as clean() runs it
         (no table: the commits-since-plan check is skipped).
Each row: wall seconds, process CPU seconds, and with --instrument the calling thread's
gate-check time and the pool threads' busy time (instrumented runs are not timed runs).

    python benchmarks/orphan_delete_phase.py [--files 20000] [--reps 3] [--code DIR ...]

--code runs `ours` with the library from each DIR (e.g. an export of the previous commit),
alternating with the others in one run: before/after under the same load.
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
import uuid

_REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
N_DIRS = 100
THREADS = 16


def build(root: str, n: int) -> None:
    for d in range(N_DIRS):
        os.makedirs(os.path.join(root, f"p={d}", "bucket-0"))
    for i in range(n):
        p = os.path.join(root, f"p={i % N_DIRS}", "bucket-0", f"data-{uuid.uuid4()}-0.parquet")
        fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            os.write(fd, b"0123456789abcdef")
        finally:
            os.close(fd)
    os.sync()


def _cpu(t0):
    """(user, system) CPU seconds of this process since os.times() `t0`."""
    t = os.times()
    return (t.user - t0.user, t.system - t0.system)


def listing(root: str):
    """(directory, names) per directory, in listing order."""
    out = []
    for d in range(N_DIRS):
        directory = os.path.join(root, f"p={d}", "bucket-0")
        out.append((directory, os.listdir(directory)))
    return out


def bare(root: str) -> None:
    from concurrent.futures import ThreadPoolExecutor
    per_dir = [[(d, names[i:i + 256]) for i in range(0, len(names), 256)]
               for d, names in listing(root)]
    tasks = [x[i] for i in range(max(map(len, per_dir), default=0)) for x in per_dir
             if i < len(x)]

    def unlink_slice(task) -> None:
        fd = os.open(task[0], os.O_RDONLY | os.O_DIRECTORY)
        try:
            for name in task[1]:
                os.unlink(name, dir_fd=fd)
        finally:
            os.close(fd)
    t0, c0 = time.perf_counter(), os.times()
    with ThreadPoolExecutor(THREADS) as ex:
        for _ in ex.map(unlink_slice, tasks):
            pass
    return time.perf_counter() - t0, _cpu(c0), {}


def ours(root: str, instrument: bool):
    import threading
    from types import SimpleNamespace
    from paimon_commit.io.local import LocalFileIO
    from paimon_commit.io.metered import ContextExecutor, metering
    from paimon_commit.operations.orphan import OrphanFilesCleaner
    from paimon_commit.operations.orphan_select import Found
    import paimon_commit.io.local as local_mod
    import paimon_commit.operations.orphan as orphan_mod
    import paimon_commit.io.local as local_mod
    for k, v in json.loads(os.environ.get("ORPHDEL_SET", "{}")).items():
        # e.g. {"MAX_BATCH": 2000}, {"local.RECHECK_EVERY": 256}: a variant of one run
        if k == "SPREAD":   # not a constant: the order the orphans are handed over in
            os.environ["ORPHDEL_SPREAD"] = str(v)
            continue
        setattr(local_mod if k.startswith("local.") else orphan_mod, k.split(".")[-1], v)
    io = LocalFileIO(root)
    c = object.__new__(OrphanFilesCleaner)
    c.io, c.root, c._inventory, c._plan_mark = io, io.root, None, None
    c.ctx = SimpleNamespace(progress=None)
    groups = [(d, None, [(n, 16, 0) for n in names]) for d, names in listing(root)]
    spread = int(os.environ.get("ORPHDEL_SPREAD", "0"))
    if spread:   # the orphans in runs of `spread` per directory, directories in turn
        groups = [(d, k, e[i:i + spread]) for i in range(0, max(len(g[2]) for g in groups),
                                                          spread) for d, k, e in groups]
    found = Found(groups)
    extra = {}
    if instrument:
        lock = threading.Lock()
        acc = {"check_s": 0.0, "pool_busy_s": 0.0, "pool_cpu_s": 0.0, "slices": 0,
               "delete_files_s": 0.0, "batches": 0}
        inner_check = type(io)._check_inside

        def check(self, path, _c=inner_check):
            t = time.perf_counter()
            try:
                return _c(self, path)
            finally:
                acc["check_s"] += time.perf_counter() - t
        type(io)._check_inside = check
        inner_many = local_mod.LocalFileIO._unlink_many

        def many(self, norms, _m=inner_many):
            if threading.current_thread() is threading.main_thread():
                return _m(self, norms)
            t, ct = time.perf_counter(), time.thread_time()
            try:
                return _m(self, norms)
            finally:
                with lock:
                    acc["pool_busy_s"] += time.perf_counter() - t
                    acc["pool_cpu_s"] += time.thread_time() - ct
                    acc["slices"] += 1
        local_mod.LocalFileIO._unlink_many = many
        inner_df = type(io).delete_files

        def delete_files(self, paths, executor=None, _d=inner_df):
            t = time.perf_counter()
            try:
                return _d(self, paths, executor)
            finally:
                acc["delete_files_s"] += time.perf_counter() - t
                acc["batches"] += 1
        type(io).delete_files = delete_files
        extra = acc
    ex = ContextExecutor(THREADS)
    try:
        with metering():
            t0, c0 = time.perf_counter(), os.times()
            kept = c.delete(found, ex)
            wall, cpu = time.perf_counter() - t0, _cpu(c0)
    finally:
        ex.shutdown(wait=True)
    assert len(kept) == len(found), (len(kept), len(found))
    return wall, cpu, extra


def worker(mode: str, root: str, instrument: bool) -> None:
    if mode == "bare":
        wall, cpu, extra = bare(root)
    else:
        wall, cpu, extra = ours(root, instrument)
    left = sum(len(n) for _, n in listing(root))
    assert left == 0, f"{left} files left"
    print(json.dumps({"wall": wall, "cpu": sum(cpu), "user": cpu[0], "sys": cpu[1], **extra}))


def main() -> int:
    if sys.argv[1:2] == ["--worker"]:
        worker(sys.argv[2], sys.argv[3], sys.argv[4] == "1")
        return 0
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=20_000)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--code", action="append", default=[],
                    help="a directory holding another paimon_commit to time as ours@DIR")
    ap.add_argument("--variant", action="append", default=[],
                    help="NAME=JSON: also time ours with orphan.py's module constants set "
                         "from JSON; a key local.NAME sets io/local.py's NAME (e.g. "
                         "'norecheck={\"local.RECHECK_EVERY\": 100000}')")
    ap.add_argument("--instrument", action="store_true")
    ap.add_argument("--dir", default=None)
    a = ap.parse_args()
    codes = [("ours", _REPO, "{}")] + [
        (f"ours@{os.path.basename(c.rstrip('/'))}", c, "{}") for c in a.code] + [
        (f"ours:{v.split('=', 1)[0]}", _REPO, v.split("=", 1)[1]) for v in a.variant]
    modes = [("bare", _REPO, "{}")] + codes
    rows = {m: [] for m, _, _ in modes}
    base = tempfile.mkdtemp(prefix="orphdel_", dir=a.dir)
    print(f"load before: {os.getloadavg()}", flush=True)
    try:
        for rep in range(a.reps):
            for mode, code, setting in modes:
                root = os.path.join(base, f"t{rep}_{len(rows[mode])}_{modes.index((mode, code, setting))}")
                build(root, a.files)
                env = dict(os.environ, PYTHONPATH=code, ORPHDEL_SET=setting)
                out = subprocess.run([sys.executable, os.path.abspath(__file__), "--worker",
                                      "bare" if mode == "bare" else "ours", root,
                                      "1" if a.instrument else "0"],
                                     env=env, capture_output=True, text=True)
                if out.returncode:
                    print(out.stderr[-3000:])
                    return 1
                r = json.loads(out.stdout.strip().splitlines()[-1])
                rows[mode].append(r)
                print(f"rep {rep} {mode:>14}: " + " ".join(
                    f"{k} {v:.3f}" if isinstance(v, float) else f"{k} {v}"
                    for k, v in r.items()), flush=True)
                shutil.rmtree(root)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    print(f"load after: {os.getloadavg()}")
    med = {m: statistics.median(r["wall"] for r in rs) for m, rs in rows.items()}
    cpu = {m: statistics.median(r["cpu"] for r in rs) for m, rs in rows.items()}
    user = {m: statistics.median(r["user"] for r in rs) for m, rs in rows.items()}
    for m in med:
        print(f"{m:>16}: wall median {med[m]:.3f} s ({med[m] / med['bare']:.2f}x bare), "
              f"cpu median {cpu[m]:.3f} s ({cpu[m] / cpu['bare']:.2f}x), user median "
              f"{user[m]:.3f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
