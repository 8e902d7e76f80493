"""S4: LocalFileIO.read_bytes_versioned when the file changes while it is read (the change is
made from inside the read, after the fstat: a monkeypatched os.read). What matters: either no
version is returned, or the version returned differs from what a later listing
(file_versions) shows, so the cached bytes can never stand for the new content."""
import os
import tempfile
import common  # noqa: F401  (sys.path)
from paimon_commit.io import local as L

d = tempfile.mkdtemp(prefix="a26g-rv-")
io = L.LocalFileIO(d)
p = os.path.join(d, "snapshot-1")
A, B = b"A" * 300, b"B" * 300


def case(name, mutate):
    with open(p, "wb") as f:
        f.write(A)
    real_read, done = os.read, []

    def read(fd, n):
        out = real_read(fd, n)
        if not done:
            done.append(1)
            mutate()
        return out
    L.os.read = read
    try:
        data, version = io.read_bytes_versioned(p)
    finally:
        L.os.read = real_read
    listed = io.file_versions(d)["snapshot-1"]
    with open(p, "rb") as f:
        now = f.read()
    stale = version is not None and version == listed and data != now
    print(f"{name:40s} read={data[:1]!r}x{len(data)} version={'None' if version is None else 'set'}"
          f" listed==version: {version == listed}  file now={now[:1]!r}x{len(now)} "
          f"STALE-CACHE-POSSIBLE={stale}")
    return stale


def rewrite_in_place():
    with open(p, "r+b") as f:
        f.write(B)


def append():
    with open(p, "ab") as f:
        f.write(b"C" * 10)


def truncate_rewrite():
    with open(p, "wb") as f:
        f.write(B)


def replace():
    with open(p + ".t", "wb") as f:
        f.write(B)
    os.replace(p + ".t", p)


bad = [case("in place, same size, after the read", rewrite_in_place),
       case("appended during the read", append),
       case("truncated + rewritten, same size", truncate_rewrite),
       case("replaced (rename) during the read", replace)]
# a symlink: the listing's version (lstat) is never the read's (fstat of the target)
os.unlink(p)
with open(p + ".real", "wb") as f:
    f.write(A)
os.symlink(p + ".real", p)
data, version = io.read_bytes_versioned(p)
print("symlink: read version == listed version:", version == io.file_versions(d)["snapshot-1"])
print("any stale:", any(bad))
