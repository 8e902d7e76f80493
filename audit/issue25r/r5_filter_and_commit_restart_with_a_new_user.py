"""Idea: `filter_and_commit` with a changed commit user.
 a) same process: stream user S committed identifiers 1, 2 (F1, F2); a compaction replaced
    them; a new TableCommit with the default (random) user resumes with filter_and_commit
    {1: F1, 2: F2, 3: F3}. Expected: refused (the record knows S published F1, F2).
 b) a restart (a new process: the record is empty) whose TableCommit uses the default
    random user (no pinned commit_user), whole history retained: the new user has no
    snapshot, so every identifier is pending and, as snapshot 1 is retained, `_refuse_named`
    is skipped: only the live-file check runs, which the compaction defeated.
 c) as b, but the restart pins the old user S: identifiers 1, 2 filtered, only 3 published.
Messages cross the process boundary pickled (as a job's checkpointed state)."""
import os
import pickle
import subprocess
import sys
import tempfile

from common import fresh, write, make_rows, prepared, dups, short, snapshot_ids, Table
from paimon_commit.errors import CommitConflictError

HERE = os.path.dirname(os.path.abspath(__file__))
CHILD = r'''
import pickle, sys
sys.path.insert(0, sys.argv[3])
from common import Table
from paimon_commit.errors import CommitConflictError
path, state = sys.argv[1], pickle.load(open(sys.argv[2], "rb"))
t = Table.open(path)
user = state.get("user")
try:
    with t.new_commit(**({"commit_user": user} if user else {})) as c:
        print("RESULT", c.filter_and_commit(state["msgs"]))
except CommitConflictError as e:
    print("RESULT refused:", str(e)[:200])
'''

findings = []
for case in "abc":
    path, t = fresh()
    write(t, make_rows([10]))
    msgs = {1: prepared(t, [11]), 2: prepared(t, [12])}
    with t.new_commit(commit_user="S") as c:
        c.commit(msgs[1], 1)
        c.commit(msgs[2], 2)
    t.compact()
    msgs[3] = prepared(t, [13])
    if case == "a":
        try:
            with t.new_commit() as c:
                r = c.filter_and_commit(msgs)
        except CommitConflictError as e:
            r = e
        out = short(r)
    else:
        st = tempfile.mktemp(suffix=".pkl")
        pickle.dump({"msgs": msgs, "user": "S" if case == "c" else None}, open(st, "wb"))
        p = subprocess.run([sys.executable, "-c", CHILD, path, st, HERE], capture_output=True,
                           text=True, timeout=120, env=dict(os.environ))
        out = [l for l in p.stdout.splitlines() if l.startswith("RESULT")] or [p.stderr[-500:]]
        out = out[0]
    ours, theirs, d = dups(path)
    print(f"{case}: snapshots {snapshot_ids(path)}; resume -> {out}; ours {ours} pypaimon {theirs}")
    if d:
        findings.append(f"{case}: rows {d} read twice")
    if 13 not in ours and case != "a":
        findings.append(f"{case}: row 13 lost")
print("FINDING: " + "; ".join(findings) if findings else "OK")
