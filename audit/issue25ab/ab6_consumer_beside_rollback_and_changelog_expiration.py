"""ab6: a consumer and long-lived changelogs across expiration and rollback_to.
(a) consumer c1 at snapshot 3 (snapshots 1..6, snapshots retained 1, changelogs retained 2):
snapshot and changelog expiration stop at 3; every changelog and snapshot from 3 reads.
(b) rollback_to(4) with c1 at 6 (past the new latest): then commits 5', 6', 7' and an
expiration (retain 1): c1 (next 6) holds 6' and later; what it reads from 6 on is there.
(c) the consumer removed under the lease by consumer expiration (aged file), then expiration."""
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import *  # noqa

OPTS = {"snapshot.num-retained.min": "100", "snapshot.num-retained.max": "1000",
        "snapshot.time-retained": "1 d", "changelog.num-retained.min": "2",
        "changelog.num-retained.max": "2"}
problems = []
t = new_table("c", OPTS)
root = t.store.root
for k in range(6):
    write(Table.open(root), 10 * k)
cdir = os.path.join(root, "consumer")
os.makedirs(cdir, exist_ok=True)


def consumer(n):
    with open(os.path.join(cdir, "consumer-c1"), "w") as f:
        json.dump({"nextSnapshot": n}, f)


def cl_ids():
    d = os.path.join(root, "changelog")
    return sorted(int(n.split("-")[1]) for n in os.listdir(d) if n.startswith("changelog-")) \
        if os.path.isdir(d) else []


consumer(3)
expirer(Table.open(root), 1).expire()
sm = Table.open(root).store.snapshots
snaps = sm.list_snapshot_ids()
if min(snaps) != 3:
    problems.append(f"(a) snapshots {snaps} with consumer at 3")
for s in snaps:
    if isinstance(ids(root, snapshot_id=s), str):
        problems.append(f"(a) snapshot {s}: {ids(root, snapshot_id=s)}")
print("(a) snapshots", snaps, "changelogs", cl_ids())
consumer(6)
Table.open(root).rollback_to(4)
for k in (100, 110, 120):
    write(Table.open(root), k)          # 5', 6', 7'
expirer(Table.open(root), 1).expire()
snaps = Table.open(root).store.snapshots.list_snapshot_ids()
print("(b) snapshots", snaps, "changelogs", cl_ids())
want = sorted(x for k in range(4) for x in range(10 * k, 10 * k + 3)) + \
    [100, 101, 102, 110, 111, 112, 120, 121, 122]
if ids(root) != want:
    problems.append(f"(b) latest {ids(root)}")
if min(snaps) > 6:
    problems.append(f"(b) snapshot 6 (the consumer's next) expired: {snaps}")
chk = Table.open(root).check()
if chk.problems:
    problems.append(f"(b) check {[str(p)[:120] for p in chk.problems][:3]}")
old = time.time() - 7200
os.utime(os.path.join(cdir, "consumer-c1"), (old, old))
r = Table.open(root).store.consumers.expire(int(time.time() * 1000) - 3600_000) \
    if hasattr(Table.open(root).store, "consumers") else None
if r is None:
    from paimon_commit.tags import ConsumerManager
    st = Table.open(root).store
    r = ConsumerManager(st.io, st.root).expire(int(time.time() * 1000) - 3600_000)
expirer(Table.open(root), 1).expire()
snaps = Table.open(root).store.snapshots.list_snapshot_ids()
print("(c) consumers removed", list(r), "snapshots", snaps, "changelogs", cl_ids())
if ids(root) != want or Table.open(root).check().problems:
    problems.append(f"(c) latest {ids(root)} check {Table.open(root).check().problems[:2]}")
print(f"FINDING: {problems}" if problems else "OK")
