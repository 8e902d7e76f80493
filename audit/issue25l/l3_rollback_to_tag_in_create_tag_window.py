"""create_tag writes its tag file first and only then lists the markers (and takes the tag
back if one covers it). In that window the tag is a normal tag to everyone else, and
rollback_to(tag=...) (under the maintenance lease, which create_tag does not take) skips the
marker check for tags ("a tag's data is kept by the tag") -- but this tag's snapshot was
half expired before the tag existed. Here: an expiration of snapshots 1..2 stopped after its
index-file step (marker expiring-1-3 stays; snapshot 2's deletion-vector file is gone; data
files all there, so rollback's data check passes). A user's create_tag("T", 2) meets a
rollback_to(tag="T") from another process: the rollback makes snapshot 2 (missing its DV
file) the latest and deletes intact snapshots 3 and 4 -- which deletes snapshot 3, the
marker's `end`, so create_tag's listing then finds the marker out of force and keeps tag T
too (see l2). rollback_to(snapshot_id=2) alone is refused by the marker."""
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import *  # noqa
from operations.test_changelog import add_index_and_statistics
from paimon_commit.expiring import ExpiringMarkers

t = new_table("t", KEEP)
for i in range(4):
    write(t, 10 * i)                       # snapshots 1..4, append only
root = t.store.root
add_index_and_statistics(Table.open(root), 2, ["dv-index-of-2"])
expire_killed_after_data_step(Table.open(root), 2, kind="index", path_part="index-manifest-")
dv = os.path.join(root, "index", "dv-index-of-2")
print("markers:", markers(root), "dv of 2 there:", os.path.exists(dv))
try:
    Table.open(root).rollback_to(snapshot_id=2)
    print("rollback_to(snapshot_id=2) went through")
except ValueError as e:
    print("rollback_to(snapshot_id=2) refused (as it should):", str(e)[:90])

# The interleaving: another process's rollback_to(tag="T") runs after create_tag's tag file
# is written and before create_tag lists the markers.
orig = ExpiringMarkers.covering
seen = {}


def covering(self, sid, read_snapshot):
    if not seen:
        try:
            r = Table.open(root).rollback_to(tag="T")
            seen["rollback"] = f"rolled back to {r.snapshot_id if hasattr(r, 'snapshot_id') else r}"
        except Exception as e:  # noqa
            seen["rollback"] = f"refused: {type(e).__name__}: {str(e)[:200]}"
    return orig(self, sid, read_snapshot)


ExpiringMarkers.covering = covering
try:
    Table.open(root).create_tag("T", 2)
    print("create_tag T: created")
except ValueError as e:
    print("create_tag T refused:", str(e)[:120])
finally:
    ExpiringMarkers.covering = orig
print("concurrent rollback_to(tag=T):", seen.get("rollback"))
sm = Table.open(root).store.snapshots
ids, latest = sm.list_snapshot_ids(), sm.latest_snapshot_id()
print("snapshots now:", ids, "latest:", latest, "dv of 2 there:", os.path.exists(dv))
rc, probs = check_problems(root)
print("check:", rc, str(probs)[:300].replace(root, "<t>"))
if latest == 2 and not os.path.exists(dv):
    print("FINDING: a rollback_to(tag) in create_tag's window made half-expired snapshot 2 "
          "(its deletion-vector file gone) the latest and deleted intact snapshots 3, 4 "
          "(create_tag then kept tag T: the marker's end snapshot was gone)")
else:
    print("OK: the table's latest snapshot is whole")
