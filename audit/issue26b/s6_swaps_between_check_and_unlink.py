"""Items 1/3: a directory D accepted by the gate, then (before / during its unlinks) D or its
parent swapped for a symlink out of the root (same file system: rename + symlink). Counts the
files unlinked OUTSIDE the root. LocalFileIO (fd + O_NOFOLLOW + re-check) and PyArrowFileIO on
a local directory (path-based delete_file after the gate). Run under both trees."""
import logging, os, sys, tempfile, types
logging.disable(logging.WARNING)
import paimon_commit.io.local as L
from paimon_commit.io.local import LocalFileIO
from paimon_commit.io.arrow import PyArrowFileIO
from paimon_commit.io.metered import ContextExecutor

real_os = L.os


def setup(n=100):
    tmp = tempfile.mkdtemp(); root = tmp + "/t"
    os.makedirs(root + "/part=1/bucket-0"); os.makedirs(tmp + "/outside")
    for i in range(n):
        open(f"{root}/part=1/bucket-0/f{i:03d}", "w").close()
    return tmp, root, [f"{root}/part=1/bucket-0/f{i:03d}" for i in range(n)]


def swap(tmp, root, which):
    """Move `which` (a dir in the root) out, copy of the names left outside, and put a symlink
    to it in its place: the files named by the paths now live outside the root."""
    src = root + "/" + which
    dst = tmp + "/outside/" + which.replace("/", "_")
    os.rename(src, dst)
    os.symlink(dst, src)
    return dst


def count_outside(tmp):
    return sum(len(fs) for _, _, fs in os.walk(tmp + "/outside"))


def local_case(which, at, pool):
    tmp, root, paths = setup()
    state = {"n": 0}

    class P(types.ModuleType):
        def __getattr__(self, k):
            return getattr(real_os, k)

        def open(self, *a, **k):   # swap right before the directory is opened (at=0)
            if at == 0 and not state.get("done") and a and str(a[0]).endswith("bucket-0"):
                state["done"] = swap(tmp, root, which)
            return real_os.open(*a, **k)

        def unlink(self, *a, **k):
            state["n"] += 1
            if at and state["n"] == at:
                state["done"] = swap(tmp, root, which)
            return real_os.unlink(*a, **k)
    L.os = P("os")
    try:
        io = LocalFileIO(root)
        got = io.delete_files(paths, executor=ContextExecutor(2) if pool else None)
    finally:
        L.os = real_os
    print(f"  local   swap {which!r:20} at unlink {at:2} pool={pool}: reported {len(got):3}, "
          f"unlinked after the swap (outside the root): {max(0, 100 - count_outside(tmp) - max(at - 1, 0))}")


def arrow_other(at):
    """D swapped for a symlink to ANOTHER directory outside (another table's snapshot/ or
    bucket) holding files of the same names: those unrelated files are deleted."""
    tmp, root, paths = setup()
    other = tmp + "/other_table_bucket"
    os.makedirs(other)
    for i in range(100):
        open(f"{other}/f{i:03d}", "w").close()
    io = PyArrowFileIO.from_uri("file://" + root)
    orig = io._unlink
    n = [0]

    def unlink(p):
        n[0] += 1
        if n[0] == at:
            os.rename(root + "/part=1/bucket-0", tmp + "/outside/moved")
            os.symlink(other, root + "/part=1/bucket-0")
        return orig(p)
    io._unlink = unlink
    got = io.delete_files(paths)
    print(f"  pyarrow swap to a symlink to another dir at unlink {at}: reported {len(got)}, "
          f"files of the other directory deleted: {100 - len(os.listdir(other))}")


def arrow_case(which, at):
    tmp, root, paths = setup()
    io = PyArrowFileIO.from_uri("file://" + root)
    orig = io._unlink
    n = [0]

    def unlink(p):
        n[0] += 1
        if n[0] == at:
            swap(tmp, root, which)
        return orig(p)
    io._unlink = unlink
    got = io.delete_files(paths)
    # files deleted after the swap were deleted through the symlink, outside the root
    print(f"  pyarrow swap {which!r:20} at unlink {at:2}: reported {len(got):3}, "
          f"unlinked outside the root: {100 - (at - 1) - count_outside(tmp)}")


print("tree:", L.__file__)
for pool in (False, True):
    for which in ("part=1/bucket-0", "part=1"):
        for at in (0, 5):
            local_case(which, at, pool)
for which in ("part=1/bucket-0", "part=1"):
    arrow_case(which, 5)
arrow_other(5)
