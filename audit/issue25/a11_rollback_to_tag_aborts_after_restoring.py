"""Idea: rollback_to(tag=...) whose snapshot expired first restores the snapshot file from the
tag and moves EARLIEST to it, and only then re-checks the tag. If the re-check fails (the tag
was deleted or replaced meanwhile by another engine that ignores the lease), it raises
"nothing was deleted" but leaves the restored snapshot and EARLIEST pointing at it: a table
whose history now has an old snapshot in front of a gap, although nothing was rolled back."""
import os

from common import new_table, write
from paimon_commit.tags import TagManager

t = new_table(options={"snapshot.num-retained.min": "10"})
for i in range(6):
    write(t, i * 3)
t.create_tag("t2", 2)
t.expire_snapshots(retain_max=2, retain_min=2)
snapdir = os.path.join(t.path, "snapshot")
before = sorted(os.listdir(snapdir))
print("before:", before, "EARLIEST:", open(os.path.join(snapdir, "EARLIEST")).read())

orig = TagManager.try_tag
calls = []


def try_tag(self, name):
    calls.append(name)
    if len(calls) == 2:   # the re-check: meanwhile, a Java job deleted the tag
        os.remove(os.path.join(t.path, "tag", "tag-t2"))
    return orig(self, name)


TagManager.try_tag = try_tag
try:
    t.rollback_to(tag="t2")
    outcome = "rolled back"
except ValueError as e:
    outcome = f"ValueError: {e}"
TagManager.try_tag = orig
after = sorted(os.listdir(snapdir))
print("outcome:", outcome)
print("after:", after, "EARLIEST:", open(os.path.join(snapdir, "EARLIEST")).read())
print("latest still", t.latest_snapshot().id, "; snapshots read:", [s.id for s in t.snapshots()])
# what the next expiration makes of it
loss = None
try:
    r = t.expire_snapshots(retain_max=2, retain_min=2)
    print("next expiration:", r.expired_snapshots, "skipped:", r.skipped)
    for sid in (5, 6):
        print(f"snapshot {sid} reads:", t.read_arrow(snapshot_id=sid).num_rows, "rows")
except Exception as e:  # noqa
    loss = f"{type(e).__name__}: {e}"
    print("after the next expiration:", loss[:300])
if loss:
    print("FINDING (data loss): after a refused rollback left the restored snapshot, the next "
          "expiration broke retained snapshots")
elif outcome.startswith("ValueError") and after != before:
    print("FINDING (wrong message / history changed): rollback refused with 'nothing was "
          "deleted' but left the restored snapshot and moved EARLIEST")
else:
    print("NO FINDING")
