"""Idea u3 (t1's fix + the screen's history walk, a false no-op): every publish of a call
fails with an I/O error (each attempt's PUT of snapshot N is late and settled 'not landed');
the call raises CommitFailedError and is recorded as one that may have published
(Committed(None, after=N-1)). Other writers then publish N and N+1, expiration (retain 1)
expires N, and one of the call's late PUTs lands, re-creating `snapshot-N` below the latest.
 a) the same user retries the exact call: `_published_before` walks from the latest down to
    max(earliest, N), finds the re-created N (this user, identifier and kind, ADDs F) and
    returns it: a no-op 'already committed' while the latest snapshot does not hold F;
 b) control: the late PUT never lands: the retry is refused (the t1 fix; the row is then
    missing, the documented 'refusal where the table cannot tell');
 c) a new random user retries: refused (F handed to another user, not live)."""
from common import (fresh, write, make_rows, prepared, dups, snapshot_ids, LatePut, adders,
                    names, call, show, try_commit, recorded, OPTS)

findings = []
for case in ("a", "b", "c"):
    path, t = fresh(OPTS)
    write(t, make_rows([10]))
    write(t, make_rows([20]))
    F = prepared(t, [11])
    with LatePut("job", {i: "lost" for i in range(1, 20)}) as late:
        with t.new_commit(commit_user="job") as c:
            r = call(lambda: c.commit(F))
    rec = [x for x in recorded() if "user=job" in x][-1:]
    write(t, make_rows([30]))
    write(t, make_rows([40]))
    t.expire_snapshots(retain_min=1, retain_max=1)
    landed = late.land(0) if case != "b" else "never"
    r2 = try_commit(t, F, user="job" if case != "c" else None)
    fname = names(F)[0]
    ours, theirs, d = dups(path)
    print(f"{case}: first call -> {show(r)} after {late.calls} PUTs of snapshot "
          f"{late.held[0][1].id}; record {rec}; others 3, 4 + expiration; late PUT landed: "
          f"{landed}; snapshots {snapshot_ids(path)}; retry -> {show(r2)}; snapshots adding F "
          f"{adders(path, [fname])[fname]}; latest reads ours {ours} pypaimon {theirs}")
    if isinstance(r2, int) and 11 not in ours:
        findings.append(f"{case}: retry is a no-op returning re-created snapshot {r2} (below "
                        f"the latest), row [11] not in the table")
    if d:
        findings.append(f"{case}: rows {d} read twice")
print(("FINDING: " + "; ".join(findings)) if findings else "OK")
