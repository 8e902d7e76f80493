"""Check (no finding): a TRANSIENT read error (an OSError such as an object store's 5xx or
a failed GET; FileIO maps only 404 to FileNotFoundError) is not `Unreadable`, so it never
takes the new "delete by name only" path of expiration nor the "data already gone" path of
a delete_tag rerun: the operation raises with nothing deleted (expiration) or with the
marker kept (delete_tag), and the next run does the normal job.

Run: PYTHONPATH=. .venv/bin/python audit/c2_transient_read_errors.py
"""
import os
import shutil

from common import files, new_table
from faults.faulty_io import Crash, FaultyIO
from invariants import assert_intact
from paimon_commit import Table
from paimon_commit.io.local import LocalFileIO
from paimon_commit.operations.expire import ExpireConfig, ExpireSnapshots
from paimon_commit.store import FileStore


class FlakyIO(LocalFileIO):
    """One 503 on the first GET of `target`."""
    def __init__(self, root, target):
        super().__init__(root)
        self.target, self.fired = target, False

    def read_bytes(self, path):
        if not self.fired and os.path.abspath(path) == os.path.abspath(self.target):
            self.fired = True
            raise OSError("503 Service Unavailable (injected)")
        return super().read_bytes(path)


CFG = ExpireConfig(retain_min=3, time_retained_ms=0)
path = new_table(snapshots=12)
t = Table.open(path)
t.create_tag("t6", 6)
retained_list = t.store.manifests.path(t.store.snapshots.snapshot(10).base_manifest_list)
before = files(path)
try:
    ExpireSnapshots(FileStore.open(path, io=FlakyIO(path, retained_list)), CFG).expire()
    raise AssertionError("no error")
except OSError as e:
    print("expire with a 503 on a retained snapshot's list raised:", e)
assert files(path) == before, sorted(before - files(path))[:5]
print("  nothing deleted")
r = ExpireSnapshots(FileStore.open(path), CFG).expire()
assert r.expired_ids == list(range(1, 10)) and not r.skipped
assert_intact(path)
print("  next run: normal expiration, no skip")

# delete_tag killed in its manifest step, then a rerun whose first GET of the tag's base
# list fails with a 503.
path2 = new_table(snapshots=10, per_snapshot=4, index=True)
t = Table.open(path2)
t.create_tag("t5", 5)
base = t.store.manifests.path(t.store.snapshots.snapshot(5).base_manifest_list)
ExpireSnapshots(FileStore.open(path2), ExpireConfig(retain_min=2, time_retained_ms=0)).expire()
ref = path2 + "-ref"
shutil.copytree(path2, ref)
Table.open(ref).delete_tag("t5")
# unlinks: 1 tag file, 2..5 data files, 6.. manifests: die at the 2nd manifest
try:
    Table(FileStore.open(path2, io=FaultyIO(path2, fail_at=7, kinds={"_unlink"}))).delete_tag("t5")
except Crash:
    pass
try:
    Table(FileStore.open(path2, io=FlakyIO(path2, base))).delete_tag("t5")
    raise AssertionError("no error")
except OSError as e:
    print("delete_tag rerun with a 503 on the tag's list raised:", e)
print("  marker kept:", Table.open(path2).unfinished_tag_deletions())
assert Table.open(path2).unfinished_tag_deletions() == ["t5"]
Table.open(path2).delete_tag("t5")
assert files(path2) == files(ref), sorted(files(path2) ^ files(ref))
assert_intact(path2)
print("  next rerun: same files as an unkilled deletion")
print("NO FINDING")
