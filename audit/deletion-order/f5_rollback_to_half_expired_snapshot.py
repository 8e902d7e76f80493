"""Finding 5 (data loss; the window is older than this diff, but the diff's rerun-with-limit
design keeps it open across several runs): after an expiration is killed in its list step,
the chunk's snapshot files are still there while their manifest lists are gone. A rerun
as expiration-after-commit (`snapshot.expire.limit`) walks through them 10 at a time, so
these half-deleted snapshots stay listed for several commits. `rollback_to(snapshot_id=k)`
only checks that snapshot-k exists: rolling back to one of them succeeds, deletes every
newer (intact) snapshot, and leaves a table whose latest snapshot cannot be read.

Run: PYTHONPATH=. .venv/bin/python audit/f5_rollback_to_half_expired_snapshot.py
"""
import os
import shutil

from common import files
from faults import test_interrupted_expire as T
from faults.faulty_io import Crash, FaultyIO
from operations.test_changelog import add_index_and_statistics

import tempfile
from benchmarks.scale_tables import build_overwrite_table
from paimon_commit import Table
from paimon_commit.operations import expire as expire_mod
from paimon_commit.operations.expire import ExpireSnapshots
from paimon_commit.store import FileStore

expire_mod.FIRST_CHUNK = T.FIRST_CHUNK
path = os.path.join(tempfile.mkdtemp(prefix="auditA-f5-"), "wh", "db.db", "t")
build_overwrite_table(path, T.SNAPSHOTS * T.PER_SNAPSHOT, T.PER_SNAPSHOT)
ref = path + "-ref"
shutil.copytree(path, ref)
count = FaultyIO(ref, kinds={"_unlink"})
ExpireSnapshots(FileStore.open(ref, io=count), T.cfg(), executor=T.LastBatchFirst()).expire()
steps = [T.step_of(os.path.relpath(p, ref)) for _, p in count.log]
last = max(i for i, s in enumerate(steps) if s == "manifest-list")
first = last
while steps[first - 1] == "manifest-list":
    first -= 1
try:
    ExpireSnapshots(FileStore.open(path, io=FaultyIO(path, fail_at=(first + last) // 2 + 1,
                                                     kinds={"_unlink"})),
                    T.cfg(), executor=T.LastBatchFirst()).expire()
except Crash:
    pass
# One expiration-after-commit run (limit 10) later, half-deleted snapshots are still listed.
ExpireSnapshots(FileStore.open(path), T.cfg(10)).expire()
t = Table.open(path)
mio = t.store.manifests
half = [s.id for s in t.snapshots()
        if not all(os.path.exists(mio.path(n)) for n in s.manifest_lists())]
print("snapshots listed whose lists are gone:", half[:5], "...", len(half))
target = half[-1]
# (b) create_tag accepts one too, creating a tag that does not read (while it exists every
# expiration takes the by-name path: no manifest is deleted).
tagged = path + "-tagged"
shutil.copytree(path, tagged)
try:
    Table.open(tagged).create_tag("oops", half[0])
    try:
        Table.open(tagged).read_arrow(tag="oops")
        tag_reads = True
    except Exception:   # noqa: BLE001
        tag_reads = False
    print("create_tag on half-expired snapshot", half[0], "accepted; the new tag reads:", tag_reads)
    tag_refused = False
except ValueError as e:
    print("create_tag refused:", e)
    tag_refused = True
before = files(path)
try:
    r = t.rollback_to(snapshot_id=target)
    print("rollback_to", target, "succeeded; deleted intact snapshots", r.deleted_snapshots[-3:], "...")
    refused = False
except ValueError as e:
    print("rollback_to refused:", e)
    refused = True
t = Table.open(path)
try:
    n = t.read_arrow().num_rows
    print("latest reads", n, "rows")
    broken = False
except Exception as e:   # noqa: BLE001
    print("the table's latest snapshot no longer reads:", type(e).__name__, str(e)[:120])
    broken = True
if half and (broken or not refused or not tag_refused or files(path) != before):
    print("FINDING REPRODUCED: rollback_to / create_tag accepted a half-expired snapshot.")
else:
    print("NO FINDING: rollback_to and create_tag refuse a half-expired snapshot; nothing "
          "changed and the latest reads.")
