"""Finding 3 (leak + wrong report): a delete_tag rerun from the deletion marker takes ANY
failure to read what the tag uses (`Unreadable`: a corrupt manifest, a hostile file name,
a manifest removed by something else) as "the killed run had begun on the metadata, so its
data files are already gone". When the killed run in fact died in the DATA step (manifests
untouched) and one of the tag's manifests is damaged, the rerun deletes no data file, deletes
the manifests and lists that were the only record of those data files (the damaged one
included), removes the marker and returns a result with `skipped == []`: a clean report
while the tag's data files stay, unnamed, for orphan cleanup only. The same damage on a
first run is reported ("could not compute what else uses the tag's files ...; its files are
left for orphan cleanup") and keeps the manifests.

Others are still read strictly (no other root's file is deleted): not data loss.

Run: PYTHONPATH=. .venv/bin/python audit/f3_resume_takes_damage_for_done.py
"""
import os
import shutil

from common import files, new_table
from faults.faulty_io import Crash, FaultyIO
from invariants import assert_intact
from paimon_commit import Table
from paimon_commit.operations.expire import ExpireConfig, ExpireSnapshots
from paimon_commit.store import FileStore

template = new_table(snapshots=10, per_snapshot=4, index=False)
t = Table.open(template)
t.create_tag("t5", 5)
t.create_tag("keep", 3)
tag_snap = t.store.snapshots.snapshot(5)
ExpireSnapshots(FileStore.open(template), ExpireConfig(retain_min=2, time_retained_ms=0)).expire()
mio = Table.open(template).store.manifests
# The tag's own ADD manifest (in its delta list): the record of its live data files.
delta = mio.read_list_refs(tag_snap.delta_manifest_list)
adds = delta[-1].file_name   # the overwrite table's delta list is [DELETE manifest, ADD manifest]


def data_files(root):
    return {f for f in files(root) if "/bucket-" in f}


def damage(root):
    with open(os.path.join(root, "manifest", adds), "r+b") as f:
        f.write(b"garbage, not avro")


# A: killed halfway through the data step (unlink 1 is the tag file, 2 a data file, 3 dies), then the
# tag's ADD manifest is damaged, then delete_tag is run again.
a = template + "-resume"
shutil.copytree(template, a)
before = data_files(a)
try:
    Table(FileStore.open(a, io=FaultyIO(a, fail_at=3, kinds={"_unlink"}))).delete_tag("t5")
except Crash:
    pass
left_after_kill = before - data_files(a)
print("killed after deleting", len(left_after_kill), "data file(s); manifests untouched")
damage(a)
r = Table.open(a).delete_tag("t5")
print("rerun: deleted", r.deleted_files, "files, skipped =", r.skipped)
print("unfinished deletions after the rerun:", Table.open(a).unfinished_tag_deletions())

# Reference: an undamaged, unkilled delete_tag: which data files the tag alone had.
ref = template + "-ref"
shutil.copytree(template, ref)
Table.open(ref).delete_tag("t5")
leaked = sorted(data_files(a) - data_files(ref))
print("data files the tag alone had, still on disk and named by nothing:", len(leaked), leaked[:3])
print("its ADD manifest still there:", os.path.exists(os.path.join(a, "manifest", adds)))
assert_intact(a)   # others intact: not data loss

# B: the same damage on a first run is reported and the manifests are kept.
b = template + "-first"
shutil.copytree(template, b)
damage(b)
r1 = Table.open(b).delete_tag("t5")
print("first run with the same damage: skipped =", r1.skipped)

marker = bool(Table.open(a).unfinished_tag_deletions())
if leaked and (r.skipped == [] or not marker):
    print("FINDING REPRODUCED: the rerun reports a clean deletion (skipped == []) while "
          f"{len(leaked)} data file(s) only the tag had are left with nothing naming them.")
else:
    print(f"NO FINDING: the rerun reports the damage and keeps the marker "
          f"(marker kept: {marker}, ADD manifest kept: "
          f"{os.path.exists(os.path.join(a, 'manifest', adds))}).")
