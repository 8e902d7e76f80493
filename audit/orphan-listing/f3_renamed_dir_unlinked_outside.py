"""Finding 3 (residual race, low): once `_unlink_in` has opened and checked a directory, its
unlinks follow the directory's inode wherever it goes. A bucket directory MOVED out of the
table (same file system) while orphan cleanup unlinks in it keeps losing files although
they are outside the root by then. Before the change (path unlinks) the move made the
remaining unlinks miss (FileNotFoundError) and the moved files stayed.

The files removed are the ones selected as orphans (same inode directory, same names), so
this is not a used file lost; it breaks the letter of "never delete outside the root" under
a concurrent operator move only.

    PYTHONPATH=$PWD .venv/bin/python audit/f3_renamed_dir_unlinked_outside.py
    AUDIT_TREE=/tmp/auditO-base .venv/bin/python audit/f3_renamed_dir_unlinked_outside.py
"""
import os

from _table import make_table

from paimon_commit.io.local import LocalFileIO

tmp, path, strays = make_table(100)
bucket, names = next(iter(strays.items()))
moved = os.path.join(tmp, "moved-out-bucket")


class _MovesAtFirstUnlink(LocalFileIO):
    moved = False

    def _unlink(self, norm):
        if not self.moved:
            self.moved = True
            os.rename(bucket, moved)       # an operator moves the directory out
        return super()._unlink(norm)


io = _MovesAtFirstUnlink(path)
deleted = io.delete_files([os.path.join(bucket, n) for n in names])
left = [n for n in os.listdir(moved) if n.startswith("data-stray")]
print("deleted (reported):", len(deleted), "| strays left in the moved-out directory:",
      len(left), "of", len(names))
if len(left) < len(names):
    print("FINDING: %d files unlinked in a directory outside the table root"
          % (len(names) - len(left)))
