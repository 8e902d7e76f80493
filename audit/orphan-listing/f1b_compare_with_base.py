"""Finding 1, the same scenario through the per-file primitive only (`_unlink`, present
before and after the change), so that it runs on both trees:

    PYTHONPATH=$PWD .venv/bin/python audit/f1b_compare_with_base.py            # a7af86d
    AUDIT_TREE=/tmp/auditO-base .venv/bin/python audit/f1b_compare_with_base.py # 0f76a62
      (git archive 0f76a62 paimon_commit tests | tar -x -C /tmp/auditO-base)

CLI remove-orphan-files --parallelism 1 (the pool runs its tasks in order); once every stray
of the first bucket is unlinked, the second bucket's partition directory is swapped for a
symlink to a tree outside the table. Before the change the CLI reported the deleted files
(exit 1, "N path(s) had been deleted before the failure"); after it, exit 2 and none.
"""
import contextlib
import io as _io
import json
import os
import sys

tree = os.environ.get("AUDIT_TREE")
if tree:
    sys.path.insert(0, os.path.join(tree, "tests"))
    sys.path.insert(0, tree)
from _table import files_under, make_table  # noqa: E402

import paimon_commit  # noqa: E402
from paimon_commit.cli import main  # noqa: E402
from paimon_commit.io.local import LocalFileIO  # noqa: E402

print("paimon_commit from", os.path.dirname(paimon_commit.__file__))
tmp, path, strays = make_table(100)
outside = os.path.join(tmp, "outside")
orig = LocalFileIO._unlink
state = {"n": 0, "first": None}


def hooked(self, norm):
    d = os.path.dirname(norm)
    if state["first"] is None:
        state["first"] = d
    if d == state["first"]:
        state["n"] += 1
        if state["n"] == len(strays[d]):   # the first bucket done: swap the other's parent
            other = next(b for b in strays if b != d)
            parent = os.path.dirname(other)
            target = os.path.join(outside, os.path.basename(parent), "bucket-0")
            os.makedirs(target)
            for n in strays[other]:
                with open(os.path.join(target, n), "w") as f:
                    f.write("precious")
            os.rename(parent, parent + ".moved")
            os.symlink(os.path.dirname(target), parent)
    return orig(self, norm)


LocalFileIO._unlink = hooked
out, err = _io.StringIO(), _io.StringIO()
with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
    code = main(["remove-orphan-files", path, "--older-than-duration", "1 d", "--json",
                 "--parallelism", "1"])
LocalFileIO._unlink = orig
report = json.loads(out.getvalue().strip().splitlines()[-1])
first = state["first"]
gone = [n for n in strays[first] if not os.path.exists(os.path.join(first, n))]
print("exit code:", code, "| reported deleted_files:", report.get("deleted_files"),
      "| actually deleted:", len(gone))
print("outside files intact:", len(files_under(outside)))
