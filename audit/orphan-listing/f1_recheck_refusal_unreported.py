"""Finding 1: when the pool's re-check of a directory refuses (a partition directory swapped
for a symlink to outside the table between the gate's check and the unlinks), the files
already unlinked in other directories are neither in the deletion log nor in the report,
and the CLI says "nothing touched" (exit 2 = invalid input, deleted_files 0).

Nothing outside the root is deleted (the re-check works): the defect is the report.

The swap is made deterministic by wrapping LocalFileIO._unlink_in (the same kind of hook the
project's own test _SwapsAfterCheck uses on _unlink_many): on its second directory, that
directory's parent (hr=N) is renamed away and replaced by a symlink to a tree outside the
table holding files of the same names.

Run: PYTHONPATH=$PWD .venv/bin/python audit/f1_recheck_refusal_unreported.py
"""
import contextlib
import io as _io
import json
import os

from _table import files_under, make_table

from paimon_commit.cli import main
from paimon_commit.io.local import LocalFileIO

tmp, path, strays = make_table(100)
outside = os.path.join(tmp, "outside")
before = set(files_under(path))

orig = LocalFileIO._unlink_in
seen = []


def hooked(self, directory, norms):
    if directory not in seen:
        seen.append(directory)
        if len(seen) == 2:   # the second directory: swap its parent for a symlink out
            parent = os.path.dirname(directory)
            target = os.path.join(outside, os.path.basename(parent), "bucket-0")
            os.makedirs(target)
            for n in strays[directory]:
                with open(os.path.join(target, n), "w") as f:
                    f.write("precious")
            os.rename(parent, parent + ".moved")
            os.symlink(os.path.dirname(target), parent)
    return orig(self, directory, norms)


LocalFileIO._unlink_in = hooked
out, err = _io.StringIO(), _io.StringIO()
with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
    code = main(["remove-orphan-files", path, "--older-than-duration", "1 d", "--json"])
LocalFileIO._unlink_in = orig

report = json.loads(out.getvalue().strip().splitlines()[-1])
first = seen[0]
gone = [n for n in strays[first] if not os.path.exists(os.path.join(first, n))]
outside_files = files_under(outside)
print("exit code:", code, "(2 = invalid input: 'nothing was touched')")
print("error:", report.get("error"))
print("CLI report deleted_files:", report.get("deleted_files"))
print("actually deleted in", os.path.relpath(first, path), ":", len(gone), "of",
      len(strays[first]))
print("outside files intact:", len(outside_files),
      all(open(os.path.join(outside, p)).read() == "precious" for p in outside_files))
assert len(outside_files) == 100, "a file outside the root was deleted"
if gone and report.get("deleted_files") == 0:
    print("FINDING REPRODUCED: files were deleted, the run reports none (exit %d)" % code)
else:
    print("not reproduced")
