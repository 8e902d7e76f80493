"""Idea (A2, liveness of the line): whether the lease is free is judged by each taker:
a holder of this machine whose pid is gone (killed) is free *here* only; elsewhere (another
machine or container) it is held until its expiry. A command Q of another machine that
waits first stands in line; a command P of this machine, which finds the killed holder's
lease free and would take it at once (docs/safety.md 5b "A dead holder: ... takes the lease
at once"), now sees Q ahead and waits behind it, while Q waits for the expiry: neither runs
until the killed holder's lease expires (default 5 min; both give up after a 60 s wait).
Q is a child process whose machine id is patched to another one's."""
import os
import subprocess
import sys
import time
import uuid

from common import new_table, write
from paimon_commit import lease as L
from paimon_commit.errors import LeaseHeldError

t = new_table()
write(t, 0)
ldir = os.path.join(t.path, ".maintenance")
# a killed holder of this machine: a pid that no longer exists
dead = subprocess.Popen([sys.executable, "-c", "pass"])
dead.wait()
n = max(int(x[6:]) for x in os.listdir(ldir) if x.startswith("lease-")) + 1
now = int(time.time() * 1000)
rec = L.LeaseRecord(n, L.table_identity(t.store.io), "thishost", dead.pid, uuid.uuid4().hex,
                    "expire-snapshots", now, now + 120_000, False, "killedprocess", L._MACHINE)
with open(os.path.join(ldir, f"lease-{n}"), "wb") as f:
    f.write(rec.to_json())
print(f"lease-{n}: holder pid {dead.pid} of this machine, killed; expiry in 120 s")

here = os.path.dirname(os.path.abspath(__file__))
q = subprocess.Popen([sys.executable, "-c", f"""
import sys, time; sys.path.insert(0, {here!r})
from paimon_commit import lease as L, Table
L._MACHINE = 'another-machine/1'
t = Table.open({t.path!r})
t0 = time.time()
try:
    with L.maintenance_lease(t.store, 'Q: remove-orphan-files', wait_s=12):
        print('Q took it after %.1f s' % (time.time() - t0), flush=True)
except Exception as e:
    print('Q gave up after %.1f s: %s: %s' % (time.time() - t0, type(e).__name__, e), flush=True)
"""], env=dict(os.environ, PYTHONPATH=os.getcwd()), stdout=subprocess.PIPE, text=True)
for _ in range(100):
    if any(x.startswith("wait-") for x in os.listdir(ldir)):
        break
    time.sleep(0.1)
print("Q stands in line:", [x for x in os.listdir(ldir) if x.startswith("wait-")])
m = L.lease_manager(t.store)
print("to P (this machine) the lease is free:", m.is_free(m.latest()))
t0 = time.time()
try:
    with L.maintenance_lease(t.store, "P: expire-snapshots", wait_s=8):
        took = time.time() - t0
        print(f"P took it after {took:.1f} s")
except LeaseHeldError as e:
    took = None
    print(f"P gave up after {time.time() - t0:.1f} s: {e}")
print(q.communicate(timeout=60)[0].strip())
if took is None or took > 2:
    print("FINDING: a command that finds a killed holder's lease free waits behind a waiter "
          "that cannot take it (until the expiry; here both gave up)")
else:
    print("OK: P took the dead holder's lease at once")
