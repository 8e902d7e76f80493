"""The k1 gap for the statistics file: an expiration deletes statistics files right before
the manifest lists. One whose list step fails (a delete that fails; a kill there leaves the
same) leaves snapshots whose lists, manifests and data read, but whose statistics file is
gone. rollback_to such a snapshot succeeds and leaves a latest snapshot naming a missing
statistics file (`check` reports it; Paimon's stats readers -- Spark's CBO -- fail on it)."""
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import *  # noqa
from operations.test_changelog import rewrite_snapshot

t = new_table("t", KEEP)
for i in range(4):
    write(t, 10 * i)
t = Table.open(t.store.root)
root = t.store.root
os.makedirs(os.path.join(root, "statistics"), exist_ok=True)
with open(os.path.join(root, "statistics", "stat-of-2"), "wb") as f:
    f.write(b"{}")
rewrite_snapshot(t, 2, statistics="stat-of-2")
print("check before:", check_problems(root))

t = Table.open(root)
io = t.store.io
real_dq = io.delete_quietly
io.delete_quietly = lambda p: False if "manifest-list-" in p else real_dq(p)
io.delete_files = lambda ps: [p for p in ps if io.delete_quietly(p)]
r = expirer(t, 2).expire()
stat = os.path.join(root, "statistics", "stat-of-2")
print("expire (a list delete fails):", r.expired_ids, "| stats file there:", os.path.exists(stat))
try:
    res = Table.open(root).rollback_to(snapshot_id=2)
    latest = Table.open(root).latest_snapshot().id
    rc, probs = check_problems(root)
    print("rollback_to(2) succeeded: deleted", res.deleted_snapshots, "latest", latest)
    print("check after:", rc, [str(p)[:160] for p in probs] if isinstance(probs, list) else probs)
    if latest == 2 and not os.path.exists(stat):
        print("FINDING: rollback_to made snapshot 2 the latest although its statistics file "
              f"statistics/stat-of-2 is gone (intact snapshots {res.deleted_snapshots} deleted)")
    else:
        print("OK")
except ValueError as e:
    print("OK: refused:", e)
