"""Idea: a repeat after an expiration that removed the original snapshot, with and without a
compaction, by the same user (A) and another user (B), with F remembered (a fresh default
record) or evicted (capacity 2, three more commits elsewhere). Expected: never twice, nothing
lost; with F still live A's repeat is a no-op and B's is refused by the table check; with F
compacted every repeat is refused."""
from common import fresh, write, make_rows, prepared, try_commit, dups, short, snapshot_ids
from paimon_commit.operations import commit_record

findings = []
real = commit_record.RECORD
try:
    for compacted in (False, True):
        for who in ("A", "B", "A-evicted", "B-evicted"):
            commit_record.RECORD = commit_record.CommitRecord(
                capacity=2 if who.endswith("evicted") else commit_record.CAPACITY)
            path, t = fresh()
            write(t, make_rows([10]))
            F = prepared(t, [11])
            first = try_commit(t, F, user="A")
            if compacted:
                t.compact()
            for i in range(3):
                try_commit(t, prepared(t, [90 + i], hr=2), user="other")
            t.expire_snapshots(retain_min=1, retain_max=1)
            r = try_commit(t, F, user=who[0])
            ours, theirs, d = dups(path)
            print(f"compacted={compacted} {who}: snapshots {snapshot_ids(path)}; repeat -> "
                  f"{short(r)[:140]}; ours {ours} pypaimon {theirs}")
            if d:
                findings.append(f"compacted={compacted} {who}: rows {d} read twice")
            if 11 not in ours:
                findings.append(f"compacted={compacted} {who}: row 11 lost")
            if compacted and not isinstance(r, Exception):
                findings.append(f"compacted={compacted} {who}: published {r}")
            if not compacted and who == "A" and r != first:
                findings.append(f"A's live repeat: {short(r)}")
finally:
    commit_record.RECORD = real
print("FINDING: " + "; ".join(findings) if findings else "OK")
