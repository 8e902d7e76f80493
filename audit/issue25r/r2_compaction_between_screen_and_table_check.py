"""Idea: two TableCommit objects in threads. A (a random user) published F; B (another random
user: a retried cell, or a second thread handed the same messages) commits F. The screen sees
A's record, F still live, and leaves it to the table check (check_table=True). If a compaction
(A's post-commit compaction thread, or any compaction in this or another process) publishes
between B's screen and B's first attempt reading the latest snapshot, the table check sees F
not live and B publishes F again. `_refuse_replaced` runs only in the screen, never per
attempt. The interleaving is forced: RepeatScreen.screen is wrapped so that, for B only, a
compaction thread runs to completion right after the screen returns (what a scheduler may do;
the compaction claims no file of B's, so IN_FLIGHT does not order them).
Control: the same compaction before B's screen -> refused by _refuse_replaced."""
import threading

from common import fresh, write, make_rows, prepared, try_commit, dups, short, snapshot_ids
from paimon_commit.operations import commit_record

real = commit_record.RepeatScreen.screen
findings = []
for case in ("window", "control"):
    path, t = fresh()
    write(t, make_rows([10]))
    F = prepared(t, [11])
    assert isinstance(try_commit(t, F, user="A"), int)
    if case == "control":
        t.compact()
    else:
        def screen(self, adds, identifier, kind):
            out = real(self, adds, identifier, kind)
            if self.commit_user == "B":
                th = threading.Thread(target=t.compact)
                th.start()
                th.join()
            return out
        commit_record.RepeatScreen.screen = screen
    try:
        r = try_commit(t, F, user="B")
    finally:
        commit_record.RepeatScreen.screen = real
    ours, theirs, d = dups(path)
    print(f"{case}: snapshots {snapshot_ids(path)}; B -> {short(r)}; ours {ours} pypaimon {theirs}")
    if d:
        findings.append(f"{case}: rows {d} read twice (B published snapshot {r})")
print("FINDING: " + "; ".join(findings) if findings else "OK")
