"""Idea t3: the restore of publish_base must not cover an attempt that may have landed.
 a) two uncertain attempts in one call: attempt 1's publish fails (nothing created), attempt 2
    settles it as not landed (publish_base restored), then attempt 2's publish *lands* and
    raises OSError; commit.timeout ends the call before attempt 3 settles it
    (CommitFailedError). Is the call recorded (publish_base lowered for attempt 2)?
 b) attempt 1's publish lands and raises OSError; attempt 2 is interrupted (KeyboardInterrupt)
    inside the settle (resolve_uncertain answered True, the interrupt comes before it returns).
 c) as b, but attempt 1 did not land (the settle computed False, the interrupt comes before
    it returns): the settle never completed, so the call stays recorded and the retry is
    refused (conservative: row 11 is lost, nothing read twice; the documented limit "a
    refusal where the table cannot tell may refuse a call that never published").
Each: a compaction replaces F, then the same user repeats and a new user repeats.
Rows once in both readers expected; for c, row 11 present once."""
import time
from common import (fresh, write, make_rows, prepared, try_commit, dups, short, snapshot_ids,
                    SnapshotManager, recorded, commit_mod)

findings = []
for case in ("a", "b", "c"):
    for who in ("job", None):
        opts = {"commit.max-retries": "3", "commit.min-retry-wait": "1 ms",
                "commit.max-retry-wait": "2 ms"}
        if case == "a":
            opts["commit.timeout"] = "40 ms"
        path, t = fresh(opts)
        write(t, make_rows([10]))
        write(t, make_rows([20]))
        F = prepared(t, [11])
        real_tc, real_ru = SnapshotManager.try_commit, commit_mod.resolve_uncertain
        calls = [0]

        def tc(self, *a, **k):
            calls[0] += 1
            if case == "a" and calls[0] == 1 or case == "c" and calls[0] == 1:
                raise OSError("simulated: nothing created")
            if case in ("a", "b") and calls[0] == (2 if case == "a" else 1):
                if case == "a":
                    time.sleep(0.06)
                real_tc(self, *a, **k)
                raise OSError("simulated: created, reply lost")
            return real_tc(self, *a, **k)

        def ru(*a, **k):
            v = real_ru(*a, **k)
            if case in ("b", "c"):
                raise KeyboardInterrupt(f"simulated Ctrl-C in the settle (it said {v})")
            return v
        SnapshotManager.try_commit, commit_mod.resolve_uncertain = tc, ru
        before = recorded()
        try:
            try:
                with t.new_commit(commit_user="job") as c:
                    c.commit(F)
                first = "returned"
            except BaseException as e:  # noqa: BLE001
                first = f"{type(e).__name__}"
        finally:
            SnapshotManager.try_commit, commit_mod.resolve_uncertain = real_tc, real_ru
        rec = [x for x in recorded()[len(before):] if "user=job" in x]
        snaps = snapshot_ids(path)
        t.compact()
        r = try_commit(t, F, user=who)
        ours, theirs, d = dups(path)
        print(f"{case}/{who or 'random'}: first -> {first}; snapshots {snaps}; record "
              f"{rec or 'nothing'}; compacted; retry -> {short(r)[:150]}; ours {ours} "
              f"pypaimon {theirs}")
        if d:
            findings.append(f"{case}/{who}: rows {d} read twice")
        if case != "c" and (11 not in ours or 11 not in theirs):
            findings.append(f"{case}/{who}: row 11 missing")
print(("FINDING: " + "; ".join(findings)) if findings else "OK")
