"""An explicit `expire-snapshots --retain-max 2` is stopped (Ctrl-C: request_stop; the same for a
deadline or a lost lease) after its re-check and before its first delete: the run reports
that it stopped, nothing is deleted, every snapshot still reads. `plan.deleting` was set when
the re-check passed, so `_unmark_untouched` never runs and the mark stays. The next plain
post-commit expiration (table retention: 100 snapshots) then "finishes" the range
(`_doomed_end`): it expires the intact snapshots the stopped run had only planned to expire.
What the user stopped is done anyway, by a later run, against the table's retention; the same
happens for a kill anywhere between the mark's PUT and the first delete (audit 25l l4's
situation, which now deletes instead of refusing)."""
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import *  # noqa
from paimon_commit.io import deletion
from paimon_commit.operations import expire as expire_mod

t = new_table("t", KEEP)
root = t.store.root
for i in range(6):
    write(Table.open(root), 10 * i)                     # snapshots 1..6
orig = expire_mod.ExpireSnapshots._changes


def changes_then_ctrl_c(self, plan):
    out = orig(self, plan)
    deletion.request_stop("interrupted (Ctrl-C)")       # what the CLI's SIGINT handler does
    return out


files_before = table_files(root)
expire_mod.ExpireSnapshots._changes = changes_then_ctrl_c
try:
    r = expirer(Table.open(root), 2).expire()
finally:
    expire_mod.ExpireSnapshots._changes = orig
    deletion.clear_stop()
print("stopped run:", "stopped_by", getattr(r, "stopped_by", None), "expired",
      getattr(r, "expired_snapshots", None), "deleted", len(getattr(r, "deleted_paths", []) or []))
print("files deleted by the stopped run:", len(files_before - table_files(root)))
before = snapshot_ids(root)
whole = [s for s in before if reads_at(root, s)[0]]
print("after the stop: snapshots", before, "reading:", whole, "marks:", markers(root))
write(Table.open(root), 100)                             # a commit: post-commit expiration
after = snapshot_ids(root)
lost = [s for s in whole if s not in after]
print("after one more commit (retention keeps 100):", after)
print(f"FINDING: a run stopped before any delete left its mark; the next post-commit expiration "
      f"expired intact retained snapshots {lost}" if lost
      else "OK: the stopped run's intact snapshots are kept")
