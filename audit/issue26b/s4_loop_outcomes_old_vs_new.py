"""Item 2: LocalFileIO._unlink_in's inlined loop vs _unlink (before 201cd30), case by case.
Run under both trees and diff: PYTHONPATH=<tree> python s4_... > out; the module's `os` is
replaced by a proxy that can act at the k-th unlink (swap a file for a directory or a symlink,
inject EACCES/EPERM), as tests/faults/fault_io.py does."""
import errno, logging, os, sys, tempfile, types
from concurrent.futures import ThreadPoolExecutor

logging.basicConfig(level=logging.WARNING, format="  log: %(message)s")
import paimon_commit.io.local as L
from paimon_commit.io.base import deleted_before
from paimon_commit.io.local import LocalFileIO
from paimon_commit.io.metered import ContextExecutor, metering

real_os = L.os


class Proxy(types.ModuleType):
    def __init__(self, hook):
        super().__init__("os"); self.n = 0; self.hook = hook

    def __getattr__(self, name):
        return getattr(real_os, name)

    def unlink(self, path, *a, **k):
        self.n += 1
        self.hook(self.n, path)
        return real_os.unlink(path, *a, **k)


def scenario(name, setup, hook=lambda k, p, c: None, pool=False, n=40):
    tmp = tempfile.mkdtemp(); root = tmp + "/t"; d = root + "/p"
    os.makedirs(d); os.makedirs(tmp + "/out")
    open(tmp + "/out/victim", "w").close()
    names = [f"f{i:02d}" for i in range(n)]
    for x in names:
        open(f"{d}/{x}", "w").close()
    ctx = dict(tmp=tmp, d=d, names=names)
    names = setup(ctx) or names
    io = LocalFileIO(root); io.deletion_log = []
    paths = [f"{d}/{x}" for x in names]
    L.os = Proxy(lambda k, p: hook(k, p, ctx))
    try:
        with metering() as m:
            try:
                if pool:
                    with ContextExecutor(2) as ex:
                        got = io.delete_files(paths * 1, executor=ex)
                else:
                    got = io.delete_files(paths)
                res = f"ok deleted={len(got)}"
            except BaseException as e:
                res = f"{type(e).__name__}: {str(e).replace(tmp, '$T')} before={len(deleted_before(e))}"
    finally:
        L.os = real_os
    left = sorted(os.listdir(d))
    print(f"{name}: {res} | log={len(io.deletion_log)} DELETE billed={m.bill()['DELETE']} "
          f"left={len(left)} victim outside={os.path.exists(tmp + '/out/victim')}")


def dir_at_10(c):
    os.unlink(c["d"] + "/f10"); os.mkdir(c["d"] + "/f10")


def swap_to_dir(k, p, c):
    if k == 3:
        os.unlink(c["d"] + "/f20"); os.mkdir(c["d"] + "/f20")


def swap_to_symlink(k, p, c):
    if k == 3:
        os.unlink(c["d"] + "/f20"); os.symlink(c["tmp"] + "/out/victim", c["d"] + "/f20")


def swap_to_dirsymlink(k, p, c):
    if k == 3:
        os.unlink(c["d"] + "/f20"); os.symlink(c["tmp"] + "/out", c["d"] + "/f20")


def err(code):
    def h(k, p, c):
        if k in (5, 30):
            raise OSError(code, os.strerror(code), p)
    return h


def gone(c):
    os.unlink(c["d"] + "/f07")


def nul(c):
    return c["names"][:10] + ["x\x00y"] + c["names"][10:]


def long_name(c):
    return c["names"][:10] + ["y" * 300] + c["names"][10:]


print("tree:", L.__file__)
for pool in (False, True):
    print(f"--- executor={pool} (pool path needs >64 paths: n=80)")
    n = 80 if pool else 40
    scenario("directory where a file was expected", dir_at_10, pool=pool, n=n)
    scenario("file -> directory after the check", lambda c: None, swap_to_dir, pool=pool, n=n)
    scenario("file -> symlink to a file outside", lambda c: None, swap_to_symlink, pool=pool, n=n)
    scenario("file -> symlink to a dir outside", lambda c: None, swap_to_dirsymlink, pool=pool, n=n)
    scenario("EACCES at unlinks 5 and 30", lambda c: None, err(errno.EACCES), pool=pool, n=n)
    scenario("EPERM at unlinks 5 and 30", lambda c: None, err(errno.EPERM), pool=pool, n=n)
    scenario("EISDIR injected at 5 and 30", lambda c: None, err(errno.EISDIR), pool=pool, n=n)
    scenario("ENOENT (f07 gone before)", gone, pool=pool, n=n)
    scenario("NUL byte in a name", nul, pool=pool, n=n)
    scenario("name of 300 bytes", long_name, pool=pool, n=n)
