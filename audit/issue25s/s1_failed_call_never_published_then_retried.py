"""Idea (brief 1: a call that raised *before* publishing, retried by the same or another user).
A commit call fails with CommitFailedError: every publish attempt hit an I/O error (an
outage; snapshot file never created), each next attempt settled the earlier one as 'not
landed' (resolve_uncertain), and the call ran out of retries. Nothing was published and the
process could know it (every uncertain publish was settled 'not landed'), yet
`_screened_run` records the files as Committed(snapshot_id=None) ('raised after it may have
published') because state.publish_base stays lowered. The caller retries once the outage is
over:
 a) the same TableCommit user, exactly the same call (the documented retry),
 b) a new TableCommit with the default random user (a retried notebook cell),
 c) the same user with a streaming identifier (a job that switched to filter_and_commit ids),
 d) control: CommitFailedError from races lost only (try_commit returns False, commit.timeout)
    -> publish_base restored -> not recorded -> the retry publishes.
Rows read by ours and pypaimon after each retry."""
from common import (fresh, write, make_rows, prepared, try_commit, dups, short, snapshot_ids,
                    failing_publish, SnapshotManager)
from paimon_commit.errors import CommitFailedError

OPTS = {"commit.max-retries": "1", "commit.min-retry-wait": "1 ms",
        "commit.max-retry-wait": "2 ms"}
findings = []
for case in ("a", "b", "c", "d"):
    path, t = fresh(dict(OPTS, **({"commit.timeout": "50 ms"} if case == "d" else {})))
    write(t, make_rows([10]))
    F = prepared(t, [11])
    if case == "d":
        real = SnapshotManager.try_commit
        SnapshotManager.try_commit = lambda self, *a, **k: False
    try:
        with (failing_publish() if case != "d" else open(__file__)):
            try:
                with t.new_commit(commit_user="job") as c:
                    c.commit(F)
            except CommitFailedError as e:
                first = f"CommitFailedError ({str(e)[:90]}...)"
    finally:
        if case == "d":
            SnapshotManager.try_commit = real
    before = snapshot_ids(path)
    if case == "a":
        r = try_commit(t, F, user="job")
    elif case == "b":
        r = try_commit(t, F)
    elif case == "c":
        r = try_commit(t, F, user="job", ident=5)
    else:
        r = try_commit(t, F, user="job")
    ours, theirs, d = dups(path)
    print(f"{case}: first call -> {first}; snapshots {before} -> {snapshot_ids(path)}; "
          f"retry -> {short(r) if not isinstance(r, BaseException) else 'refused: ' + str(r)}")
    print(f"   ours {ours} pypaimon {theirs}")
    if d:
        findings.append(f"{case}: rows {d} read twice")
    if 11 not in ours:
        findings.append(f"{case}: retry refused though nothing was published (row 11 not in "
                        f"the table; the caller must write it again)")
print(("FINDING: " + "; ".join(findings)) if findings else "OK")
