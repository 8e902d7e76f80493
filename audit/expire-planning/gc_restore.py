"""The cyclic collector is back on after an expiration that raises (a retained snapshot
made unreadable: 'the table is damaged: fail loudly'), and stays off-then-on as it was
when the caller had disabled it.

Run: PYTHONPATH=$PWD:$PWD/tests .venv/bin/python audit/gc_restore.py
"""
import gc
import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tests"))
from conftest import SCHEMA, make_rows, write  # noqa: E402

from paimon_commit import Table  # noqa: E402
from paimon_commit.operations.expire import ExpireConfig, ExpireSnapshots  # noqa: E402

tmp = tempfile.mkdtemp()
path = os.path.join(tmp, "wh", "db.db", "t")
os.makedirs(os.path.dirname(path))
t = Table.create(path, SCHEMA, partition_keys=["dt", "hr"])
for i in range(6):
    write(t, make_rows([i], hr=i % 2))
with open(os.path.join(path, "snapshot", "snapshot-6"), "w") as f:
    f.write("{not json")
for enabled in (True, False):
    (gc.enable if enabled else gc.disable)()
    try:
        ExpireSnapshots(t.store, ExpireConfig(retain_min=2, retain_max=2, time_retained_ms=0,
                                              max_deletes=100),
                        clock=lambda: time.time() + 1e6).expire()
        print("no error?")
    except Exception as e:  # noqa: BLE001
        print("raised", type(e).__name__)
    print("collector enabled before:", enabled, "after:", gc.isenabled())
    assert gc.isenabled() == enabled
gc.enable()
shutil.rmtree(tmp)
