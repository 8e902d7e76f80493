"""F1: changelog-decoupled expiration keeps each snapshot as a changelog (commit_changelog)
before deleting its snapshot file, in the step now guarded only every GUARD_EVERY_FILES files
or GUARD_EVERY_S seconds. Those snapshot files' lists were NOT deleted (they are the
changelog's). A holder A whose lease is broken right after its first snapshot file goes on
writing changelogs; meanwhile the new holder B ran a full expiration (snapshots, then
changelogs) and expired those very changelogs, deleting their manifest lists. A then re-creates
them: changelog files naming deleted lists (and moves changelog/LATEST back and forth).

Run with `old` as argv[1] to emulate the code before b347868 (a guard before every file)."""
import os
import sys

from common import Table, break_lease, new_table, on_other_thread, write, ls

import paimon_commit.io.deletion as deletion
from paimon_commit.io.local import LocalFileIO
from paimon_commit.operations.expire import ExpireConfig, ExpireSnapshots
from paimon_commit.snapshots import SnapshotManager

if len(sys.argv) > 1 and sys.argv[1] == "old":
    deletion.GUARD_EVERY_FILES = 1   # the guard before every snapshot file, as before

N = 20
t = new_table()
path = t.store.root if hasattr(t.store, "root") else t.path
for i in range(N):
    write(t, i)
CFG = ExpireConfig(retain_min=3, retain_max=3, time_retained_ms=0, max_deletes=1000,
                   changelog_retain_min=5, changelog_retain_max=5,
                   changelog_time_retained_ms=0)
assert CFG.changelog_decoupled

unlink = LocalFileIO._unlink
state = {"b_done": False, "a_snapshot_unlinks": 0, "in_b": False}


def run_b():
    state["in_b"] = True
    try:
        return ExpireSnapshots(Table.open(path).store, CFG).expire()
    finally:
        state["in_b"] = False


def hooked(self, norm):
    if "/snapshot/snapshot-" in norm and not state["in_b"]:
        state["a_snapshot_unlinks"] += 1
        if not state["b_done"]:
            r = unlink(self, norm)          # A's first snapshot file (checked for)
            break_lease(path)               # the lease is broken (or expires by B's clock)
            rb = on_other_thread(run_b)     # B: a full expiration, snapshots then changelogs
            state["b_done"] = True
            print("B:", rb.complete, "expired snapshots", rb.expired_ids,
                  "| changelog/ after B:", ls(path, "changelog"))
            return r
    return unlink(self, norm)


LocalFileIO._unlink = hooked
ra = ExpireSnapshots(Table.open(path).store, CFG).expire()
LocalFileIO._unlink = unlink
print("A:", "complete" if ra.complete else f"stopped_by={ra.stopped_by}",
      "snapshot files A unlinked:", state["a_snapshot_unlinks"])

cl_dir = os.path.join(path, "changelog")
manifest_dir = os.path.join(path, "manifest")
bad = []
for name in ls(path, "changelog"):
    if not name.startswith("changelog-"):
        continue
    p = os.path.join(cl_dir, name)
    s = SnapshotManager.parse(open(p, "rb").read(), p, int(name.split("-")[1]))
    missing = [n for n in (s.base_manifest_list, s.delta_manifest_list,
                           s.changelog_manifest_list)
               if n and not os.path.exists(os.path.join(manifest_dir, n))]
    if s.delta_manifest_list and s.delta_manifest_list in missing:
        bad.append(name)
print("changelog/ now:", ls(path, "changelog"))
print("changelog files whose delta manifest list is gone (unreadable changelogs):", bad)
for h in ("EARLIEST", "LATEST"):
    hp = os.path.join(cl_dir, h)
    print(f"changelog/{h} =", open(hp).read() if os.path.exists(hp) else None)
print("snapshot/ now:", ls(path, "snapshot"))
# What a later orphan cleanup makes of it
try:
    r = Table.open(path).remove_orphan_files(dry_run=True)
    print("orphan cleanup dry run:", getattr(r, "complete", r))
except Exception as e:   # noqa: BLE001
    print("orphan cleanup dry run raised:", type(e).__name__, str(e)[:300])

# Does a later expiration heal it?
for i in range(N, N + 2):
    write(t, i)
r2 = ExpireSnapshots(Table.open(path).store, CFG).expire()
print("next expiration:", r2.complete, r2.stopped_by, "| changelog/ after:", ls(path, "changelog"))
for s in getattr(r2, "skipped", []) or []:
    print("  skipped:", s)
try:
    r = Table.open(path).remove_orphan_files(dry_run=True)
    print("orphan cleanup dry run after it:", getattr(r, "complete", r))
except Exception as e:   # noqa: BLE001
    print("orphan cleanup dry run after it raised:", type(e).__name__, str(e)[:200])
