"""Idea: the same commit user's call raised right after its publish (Ctrl-C), so the record
holds its files as Committed(snapshot_id=None). A compaction then replaces them. The same user
commits the files again, but not as the exact same call:
 a) with another identifier (a batch call retried as a streaming one, id 7),
 b) together with one more file (the same messages plus a late one, same batch identifier),
 c) the same files as an OVERWRITE of another partition... (skipped: an overwrite of the
    same partition deletes the compacted file, a legitimate replace)
 d) control: exactly the same call (handled by the 'unknown' path: must be a no-op).
 a0, b0) controls: the first call was NOT interrupted (the record knows its snapshot): a and b
    are refused by `mine` (_committed_otherwise), never published.
screen(): a same-user record with snapshot None and another identifier/kind, or with only
part of the adds, is neither `mine`, nor `others` (no _refuse_replaced), nor the all-unknown
walk: only check_table is set, and the table check refuses live files only."""
from common import (fresh, write, make_rows, prepared, try_commit, interrupted_after_publish,
                    dups, short, snapshot_ids)

findings = []
for case in ("a", "b", "d", "a0", "b0"):
    path, t = fresh()
    write(t, make_rows([10]))
    F = prepared(t, [11])
    if case.endswith("0"):
        try_commit(t, F, user="job")
    else:
        interrupted_after_publish(t, F, user="job")
    t.compact()
    ids_before = snapshot_ids(path)
    if case[0] == "a":
        r = try_commit(t, F, user="job", ident=7)
    elif case[0] == "b":
        late = prepared(t, [12])
        r = try_commit(t, F + late, user="job")
    else:
        r = try_commit(t, F, user="job")
    ours, theirs, d = dups(path)
    print(f"{case}: snapshots {ids_before} -> {snapshot_ids(path)}; repeat -> {short(r)}; "
          f"ours {ours} pypaimon {theirs}")
    if d:
        findings.append(f"{case}: rows {d} read twice")
    if case == "d" and 11 not in ours:
        findings.append("d: row 11 lost")
if findings:
    print("FINDING: " + "; ".join(findings))
else:
    print("OK")
