"""Idea (A1/A2): the waiter line must not let two hold at once, must not deadlock, must not
leave records after normal runs, a failed record write or an interrupt. A holder thread
re-takes the lease right after each release (the looping expirer); three command threads
wait (one whose waiter-record writes always fail with OSError, one stopped by a
StopDeleting-style interrupt of its wait via request_stop is not used: it would stop all
threads; instead one has a 1 s --lease-wait and gives up). Each holder records its interval
and calls check() inside it. Afterwards: no overlapping intervals, every waiter with enough
wait got the lease, no `wait-*` record left."""
import os
import threading
import time

from common import new_table, write
from paimon_commit import lease as L
from paimon_commit.errors import LeaseHeldError

t = new_table()
write(t, 0)
store = t.store
ldir = os.path.join(t.path, ".maintenance")
intervals, lock, out = [], threading.Lock(), {}
stop = threading.Event()


def hold(name, mgr=None, wait=20.0, secs=0.3):
    with L.maintenance_lease(store, name, wait_s=wait, manager=mgr) as h:
        a = time.monotonic()
        h.check()
        time.sleep(secs)
        h.check()
        b = time.monotonic()
    with lock:
        intervals.append((a, b, name))


def looper():
    while not stop.is_set():
        try:
            hold("looper", wait=0.0, secs=0.2)
        except LeaseHeldError:
            time.sleep(0.01)


def waiter(name, mgr=None, wait=20.0):
    t0 = time.monotonic()
    try:
        hold(name, mgr, wait)
        out[name] = f"took it after {time.monotonic() - t0:.1f} s"
    except LeaseHeldError as e:
        out[name] = f"gave up after {time.monotonic() - t0:.1f} s ({str(e)[:60]})"


bad = L.lease_manager(store)


def failing_write(*a, **k):
    raise OSError("injected: waiter record write failed")


bad.write_waiter = failing_write
lt = threading.Thread(target=looper)
lt.start()
time.sleep(0.1)
ws = [threading.Thread(target=waiter, args=("cmd-1",)),
      threading.Thread(target=waiter, args=("cmd-2",)),
      threading.Thread(target=waiter, args=("cmd-nowrite", bad)),
      threading.Thread(target=waiter, args=("cmd-short", None, 1.0))]
for w in ws:
    w.start()
    time.sleep(0.05)
for w in ws:
    w.join(60)
stop.set()
lt.join(30)
for k, v in sorted(out.items()):
    print(k, v)
iv = sorted(intervals)
overlap = [(x, y) for x, y in zip(iv, iv[1:]) if y[0] < x[1]]
left = [n for n in os.listdir(ldir) if n.startswith("wait-")]
print("holds:", len(iv), "overlaps:", overlap[:3], "waiter records left:", left)
bad_out = [k for k in ("cmd-1", "cmd-2") if not out.get(k, "").startswith("took")]
if overlap or left or bad_out:
    print("FINDING:", overlap[:3], left, bad_out)
else:
    print("OK: no overlap, the commands in line took it, no waiter record left")
