"""Item 2: every way the test suite injects faults still reaches _unlink once per file:
FaultIO / FaultyIO (subclasses), an instance attribute, and kill_worker.py's in-place wrap of
LocalFileIO._unlink on the class (applied after import, as the worker does)."""
import os, sys, tempfile
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tests"))
from paimon_commit.io.local import LocalFileIO
from paimon_commit.io.metered import ContextExecutor
from faults.fault_io import FaultIO, Crash
from faults.faulty_io import FaultyIO


def tree(n=100):
    tmp = tempfile.mkdtemp(); d = tmp + "/t/p"; os.makedirs(d)
    for i in range(n):
        open(f"{d}/f{i:03d}", "w").close()
    return tmp + "/t", [f"{d}/f{i:03d}" for i in range(n)]


for pool in (False, True):
    root, paths = tree()
    io = FaultIO(root)
    ex = ContextExecutor(2) if pool else None
    io.delete_files(paths, executor=ex)
    print(f"pool={pool} FaultIO counts:", dict(io.counts))
    root, paths = tree()
    io = FaultIO(root, kind="delete", at=7, mode="crash")
    try:
        io.delete_files(paths, executor=ex)
    except Crash as e:
        print(f"pool={pool} FaultIO crash at 7:", e.__class__.__name__, "left",
              len(os.listdir(root + "/p")))
    root, paths = tree()
    io = FaultIO(root, kind="delete", at=7, mode="unlink")
    got = io.delete_files(paths, executor=ex)
    print(f"pool={pool} FaultIO os-level EACCES at 7: deleted {len(got)}, left",
          os.listdir(root + "/p"))
    root, paths = tree()
    io = FaultyIO(root, kinds={"_unlink"})
    io.delete_files(paths, executor=ex)
    print(f"pool={pool} FaultyIO _unlink calls:", io.count)
    root, paths = tree()
    io = LocalFileIO(root); calls = []
    orig = io._unlink
    io._unlink = lambda p: (calls.append(p), orig(p))[1]
    io.delete_files(paths, executor=ex)
    print(f"pool={pool} instance attribute _unlink calls:", len(calls))

# kill_worker's wrap, in place on the class
import faults.kill_worker as kw
kw._count_deletions(None)
for pool in (False, True):
    kw._calls[0] = 0
    root, paths = tree()
    LocalFileIO(root).delete_files(paths, executor=ContextExecutor(2) if pool else None)
    print(f"pool={pool} kill_worker wrapped LocalFileIO._unlink calls:", kw._calls[0])
