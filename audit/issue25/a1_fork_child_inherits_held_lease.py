"""Idea: a child forked while a thread holds the maintenance lease. lease.py's fork hook
gives the child a new process id and empties _live_tokens ("a forked child is another
process"), but the thread-local `_local.held` map (re-entrancy) and the deletion guards are
copied into the child. A maintenance operation in the child then *joins* the parent's lease
instead of taking its own: parent and child both hold it, and both may delete at once."""
import os
import sys
import time

from common import new_table, write, files
from paimon_commit import lease as L
from paimon_commit.io.deletion import checkpoint

t = new_table(options={"snapshot.num-retained.min": "10"})
for i in range(5):
    write(t, i * 3)
store = t.store
before = sorted(n for n in os.listdir(os.path.join(t.path, ".maintenance")))

r, w = os.pipe()
with L.maintenance_lease(store, "parent-op") as parent_held:
    pid = os.fork()
    if pid == 0:
        os.close(r)
        msg = []
        try:
            # a new, independent maintenance operation in the child (e.g. a worker that runs
            # expire_snapshots): it should have to wait for / be refused by the parent's lease
            with L.maintenance_lease(store, "child-op", wait_s=0.5) as held:
                joined = held is not None and held.record.token == parent_held.record.token
                checkpoint()   # the child's safe point passes: it may delete
                # and it really deletes: expire in the child joins the parent's lease
                res = t.expire_snapshots(retain_max=1, retain_min=1)
                msg.append(f"child: joined parent's lease={joined}; checkpoint passed; "
                           f"child expire deleted {res.expired_snapshots} snapshots "
                           f"while parent holds the lease")
        except Exception as e:  # noqa
            msg.append(f"child refused: {type(e).__name__}: {e}")
        os.write(w, "\n".join(msg).encode())
        os._exit(0)
    os.close(w)
    os.waitpid(pid, 0)
    out = os.read(r, 10000).decode()
    print(out)
    # the parent still believes it holds: its check passes
    try:
        parent_held.check()
        print("parent: check passed, still holds the lease")
        parent_ok = True
    except Exception as e:  # noqa
        print("parent check:", type(e).__name__, e)
        parent_ok = False

print("lease records before:", before)
print("lease records after:", sorted(os.listdir(os.path.join(t.path, ".maintenance"))))
if "joined parent's lease=True" in out and parent_ok:
    print("FINDING: a forked child joins the parent's held lease (thread-local `held` "
          "survives fork); parent and child both hold the maintenance lease and both delete")
else:
    print("NO FINDING")
