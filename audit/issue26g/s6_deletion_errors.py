"""S6: what run_deletions / delete_files delete, log and raise when a path fails, on local
disk, with an executor (the new one-call path) and without.

 a) >= 64 paths, 3 directories, with a pool: one path is a directory (UnsafePathError in the
    middle of a slice). The deletion log must be exactly what is gone, and nothing may be
    unlinked after the call raised.
 b) < 64 paths with a pool: before 4305259 each path went through delete_quietly (gate check
    then unlink, one by one); now one delete_files call (every path checked first).
 c) one _unlink_many call, paths [A/1, B/1, A/sub (a directory), B/2]: with runs, B/1 went
    before the error; grouped by directory it does not.
"""
import os
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
import common  # noqa: F401
from paimon_commit.errors import UnsafePathError
from paimon_commit.io.deletion import run_deletions
from paimon_commit.io.local import LocalFileIO


def make(n_per_dir, dirs=("p=0", "p=1", "p=2")):
    root = tempfile.mkdtemp(prefix="a26g-del-")
    paths = []
    for i in range(n_per_dir):
        for d in dirs:   # interleaved, as expiration's data files are
            os.makedirs(os.path.join(root, d), exist_ok=True)
            p = os.path.join(root, d, f"f{i}")
            open(p, "w").close()
            paths.append(p)
    return root, paths


def on_disk(paths):
    return [p for p in paths if os.path.lexists(p)]


print("a) 90 paths, a directory among p=1's, pool of 4")
root, paths = make(30)
bad = os.path.join(root, "p=1", "f15")
os.unlink(bad)
os.mkdir(bad)
io = LocalFileIO(root)
io.deletion_log = []
with ThreadPoolExecutor(4) as pool:
    try:
        run_deletions(io, paths, pool)
        print("   no error?")
    except UnsafePathError as e:
        print("   raised:", type(e).__name__, str(e)[:70])
    gone = [p for p in paths if p != bad and not os.path.lexists(p)]
    time.sleep(0.2)
    gone2 = [p for p in paths if p != bad and not os.path.lexists(p)]
print(f"   gone={len(gone)} logged={len(io.deletion_log)} log==gone: "
      f"{sorted(io.deletion_log) == sorted(gone)}; unlinked after the raise: {len(gone2) - len(gone)}")
print(f"   left in p=1: {len(on_disk([p for p in paths if '/p=1/' in p]))} "
      f"(incl. the directory), p=0: {len(on_disk([p for p in paths if '/p=0/' in p]))}, "
      f"p=2: {len(on_disk([p for p in paths if '/p=2/' in p]))}")

print("b) 12 paths with a pool, one outside the root (index 6)")
for label in ("old (delete_quietly each)", "new (run_deletions)"):
    root, paths = make(4)
    outside = os.path.join(tempfile.mkdtemp(prefix="a26g-out-"), "x")
    open(outside, "w").close()
    paths.insert(6, outside)
    io = LocalFileIO(root)
    io.deletion_log = []
    with ThreadPoolExecutor(4) as pool:
        try:
            if label.startswith("old"):
                [p for p in paths if io.delete_quietly(p)]
            else:
                run_deletions(io, paths, pool)
        except UnsafePathError as e:
            err = type(e).__name__
    print(f"   {label:28s}: {err}; deleted before refusing: "
          f"{len([p for p in paths if not os.path.lexists(p)])}, logged {len(io.deletion_log)}; "
          f"outside file intact: {os.path.exists(outside)}")

print("c) one _unlink_many call [A/1, B/1, A/sub(dir), B/2]")
root = tempfile.mkdtemp(prefix="a26g-grp-")
for d in ("A", "B"):
    os.makedirs(os.path.join(root, d))
ps = [os.path.join(root, x) for x in ("A/1", "B/1", "A/sub", "B/2")]
for p in ps:
    if p.endswith("sub"):
        os.mkdir(p)
    else:
        open(p, "w").close()
io = LocalFileIO(root)
io.deletion_log = []
try:
    io.delete_files(ps)
except UnsafePathError as e:
    print("   raised", type(e).__name__)
print("   still there:", [os.path.relpath(p, root) for p in ps if os.path.lexists(p)],
      "logged:", [os.path.relpath(p, root) for p in io.deletion_log])
