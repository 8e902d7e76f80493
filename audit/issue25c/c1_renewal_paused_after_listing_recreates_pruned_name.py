"""Idea: docs/safety.md 5b "Why pruning cannot hide a takeover" (2): "no one writes the
holder's token under n again (its renewals and release write above n)". A renewal writes
n+1 = the holder's *own* number + 1 after a listing that showed n highest. If the holder is
paused (SIGSTOP, VM pause) between that listing and its create, and meanwhile it is taken
over, many records accumulate and a later taker prunes everything below its own (n and n+1
included), the resumed renewal's create of n+1 succeeds (the name is free again): the holder
now holds record n+1, with a fresh expiry. Its checks: HEAD n+2 -> absent (pruned), GET n+1 ->
its own token: passes, while another process holds the lease. The 'lists before it renews'
fix (test_a_paused_holder_whose_successor_was_pruned_still_finds_it_lost) covers a pause
before the listing, not one between the listing and the create.

The pause is simulated by blocking A's manager.numbers() after it returned (the listing is
done); B's clock runs 3 h ahead so that its pruning counts every record as old (a real
pause of 2 h+ gives the same with true clocks)."""
import logging
import os
import threading
import time

from common import new_table, write
from paimon_commit.io.deletion import StopDeleting
from paimon_commit.lease import LeaseManager, maintenance_lease

logging.basicConfig(level=logging.WARNING)
t = new_table()
write(t, 0)
store = t.store
ldir = os.path.join(t.path, ".maintenance")

offset = [0]
a_mgr = LeaseManager(store.io, store.path, clock=lambda: int(time.time() * 1000) + offset[0])
orig_numbers = a_mgr.numbers
armed, paused, resume = threading.Event(), threading.Event(), threading.Event()


def numbers():
    out = orig_numbers()
    if armed.is_set() and threading.current_thread().name.startswith("paimon-lease"):
        armed.clear()
        paused.set()
        resume.wait(60)   # paused after the listing, before the create
    return out


a_mgr.numbers = numbers
took, go_check, done = threading.Event(), threading.Event(), threading.Event()
out = {}


def holder_a():
    with maintenance_lease(store, "expire-snapshots (A)", manager=a_mgr,
                           duration_ms=4_000) as a:
        out["n"] = a.record.number
        took.set()
        go_check.wait(60)
        out["record after resume"] = a.record.number
        try:
            a.check()
            out["check"] = "passed"
        except StopDeleting as e:
            out["check"] = f"StopDeleting: {e}"
        done.set()


th = threading.Thread(target=holder_a)
th.start()
took.wait(10)
armed.set()
# (A's renewer runs every 1 s; the renewal is due 2 s after the take)
assert paused.wait(10), "renewer did not run"
print("A (record", out["n"], ") paused in its renewal after listing:",
      sorted(os.listdir(ldir)))

skewed = LeaseManager(store.io, store.path, clock=lambda: int(time.time() * 1000) + 3 * 3600_000)
for i in range(6):
    with maintenance_lease(store, f"B run {i}", manager=skewed, wait_s=0):
        pass
with maintenance_lease(store, "B holds", manager=skewed, wait_s=0) as b:
    print("B holds record", b.record.number, "records:", sorted(os.listdir(ldir),
                                                                 key=lambda s: int(s[6:])))
    resume.set()
    time.sleep(0.5)            # A's renewer creates lease-(n+1)
    go_check.set()
    done.wait(10)
    print("records after A resumed:", sorted(os.listdir(ldir), key=lambda s: int(s[6:])))
    print("A now holds record", out.get("record after resume"), "; A's check:", out.get("check"))
    try:
        b.check()
        b_ok = True
    except StopDeleting as e:
        b_ok = False
        print("B check:", e)
th.join(10)
if out.get("check") == "passed" and b_ok:
    print("FINDING (two holders): A's renewal, paused between its listing and its create, "
          "re-created a pruned name under its own token; A's check passes while B holds the lease")
else:
    print("NO FINDING")
