"""Idea: the other-user refusal (p5 fix) and the same-user memory through other spellings of
the table, and a repeat after drop_partitions.
 s1..s3) A commits F via the plain path; compaction; B repeats via a symlink, a trailing slash,
    file://: refused (F not live).
 s4) A via a symlinked parent, A repeats via `a/../a` spelling after compaction: a no-op.
 d1) A commits F to p, drop_partitions([p]); B repeats: refused (F not live), never re-added.
 d2) as d1, A repeats: a no-op returning A's snapshot (it was published once; the drop was
    a later, deliberate delete), nothing re-added."""
import os

from common import fresh, write, make_rows, prepared, try_commit, dups, short, snapshot_ids, \
    Table, D1

findings = []
for case in ("s1", "s2", "s3", "s4", "d1", "d2"):
    path, t = fresh()
    write(t, make_rows([10]))
    F = prepared(t, [11])
    link = path + "-link"
    os.symlink(path, link)
    first = try_commit(t, F, user="A")
    if case.startswith("s"):
        t.compact()
        spelled = {"s1": link, "s2": path + "/", "s3": "file://" + path,
                   "s4": os.path.join(path, "..", os.path.basename(path))}[case]
        r = try_commit(Table.open(spelled), F, user="A" if case == "s4" else "B")
    else:
        with t.new_commit(commit_user="ops") as c:
            c.drop_partitions([{"dt": D1, "hr": 1}])
        r = try_commit(t, F, user="B" if case == "d1" else "A")
    ours, theirs, d = dups(path)
    print(f"{case}: snapshots {snapshot_ids(path)}; repeat -> {short(r)[:140]}; ours {ours} pypaimon {theirs}")
    if d:
        findings.append(f"{case}: rows {d} read twice")
    if case in ("s1", "s2", "s3", "d1") and not isinstance(r, Exception):
        findings.append(f"{case}: published {r}")
    if case in ("s4", "d2") and r != first:
        findings.append(f"{case}: {short(r)} instead of a no-op")
    if case == "d2" and 11 in ours:
        findings.append("d2: the dropped row came back")
print("FINDING: " + "; ".join(findings) if findings else "OK")
