"""Chunked expiration while, between two chunks, the table is rolled back to a retained
snapshot and the rolled-back ids are committed again with other content (so KeptIndex holds
an old parse of snapshots 28..30 that must be indexed again). Afterwards every retained
snapshot reads back through pypaimon and nothing it references is missing. Chunk sizes
1, 2-3 and 5.

Run: PYTHONPATH=$PWD:$PWD/tests .venv/bin/python audit/rollback_midrun.py
"""
import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tests"))
from conftest import SCHEMA, make_rows, write  # noqa: E402
from invariants import assert_intact  # noqa: E402

from paimon_commit import Table  # noqa: E402
from paimon_commit.operations import expire as expire_mod  # noqa: E402
from paimon_commit.operations.expire import ExpireConfig, ExpireSnapshots  # noqa: E402

FAR = lambda: time.time() + 10 * 365 * 86400  # noqa: E731

for first, files_per_chunk in ((1, 1), (2, 6), (5, 20)):
    tmp = tempfile.mkdtemp()
    path = os.path.join(tmp, "wh", "db.db", "t")
    os.makedirs(os.path.dirname(path))
    t = Table.create(path, SCHEMA, partition_keys=["dt", "hr"])
    for i in range(1, 31):
        if i % 5 == 0:
            with t.new_commit() as c:
                c.drop_partitions([{"hr": i % 3}])
        else:
            write(t, make_rows([i], hr=i % 3))
    ends, once = [], []
    orig = ExpireSnapshots.plan

    def plan(self):
        if len(ends) == 2 and not once:
            once.append(1)
            t2 = Table.open(path)
            t2.rollback_to(27)
            for k in range(3):          # 28, 29, 30 again, other files
                write(t2, make_rows([1000 + k], hr=7))
        p = orig(self)
        ends.append(p.end)
        return p
    expire_mod.FIRST_CHUNK, expire_mod.CHUNK_FILES = first, files_per_chunk
    ExpireSnapshots.plan = plan
    try:
        r = ExpireSnapshots(Table.open(path).store,
                            ExpireConfig(retain_min=4, retain_max=4, time_retained_ms=0,
                                         max_deletes=1 << 30), clock=FAR).expire()
    finally:
        ExpireSnapshots.plan = orig
    t = assert_intact(path)
    print(f"chunks {first}/{files_per_chunk}: ends {ends}; retained "
          f"{[s.id for s in t.snapshots()]}; intact")
    shutil.rmtree(tmp)
