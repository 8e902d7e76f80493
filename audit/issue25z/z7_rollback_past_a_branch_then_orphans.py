"""z7: branches, then a rollback below them, then orphan cleanup. Rows 1..6 one per snapshot,
a compaction at 4 (1..3 rewritten), tag T2 on 2; branch b from T2 (Java's
createBranch(name, tag): tag file copied, with the tag); branch c from snapshot 5 (0.8
layout: main's snapshot-5 copied). rollback_to(3): main's snapshots 4.. and their hint go;
their lists, manifests and data stay for orphan cleanup. Then orphan cleanup twice: with
`allow_recent_cutoff` and a 1 ms cutoff (the floor overridden, files seconds old), and
after ageing the whole tree 3 days with the default 1 d cutoff. Every root (25y `state`:
main snapshots, tags, both branches' snapshots and tags) must read as before the cleanup,
and the branch c snapshot (above main's latest) must still read its rows 1..5."""
import os

from common import fresh, prepared, state, make_branch, age_tree, Table, write, make_rows

path, t = fresh({"snapshot.num-retained.min": "1", "write-only": "true"})
for i in range(1, 4):
    write(t, make_rows([i]))
t.create_tag("T2", 2)
t.compact()                       # snapshot 4: 1..3 in one file
write(t, make_rows([5]))          # 5
write(t, make_rows([6]))          # 6
make_branch(path, "b", os.path.join(path, "tag", "tag-T2"), 2, tags_from=["T2"])
make_branch(path, "c", os.path.join(path, "snapshot", "snapshot-5"), 5)
before = state(path)
print("before:", before)
t.rollback_to(3)
after_rb = state(path)
print("after rollback:", after_rb)
bad = []
for k, v in after_rb.items():
    if k in before and before[k] != v:
        bad.append(f"rollback: {k}: {before[k]} -> {v}")
r1 = Table.open(path).remove_orphan_files(older_than_duration="1 ms", allow_recent_cutoff=True)
s1 = state(path)
age_tree(path)
r2 = Table.open(path).remove_orphan_files()
s2 = state(path)
print("after orphans (recent cutoff):", s1)
print("after orphans (aged, 1 d):", s2)
print("orphan results:", str(r1)[:300], "|", str(r2)[:300])
for label, s in (("recent-cutoff cleanup", s1), ("aged cleanup", s2)):
    for k, v in after_rb.items():
        if s.get(k) != v:
            bad.append(f"{label}: {k}: {v} -> {s.get(k)}")
if after_rb.get("branch-c snapshot-5") != [1, 2, 3, 5]:
    bad.append(f"branch c reads {after_rb.get('c snapshot-5')}")
# main goes on writing after the rollback: snapshot 4 again (a new one)
write(Table.open(path), make_rows([40]))
s3 = state(path)
if s3.get("branch-c snapshot-5") != [1, 2, 3, 5] or s3.get("branch-b snapshot-2") != [1, 2]:
    bad.append(f"after a new main commit: {s3}")
print("FINDING: " + "; ".join(bad) if bad else "OK")
