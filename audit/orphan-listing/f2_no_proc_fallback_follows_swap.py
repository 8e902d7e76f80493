"""Finding 2: where /proc/self/fd cannot be read (macOS, BSD, a Linux sandbox or chroot
without /proc), LocalFileIO._unlink_in falls back to unlinking path by path: the
directory descriptor it opened (O_NOFOLLOW) is not used, so a bucket directory swapped for
a symlink after the open is FOLLOWED and files outside the table root are deleted.
docs/safety.md (added line) says "On local disk ... a directory swapped for a symlink
between the check of the paths and their unlinks is not followed" without that condition.

(The same race existed before this change with plain path unlinks; the change claims to
close it, and does so only where /proc is readable.)

No /proc is simulated by making os.readlink fail for /proc/self/fd paths (what it does on
macOS); the swap is made deterministic by wrapping LocalFileIO._unlink, the per-file
primitive the project's fault injection wraps: at the first unlink the bucket directory is
moved away and replaced by a symlink to a directory outside the table holding files of the
same names.

Run: PYTHONPATH=$PWD .venv/bin/python audit/f2_no_proc_fallback_follows_swap.py
"""
import os
from concurrent.futures import ThreadPoolExecutor

from _table import make_table

import paimon_commit.io.local as local
from paimon_commit.io.local import LocalFileIO

tmp, path, strays = make_table(100)
bucket, names = next(iter(strays.items()))
outside = os.path.join(tmp, "outside")
os.makedirs(outside)
for n in names:
    with open(os.path.join(outside, n), "w") as f:
        f.write("precious")

real_readlink = os.readlink


class _NoProcOs:
    """os as seen by paimon_commit.io.local on a system without /proc."""
    def __getattr__(self, name):
        return getattr(os, name)

    @staticmethod
    def readlink(p, *a, **k):
        if str(p).startswith("/proc/self/fd/"):
            raise FileNotFoundError(2, "No such file or directory", p)
        return real_readlink(p, *a, **k)


class _SwapsAtFirstUnlink(LocalFileIO):
    swapped = False

    def _unlink(self, norm):
        if not self.swapped:
            self.swapped = True
            os.rename(bucket, bucket + ".moved")
            os.symlink(outside, bucket)
        return super()._unlink(norm)


local.os = _NoProcOs()
try:
    io = _SwapsAtFirstUnlink(path)
    paths = [os.path.join(bucket, n) for n in names]
    with ThreadPoolExecutor(4) as pool:
        deleted = io.delete_files(paths, pool)
finally:
    local.os = os
left = os.listdir(outside)
print("reported deleted:", len(deleted))
print("files left in the directory OUTSIDE the table:", len(left), "of", len(names))
if len(left) < len(names):
    print("FINDING REPRODUCED: %d files outside the table root deleted through a symlink"
          % (len(names) - len(left)))
else:
    print("not reproduced")

# Control: with /proc readable the same swap is not followed.
tmp, path, strays = make_table(100)
bucket, names = next(iter(strays.items()))
outside = os.path.join(tmp, "outside")
os.makedirs(outside)
for n in names:
    with open(os.path.join(outside, n), "w") as f:
        f.write("precious")
io = _SwapsAtFirstUnlink(path)
with ThreadPoolExecutor(4) as pool:
    deleted = io.delete_files([os.path.join(bucket, n) for n in names], pool)
print("control (/proc readable): files left outside:", len(os.listdir(outside)), "of",
      len(names))
