"""S5: expiration killed at an exact unlink on the PRODUCTION local path (one delete_files
call per step, directory slices on a real thread pool: the path tests/faults/
test_interrupted_expire.py no longer exercises since it sets unlinks_recheck_dirs=False),
then rerun: retained snapshots and the tag read throughout, and the table ends exactly as
after an unkilled run."""
import os
import random
import shutil
import tempfile
import common  # noqa: F401
from faults.faulty_io import Crash, FaultyIO
from invariants import assert_intact
from operations.test_changelog import add_index_and_statistics
from benchmarks.scale_tables import build_overwrite_table
from paimon_commit import Table
from paimon_commit.operations import expire as expire_mod
from paimon_commit.operations.expire import ExpireConfig, ExpireSnapshots
from paimon_commit.store import FileStore

expire_mod.FIRST_CHUNK = 7
SNAPSHOTS, RETAIN = 60, 3
KEPT = SNAPSHOTS - RETAIN + 1
base = tempfile.mkdtemp(prefix="a26g-kill-")
tpl = os.path.join(base, "tpl", "db.db", "t")
build_overwrite_table(tpl, SNAPSHOTS * 2, 2)
t = Table.open(tpl)
for sid in range(1, SNAPSHOTS + 1):
    add_index_and_statistics(t, sid, [f"index-{sid}-a", f"index-{sid}-b"], f"stat-{sid}")
Table.open(tpl).create_tag("t30", 30)


def cfg():
    return ExpireConfig(retain_min=RETAIN, time_retained_ms=0, max_deletes=1 << 30)


def files(root):
    return {os.path.relpath(os.path.join(d, f), root) for d, _, fs in os.walk(root)
            for f in fs if not os.path.relpath(d, root).startswith(".maintenance")}


def clone(name):
    p = os.path.join(base, name, "db.db", "t")
    shutil.copytree(tpl, p)
    return p


ref = clone("ref")
count = FaultyIO(ref, kinds={"_unlink"})
assert count.unlinks_recheck_dirs   # the production path: slices on the pool
r = ExpireSnapshots(FileStore.open(ref, io=count), cfg()).expire()
assert r.expired_ids == list(range(1, KEPT)) and not r.skipped
want, total = files(ref), count.count
print(f"unkilled run: {total} unlinks")
rng = random.Random(26)
points = sorted(set(rng.randrange(1, total + 1) for _ in range(14)) | {1, total // 2, total})
bad = 0
for k in points:
    path = clone(f"k{k}")
    io = FaultyIO(path, fail_at=k, kinds={"_unlink"})
    try:
        ExpireSnapshots(FileStore.open(path, io=io), cfg()).expire()
        print(f"kill at {k}: no crash?")
    except Crash:
        pass
    assert_intact(path, min_snapshot=KEPT)
    for _ in range(10):
        if not ExpireSnapshots(FileStore.open(path), cfg()).expire().expired_ids:
            break
    ok = files(path) == want
    assert_intact(path)
    bad += not ok
    print(f"kill at unlink {k:4d}: rerun ends as unkilled: {ok}"
          + ("" if ok else f" extra={sorted(files(path) - want)[:3]} "
                           f"missing={sorted(want - files(path))[:3]}"))
print("failures:", bad)
