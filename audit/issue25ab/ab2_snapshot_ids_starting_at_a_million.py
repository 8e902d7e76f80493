"""ab2: a table whose snapshot ids start at 1,000,000 (as after a long history expired:
snapshots 1..4 renumbered in place to 1,000,000..1,000,003, EARLIEST/LATEST rewritten), with a
consumer, a tag, long-lived changelogs: commit, compaction, tag, rollback to a tag whose
snapshot expired, expiration (snapshots and changelogs), orphan cleanup of an aged tree, check,
repair. Every retained snapshot, tag and changelog read back."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import *  # noqa

BASE = 1_000_000
problems = []
t = new_table("hi", {"snapshot.num-retained.min": "100", "snapshot.num-retained.max": "1000",
                     "snapshot.time-retained": "1 d", "changelog.num-retained.max": "1000",
                     "changelog.num-retained.min": "1000"})
root = t.store.root
for k in range(4):
    write(Table.open(root), 10 * k)          # rows 0..2, 10..12, 20..22, 30..32
sd = os.path.join(root, "snapshot")
for k in range(4, 0, -1):
    doc = json.load(open(os.path.join(sd, f"snapshot-{k}")))
    doc["id"] = BASE + k - 1
    with open(os.path.join(sd, f"snapshot-{BASE + k - 1}"), "w") as f:
        json.dump(doc, f, indent=2)   # (this library's own layout: see ab3 for other bytes)
    os.remove(os.path.join(sd, f"snapshot-{k}"))
for hint, v in (("EARLIEST", BASE), ("LATEST", BASE + 3)):
    with open(os.path.join(sd, hint), "w") as f:
        f.write(str(v))


def want(sid):          # rows of snapshot sid (before the compaction / later writes)
    return sorted(x for k in range(min(sid - BASE + 1, 4)) for x in range(10 * k, 10 * k + 3))


for sid in range(BASE, BASE + 4):
    if ids(root, snapshot_id=sid) != want(sid):
        problems.append(f"renumbered {sid}: {ids(root, snapshot_id=sid)}")
c = Table.open(root).check()
if c.problems:
    problems.append(f"check after renumbering: {c.problems[:2]}")
s5 = write(Table.open(root), 40)
if s5 != BASE + 4:
    problems.append(f"commit got id {s5}")
Table.open(root).create_tag("T1", BASE + 1)
os.makedirs(os.path.join(root, "consumer"), exist_ok=True)
with open(os.path.join(root, "consumer", "consumer-c1"), "w") as f:
    json.dump({"nextSnapshot": BASE + 2}, f)
Table.open(root).compact()                         # BASE+5
write(Table.open(root), 50)                        # BASE+6
allrows = sorted(want(BASE + 3) + [40, 41, 42, 50, 51, 52])
if ids(root) != allrows:
    problems.append(f"latest {ids(root)}")
# consumer at BASE+2 holds expiration there
r = expirer(Table.open(root), 1).expire()
e = Table.open(root).store.snapshots.earliest_snapshot_id()
if e != BASE + 2:
    problems.append(f"expire with consumer at {BASE + 2}: earliest {e}")
os.remove(os.path.join(root, "consumer", "consumer-c1"))
expirer(Table.open(root), 2).expire()
e = Table.open(root).store.snapshots.earliest_snapshot_id()
cls = sorted(int(n.split("-")[1]) for n in os.listdir(os.path.join(root, "changelog"))
             if n.startswith("changelog-")) if os.path.isdir(os.path.join(root, "changelog")) else []
print("earliest", e, "changelogs", cls)
for sid in range(e, BASE + 7):
    g = ids(root, snapshot_id=sid)
    if isinstance(g, str):
        problems.append(f"snapshot {sid}: {g}")
if ids(root, tag="T1") != want(BASE + 1):
    problems.append(f"T1 {ids(root, tag='T1')}")
age_all(root)
Table.open(root).remove_orphan_files(older_than_duration="1 d")
c = Table.open(root).check()
if c.problems:
    problems.append(f"check after orphan cleanup: {[str(p)[:140] for p in c.problems][:3]}")
# rollback to T1 (its snapshot expired: restored from the tag), then commit and expire again
rb = Table.open(root).rollback_to(tag="T1")
if ids(root) != want(BASE + 1):
    problems.append(f"after rollback latest {ids(root)}")
s = write(Table.open(root), 60)
if s != BASE + 2:
    problems.append(f"commit after rollback got {s}")
write(Table.open(root), 70)
expirer(Table.open(root), 1).expire()
age_all(root)
Table.open(root).remove_orphan_files(older_than_duration="1 d")
final = sorted(want(BASE + 1) + [60, 61, 62, 70, 71, 72])
if ids(root) != final:
    problems.append(f"final latest {ids(root)} != {final}")
if ids(root, tag="T1") != want(BASE + 1):
    problems.append(f"final T1 {ids(root, tag='T1')}")
c = Table.open(root).check()
if c.problems:
    problems.append(f"final check: {[str(p)[:140] for p in c.problems][:3]}")
rp = Table.open(root).repair()
if rp.files:
    problems.append(f"repair would give up {rp.files}")
print(f"FINDING: {problems}" if problems else "OK")
