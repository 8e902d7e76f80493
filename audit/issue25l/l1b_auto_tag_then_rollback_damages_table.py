"""l1's automatic tag, followed by the rollback to it that its existence invites: an
expiration of snapshots 1..2 stopped after its index-file step (marker expiring-1-3 stays;
snapshot 1's deletion-vector file is gone, its data files all there). The next commit's
automatic tag lands on snapshot 1 (no marker check); rollback_to(tag=<auto tag>) skips the
marker check for tags and its data check sees only data files: snapshot 1, missing its DV file,
becomes the latest and every intact newer snapshot is deleted. (rollback_to(snapshot_id=1) is
refused by the marker.)"""
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import *  # noqa
from operations.test_changelog import add_index_and_statistics
from paimon_commit.operations.tag_ops import tag_manager

t = new_table("t", KEEP)
for i in range(4):
    write(Table.open(t.store.root), 10 * i)   # snapshots 1..4, append only
root = t.store.root
add_index_and_statistics(Table.open(root), 1, ["dv-index-of-1"])
expire_killed_after_data_step(Table.open(root), 2, kind="index", path_part="index-manifest-")
dv = os.path.join(root, "index", "dv-index-of-1")
print("markers:", markers(root), "dv of 1 there:", os.path.exists(dv))
edit_schema_options(root, **{"tag.automatic-creation": "process-time",
                             "tag.creation-period": "daily"})
write(Table.open(root), 40)                   # 5, post-commit: automatic tag
tags = {tg.name: tg.id for tg in tag_manager(Table.open(root).store).tags()}
print("tags:", tags)
auto = [n for n, sid in tags.items() if sid == 1]
if not auto:
    print("OK: no automatic tag on snapshot 1")
    sys.exit(0)
try:
    r = Table.open(root).rollback_to(tag=auto[0])
    print("rollback_to(tag=%s): went through" % auto[0])
except ValueError as e:
    print("OK: rollback_to the automatic tag refused:", str(e)[:150])
    sys.exit(0)
sm = Table.open(root).store.snapshots
print("snapshots now:", sm.list_snapshot_ids(), "latest:", sm.latest_snapshot_id())
rc, probs = check_problems(root)
print("check:", rc, str(probs)[:240].replace(root, "<t>"))
if sm.latest_snapshot_id() == 1 and not os.path.exists(dv):
    print("FINDING: the automatic tag on half-expired snapshot 1 let rollback_to(tag) make it "
          "the latest (its deletion-vector file gone) and delete intact snapshots 2..5")
else:
    print("OK: latest snapshot whole")
