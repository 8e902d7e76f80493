"""`expire-snapshots --retain-max 2` passes its re-check; then the deletion gate refuses its
first delete step before any file is unlinked: here `manifest/` was replaced by a symlink to
the same files elsewhere (a migration, a mount; the Deleter re-resolves directories on purpose
because "a directory may have become a symlink meanwhile"). `FileIO.delete_quietly` /
`delete_files` check the path (UnsafePathError) before unlinking, but `Deleter.files` has
already counted the paths in `attempted`, so `_execute` keeps the mark ("something may be
gone"). Nothing was deleted, every snapshot reads; the operator puts the directory back.
The next commit's post-commit expiration (table retention: 100 snapshots) finishes the
"stopped" range: intact snapshots 1..4 are expired."""
import os, shutil, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import *  # noqa
from paimon_commit.operations import expire as expire_mod

root = six_snapshots()
orig = expire_mod.ExpireSnapshots._changes
moved = os.path.join(os.path.dirname(root), "manifest-elsewhere")


def changes_then_symlink(self, plan):
    out = orig(self, plan)
    print("plan files:", {k: len(v) for k, v in plan.files.items() if v},
          "metadata:", len(plan.metadata))
    shutil.move(os.path.join(root, "manifest"), moved)
    os.symlink(moved, os.path.join(root, "manifest"))
    return out


files_before = table_files(root)
expire_mod.ExpireSnapshots._changes = changes_then_symlink
try:
    expirer(Table.open(root), 2).expire()
    print("the run returned")
except Exception as e:  # noqa
    print("the run failed:", type(e).__name__, str(e)[:150])
finally:
    expire_mod.ExpireSnapshots._changes = orig
os.unlink(os.path.join(root, "manifest"))           # the operator puts manifest/ back
shutil.move(moved, os.path.join(root, "manifest"))
print("files deleted by the failed run:", sorted(files_before - table_files(root)))
before = whole(root)
print("snapshots reading after it:", before, "marks:", markers(root))
write(Table.open(root), 100)                         # a commit: post-commit expiration
after = snapshot_ids(root)
lost = [s for s in before if s not in after]
print("after one more commit (retention keeps 100):", after)
print(f"FINDING: a run the gate stopped before any unlink left its mark; the next post-commit "
      f"expiration expired intact retained snapshots {lost}" if lost
      else "OK: the intact snapshots are kept")
