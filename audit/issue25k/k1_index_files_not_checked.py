"""rollback_to's data check looks at data files only, not at the target's index files
(deletion vectors / hash index under index/). An expiration deletes, in order, data files,
manifests, the index files under index/, then the index manifests naming them, then lists
and snapshot files. One that stops after its index-file step (here: deleting the index
manifest fails, which the run reports and leaves for the next run; a kill there leaves the
same) leaves a snapshot whose lists, manifests, data files and index manifest all read, but
whose deletion-vector file is gone. rollback_to that snapshot succeeds, deletes every intact
newer snapshot, and leaves a latest snapshot naming a missing deletion-vector file (`check`
reports it; every DV-aware reader fails on it)."""
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import *  # noqa
from operations.test_changelog import add_index_and_statistics

t = new_table("t", KEEP)
for i in range(4):
    write(t, 10 * i)                       # snapshots 1..4, append only: no data file dropped
t = Table.open(t.store.root)
root = t.store.root
add_index_and_statistics(t, 2, ["dv-index-of-2"])   # snapshot 2 has a deletion-vector file
print("check before anything:", check_problems(root))

# An expiration of snapshots 1 and 2 (keep 3, 4) whose delete of the index manifest fails.
t = Table.open(root)
io = t.store.io
real_dq, real_df = io.delete_quietly, io.delete_files
io.delete_quietly = lambda p: False if "index-manifest-" in p else real_dq(p)
io.delete_files = lambda ps: [p for p in ps if "index-manifest-" not in p and real_dq(p)]
r = expirer(t, 2).expire()
print("expire:", r.expired_ids, r.skipped[:1])
dv = os.path.join(root, "index", "dv-index-of-2")
print("dv file still there:", os.path.exists(dv),
      "snapshot-2 still there:", os.path.exists(os.path.join(root, "snapshot", "snapshot-2")))

found = False
try:
    res = Table.open(root).rollback_to(snapshot_id=2)
    latest = Table.open(root).latest_snapshot()
    print("rollback_to(2) succeeded: deleted", res.deleted_snapshots, "latest now", latest.id)
    rc, probs = check_problems(root)
    print("check after rollback:", rc, [str(p)[:200] for p in probs] if isinstance(probs, list)
          else probs)
    if not os.path.exists(dv) and latest.id == 2:
        found = True
        print("FINDING: rollback_to made a snapshot whose deletion-vector/index file "
              f"{os.path.relpath(dv, root)} is gone the latest (deleted intact snapshots "
              f"{res.deleted_snapshots})")
except ValueError as e:
    print("refused:", e)
if not found:
    print("OK: the half-expired target with a missing index file was refused")
