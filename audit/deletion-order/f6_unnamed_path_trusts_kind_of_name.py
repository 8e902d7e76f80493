"""Finding 6 (data loss on hostile / inconsistent metadata; new in this diff): the by-name
path (`_unnamed_metadata`) deletes an expiring snapshot's `indexManifest` (and its lists)
by the name its JSON gives, protected only by the set `named` of list, index-manifest and
statistics names of the retained roots. Retained *data manifests* are not in `named`
(they are exactly what could not be read). So an expiring snapshot whose JSON names, as its
index manifest (or as a manifest list), a data manifest that a retained snapshot uses gets
that manifest deleted: the retained snapshot no longer reads.

The normal path is not fooled: its keep-set holds every manifest of the retained roots and
it reads an index manifest before deleting what it lists. 0f76a62 deleted no metadata in
this situation. The project treats names read from metadata as hostile input
(tests/faults/test_hostile.py; validate_bare_file_name); a bare name of the wrong kind
passes that check.

Run: PYTHONPATH=. .venv/bin/python audit/f6_unnamed_path_trusts_kind_of_name.py
"""
import os
import shutil

from common import new_table
from invariants import assert_intact
from operations.test_changelog import rewrite_snapshot
from paimon_commit import Table
from paimon_commit.operations.expire import ExpireConfig, ExpireSnapshots
from paimon_commit.store import FileStore

CFG = ExpireConfig(retain_min=3, time_retained_ms=0)
template = new_table(snapshots=12, index=False)
t = Table.open(template)
t.create_tag("t6", 6)
latest = t.store.snapshots.snapshot(12)
victim = t.store.manifests.read_list_refs(latest.base_manifest_list)[0].file_name
print("data manifest the latest snapshot (12) reads:", victim)
# An expiring snapshot's JSON names that manifest as its index manifest.
rewrite_snapshot(t, 2, index_manifest=victim)


def run(path, damage_tag):
    t = Table.open(path)
    if damage_tag:   # what the tag uses cannot be read: the by-name path is taken
        os.unlink(t.store.manifests.path(t.store.snapshots.snapshot(6).base_manifest_list))
    r = ExpireSnapshots(FileStore.open(path), CFG).expire()
    there = os.path.exists(os.path.join(path, "manifest", victim))
    try:
        rows = Table.open(path).read_arrow().num_rows
    except Exception as e:   # noqa: BLE001
        rows = f"unreadable ({type(e).__name__})"
    return r.expired_ids, there, rows


normal = template + "-normal"
shutil.copytree(template, normal)
print("normal path   : expired %s, manifest still there: %s, latest reads: %s"
      % run(normal, damage_tag=False))
byname = template + "-byname"
shutil.copytree(template, byname)
ids, there, rows = run(byname, damage_tag=True)
print("by-name path  : expired %s, manifest still there: %s, latest reads: %s" % (ids, there, rows))
if not there and not isinstance(rows, int):
    print("FINDING REPRODUCED: the by-name path deleted a data manifest the latest snapshot uses.")
else:
    print("NO FINDING: the data manifest stays and the latest snapshot reads.")
