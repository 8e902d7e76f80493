"""Idea u7 (the record's bound + a late PUT + a compaction): a call's every publish fails (its
PUT of snapshot N is late); it is recorded as one that may have published. The process then
commits files to another table until the bounded record (capacity 2 here instead of 50,000:
a fresh CommitRecord is swapped in, as the tests do) evicts F. The same user retries the exact
call: F is 'maybe forgotten', the history walk finds no snapshot with F (the PUT has not landed
yet), the whole history is retained and F is on disk, so the retry goes on to publish with the
table check on. Its attempt 1 (base N-1, snapshot N): right before its create the late PUT
lands (snapshot N adds F) and a compaction (N+1) replaces F; the create loses the race
(a plain lost race: publish_base stays None, so no `_landed_late` look); attempt 2's live-file
check passes (F was replaced) and F is published again.
 b) control: the same without the compaction: attempt 2's check finds F live and refuses."""
from common import (fresh, write, make_rows, prepared, dups, snapshot_ids, LatePut, adders,
                    names, call, show, try_commit, OPTS, commit_record)
from paimon_commit.operations.commit_record import CommitRecord

findings = []
saved = commit_record.RECORD
try:
    for case in ("a", "b"):
        commit_record.RECORD = CommitRecord(capacity=2)
        path, t = fresh(OPTS)
        write(t, make_rows([10]))
        write(t, make_rows([20]))
        F = prepared(t, [11])
        with LatePut("job", {i: "lost" for i in range(1, 20)}) as late:
            with t.new_commit(commit_user="job") as c:
                r1 = call(lambda: c.commit(F))
        _, other = fresh(OPTS)
        write(other, make_rows([1]))
        write(other, make_rows([2]))
        fname = names(F)[0]

        def hook(snap):
            late.land(0)
            if case == "a":
                t.compact()
            late.log.append(f"snapshots now {snapshot_ids(path)}")

        with LatePut("job", {1: hook}) as late2:
            late2.held = late.held
            r2 = try_commit(t, F, user="job")
        ours, theirs, d = dups(path)
        print(f"{case}: first call -> {show(r1)[:60]}; F evicted from the record "
              f"(record holds {len(commit_record.RECORD._files)} files of the other table); "
              f"retry -> {show(r2)[:120]}; {' | '.join(late.log[-3:])}; snapshots adding F: "
              f"{adders(path, [fname])[fname]}; ours {ours} pypaimon {theirs}")
        if d:
            findings.append(f"{case}: rows {d} read twice (F added by snapshots "
                            f"{adders(path, [fname])[fname]})")
finally:
    commit_record.RECORD = saved
print(("FINDING: " + "; ".join(findings)) if findings else "OK")
