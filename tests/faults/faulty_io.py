"""A FileIO that dies at its k-th operation: the failing call raises, and so does every call
after it, as if the process had been killed there (cleanup handlers cannot repair anything)."""
from paimon_commit.io.local import LocalFileIO


class Crash(BaseException):
    """Not an Exception: nothing in the library may swallow it."""


OPS = ("read_bytes", "exists", "list_status", "list_names", "list_files", "mkdirs", "write_new",
       "overwrite_atomic", "try_create_atomic", "open_output_stream", "_unlink",
       "_rmdir", "file_size", "open_input_file")


class FaultyIO(LocalFileIO):
    def __init__(self, root, fail_at=None, kinds=OPS):
        super().__init__(root)
        self.fail_at = fail_at
        self.kinds = set(kinds)
        self.count = 0
        self.dead = False
        self.log = []

    def _op(self, name, path):
        if self.dead:
            raise Crash(f"dead (after op {self.fail_at})")
        if name in self.kinds:
            self.count += 1
            self.log.append((name, path))
            if self.fail_at is not None and self.count == self.fail_at:
                self.dead = True
                raise Crash(f"injected crash at op {self.count}: {name} {path}")


def _wrap(name):
    base = getattr(LocalFileIO, name)

    def method(self, path, *args, **kwargs):
        self._op(name, path)
        return base(self, path, *args, **kwargs)
    method.__name__ = name
    return method


for _name in OPS:
    setattr(FaultyIO, _name, _wrap(_name))
