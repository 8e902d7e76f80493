"""Idea: two holders at once through plain races of take/renew/release/prune: 4 processes x 2
threads, each taking the lease of one table 15 times (short duration 300 ms so renewals and
the renewer thread run; wait 60 s), marking its presence with an O_EXCL file while inside and
passing a safe point. Any overlap (a marker already there) is two holders at once."""
import os
import subprocess
import sys
import textwrap

from common import new_table

t = new_table()
marker = os.path.join(os.path.dirname(t.path), "inside")
HERE = os.path.dirname(os.path.abspath(__file__))
code = textwrap.dedent(f"""
    import os, sys, threading, time, random
    sys.path.insert(0, {HERE!r})
    import common
    from paimon_commit import Table
    from paimon_commit.lease import maintenance_lease
    from paimon_commit.io.deletion import checkpoint
    bad = []
    def worker():
        for i in range(15):
            store = Table.open({t.path!r}).store
            with maintenance_lease(store, "race", wait_s=60, duration_ms=300):
                try:
                    fd = os.open({marker!r}, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
                except FileExistsError:
                    bad.append("overlap"); continue
                checkpoint()
                time.sleep(random.random() * 0.2)   # renewals happen in here
                checkpoint()
                os.close(fd); os.remove({marker!r})
    ts = [threading.Thread(target=worker) for _ in range(2)]
    [x.start() for x in ts]; [x.join() for x in ts]
    print("overlaps", len(bad))
""")
procs = [subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True,
                          env=dict(os.environ, PYTHONPATH=os.getcwd())) for _ in range(4)]
outs = [p.communicate(timeout=500) for p in procs]
overlaps = 0
for o, e in outs:
    print(o.strip(), e.strip()[-300:])
    if o.strip().startswith("overlaps"):
        overlaps += int(o.split()[-1])
print("records:", len(os.listdir(os.path.join(t.path, ".maintenance"))))
print("FINDING: two holders at once" if overlaps else "NO FINDING")
