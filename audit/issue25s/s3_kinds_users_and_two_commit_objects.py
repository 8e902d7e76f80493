"""Idea (brief 2): duplicate paths the new rules could miss, each followed by a compaction that
replaces the file (so a table check of live files would pass it):
 a) user A's OVERWRITE of F raised right after its publish; compaction; user B APPENDs F.
 b) same as a; user A APPENDs F (same id, other kind).
 c) same as a; user A repeats the OVERWRITE exactly (must be a no-op, F's rows once).
 d) A published F1 (remembered); compaction; B commits [F1, F2] (F2 never committed).
 e) two TableCommit objects of user A: c1's commit of F raised after publish; compaction;
    c2 repeats exactly (no-op), then c2 commits F with identifier 3 (refused).
 f) a call with a rewrite message (deletes F0, adds G) raised after publish; compaction;
    a new random user commits the same message.
Rows read by ours and pypaimon."""
from common import (fresh, write, make_rows, prepared, try_commit, interrupted_after_publish,
                    dups, short, snapshot_ids)
from dataclasses import replace as dc_replace

findings = []


def check(case, path, r, want_ids, must_refuse):
    ours, theirs, d = dups(path)
    print(f"{case}: -> {short(r)}\n   ours {ours} pypaimon {theirs}")
    if d:
        findings.append(f"{case}: rows {d} read twice")
    missing = [i for i in want_ids if i not in ours or i not in theirs]
    if missing:
        findings.append(f"{case}: rows {missing} lost")
    if must_refuse is True and not isinstance(r, BaseException):
        findings.append(f"{case}: not refused")
    if must_refuse is False and isinstance(r, BaseException):
        findings.append(f"{case}: refused")


for case in ("a", "b", "c"):
    path, t = fresh()
    write(t, make_rows([10]))
    F = prepared(t, [11])
    interrupted_after_publish(t, F, user="A", how="overwrite")
    write(t, make_rows([12]))
    t.compact()
    if case == "a":
        r = try_commit(t, F, user="B")
    elif case == "b":
        r = try_commit(t, F, user="A")
    else:
        r = try_commit(t, F, user="A", how="overwrite")
    check(case, path, r, [11, 12], case != "c")

path, t = fresh()
write(t, make_rows([10]))
F1 = prepared(t, [11])
try_commit(t, F1, user="A")
t.compact()
F2 = prepared(t, [12])
r = try_commit(t, F1 + F2, user="B")
check("d", path, r, [10, 11], True)

path, t = fresh()
write(t, make_rows([10]))
F = prepared(t, [11])
interrupted_after_publish(t, F, user="A")
t.compact()
r1 = try_commit(t, F, user="A")
check("e1 (c2 exact repeat)", path, r1, [10, 11], False)
r2 = try_commit(t, F, user="A", ident=3)
check("e2 (c2 with id 3)", path, r2, [10, 11], True)

# f: a rewrite message: deletes F0 (live), adds G
path, t = fresh()
F0 = prepared(t, [10])
try_commit(t, F0, user="W")
G = prepared(t, [10])
m = dc_replace(G[0], deleted_files=tuple(F0[0].new_files))
interrupted_after_publish(t, [m], user="A")
write(t, make_rows([12]))
t.compact()
r = try_commit(t, [m], user=None)
check("f (rewrite repeated by a new user)", path, r, [10, 12], True)
print(("FINDING: " + "; ".join(findings)) if findings else "OK")
