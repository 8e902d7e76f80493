"""compact_pool: when the first bin does not run alone (_learn_first False: all bins small),
its future is submitted before the others but is only added to `futures` after the dict
comprehension that submits the others. If submitting the others raises (the pool broke
because a worker died - OOM killer, a signal - or an interrupt lands in the parent), the
first bin's outcome is never collected: its files are neither swept (dead worker) nor handed
to the caller's abort, so they stay in the table directory (uncommitted), and the error is
the raw BrokenProcessPool instead of the CompactionError that names the partition.

The window (between the first submit and the others) is short; this script widens it, not
by mocking storage, but by making the parent's second submit wait until bin 0's worker has
died after writing one file (the same death the suite's test injects)."""
import os
import sys
import tempfile
import datetime
from concurrent.futures import wait

import pyarrow as pa

from paimon_commit import Table
from paimon_commit.operations.compact import pool as compact_pool
from paimon_commit.operations.compact import AppendCompaction
from paimon_commit.operations.compact.rewrite import BinRewriter

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("dt", pa.date32()),
                    ("hr", pa.int32())])


def files_under(path):
    return sorted(os.path.relpath(os.path.join(r, n), path)
                  for r, _, ns in os.walk(path) for n in ns)


def main():
    root = tempfile.mkdtemp()
    path = os.path.join(root, "t")
    t = Table.create(path, SCHEMA, partition_keys=["dt", "hr"],
                     options={"source.split.open-file-cost": "1 b"})
    for i in range(20):
        for hr in (1, 2):          # two partitions: two bins
            w = t.new_writer()
            w.write_arrow(pa.Table.from_pylist(
                [{"id": i * 100 + k, "name": os.urandom(8).hex(), "dt": datetime.date(2024, 1, 1),
                  "hr": hr} for k in range(50)], schema=SCHEMA))
            with t.new_commit() as c:
                c.commit(w.prepare_commit())
    compact_pool._os_threads = lambda: 1    # as tests/operations/test_compact_workers.py

    parent = os.getpid()
    real_roll = BinRewriter._roll

    def roll_then_die(self, writer, task, out, fed, ratio):
        real_roll(self, writer, task, out, fed, ratio)
        if os.getpid() != parent and task is compact_pool._WORKER_TASKS[0]:
            os._exit(3)            # bin 0's worker dies after writing its file

    BinRewriter._roll = roll_then_die

    class Pool(compact_pool.ProcessPoolExecutor):
        first = None

        def submit(self, fn, *args, **kwargs):
            if self.first is None:
                self.first = super().submit(fn, *args, **kwargs)
                return self.first
            wait([self.first])     # widen the window: worker 0 is dead before bin 1 goes
            return super().submit(fn, *args, **kwargs)

    compact_pool.ProcessPoolExecutor = Pool

    job = AppendCompaction(t.store, options={"file-operation.thread-num": "2",
                                             "compaction.min.file-num": "2"})
    plan = job.plan()
    assert len(plan.tasks) >= 2, len(plan.tasks)
    assert not compact_pool._learn_first(job._rewriter, plan.tasks)
    before = files_under(path)
    try:
        job.rewrite(plan)
        print("rewrite did not fail?")
        err = None
    except BaseException as e:   # noqa
        err = e
    after = files_under(path)
    leaked = [f for f in after if f not in before]
    print("error:", type(err).__name__, str(err)[:160])
    if leaked:
        print(f"FINDING: a failed compaction left {len(leaked)} uncommitted file(s) written by "
              f"bin 0's worker in the table: {leaked}; error type {type(err).__name__}")
    else:
        print("NO FINDING")


if __name__ == "__main__":
    main()
