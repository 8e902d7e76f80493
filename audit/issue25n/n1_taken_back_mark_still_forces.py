"""Two expirations, the first one's lease taken over (it paused past its expiry, or an
operator ran `lease --break`): run A (`expire-snapshots --retain-max 2`) wrote its mark and
passed its re-check; run B (post-commit, table retention 100) takes the lease, lists
`.maintenance/`, reads A's mark (proven: the digest matches snapshot 5) and plans to finish
A's range. A then reaches its first safe point, finds the lease lost, and - nothing having
been handed to an unlink - takes its mark back (the m2 fix). B's re-check verifies snapshot
`end` against the digest it read, but not that the mark it finishes is still there: B expires
snapshots 1..4, intact, which its own retention keeps and which nobody had begun to delete."""
import os, sys, threading
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import *  # noqa
from paimon_commit.lease import lease_manager
from paimon_commit.operations import expire as expire_mod

root = six_snapshots()
a_checked, b_planned, a_done = threading.Event(), threading.Event(), threading.Event()
orig = expire_mod.ExpireSnapshots._changes
out = {}


def changes(self, plan):
    if threading.current_thread().name == "A":
        res = orig(self, plan)                 # A's re-check passed (its mark is written)
        lease_manager(Table.open(root).store).break_lease()   # A's lease taken over
        a_checked.set()
        b_planned.wait(30)                     # B has planned, forcing on A's mark
        return res
    b_planned.set()
    a_done.wait(30)                            # A stops and takes its mark back meanwhile
    out["marks at B's re-check"] = markers(root)
    return orig(self, plan)


def run_a():
    try:
        r = expirer(Table.open(root), 2).expire()
        out["A"] = (r.stopped_by, r.expired_snapshots, len(r.deleted_paths or []))
    except Exception as e:  # noqa
        out["A"] = repr(e)
    finally:
        a_done.set()


def run_b():
    a_checked.wait(30)
    t = Table.open(root)
    r = ExpireSnapshots(t.store).expire()       # the table's retention: 100 snapshots
    out["B"] = (r.expired_snapshots, len(r.deleted_paths or []))


from paimon_commit.operations.expire import ExpireSnapshots
before = whole(root)
expire_mod.ExpireSnapshots._changes = changes
try:
    ta, tb = threading.Thread(target=run_a, name="A"), threading.Thread(target=run_b, name="B")
    ta.start(); tb.start(); ta.join(60); tb.join(60)
finally:
    expire_mod.ExpireSnapshots._changes = orig
print("A (stopped_by, expired, deleted):", out.get("A"))
print("marks when B re-checked:", out.get("marks at B's re-check"))
print("B (expired, deleted):", out.get("B"))
after = snapshot_ids(root)
lost = [s for s in before if s not in after]
print("snapshots before", before, "after", after, "marks now", markers(root))
print(f"FINDING: a mark its run took back (nothing deleted) still forced the run that took the "
      f"lease over: intact retained snapshots {lost} expired" if lost
      else "OK: the intact snapshots are kept")
