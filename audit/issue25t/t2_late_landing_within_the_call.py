"""Idea t2 (not new in 5083184, same root as t1): attempt 1's publish fails with an I/O error
while its conditional PUT is still on its way; attempt 2 settles it as 'not landed'
(snapshot-N absent, latest < N) and builds snapshot N again; the late PUT lands just before
attempt 2's create, which then loses 'the race'; attempt 3 builds on the late snapshot N
(our own) and - a plain append runs no conflict check - publishes F a second time.
Run on main and with the pre-5083184 settle (old) for comparison."""
from common import (fresh, write, make_rows, prepared, dups, short, snapshot_ids,
                    SnapshotManager, old_settle, OPTS)
import contextlib

findings = []
for mode in ("new", "old"):
    path, t = fresh(OPTS)
    write(t, make_rows([10]))
    F = prepared(t, [11])
    real = SnapshotManager.try_commit
    held, calls = [], [0]

    def tc(self, *a, **k):
        calls[0] += 1
        if calls[0] == 1:
            held.append((self, a, k))
            raise OSError("simulated: read timeout, the conditional PUT may still land")
        if calls[0] == 2:
            s, ha, hk = held[0]
            print(f"   {mode}: late PUT of attempt 1 lands now: {real(s, *ha, **hk)}")
        return real(self, *a, **k)
    SnapshotManager.try_commit = tc
    try:
        with (old_settle() if mode == "old" else contextlib.nullcontext()):
            try:
                with t.new_commit(commit_user="job") as c:
                    r = c.commit(F)
                    r = getattr(r, "snapshot_id", r)
            except BaseException as e:  # noqa: BLE001
                r = e
    finally:
        SnapshotManager.try_commit = real
    ours, theirs, d = dups(path)
    print(f"{mode}: commit -> {short(r)}; snapshots {snapshot_ids(path)}; ours {ours} "
          f"pypaimon {theirs}")
    if d:
        findings.append(f"{mode}: rows {d} read twice (one call)")
print(("FINDING: " + "; ".join(findings)) if findings else "OK")
