"""Expiration with the gate asked once per directory: a partition moved to another volume
and symlinked back in. Files DELETEd in that partition must stay (refused, reported), files
in the other partitions go, and nothing outside the root is touched.

Run: PYTHONPATH=$PWD:$PWD/tests .venv/bin/python audit/symlinked_partition.py
"""
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
for i in range(4):
    write(t, make_rows([i], hr=1))
    write(t, make_rows([i + 10], hr=2))
for hr in (1, 2):
    with t.new_commit() as c:
        c.drop_partitions([{"hr": hr}])
write(t, make_rows([99], hr=3))
part = os.path.join(path, "dt=19723", "hr=2")
outside = os.path.join(tmp, "other-volume", "hr=2")
shutil.move(part, outside)
os.symlink(outside, part)
before_out = sorted(os.listdir(os.path.join(outside, "bucket-0")))
before_in = sorted(os.listdir(os.path.join(path, "dt=19723", "hr=1", "bucket-0")))
r = ExpireSnapshots(t.store, ExpireConfig(retain_min=1, retain_max=1, time_retained_ms=0,
                                          max_deletes=1000),
                    clock=lambda: time.time() + 1e6).expire()
after_out = sorted(os.listdir(os.path.join(outside, "bucket-0")))
left_in = os.listdir(os.path.join(path, "dt=19723", "hr=1", "bucket-0")) \
    if os.path.isdir(os.path.join(path, "dt=19723", "hr=1", "bucket-0")) else []
print("expired", r.expired_ids)
print("outside volume before/after:", len(before_out), len(after_out))
print("hr=1 before/after:", len(before_in), len(left_in))
print("skipped:", [s for s in r.to_dict().get("skipped", [])][:3])
assert after_out == before_out, "deleted through a symlink"
assert len(left_in) < len(before_in)
print("ok: nothing deleted through the symlinked partition")
shutil.rmtree(tmp)
