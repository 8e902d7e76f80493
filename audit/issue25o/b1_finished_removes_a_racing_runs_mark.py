"""B1. `_finished` removes every mark with end <= plan.end, its own and others'. Two
expirations racing (run A's lease taken over after it wrote its mark and passed its re-check:
it paused past its expiry / `lease --break`; run B takes the lease and expires further):
B's `_finished` removes A's mark while A is still alive. Is anything A's mark protected left
unprotected? Checked at the moment B has finished, with A still paused: every snapshot below
B's end is gone (so create_tag / rollback_to on A's range are refused for that reason), a tag
on a retained snapshot is created fine, and A, resumed, deletes nothing (its lease is lost:
its first safe point stops it). Then the table and every remaining snapshot read."""
import os, sys, threading
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import *  # noqa
from paimon_commit.lease import lease_manager
from paimon_commit.operations import expire as expire_mod
from paimon_commit.operations.tag_ops import TagOperations

root = six_snapshots()
orig = expire_mod.ExpireSnapshots._changes
a_checked, b_done = threading.Event(), threading.Event()
out = {}


def changes(self, plan):
    res = orig(self, plan)
    if threading.current_thread().name == "A":
        out["A's mark"] = markers(root)
        lease_manager(Table.open(root).store).break_lease()   # A's lease taken over
        a_checked.set()
        b_done.wait(60)                                       # A paused until B finished
    return res


def run_a():
    try:
        r = expirer(Table.open(root), 2).expire()             # range 1..4, end 5
        out["A"] = (r.stopped_by, r.expired_snapshots, len(r.deleted_paths or []))
    except Exception as e:  # noqa
        out["A"] = repr(e)[:120]


def run_b():
    a_checked.wait(60)
    try:
        r = expirer(Table.open(root), 1).expire()             # range 1..5, end 6
        out["B"] = (r.expired_snapshots, len(r.deleted_paths or []))
    except Exception as e:  # noqa
        out["B"] = repr(e)[:120]
    out["marks after B"] = markers(root)
    out["snapshots after B"] = snapshot_ids(root)
    ops = TagOperations(Table.open(root).store)
    refusals = {}
    for sid in (3, 4):
        try:
            ops.create_tag(f"on{sid}", sid)
            refusals[sid] = "CREATED"
        except ValueError as e:
            refusals[sid] = str(e)[:70]
    out["tags on A's range"] = refusals
    try:
        ops.create_tag("kept", 6)
        out["tag on 6"] = reads_at(root, 6)
    except ValueError as e:
        out["tag on 6"] = str(e)[:80]
    b_done.set()


expire_mod.ExpireSnapshots._changes = changes
try:
    ta, tb = threading.Thread(target=run_a, name="A"), threading.Thread(target=run_b, name="B")
    ta.start(); tb.start(); ta.join(120); tb.join(120)
finally:
    expire_mod.ExpireSnapshots._changes = orig
for k in ("A's mark", "B", "marks after B", "snapshots after B", "tags on A's range",
          "tag on 6", "A"):
    print(f"{k}: {out.get(k)}")
left = snapshot_ids(root)
reading = whole(root)
tag_ok = tag_reads(root, "kept")
ok = (out["marks after B"] == [] and all(s >= 6 for s in out["snapshots after B"])
      and all(v != "CREATED" for v in out["tags on A's range"].values())
      and reading == left and tag_ok[0] and rows(root) == 18)
print("snapshots now", left, "reading", reading, "| tag 'kept' reads:", tag_ok, "| rows:", rows(root))
print("OK: B removed A's mark only once every snapshot it covered was gone; nothing it "
      "protected was exposed and A, its lease lost, deleted nothing" if ok else
      "FINDING: see above")
