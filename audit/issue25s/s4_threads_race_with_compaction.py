"""Idea (brief 2: threads racing with IN_FLIGHT claims): 6 threads, each its own TableCommit
(4 with new random users, 2 with user 'A', one of them with identifier 7), commit the same
messages F at once while a seventh thread compacts the partition in a loop. Repeated 5 times.
F's rows must be read exactly once (ours and pypaimon), and every refusal must be a
CommitConflictError."""
import threading

from common import fresh, write, make_rows, prepared, dups
from paimon_commit.errors import CommitConflictError
from paimon_commit.errors import PaimonCommitError as CompactionConflictError

findings = []
for rnd in range(5):
    path, t = fresh()
    write(t, make_rows([10]))
    F = prepared(t, [11, 12])
    out, stop = [], threading.Event()
    go = threading.Barrier(7)

    def committer(user, ident):
        go.wait()
        try:
            with t.new_commit(**({"commit_user": user} if user else {})) as c:
                out.append(("ok", user, c.commit(F, commit_identifier=ident)))
        except CommitConflictError as e:
            out.append(("refused", user, str(e)[:80]))
        except Exception as e:  # noqa: BLE001
            out.append(("ERROR", user, repr(e)[:200]))

    def compactor():
        go.wait()
        while not stop.is_set():
            try:
                write(t, make_rows([100 + rnd]))
                t.compact()
            except (CompactionConflictError, CommitConflictError):
                pass

    th = [threading.Thread(target=committer, args=a) for a in
          [(None, None)] * 4 + [("A", None), ("A", 7)]]
    ct = threading.Thread(target=compactor)
    for x in th + [ct]:
        x.start()
    for x in th:
        x.join()
    stop.set()
    ct.join()
    ours, theirs, d = dups(path)
    oks = [o for o in out if o[0] == "ok"]
    errs = [o for o in out if o[0] == "ERROR"]
    print(f"round {rnd}: {len(oks)} ok ({[(u, r) for _, u, r in oks]}), "
          f"{sum(o[0] == 'refused' for o in out)} refused, errors {errs}; 11 read "
          f"{ours.count(11)}x ours, {theirs.count(11)}x pypaimon")
    d = [i for i in d if i in (11, 12)]   # the compactor writes row 100+rnd many times
    if d:
        findings.append(f"round {rnd}: rows {d} read twice")
    if ours.count(11) == 0 or theirs.count(11) == 0:
        findings.append(f"round {rnd}: row 11 lost")
    if errs:
        findings.append(f"round {rnd}: unexpected errors {errs}")
print(("FINDING: " + "; ".join(findings)) if findings else "OK")
