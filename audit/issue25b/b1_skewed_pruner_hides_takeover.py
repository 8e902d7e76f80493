"""Idea: docs/safety.md §5b: "A larger skew costs the holder its run ... but never lets two
holders delete past a check: whether a holder may delete is decided by the newer record, not
by time." The holder's check is one HEAD of record n+1. Pruning deletes superseded records
by *mtime* (storage/server time) against the *pruner's* clock. A taker B whose clock runs
3 h ahead takes A's live lease over (A's expiry looks past), runs a few times and then
prunes every record below its own, A's successor n+1 included (its mtime is "2 h old" by B's
clock). A's next check finds no record n+1 and, its own renewal not due, passes: A and B
both hold the lease and both may delete."""
import os
import threading
import time

from common import new_table, write
from paimon_commit.lease import LeaseManager, maintenance_lease

t = new_table()
write(t, 0)
store = t.store
for _ in range(5):   # history: 10 superseded records (PRUNE_AT = 8)
    with maintenance_lease(store, "old-run"):
        pass

took, checked = threading.Event(), threading.Event()
a_out = []


def holder_a():
    with maintenance_lease(store, "expire-snapshots (A)", duration_ms=300_000) as a:
        a_out.append(("A took", a.record.number))
        took.set()
        checked.wait()
        try:
            a.check()   # the safe point before A's next delete step
            a_out.append(("A check passed; A holds record", a.record.number))
        except Exception as e:  # noqa
            a_out.append(("A check raised", f"{type(e).__name__}: {e}"))
        checked.clear()


th = threading.Thread(target=holder_a)
th.start()
took.wait()
skewed = LeaseManager(store.io, store.path, clock=lambda: int(time.time() * 1000) + 3 * 3600_000)
with maintenance_lease(store, "B first", manager=skewed, wait_s=0) as b1:
    print("B took over (A's lease looked expired to B's clock):", b1.record.number)
for i in range(4):   # B's ordinary runs (each a take and a release)
    with maintenance_lease(store, f"B run {i}", manager=skewed, wait_s=0):
        pass
with maintenance_lease(store, "B again", manager=skewed, wait_s=0) as b2:
    print("B took again:", b2.record.number, "records now:",
          sorted(os.listdir(os.path.join(t.path, ".maintenance"))))
    checked.set()
    th.join(timeout=10)
    try:
        b2.check()
        b_ok = True
    except Exception as e:  # noqa
        b_ok = False
        print("B check raised", e)
for o in a_out:
    print(*o)
a_passed = any(o[0].startswith("A check passed") for o in a_out)
if a_passed and b_ok:
    print("FINDING (two holders): A passed its check while B holds the lease "
          "(B's pruning removed A's successor record)")
else:
    print("NO FINDING")
