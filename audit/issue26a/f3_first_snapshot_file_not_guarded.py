"""F3: docs/safety.md, lease.py and the commit say the lease is checked "before the first
snapshot file" of expiration's last step. `Deleter.in_order(spaced=True)` runs the guards
only when `_guarded` is None or GUARD_EVERY_FILES / GUARD_EVERY_S passed since the Deleter's
last check, and every earlier step (`files`, `dirs`) sets `_guarded`: after a list step of
fewer than 32 lists, the first snapshot file (and up to 32 - lists of them) is deleted
without a check of its own. Here the lease is broken between the list step and the first
snapshot file (right after the last manifest-list unlink): A still deletes snapshot files."""
import os

from common import Table, break_lease, new_table, write, ls

from paimon_commit.io.local import LocalFileIO
from paimon_commit.lease import HeldLease
from paimon_commit.operations.expire import ExpireConfig, ExpireSnapshots

t = new_table()
path = t.path if hasattr(t, "path") else t.store.root
for i in range(6):
    write(t, i)
events = []
unlink, check = LocalFileIO._unlink, HeldLease.check
n_lists = {"n": 0}


def hooked_unlink(self, norm):
    name = os.path.basename(norm)
    r = unlink(self, norm)
    if name.startswith("manifest-list-"):
        events.append("unlink list")
    elif name.startswith("snapshot-"):
        events.append(f"unlink {name}")
    return r


def hooked_check(self):
    events.append("lease check")
    return check(self)


LocalFileIO._unlink, HeldLease.check = hooked_unlink, hooked_check
# break the lease once the list step is over: wrap the first snapshot-file unlink's caller
orig_in_order = __import__("paimon_commit.io.deletion", fromlist=["Deleter"]).Deleter.in_order


def in_order(self, kind, paths, spaced=False):
    if kind == "snapshot" and not getattr(in_order, "broken", False):
        in_order.broken = True
        break_lease(path)
        events.append("-- lease broken (before the first snapshot file) --")
    return orig_in_order(self, kind, paths, spaced)


import paimon_commit.io.deletion as deletion  # noqa: E402
deletion.Deleter.in_order = in_order
r = ExpireSnapshots(Table.open(path).store, ExpireConfig(
    retain_min=1, retain_max=1, time_retained_ms=0, max_deletes=100)).expire()
deletion.Deleter.in_order = orig_in_order
LocalFileIO._unlink, HeldLease.check = unlink, check
compact = []
for e in events:
    if compact and compact[-1][0] == e:
        compact[-1][1] += 1
    else:
        compact.append([e, 1])
for e, n in compact:
    print(f"  {e} x{n}" if n > 1 else f"  {e}")
print("result:", r.complete, r.stopped_by, "| snapshot/ now:", ls(path, "snapshot"))
