"""Idea (variant of c1, in _take): a taker lists the records (highest n, released: free), is
paused before its create of lease-(n+1) (SIGSTOP, a GC pause, a slow PUT), and meanwhile B
takes n+1, runs, and a later take of B prunes every record below its own (n+1 included:
B's clock runs 3 h ahead, or the pause lasted past PRUNE_AGE_MS). The resumed create of n+1
succeeds (the name is free again): the taker holds record n+1. Its check: HEAD n+2 -> absent
(pruned), GET n+1 -> its own token: passes, while B holds the lease. docs/safety.md 5b (1):
"a taker ... create[s] the highest listed plus one" - listed before a pause, so the proof's
step "a record above n+1 exists only if n+1 was created first" does not say n+1 is *new*."""
import os
import threading
import time

from common import new_table, write
from paimon_commit.io.deletion import StopDeleting
from paimon_commit.lease import LeaseManager, maintenance_lease

t = new_table()
write(t, 0)
store = t.store
ldir = os.path.join(t.path, ".maintenance")
with maintenance_lease(store, "earlier run"):
    pass

a_mgr = LeaseManager(store.io, store.path)
orig_create = a_mgr.create
paused, resume = threading.Event(), threading.Event()


def create(record):
    if not paused.is_set():
        paused.set()
        resume.wait(60)   # listed, chose record n+1, not created yet
    return orig_create(record)


a_mgr.create = create
go_check, done = threading.Event(), threading.Event()
out = {}


def taker_a():
    try:
        with maintenance_lease(store, "expire-snapshots (A)", manager=a_mgr, wait_s=0) as a:
            out["n"] = a.record.number
            go_check.wait(60)
            try:
                a.check()
                out["check"] = "passed"
            except StopDeleting as e:
                out["check"] = f"StopDeleting: {e}"
    except Exception as e:  # noqa
        out["check"] = f"take failed: {type(e).__name__}: {e}"
    done.set()


th = threading.Thread(target=taker_a)
th.start()
assert paused.wait(10)
print("A listed", sorted(os.listdir(ldir)), "and is paused before creating its record")
skewed = LeaseManager(store.io, store.path, clock=lambda: int(time.time() * 1000) + 3 * 3600_000)
for i in range(6):
    with maintenance_lease(store, f"B run {i}", manager=skewed, wait_s=0):
        pass
with maintenance_lease(store, "B holds", manager=skewed, wait_s=0) as b:
    print("B holds record", b.record.number, "records:",
          sorted(os.listdir(ldir), key=lambda s: int(s[6:])))
    resume.set()
    time.sleep(0.5)
    print("A took record", out.get("n"), "records:",
          sorted(os.listdir(ldir), key=lambda s: int(s[6:])))
    go_check.set()
    done.wait(10)
    print("A's check:", out.get("check"))
    try:
        b.check()
        b_ok = True
    except StopDeleting as e:
        b_ok = False
        print("B check:", e)
th.join(10)
if out.get("check") == "passed" and b_ok:
    print("FINDING (two holders): A's take, paused between its listing and its create, created "
          "a pruned name; A's check passes while B holds the lease")
else:
    print("NO FINDING")
