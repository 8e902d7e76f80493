"""`expire-snapshots --retain-max 2` passes its re-check and its first delete step fails for
every path (the storage refuses deletes for a while: EROFS after a remount, EACCES / an S3
AccessDenied from credentials without delete rights, a throttled batch). `Deleter.files`
returns False (the files are still there, `still_there` checked each), `_delete` returns False
without raising, so `_execute`'s take-back (only on an exception with attempted == 0) is never
reached: the mark stays, `plan.deleting` is True. Nothing was deleted, every snapshot reads.
Once deletes work again the next commit's post-commit expiration (table retention: 100
snapshots) "finishes" the range and expires the intact snapshots 1..4. A run that verified
that not one file of its plan is gone is treated like one that deleted half of it."""
import errno, os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import *  # noqa
from paimon_commit.operations import expire as expire_mod

root = six_snapshots()
orig_changes, orig_unlink = expire_mod.ExpireSnapshots._changes, os.unlink


def refused(path, *a, **kw):
    raise OSError(errno.EROFS, "Read-only file system", path)


def changes_then_read_only(self, plan):
    out = orig_changes(self, plan)
    os.unlink = refused                                  # deletes refused from here on
    return out


files_before = table_files(root)
expire_mod.ExpireSnapshots._changes = changes_then_read_only
try:
    r = expirer(Table.open(root), 2).expire()
    print("the run returned: expired", r.expired_snapshots, "deleted", len(r.deleted_paths or []),
          "skipped", [s[:90] for s in (r.skipped or [])])
except Exception as e:  # noqa
    print("the run failed:", type(e).__name__, str(e)[:150])
finally:
    os.unlink = orig_unlink
    expire_mod.ExpireSnapshots._changes = orig_changes
print("files deleted by the failed run:", sorted(files_before - table_files(root)))
before = whole(root)
print("snapshots reading after it:", before, "marks:", markers(root))
write(Table.open(root), 100)                         # deletes work again; a commit
after = snapshot_ids(root)
lost = [s for s in before if s not in after]
print("after one more commit (retention keeps 100):", after)
print(f"FINDING: a run none of whose deletes succeeded left its mark; the next post-commit "
      f"expiration expired intact retained snapshots {lost}" if lost
      else "OK: the intact snapshots are kept")
