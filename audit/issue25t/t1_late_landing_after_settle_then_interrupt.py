"""Idea t1: a publish whose reply was lost lands *after* the next attempt settled it as 'not
landed' (a slow conditional PUT on an object store that the server completes after the
client's timeout). Since 5083184 the settle restores publish_base, so when the call then
raises before its next publish (here: KeyboardInterrupt while attempt 2 writes its manifest
lists), the call is not recorded as 'raised after it may have published'. The late PUT then
lands (snapshot N with file F). The caller retries:
 a) same user, exact repeat, no compaction in between;
 b) a compaction replaces F, then the same user repeats exactly;
 c) a compaction replaces F, then a new TableCommit (random user) repeats.
Each case is run with the code on main ('new') and with _find_own_snapshot as before 5083184
('old', publish_base kept lowered) for comparison."""
from common import (fresh, write, make_rows, prepared, try_commit, dups, short, snapshot_ids,
                    SnapshotManager, FileStoreCommit, old_settle, recorded, OPTS)
import contextlib

findings, notes = [], []


def run(case, mode):
    path, t = fresh(OPTS)
    write(t, make_rows([10]))
    write(t, make_rows([20]))
    F = prepared(t, [11])
    real_tc, real_ws = SnapshotManager.try_commit, FileStoreCommit._write_snapshot_files
    held, n_ws = [], [0]

    def lost_reply(self, *a, **k):
        held.append((self, a, k))      # the PUT is still on its way to the store
        raise OSError("simulated: read timeout, the conditional PUT may still land")

    def ws(self, *a, **k):
        n_ws[0] += 1
        if n_ws[0] == 2:
            raise KeyboardInterrupt("simulated Ctrl-C in attempt 2, before its publish")
        return real_ws(self, *a, **k)
    SnapshotManager.try_commit, FileStoreCommit._write_snapshot_files = lost_reply, ws
    first = None
    before_rec = recorded()
    try:
        with (old_settle() if mode == "old" else contextlib.nullcontext()):
            try:
                with t.new_commit(commit_user="job") as c:
                    c.commit(F)
            except BaseException as e:   # noqa: BLE001
                first = type(e).__name__
    finally:
        SnapshotManager.try_commit, FileStoreCommit._write_snapshot_files = real_tc, real_ws
    rec = [x for x in recorded() if x not in before_rec and 'user=job' in x]
    # the late PUT lands now
    self_, a, k = held[0]
    landed = real_tc(self_, *a, **k)
    if case in ("b", "c"):
        t.compact()
    r = try_commit(t, F, user="job" if case != "c" else None)
    ours, theirs, d = dups(path)
    line = (f"{case}/{mode}: first call -> {first}; record after it: {rec or 'nothing'}; "
            f"late PUT landed={landed}; {'compacted; ' if case != 'a' else ''}"
            f"retry -> {short(r)}; snapshots {snapshot_ids(path)}; ours {ours} pypaimon {theirs}")
    print(line)
    if d:
        (findings if mode == "new" else notes).append(f"{case}/{mode}: rows {d} read twice")


for case in ("a", "b", "c"):
    for mode in ("new", "old"):
        run(case, mode)
if notes:
    print("before 5083184 also:", "; ".join(notes))
print(("FINDING: " + "; ".join(findings)) if findings else "OK")
