"""Idea: the bounded record evicted only some of a call's files (capacity 3 here, as
tests/operations/test_commit_findings.py monkeypatches it).
 a) A commits [F1, F2] (snapshot 2); one more file committed elsewhere evicts F1 only; A
    repeats [F1, F2] exactly (same user, identifier, kind). Expected: a no-op returning 2
    (as for a fully remembered or a fully forgotten repeat).
 b) as a, then a compaction, then B (another user) repeats: must be refused, never twice.
 c) A's call [F1, F2] interrupted after its publish; F1 evicted; compaction; A repeats exactly.
    Expected: a no-op (the interrupted-call walk finds the snapshot).
 d) as c, then B repeats: refused."""
from common import fresh, write, make_rows, prepared, try_commit, dups, short, snapshot_ids, \
    interrupted_after_publish
from paimon_commit.operations import commit_record

findings = []
real = commit_record.RECORD
try:
    for case in "abcd":
        commit_record.RECORD = commit_record.CommitRecord(capacity=3)
        path, t = fresh()
        write(t, make_rows([10]))
        F = prepared(t, [11]) + prepared(t, [12])
        if case in "ab":
            first = try_commit(t, F, user="A")
        else:
            interrupted_after_publish(t, F, user="A")
            first = 3 - 1
        # two more files elsewhere (the record held `write`'s file and F1, F2): F1 evicted
        try_commit(t, prepared(t, [98], hr=2), user="other")
        try_commit(t, prepared(t, [99], hr=2), user="other")
        rec = commit_record.RECORD
        key = commit_record.table_identity(t.store.io)
        held = [m.new_files[0].file_name[-14:] for m in F
                if rec.lookup(key, [e.identifier for e in __import__(
                    "paimon_commit.operations.commit", fromlist=["x"])._entries_of([m])])]
        if case in "bcd":
            t.compact()
        r = try_commit(t, F, user="B" if case in "bd" else "A")
        ours, theirs, d = dups(path)
        print(f"{case}: record still holds {held}; snapshots {snapshot_ids(path)}; repeat -> "
              f"{short(r)}; ours {ours} pypaimon {theirs}")
        if d:
            findings.append(f"{case}: rows {d} read twice")
        if case in "ac" and isinstance(r, Exception):
            findings.append(f"{case}: the exact repeat of A's call (published as a retained "
                            f"snapshot) is refused, not a no-op")
        if case in "bd" and not isinstance(r, Exception):
            findings.append(f"{case}: B's repeat published")
finally:
    commit_record.RECORD = real
print("FINDING: " + "; ".join(findings) if findings else "OK")
