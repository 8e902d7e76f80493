"""Idea (brief 1): legitimate first commits and the documented recovery are not refused.
 a) a new commit user's filter_and_commit({1: F1, 2: F2}) of fresh files on a table with
    history (other users, a compaction, a tag): both published once (now via _refuse_named).
 b) the same after a rollback_to that removed another user's snapshot whose files were
    never used again (used_names must not name them; fresh files anyway).
 c) after s1's refusal (a CommitFailedError outage, nothing published): the remedy the
    message gives - abort(F) and write the rows again with a new writer, commit G as the
    same user - publishes G once; abort deleted F.
 d) a second filter_and_commit of the same new user in the same process after its first
    call published id 1 and raised (Ctrl-C after publish) on id 2: resume -> id 2 once.
Rows read by ours and pypaimon."""
import os

from common import (fresh, write, make_rows, prepared, try_commit, interrupted_after_publish,
                    dups, short, failing_publish)
from paimon_commit.errors import CommitFailedError, CommitConflictError
from paimon_commit.format.snapshot import BATCH_COMMIT_IDENTIFIER  # noqa: F401

OPTS = {"commit.max-retries": "1", "commit.min-retry-wait": "1 ms",
        "commit.max-retry-wait": "2 ms"}
findings = []


def check(case, path, r, want):
    ours, theirs, d = dups(path)
    print(f"{case}: -> {short(r) if not isinstance(r, list) else r}\n   ours {ours} "
          f"pypaimon {theirs}")
    if d:
        findings.append(f"{case}: rows {d} read twice")
    miss = [i for i in want if i not in ours or i not in theirs]
    if miss:
        findings.append(f"{case}: rows {miss} missing")
    if isinstance(r, BaseException):
        findings.append(f"{case}: refused: {str(r)[:160]}")


path, t = fresh()
write(t, make_rows([1]))
write(t, make_rows([2]))
t.compact()
t.create_tag("t1")
write(t, make_rows([3]))
F1, F2 = prepared(t, [11]), prepared(t, [12])
try:
    with t.new_commit() as c:
        r = c.filter_and_commit({1: F1, 2: F2})
except CommitConflictError as e:
    r = e
check("a", path, r, [1, 2, 3, 11, 12])

path, t = fresh()
write(t, make_rows([1]))
write(t, make_rows([2]))
t.rollback_to(1)
F1 = prepared(t, [11])
try:
    with t.new_commit() as c:
        r = c.filter_and_commit({1: F1})
except CommitConflictError as e:
    r = e
check("b", path, r, [1, 11])

path, t = fresh(OPTS)
write(t, make_rows([1]))
F = prepared(t, [11])
with failing_publish():
    try:
        with t.new_commit(commit_user="job") as c:
            c.commit(F)
    except CommitFailedError:
        pass
r0 = try_commit(t, F, user="job")
print(f"c: retry of F -> {short(r0)}")
with t.new_commit(commit_user="job") as c:
    n = c.abort(F)
fpath = os.path.join(path, "dt=19723", "hr=1", "bucket-0", F[0].new_files[0].file_name)
G = prepared(t, [11])
r = try_commit(t, G, user="job")
print(f"   abort(F) -> {n} deleted; F on disk: {os.path.exists(fpath)}")
check("c", path, r, [1, 11])

path, t = fresh()
write(t, make_rows([1]))
F1, F2 = prepared(t, [11]), prepared(t, [12])
with t.new_commit(commit_user="job2") as c:
    c.filter_and_commit({1: F1})
interrupted_after_publish(t, F2, user="job2", ident=2)
try:
    with t.new_commit(commit_user="job2") as c:
        r = c.filter_and_commit({1: F1, 2: F2})
except CommitConflictError as e:
    r = e
check("d", path, r, [1, 11, 12])
print(("FINDING: " + "; ".join(findings)) if findings else "OK")
