"""Q2 (reruns): a run killed at ANY unlink of ANY chunk (the sized first chunk's and the
later chunks'), then rerun with the sized first chunk. tests/faults/test_interrupted_expire
kills and reruns with FIRST_CHUNK_FILES = 0 throughout, so no suite test reruns a
half-expired table with the sized first chunk (which reads the delta lists of snapshots an
interrupted run half expired: missing lists end its count).

Table and sizes as q2_crash_sweep. Every `step`-th unlink (argv[1], default 1); executors:
LastBatchFirst (parallel steps' batches last first) and InTurn (local disk's directory slices
in turn). After the kill: snapshots from the killed chunk's end on must read; reruns (same
config until done; and snapshot.expire.limit 10) must end at the files of an unkilled run.
"""
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import ExpireSnapshots, clone, run_until_done, sizes, table_files  # noqa: E402
from q2_crash_sweep import SIZES, RETAIN, SNAPS, cfg, run, template  # noqa: E402

from faults.faulty_io import Crash, FaultyIO  # noqa: E402
from faults.test_interrupted_expire import InTurn, LastBatchFirst, _Batched  # noqa: E402
from invariants import assert_intact  # noqa: E402


def main():
    import logging
    logging.disable(logging.WARNING)
    step = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    base = tempfile.mkdtemp(prefix="audit26h-q2b-")
    tpl = template(base)
    trials = failures = 0
    with sizes(None, **SIZES):
        for label, io_class, executor in (("last-batch-first", _Batched, LastBatchFirst),
                                          ("dir-slices", FaultyIO, InTurn)):
            ref = clone(tpl, os.path.join(base, "ref", "db.db", "t"))
            ends = []   # (chunk end, unlinks so far when its execution ended)
            execute = ExpireSnapshots._execute

            def noting(self, plan):
                out = execute(self, plan)
                if plan.end is not None:
                    ends.append((plan.end, self.store.io.count))
                return out
            ExpireSnapshots._execute = noting
            io = io_class(ref, kinds={"_unlink"})
            r = run(ref, io, executor())
            ExpireSnapshots._execute = execute
            assert r.expired_ids == list(range(1, SNAPS - RETAIN + 1)) and not r.skipped
            expected, total = table_files(ref), io.count
            print(f"[{label}] {len(ends)} chunks, ends {[e for e, _ in ends]}, {total} unlinks",
                  flush=True)
            for k in range(1, total + 1, step):
                trials += 1
                end = next(e for e, c in ends if c >= k)   # the killed chunk's end
                paths = [clone(tpl, os.path.join(base, n, "db.db", "t")) for n in ("a", "b")]
                try:
                    for p in paths:
                        try:
                            run(p, io_class(p, fail_at=k, kinds={"_unlink"}), executor())
                            raise AssertionError("no crash")
                        except Crash:
                            pass
                        assert_intact(p, min_snapshot=end)
                    for p, limit in zip(paths, (1 << 30, 10)):
                        res = run_until_done(p, cfg(limit))
                        assert res["error"] is None, res["error"]
                        assert res["files"] == expected, (
                            limit, sorted(expected - res["files"])[:3],
                            sorted(res["files"] - expected)[:3])
                        assert_intact(p)
                except Exception as e:   # noqa: BLE001
                    failures += 1
                    print(f"[{label}] k={k}: FAIL {e!r:.300}", flush=True)
                finally:
                    for n in ("a", "b"):
                        shutil.rmtree(os.path.join(base, n), ignore_errors=True)
    print(f"{trials} kill points, {failures} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
