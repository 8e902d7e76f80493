"""Check (no finding expected): two compactions in one process, both in forked workers
(_WORKER_TASKS set for the first, then the second), the second with bins of other
partitions and sizes (learn_first True, then False). Every bin's rows land in its own
partition, pypaimon reads the same rows before and after, and the module globals are
cleared after each run."""
import datetime
import os
import sys
import tempfile

import pyarrow as pa

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tests"))
from oracle import pp_read, rows  # noqa: E402

from paimon_commit import Table  # noqa: E402
from paimon_commit.operations.compact import pool as compact_pool  # noqa: E402
from paimon_commit.operations.compact import AppendCompaction  # noqa: E402
from paimon_commit.operations.compact.rewrite import BinRewriter  # noqa: E402

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("hr", pa.int32())])


def fill(path, hrs, base):
    t = Table.create(path, SCHEMA, partition_keys=["hr"],
                     options={"source.split.open-file-cost": "1 b"})
    for i in range(10):
        for hr in hrs:
            w = t.new_writer()
            w.write_arrow(pa.Table.from_pylist(
                [{"id": base + hr * 1000 + i * 50 + k, "name": os.urandom(40).hex(), "hr": hr}
                 for k in range(50)], schema=SCHEMA))
            with t.new_commit() as c:
                c.commit(w.prepare_commit())
    return t


def main():
    compact_pool._os_threads = lambda: 1     # as tests/operations/test_compact_workers.py
    parent = os.getpid()
    pids = []
    real = BinRewriter.rewrite_task

    def noting(self, task, *a, **k):
        # a worker checks that every input file of its bin is in the bin's partition
        for e in task.files:
            assert e.partition == task.partition, "bin with files of another partition"
        if os.getpid() != parent:
            open(os.path.join(marks, f"{os.getpid()}"), "w").close()
        return real(self, task, *a, **k)

    BinRewriter.rewrite_task = noting
    marks = tempfile.mkdtemp()
    problems = []
    wh = os.path.join(tempfile.mkdtemp(), "wh", "db.db")
    for name, hrs, target in (("a", (1, 2, 3), "32 kb"), ("b", (7, 8, 9, 10, 11), "64 mb")):
        path = os.path.join(wh, name)
        t = fill(path, hrs, 0 if name == "a" else 10 ** 6)
        before = rows(pp_read(path))
        job = AppendCompaction(t.store, options={"file-operation.thread-num": "2",
                                                 "target-file-size": target,
                                                 "compaction.min.file-num": "2"})
        plan = job.plan()
        lf = compact_pool._learn_first(job._rewriter, plan.tasks)
        job.commit(plan, job.rewrite(plan))
        after = rows(pp_read(path))
        live = Table.open(path).live_files()
        print(f"{name}: bins {len(plan.tasks)}, learn_first {lf}, rows same {before == after}, "
              f"live files {len(live)}, all COMPACT {all(f.file.file_source == 1 for f in live)}"
              f", globals cleared {compact_pool._WORKER_REWRITER is None and not compact_pool._WORKER_TASKS}")
        if before != after or compact_pool._WORKER_TASKS:
            problems.append(name)
    if not os.listdir(marks):
        problems.append("no forked worker ran (check invalid)")
    print(f"FINDING: {problems}" if problems else "NO FINDING")


if __name__ == "__main__":
    main()
