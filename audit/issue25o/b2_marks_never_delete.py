"""B2. Nothing of the removed "finish a stopped run's range" remains: marks of every kind are
planted over intact snapshots (a proven one: digest of snapshot `end` matching, as a run
stopped after writing it leaves; one without digest; one whose content does not parse; a stale
one whose digest names another snapshot; one covering everything up to a far id; an empty
file), then (1) commits with post-commit expiration (table retention: 100 snapshots), (2) an
explicit expiration keeping 4 (end 3): exactly snapshots 1..2 may go, not the marked range up
to 5, (3) create_tag and rollback_to on a covered snapshot. Expected: no snapshot retention
keeps is deleted, tags/rollbacks on covered snapshots refused, the table reads."""
import hashlib, json, os, sys, uuid
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import *  # noqa
from paimon_commit.operations.tag_ops import TagOperations

root = six_snapshots()
mdir = os.path.join(root, ".maintenance")
os.makedirs(mdir, exist_ok=True)
snap5 = open(os.path.join(root, "snapshot", "snapshot-5"), "rb").read()


def plant(first, end, body):
    p = os.path.join(mdir, f"expiring-{first}-{end}-{uuid.uuid4().hex}")
    with open(p, "wb") as f:
        f.write(body if isinstance(body, bytes) else json.dumps(body).encode())


plant(1, 5, {"first": 1, "end": 5, "endSnapshotSha256": hashlib.sha256(snap5).hexdigest(),
             "createdMs": 1, "holder": "proven"})
plant(2, 5, {"first": 2, "end": 5, "endSnapshotSha256": None})
plant(1, 6, b"{not json")
plant(1, 6, {"first": 1, "end": 6, "endSnapshotSha256": "0" * 64})
plant(1, 9999999999999999999, {"first": 1, "end": 9999999999999999999})
plant(3, 6, b"")
files_before = table_files(root)
for i in range(3):
    write(Table.open(root), 100 + 10 * i)         # post-commit expiration, retention 100
kept_1 = snapshot_ids(root)
lost_1 = sorted(files_before - table_files(root))
r = expirer(Table.open(root), 7).expire()         # 9 snapshots, keep 7: end 3
kept_2 = snapshot_ids(root)
ops = TagOperations(Table.open(root).store)
refused = {}
for what, call in (("create_tag on 4", lambda: ops.create_tag("x4", 4)),
                   ("rollback_to 5", lambda: ops.rollback_to(5))):
    try:
        call()
        refused[what] = "DONE"
    except ValueError as e:
        refused[what] = str(e)[:60]
print("after 3 commits (retention 100):", kept_1, "| table files deleted:", lost_1)
print("explicit run keeping 7: expired", r.expired_ids, "-> snapshots", kept_2)
print("refusals:", refused)
print("marks left:", len(markers(root)), "| every snapshot reads:", whole(root) == kept_2,
      "| rows:", rows(root))
ok = (kept_1 == list(range(1, 10)) and not lost_1 and r.expired_ids == [1, 2]
      and kept_2 == list(range(3, 10)) and "DONE" not in refused.values()
      and whole(root) == kept_2)
print("OK: marks of every kind deleted nothing retention keeps; covered snapshots refuse tags "
      "and rollbacks" if ok else "FINDING: a mark changed what an expiration deleted")
