"""`expire-snapshots --retain-max 2` is stopped at its first safe point (here Ctrl-C; the same
for a lease lost because the storage stopped answering) after its re-check: nothing was
handed to an unlink, so `_execute` takes its mark back (`_unmark_untouched`, the m2 fix). That
one DELETE fails (the storage answers EIO / 503 for a moment, plausibly the same trouble that
cost the lease): `ExpiringMarkers.remove` returns False, the mark stays (only the io's
"could not delete" line says so; `_unmark_untouched` logs nothing, the result has no field),
and what its comment says ("it stays: a later run removes it") is not what happens: the
next post-commit expiration (table retention 100) *finishes* the mark's range and expires
the intact snapshots 1..4. A take-back that failed is treated as a
run that deleted half its range."""
import errno, os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import *  # noqa
from paimon_commit.io import deletion
from paimon_commit.operations import expire as expire_mod

root = six_snapshots()
orig_changes, orig_unlink = expire_mod.ExpireSnapshots._changes, os.unlink


def flaky(path, *a, **kw):
    raise OSError(errno.EIO, "Input/output error", path)


def changes_then_stop(self, plan):
    out = orig_changes(self, plan)
    deletion.request_stop("interrupted (Ctrl-C)")
    os.unlink = flaky                                     # the storage fails for a moment
    return out


files_before = table_files(root)
expire_mod.ExpireSnapshots._changes = changes_then_stop
try:
    r = expirer(Table.open(root), 2).expire()
    print("stopped run:", r.stopped_by, "expired", r.expired_snapshots, "deleted",
          len(r.deleted_paths or []))
finally:
    os.unlink = orig_unlink
    expire_mod.ExpireSnapshots._changes = orig_changes
    deletion.clear_stop()
print("files deleted by the stopped run:", sorted(files_before - table_files(root)))
before = whole(root)
print("snapshots reading after it:", before, "marks:", markers(root))
write(Table.open(root), 100)                             # the storage is back; a commit
after = snapshot_ids(root)
lost = [s for s in before if s not in after]
print("after one more commit (retention keeps 100):", after)
print(f"FINDING: a stopped run whose mark could not be taken back (nothing deleted) made the "
      f"next post-commit expiration expire intact retained snapshots {lost}" if lost
      else "OK: the intact snapshots are kept")
