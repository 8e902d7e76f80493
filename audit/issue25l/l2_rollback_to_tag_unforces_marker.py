"""rollback_to(tag=...) on a tag inside the range of a marker left by an expiration stopped
after its data step takes the marker out of force (it deletes snapshot `end`, the snapshot
whose digest the marker holds), while the half-expired snapshots below the tag stay. A
create_tag on one of them then passes the mark check (expiring.py: "in force while snapshot
`end` ... exists") and makes a tag that does not read."""
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import *  # noqa

t = new_table("t", KEEP)
root = t.store.root
write(t, 0)                                   # 1: A
overwrite(Table.open(root), 100)              # 2: B (A deleted by this commit)
Table.open(root).create_tag("T", 2)           # the user's tag on 2
write(Table.open(root), 10)                   # 3
write(Table.open(root), 20)                   # 4
write(Table.open(root), 30)                   # 5
expire_killed_after_data_step(Table.open(root), 2)   # range 1..3 (end 4): A deleted, then killed
print("markers:", markers(root))
try:
    Table.open(root).create_tag("before", 1)
    print("create_tag on 1 before the rollback: created")
except ValueError as e:
    print("create_tag on 1 before the rollback refused (as it should):", str(e)[:120])
r = Table.open(root).rollback_to(tag="T")
print("rollback_to(tag=T):", getattr(r, "message", None) or "done",
      "; snapshots now:", Table.open(root).store.snapshots.list_snapshot_ids())
print("markers:", markers(root))
try:
    Table.open(root).create_tag("x", 1)
except ValueError as e:
    print("OK: create_tag on snapshot 1 refused:", e)
    sys.exit(0)
ok, what = tag_reads(root, "x")
print("create_tag('x', 1) succeeded; reading it:", what)
if not ok:
    print("FINDING: after rollback_to(tag) into a marked range, the marker is no longer in "
          "force (snapshot `end` deleted) and create_tag tags half-expired snapshot 1: the "
          "tag does not read")
else:
    print("OK: the tag reads")
