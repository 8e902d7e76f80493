"""Idea u9: the create succeeds but its reply is lost (OSError after the effect), with events
before attempt 2 settles it, then retries by the same user, a new user and filter_and_commit:
 a) nothing in between: settled 'landed' (snapshot N is ours), no second publish;
 b) a compaction (N+1) and an expiration (retain 1) remove snapshot N before the settle:
    resolve_uncertain decides from N+1's base list (built on ours): landed;
 c) two more snapshots, a compaction and an expiration remove N and N+1: the settle cannot
    tell (PublishOutcomeUnknownError); the call raises and is recorded; the retries are
    refused (the table cannot tell), nothing twice;
 d) two commit objects in two threads hand the same F at once, the first one's reply lost
    after the create: the second waits for the first (InFlight) and is then refused or a
    no-op."""
import threading

from common import (fresh, write, make_rows, prepared, dups, snapshot_ids, LatePut, call, show,
                    try_commit, OPTS, commit_mod)

findings = []
for case in "abcd":
    path, t = fresh(OPTS)
    write(t, make_rows([10]))
    write(t, make_rows([20]))
    F = prepared(t, [11])
    real = commit_mod.resolve_uncertain
    fired = []

    def ru(*a, **k):
        if not fired:
            fired.append(1)
            if case == "b":
                t.compact(); t.expire_snapshots(retain_min=1, retain_max=1)
            if case == "c":
                write(t, make_rows([30])); t.compact()
                t.expire_snapshots(retain_min=1, retain_max=1)
        return real(*a, **k)
    commit_mod.resolve_uncertain = ru
    out = {}
    try:
        with LatePut("job", {1: "after"}) as late:
            if case == "d":
                def go(u):
                    out[u] = try_commit(t, F, user=u, ident=7)
                ths = [threading.Thread(target=go, args=(u,)) for u in ("job", "job-b")]
                for th in ths:
                    th.start()
                for th in ths:
                    th.join()
                r = out["job"]
            else:
                with t.new_commit(commit_user="job") as c:
                    r = call(lambda: c.commit(F, commit_identifier=7))
    finally:
        commit_mod.resolve_uncertain = real
    retries = {"same": try_commit(t, F, user="job", ident=7),
               "new": try_commit(t, F, user="other", ident=7),
               "fac": try_commit(t, {7: F}, user="job", how="filter_and_commit")}
    if case == "d":
        retries["thread b"] = out["job-b"]
    ours, theirs, d = dups(path)
    print(f"{case}: {' | '.join(late.log)}; call -> {show(r)[:90]}; "
          + "; ".join(f"{k} -> {show(v)[:70]}" for k, v in retries.items())
          + f"; snapshots {snapshot_ids(path)}; ours {ours} pypaimon {theirs}")
    if d:
        findings.append(f"{case}: rows {d} read twice")
    if 11 not in ours:
        findings.append(f"{case}: row 11 lost")
print(("FINDING: " + "; ".join(findings)) if findings else "OK")
