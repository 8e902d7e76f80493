"""Item 1: FileIO._check_all vs _check_inside path by path, hostile strings, several roots and
storages (LocalFileIO incl. root "/" and a root given with a trailing slash, PyArrowFileIO on
a local dir, ObjectStoreFileIO on obstore's MemoryStore). Any difference in verdict, message,
exception type or returned value (identity) is printed."""
import os, random, sys, tempfile

from paimon_commit import UnsafePathError
from paimon_commit.io.local import LocalFileIO
from paimon_commit.io.arrow import PyArrowFileIO


class S(str):
    pass


def outcome(fn):
    try:
        v = fn()
        return ("ok", [(type(x).__name__, x) for x in v])
    except (UnsafePathError, ValueError, TypeError) as e:
        return (type(e).__name__, str(e))


def per_path(io, paths):
    with io.resolution_scope():
        return [io._check_inside(p) for p in paths]


tmp = tempfile.mkdtemp()
root = os.path.join(tmp, "t")
for d in ("a", "a/b", "real"):
    os.makedirs(os.path.join(root, d))
os.makedirs(os.path.join(tmp, "tt", "x"))
os.makedirs(os.path.join(tmp, "outside"))
os.symlink(os.path.join(tmp, "outside"), os.path.join(root, "link"))
os.symlink(os.path.join(root, "real"), os.path.join(root, "inner"))

NAMES = ["f", "x\x00y", "a\\b", "..\\x", ".", "..", "", " ", "\u2024\u2024", "\uff0f", "a\u0338",
         "x" * 300, "f/", "\udcff", "...", "\n", "~"]
DIRS = ["a", "a/b", "link", "inner", "real", "", "a/", "a//b", "./a", "a/..", "link/x"]


def mk(base, rng):
    d = rng.choice(DIRS)
    n = rng.choice(NAMES)
    p = base + ("/" + d if d else "") + "/" + n
    r = rng.random()
    if r < 0.03:
        return S(p)
    if r < 0.05:
        return p.encode("utf-8", "surrogateescape")
    if r < 0.06:
        return None
    return p


def fuzz(io, bases, label, n=4000, seed=1):
    rng = random.Random(seed)
    diffs = 0
    for _ in range(n):
        k = rng.randint(1, 6)
        base_first = rng.choice(bases)
        paths = [mk(base_first, rng) for _ in range(k)]
        if rng.random() < 0.5:   # siblings of an accepted one
            paths = [base_first + "/a/f"] + paths
        a = outcome(lambda: io._check_all(paths))
        b = outcome(lambda: per_path(io, paths))
        if a != b:
            diffs += 1
            if diffs < 5:
                print("DIFF", label, paths, a, b)
        # identity of returned objects (a str subclass must come back as itself)
        if a[0] == "ok":
            got = io._check_all(paths)
            if any(x is not y for x, y in zip(got, paths)):
                print("NOT SAME OBJECT", label, paths)
    print(f"{label}: {n} lists, {diffs} differences")


fuzz(LocalFileIO(root), [root, root + "/", root + "/a", tmp + "/tt", tmp, "", "/"], "local")
fuzz(LocalFileIO(root + "/"), [root, tmp + "/tt"], "local root given as 't/'")
fuzz(LocalFileIO(root + "//"), [root, tmp + "/tt"], "local root given as 't//'")
fuzz(PyArrowFileIO.from_uri("file://" + root), [root, tmp + "/tt", tmp], "pyarrow local")
fuzz(PyArrowFileIO.from_uri("file://" + root + "/"), [root, tmp + "/tt"], "pyarrow root 't/'")

# root "/" : only real directories on this machine, no deletes here
fuzz(LocalFileIO("/"), ["", "/tmp", "/etc"], "local root '/'", n=1500)
from pyarrow import fs as pafs
fuzz(PyArrowFileIO(pafs.LocalFileSystem(), "/"), ["", "/tmp"], "pyarrow root '/'", n=1500)

try:
    from obstore.store import MemoryStore
    from paimon_commit.io.object_store import ObjectStoreFileIO
    for prefix in ("db.db/t", ""):
        io = ObjectStoreFileIO(MemoryStore(), "s3", "bucket", prefix, "memory")
        print("object store uses the shortcut:",
              getattr(io._check_resolved, "__func__", None).__dict__.get("per_directory"))
        fuzz(io, [io.root, "bucket/db.db/tt", "bucket", "/bucket/db.db/t"],
             f"object store prefix={prefix!r}")
except ImportError as e:
    print("no obstore:", e)

# the prefix trick: root /tmp/t vs /tmp/tt/x, after an accepted sibling
io = LocalFileIO(root)
for paths in ([root + "/a/f", tmp + "/tt/x"], [root + "/f", root + "t/x"],
              [root + "/a/f", root + "/a/f\x00"], [root + "/a/f", root + "/a"],
              [root + "/a/f", root], [root + "/f", root + "/"]):
    print(paths, outcome(lambda: io._check_all(paths)) == outcome(lambda: per_path(io, paths)))
