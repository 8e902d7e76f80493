"""Item 1: the shortcut is taken only while _check_resolved is "marked per_directory". The mark
is a function attribute, and functools.wraps copies __dict__: an in-place wrapper (or a
subclass override) written with functools.wraps carries per_directory=True and is then asked
once per directory, not per path -- contrary to the docstring/safety.md ("any override or
in-place wrapper is asked per path"). Here a subclass adds a per-name rule (refuse *.keep) in
a wraps-decorated override: _check_all accepts what _check_inside refuses."""
import functools, os, tempfile

from paimon_commit import UnsafePathError
from paimon_commit.io.local import LocalFileIO


class Guarded(LocalFileIO):
    @functools.wraps(LocalFileIO._check_resolved)
    def _check_resolved(self, path, norm):
        if norm.endswith(".keep"):
            raise UnsafePathError(f"refusing {norm}: protected")
        super()._check_resolved(path, norm)


tmp = tempfile.mkdtemp()
root = os.path.join(tmp, "t")
os.makedirs(root + "/p")
for n in ("a.orc", "b.keep"):
    open(f"{root}/p/{n}", "w").close()
io = Guarded(root)
print("per_directory on the override:", getattr(Guarded._check_resolved, "per_directory", None))
try:
    io._check_inside(root + "/p/b.keep")
except UnsafePathError as e:
    print("_check_inside alone:", e)
print("_check_all:", io._check_all([root + "/p/a.orc", root + "/p/b.keep"]))
print("delete_files deleted:", io.delete_files([root + "/p/a.orc", root + "/p/b.keep"]))
print("b.keep still there:", os.path.exists(root + "/p/b.keep"))

# the same with an in-place spy on the class (how a test would count checks)
calls = []
orig = LocalFileIO._check_resolved


@functools.wraps(orig)
def spy(self, path, norm):
    calls.append(norm)
    return orig(self, path, norm)


LocalFileIO._check_resolved = spy
io2 = LocalFileIO(root)
io2._check_all([f"{root}/p/f{i}" for i in range(5)])
print("in-place functools.wraps spy asked", len(calls), "times for 5 paths")
LocalFileIO._check_resolved = orig
