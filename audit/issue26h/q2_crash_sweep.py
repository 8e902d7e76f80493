"""Q2: a crash at EVERY storage operation of the new (sized) first chunk.

Table: tests/faults/test_interrupted_expire's shape (overwrite table, 60 snapshots x 2 files,
an index manifest with two index files and a statistics file per snapshot, a tag at 30).
Sizes: FIRST_CHUNK=3, CHUNK_FILES=120 -> the first chunk is sized to ~15 snapshots (old: 3).

For each op k from the run's first op to the first chunk's last op (its EARLIEST hint and the
marker removal included), under two executors (the library's default thread pool, and
test_interrupted_expire's LastBatchFirst, which reverses each parallel step's batches):
  1. run with FaultyIO(fail_at=k): it must die (Crash);
  2. every snapshot from the first chunk's end on, and the tag, must read (assert_intact);
  3. a rerun (same config, repeated until nothing expires) must leave exactly the files of an
     uninterrupted run; and so must reruns with snapshot.expire.limit 10 (post-commit style).
Exits 1 on the first failure; prints a summary.
"""
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import (ExpireConfig, ExpireSnapshots, clone, run_until_done, sizes,  # noqa: E402
                    table_files)

from benchmarks.scale_tables import build_overwrite_table  # noqa: E402
from faults.faulty_io import Crash, FaultyIO  # noqa: E402
from faults.test_interrupted_expire import LastBatchFirst, _Batched  # noqa: E402
from invariants import assert_intact  # noqa: E402
from operations.test_changelog import add_index_and_statistics  # noqa: E402
from paimon_commit import Table  # noqa: E402
from paimon_commit.store import FileStore  # noqa: E402

SNAPS, PER, RETAIN, TAG = 60, 2, 3, 30
SIZES = dict(CHUNK_FILES=120)


def cfg(max_deletes=1 << 30):
    return ExpireConfig(retain_min=RETAIN, time_retained_ms=0, max_deletes=max_deletes)


def template(base):
    path = os.path.join(base, "tpl", "db.db", "t")
    build_overwrite_table(path, SNAPS * PER, PER)
    t = Table.open(path)
    for sid in range(1, SNAPS + 1):
        add_index_and_statistics(t, sid, [f"index-{sid}-a", f"index-{sid}-b"], f"stat-{sid}")
    Table.open(path).create_tag(f"t{TAG}", TAG)
    return path


def run(path, io=None, executor=None, max_deletes=1 << 30):
    return ExpireSnapshots(FileStore.open(path, io=io), cfg(max_deletes),
                           executor=executor).expire()


def main():
    import logging
    logging.disable(logging.WARNING)
    base = tempfile.mkdtemp(prefix="audit26h-q2-")
    tpl = template(base)
    step = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    with sizes(None, **SIZES):
        ref = clone(tpl, os.path.join(base, "ref", "db.db", "t"))
        r = run(ref)
        assert r.expired_ids == list(range(1, SNAPS - RETAIN + 1)) and not r.skipped
        expected = table_files(ref)
        failures = trials = 0
        for label, io_class, executor in (("pool", FaultyIO, None),
                                          ("last-batch-first", _Batched, LastBatchFirst)):
            # Count the ops once, noting where the first chunk's execution ends.
            ends = []
            execute = ExpireSnapshots._execute

            def noting(self, plan):
                out = execute(self, plan)
                if plan.end is not None:
                    ends.append((plan.end, self.store.io.count))
                return out
            ExpireSnapshots._execute = noting
            counted = clone(tpl, os.path.join(base, "count", "db.db", "t"))
            io = io_class(counted)
            run(counted, io, executor and executor())
            ExpireSnapshots._execute = execute
            (first_end, first_ops), = ends[:1]
            print(f"[{label}] first chunk: snapshots 1..{first_end - 1} (old: 1..3), "
                  f"{first_ops} ops of {io.count}; {len(ends)} chunks", flush=True)
            for k in range(1, first_ops + 1, step):
                trials += 1
                # (two copies crashed alike, one per kind of rerun: a copy of a crashed
                # table would carry a lease record naming another table path)
                path = clone(tpl, os.path.join(base, "k", "db.db", "t"))
                alt = clone(tpl, os.path.join(base, "k2", "db.db", "t"))
                crashed = 0
                for p in (path, alt):
                    try:
                        run(p, io_class(p, fail_at=k), executor and executor())
                    except Crash:
                        crashed += 1
                if crashed != 2:
                    print(f"[{label}] k={k}: no crash?")
                    failures += 1
                    continue
                try:
                    assert_intact(path, min_snapshot=first_end)
                    assert_intact(alt, min_snapshot=first_end)
                    a = run_until_done(path, cfg())
                    b = run_until_done(alt, cfg(10))
                    for name, res in (("same", a), ("limit-10", b)):
                        assert res["error"] is None, (name, res["error"])
                        left, extra = expected - res["files"], res["files"] - expected
                        assert not left and not extra, (name, sorted(left)[:4],
                                                         sorted(extra)[:4])
                        assert_intact(path if name == "same" else alt)
                except (AssertionError, Exception) as e:   # noqa: BLE001
                    failures += 1
                    print(f"[{label}] k={k} ({io.log[k - 1]}): FAIL {e!r:.300}", flush=True)
                finally:
                    shutil.rmtree(os.path.join(base, "k"), ignore_errors=True)
                    shutil.rmtree(os.path.join(base, "k2"), ignore_errors=True)
    print(f"{trials} crash points, {failures} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
