"""Idea: `c.overwrite(msgs, partition)` repeated.
 a) A overwrites partition p with F; another file G lands in p; a compaction replaces F, G by H;
    B (a new random user: the retried cell) overwrites p with F again. F's rows are in H: a
    second publish of F would replace H (losing G's rows) - not a duplicate, but the cell's
    rows were published once already. Refused by _refuse_replaced (F not live): expected.
 b) A overwrites p with F; B repeats at once (F live): the overwrite deletes F and ADDs F in
    one delta: refused by the conflict check (DELETE-then-ADD).
 c) A overwrites p with F; A repeats (same user): no-op returning A's snapshot.
 d) A overwrites, compaction, A repeats: no-op.
 e) A *appends* F, compaction, B overwrites p with F: refused (F not live).
Each: rows read once by ours and pypaimon, and nothing lost (G's row 12 stays)."""
from common import fresh, write, make_rows, prepared, try_commit, dups, short, snapshot_ids, D1

P = {"dt": D1, "hr": 1}
findings = []
for case in "abcde":
    path, t = fresh()
    write(t, make_rows([10]))
    F = prepared(t, [11])
    first = try_commit(t, F, user="A", how="append" if False else ("commit" if case == "e" else "overwrite"),
                       **({} if case == "e" else {"partition": P}))
    assert isinstance(first, int), first
    if case in "ade":
        write(t, make_rows([12]))
        t.compact()
    kw = {} if False else {"partition": P}
    r = try_commit(t, F, user="A" if case in "cd" else "B", how="overwrite", **kw)
    ours, theirs, d = dups(path)
    print(f"{case}: snapshots {snapshot_ids(path)}; repeat -> {short(r)}; ours {ours} pypaimon {theirs}")
    if d:
        findings.append(f"{case}: rows {d} read twice")
    if 11 not in ours or (case in "ade" and 12 not in ours):
        findings.append(f"{case}: rows lost ({ours})")
    if case in "cd" and r != first:
        findings.append(f"{case}: the same user's repeat returned {short(r)}, not snapshot {first}")
    if case in "abe" and not isinstance(r, Exception):
        findings.append(f"{case}: another user's repeat published snapshot {r}")
print("FINDING: " + "; ".join(findings) if findings else "OK")
