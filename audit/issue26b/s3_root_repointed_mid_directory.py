"""Item 3: the table root is a symlink (t -> A); while _unlink_in works through one directory,
an operator re-points it (t -> B). From then on A is outside the root. Before 201cd30 the root
was resolved afresh at each re-check (every RECHECK_EVERY=16 unlinks); now once per _unlink_in
call (a resolver scope), so the re-checks keep comparing with A and the whole directory's
slice is unlinked. Run with PYTHONPATH=<new tree> and <old tree> (git archive 201cd30^)."""
import os, sys, tempfile, types
from concurrent.futures import ThreadPoolExecutor

import paimon_commit.io.local as L
from paimon_commit.io.local import LocalFileIO

real_os = L.os


class Proxy(types.ModuleType):
    def __init__(self):
        super().__init__("os")
        self.n = 0
        self.hook = None

    def __getattr__(self, name):
        return getattr(real_os, name)

    def unlink(self, *a, **k):
        self.n += 1
        if self.hook and self.n == 5:
            self.hook()
        return real_os.unlink(*a, **k)


def run(use_pool):
    tmp = tempfile.mkdtemp()
    A, B = os.path.join(tmp, "A"), os.path.join(tmp, "B")
    os.makedirs(A + "/p"); os.makedirs(B + "/p")
    for i in range(200):
        open(f"{A}/p/f{i:03d}", "w").close()
    root = os.path.join(tmp, "t")
    os.symlink(A, root)
    io = LocalFileIO(root)
    paths = [f"{root}/p/f{i:03d}" for i in range(200)]

    def repoint():
        os.symlink(B, root + ".new"); os.rename(root + ".new", root)

    proxy = Proxy(); proxy.hook = repoint
    L.os = proxy
    try:
        if use_pool:
            with ThreadPoolExecutor(2) as ex:
                got = io.delete_files(paths, executor=ex)
        else:
            got = io.delete_files(paths)
    finally:
        L.os = real_os
    left = len(os.listdir(A + "/p"))
    print(f"  pool={use_pool}: root re-pointed A->B after the 5th unlink; "
          f"unlinked in A/p (now outside the root): {200 - left}, reported {len(got)}")


print(sys.argv[1] if len(sys.argv) > 1 else "", L.__file__)
run(False)
run(True)
