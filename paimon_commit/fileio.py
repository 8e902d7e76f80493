"""Storage for one table root: local file system (fast path on `os`) or any `pyarrow.fs`.

Everything that removes a file or a directory goes through `FileIO.delete_quietly` or
`FileIO.delete_empty_dir`, which refuse any path that is not physically inside the table root.
"""
from __future__ import annotations

import errno
import logging
import os
import posixpath
import uuid
from abc import ABC, abstractmethod
from typing import Callable, Dict, Iterable, Iterator, List, NamedTuple, Optional

from .errors import UnsafePathError

log = logging.getLogger(__name__)

__all__ = ["FileStatus", "FileIO", "LocalFileIO", "PyArrowFileIO"]


class FileStatus(NamedTuple):
    # A NamedTuple, not a dataclass: listings build one per file, millions for big tables.
    path: str
    name: str
    size: int
    mtime_ms: int
    is_dir: bool
    is_symlink: bool = False


def _temp_name(final_name: str) -> str:
    # Same convention as Paimon Java and pypaimon: readers skip names starting with '.'.
    return f".{final_name}.{uuid.uuid4()}.tmp"


class FileIO(ABC):
    """Storage of one table root. Paths are strings in the storage's own namespace (no
    scheme). Subclasses implement the primitives; the deletion gate lives here, so no
    subclass can remove anything without `_check_inside` having accepted the path first."""

    root: str

    @staticmethod
    def for_path(table_path: str, options: Optional[Dict[str, str]] = None) -> "FileIO":
        """A local path or `file://` URI gets LocalFileIO; object stores (s3://, gs://, az://,
        abfs://) get ObjectStoreFileIO; anything else (hdfs://, …) goes through pyarrow.fs."""
        if "://" not in table_path or table_path.startswith("file://"):
            local = table_path[len("file://"):] if table_path.startswith("file://") else table_path
            return LocalFileIO(local)
        scheme = table_path.split("://", 1)[0].lower()
        if scheme in OBJECT_STORE_SCHEMES:
            from .objectstore import ObjectStoreFileIO
            return ObjectStoreFileIO.from_uri(table_path, options or {})
        return PyArrowFileIO.from_uri(table_path)

    def join(self, *parts: str) -> str:
        return posixpath.join(*parts)

    # --- reading -------------------------------------------------------------------------
    @abstractmethod
    def read_bytes(self, path: str) -> bytes:
        """The whole file; FileNotFoundError if it does not exist."""

    @abstractmethod
    def exists(self, path: str) -> bool:
        """Whether a file or directory is there."""

    @abstractmethod
    def file_size(self, path: str) -> int:
        """Size in bytes; FileNotFoundError if absent."""

    @abstractmethod
    def list_status(self, directory: str) -> List[FileStatus]:
        """Children of a directory; [] when it does not exist."""

    def list_names(self, directory: str) -> List[str]:
        """Names of the children of a directory; [] when it does not exist."""
        return [s.name for s in self.list_status(directory)]

    # --- writing -------------------------------------------------------------------------
    @abstractmethod
    def mkdirs(self, directory: str) -> None:
        """Create a directory and its parents (a no-op where directories are implicit)."""

    @abstractmethod
    def write_new(self, path: str, data: bytes) -> None:
        """Write a file whose name is unique (uuid): no temp file needed."""

    @abstractmethod
    def overwrite_atomic(self, path: str, data: bytes) -> None:
        """Replace a mutable file (hints, tags, consumers) so readers see old or new, never half."""

    @abstractmethod
    def try_create_atomic(self, path: str, data: bytes,
                          precondition: Optional[Callable[[], bool]] = None) -> bool:
        """Create `path` with `data` only if it does not exist, atomically across processes.
        Returns False when it already exists. Any exception means the outcome is unknown.

        `precondition` is called once the data is durable, right before the atomic step;
        if it returns False nothing is created and the result is False. (The slow part,
        writing and syncing, then lies outside the window between the check and the create.)"""

    def check_atomic_create(self) -> None:
        """Raise if this storage cannot prove that `try_create_atomic` is atomic (several
        writers could then both publish one snapshot id). Local and HDFS storage can."""

    def file_versions(self, directory: str) -> Optional[Dict[str, str]]:
        """name -> a version of each file in a directory that changes whenever the file is
        replaced (a cache validator), in one listing; None where the storage has none."""
        return None

    def link_time_ns(self, path: str) -> Optional[int]:
        """When `path` got its name, where the storage can tell (None otherwise, or if the
        file is gone). Comparable between files of one file system."""
        return None

    @abstractmethod
    def open_output_stream(self, path: str):
        """A writable binary stream for a new file (parents created as needed)."""

    @abstractmethod
    def open_input_file(self, path: str):
        """A seekable binary file object (parquet readers need random access)."""

    def read_parquet(self, path: str):
        """A whole parquet file as a pyarrow Table. Through a Python file object parquet is
        read on one thread: pyarrow 19's threaded reads from Python file objects can abort
        the process at exit. Subclasses with a native pyarrow filesystem read through it."""
        import pyarrow.parquet as pq
        with self.open_input_file(path) as f:
            return pq.read_table(f, use_threads=False)

    # --- deleting: the gate --------------------------------------------------------------
    def deletion_refused(self, path: str) -> Optional[str]:
        """Why the gate would refuse to delete `path`, or None. Planners call this so that a
        hostile path is skipped up front instead of stopping a run half-way."""
        try:
            self._check_inside(path)
        except UnsafePathError as e:
            return str(e)
        return None

    def forget_resolved_dirs(self) -> None:
        """Drop cached path resolutions (each operation calls this when it starts)."""

    @abstractmethod
    def _check_inside(self, path: str) -> str:
        """The normalised path if it is physically inside the root (and not the root);
        UnsafePathError otherwise."""

    # Paths one request can delete where the store batches deletes (S3: 1,000); None where
    # each file is its own system call and small chunks parallelise better.
    delete_batch_size: Optional[int] = None

    # When a list, every path removed through the gate is appended to it (the CLI reports
    # what a failed run had already deleted).
    deletion_log: Optional[List[str]] = None

    def delete_quietly(self, path: str) -> bool:
        """Delete one file. True if deleted, False if already gone or the delete failed
        (logged). Raises UnsafePathError for anything outside the root or a directory."""
        norm = self._check_inside(path)
        deleted = self._unlink(norm)
        if deleted and self.deletion_log is not None:
            self.deletion_log.append(norm)
        return deleted

    def delete_files(self, paths: Iterable[str]) -> List[str]:
        """Delete several files through the gate (every path is checked before the first
        delete); returns the ones deleted. Object stores batch the requests."""
        deleted = self._unlink_many([self._check_inside(p) for p in paths])
        if self.deletion_log is not None:
            self.deletion_log.extend(deleted)
        return deleted

    def delete_empty_dir(self, path: str) -> bool:
        """Remove a directory only if it is empty; never the root, never recursively.
        Storage without a non-recursive directory remove leaves directories alone."""
        norm = self._check_inside(path)
        removed = self._rmdir(norm)
        if removed and self.deletion_log is not None:
            self.deletion_log.append(norm + "/")
        return removed

    @abstractmethod
    def _unlink(self, norm: str) -> bool:
        """Remove one file at a path the gate accepted (see delete_quietly)."""

    def _unlink_many(self, norms: List[str]) -> List[str]:
        """Remove files at paths the gate accepted; the ones removed."""
        return [p for p in norms if self._unlink(p)]

    def _rmdir(self, norm: str) -> bool:
        """Remove an empty directory at a path the gate accepted; False = left alone."""
        return False


OBJECT_STORE_SCHEMES = frozenset({"s3", "s3a", "s3n", "gs", "gcs", "az", "abfs", "abfss",
                                  "azure"})


class LocalFileIO(FileIO):
    def __init__(self, root: str):
        self.root = os.path.abspath(root)
        self._real_root: Optional[str] = None
        self._real_dirs: Dict[str, str] = {}

    # --- path safety ---------------------------------------------------------------------
    def _physical_root(self) -> str:
        if self._real_root is None:
            self._real_root = os.path.realpath(self.root)
        return self._real_root

    def _check_inside(self, path: str, allow_root: bool = False) -> str:
        if ".." in path.split(os.sep):
            raise UnsafePathError(f"refusing path with '..': {path}")
        norm = os.path.normpath(os.path.abspath(path))
        if norm == self.root:
            if allow_root:
                return norm
            raise UnsafePathError(f"refusing to delete the table root {self.root}")
        if not norm.startswith(self.root + os.sep):
            raise UnsafePathError(f"refusing to touch {path}: outside the table root {self.root}")
        parent = os.path.dirname(norm)
        real_parent = self._real_dirs.get(parent)
        if real_parent is None:
            real_parent = os.path.realpath(parent)
            if len(self._real_dirs) > 100_000:
                self._real_dirs.clear()
            self._real_dirs[parent] = real_parent
        proot = self._physical_root()
        if real_parent != proot and not real_parent.startswith(proot + os.sep):
            raise UnsafePathError(
                f"refusing to touch {path}: its directory resolves to {real_parent}, outside "
                f"the table root {proot} (symlink?)")
        return norm

    def forget_resolved_dirs(self) -> None:
        """Drop cached directory resolutions (call at the start of each operation)."""
        self._real_dirs.clear()
        self._real_root = None

    # --- reading -------------------------------------------------------------------------
    def read_bytes(self, path: str) -> bytes:
        with open(path, "rb") as f:
            return f.read()

    def exists(self, path: str) -> bool:
        return os.path.exists(path)

    def file_size(self, path: str) -> int:
        return os.stat(path).st_size

    def list_status(self, directory: str) -> List[FileStatus]:
        out = []
        try:
            it = os.scandir(directory)
        except (FileNotFoundError, NotADirectoryError):
            return out
        append = out.append
        with it:
            for e in it:
                try:
                    st = e.stat(follow_symlinks=False)
                except FileNotFoundError:
                    continue  # removed while listing
                append(FileStatus(e.path, e.name, st.st_size, st.st_mtime_ns // 1_000_000,
                                  e.is_dir(follow_symlinks=False), e.is_symlink()))
        return out

    def file_versions(self, directory: str) -> Optional[Dict[str, str]]:
        # inode + change time + size: a re-created file (temp file + link) is a new inode,
        # and a reused inode number comes with a new change time.
        out: Dict[str, str] = {}
        try:
            it = os.scandir(directory)
        except (FileNotFoundError, NotADirectoryError):
            return out
        with it:
            for e in it:
                try:
                    st = e.stat(follow_symlinks=False)
                except FileNotFoundError:
                    continue
                out[e.name] = f"{st.st_ino}:{st.st_ctime_ns}:{st.st_size}"
        return out

    def list_names(self, directory: str) -> List[str]:
        try:
            return os.listdir(directory)
        except (FileNotFoundError, NotADirectoryError):
            return []

    # --- writing -------------------------------------------------------------------------
    def mkdirs(self, directory: str) -> None:
        os.makedirs(directory, exist_ok=True)

    def write_new(self, path: str, data: bytes) -> None:
        try:
            f = open(path, "xb")
        except FileNotFoundError:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            f = open(path, "xb")
        with f:
            f.write(data)

    def _write_temp(self, path: str, data: bytes, sync: bool) -> str:
        directory, name = os.path.split(path)
        tmp = os.path.join(directory, _temp_name(name))
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileNotFoundError:
            os.makedirs(directory, exist_ok=True)
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            if sync:
                os.fsync(fd)
        finally:
            os.close(fd)
        return tmp

    def overwrite_atomic(self, path: str, data: bytes) -> None:
        tmp = self._write_temp(path, data, sync=False)
        try:
            os.replace(tmp, path)
        except BaseException:
            _unlink_quiet(tmp)
            raise

    def try_create_atomic(self, path: str, data: bytes,
                          precondition: Optional[Callable[[], bool]] = None) -> bool:
        if os.path.exists(path):
            return False
        tmp = self._write_temp(path, data, sync=True)
        try:
            if precondition is not None and not precondition():
                return False
            # link(2) fails with EEXIST if the target exists: a true cross-process
            # create-if-absent, unlike rename which silently replaces.
            os.link(tmp, path)
            return True
        except FileExistsError:
            return False
        except OSError as e:
            if e.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV):
                raise
            log.warning("hard links unsupported under %s (%s); falling back to check-then-rename,"
                        " which is not safe against concurrent writers", path, e)
            if os.path.exists(path):
                return False
            os.rename(tmp, path)
            return True
        finally:
            _unlink_quiet(tmp)

    def link_time_ns(self, path: str) -> Optional[int]:
        # link(2) sets the inode's change time: the moment the name appeared.
        try:
            return os.stat(path, follow_symlinks=False).st_ctime_ns
        except OSError:
            return None

    def open_input_file(self, path: str):
        return open(path, "rb")

    def read_parquet(self, path: str):
        import pyarrow.parquet as pq
        from pyarrow import fs as pafs
        return pq.read_table(path, filesystem=pafs.LocalFileSystem(), partitioning=None)

    def open_output_stream(self, path: str):
        try:
            return open(path, "xb")
        except FileNotFoundError:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            return open(path, "xb")

    # --- deleting ------------------------------------------------------------------------
    def _unlink(self, norm: str) -> bool:
        try:
            os.unlink(norm)
            return True
        except FileNotFoundError:
            return False
        except IsADirectoryError:
            raise UnsafePathError(f"refusing to delete directory {norm} as a file") from None
        except OSError as e:
            if os.path.isdir(norm) and not os.path.islink(norm):
                raise UnsafePathError(f"refusing to delete directory {norm} as a file") from None
            log.warning("could not delete %s: %s", norm, e)
            return False

    def _rmdir(self, norm: str) -> bool:
        if os.path.islink(norm):
            raise UnsafePathError(f"refusing to remove {norm}: it is a symlink")
        try:
            os.rmdir(norm)  # rmdir(2) fails on a non-empty directory: never recursive
            return True
        except OSError:
            return False  # not empty, gone, or not a directory: all mean "leave it"


def _unlink_quiet(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


class PyArrowFileIO(FileIO):
    """HDFS, S3, GCS, … through pyarrow.fs. Create-if-absent relies on the store: HDFS rename
    fails on an existing target; object stores without conditional puts are check-then-write
    and need a single committer per table."""

    def __init__(self, fs, root: str):
        self.fs = fs
        self.root = root.rstrip("/")
        self._made_dirs: set = set()

    def _ensure_parent(self, path: str) -> None:
        # Local and HDFS need parent directories; object stores treat this as a no-op.
        parent = posixpath.dirname(path)
        if parent not in self._made_dirs:
            self.fs.create_dir(parent, recursive=True)
            self._made_dirs.add(parent)

    @classmethod
    def from_uri(cls, uri: str) -> "PyArrowFileIO":
        from pyarrow import fs as pafs
        filesystem, path = pafs.FileSystem.from_uri(uri)
        return cls(filesystem, path)

    def _check_inside(self, path: str) -> str:
        norm = posixpath.normpath(path)
        if norm == self.root:
            raise UnsafePathError(f"refusing to delete the table root {self.root}")
        if ".." in path.split("/") or not norm.startswith(self.root + "/"):
            raise UnsafePathError(f"refusing to touch {path}: outside the table root {self.root}")
        return norm

    def read_bytes(self, path: str) -> bytes:
        try:
            with self.fs.open_input_stream(path) as f:
                return f.read()
        except FileNotFoundError:
            raise
        except OSError as e:
            if not self.exists(path):
                raise FileNotFoundError(path) from e
            raise

    def _info(self, path: str):
        return self.fs.get_file_info(path)

    def exists(self, path: str) -> bool:
        from pyarrow import fs as pafs
        return self._info(path).type != pafs.FileType.NotFound

    def file_size(self, path: str) -> int:
        info = self._info(path)
        if info.size is None:
            raise FileNotFoundError(path)
        return info.size

    def list_status(self, directory: str) -> List[FileStatus]:
        from pyarrow import fs as pafs
        try:
            infos = self.fs.get_file_info(pafs.FileSelector(directory, allow_not_found=True))
        except (FileNotFoundError, NotADirectoryError):
            return []
        out = []
        for i in infos:
            mtime = int(i.mtime_ns // 1_000_000) if i.mtime_ns is not None else 0
            out.append(FileStatus(i.path, i.base_name, i.size or 0, mtime,
                                  i.type == pafs.FileType.Directory))
        return out

    def mkdirs(self, directory: str) -> None:
        self.fs.create_dir(directory, recursive=True)

    def write_new(self, path: str, data: bytes) -> None:
        self._ensure_parent(path)
        with self.fs.open_output_stream(path) as f:
            f.write(data)

    def overwrite_atomic(self, path: str, data: bytes) -> None:
        directory, name = posixpath.split(path)
        tmp = posixpath.join(directory, _temp_name(name))
        self.write_new(tmp, data)
        try:
            self.fs.move(tmp, path)
        except BaseException:
            self._delete_raw(tmp)
            raise

    def try_create_atomic(self, path: str, data: bytes,
                          precondition: Optional[Callable[[], bool]] = None) -> bool:
        if self.exists(path):
            return False
        directory, name = posixpath.split(path)
        tmp = posixpath.join(directory, _temp_name(name))
        self.write_new(tmp, data)
        try:
            if precondition is not None and not precondition():
                return False
            self.fs.move(tmp, path)
            return True
        except OSError:
            if self.exists(path):
                return False
            raise
        finally:
            self._delete_raw(tmp)

    def open_output_stream(self, path: str):
        self._ensure_parent(path)
        return self.fs.open_output_stream(path)

    def open_input_file(self, path: str):
        return self.fs.open_input_file(path)

    def read_parquet(self, path: str):
        import pyarrow.parquet as pq
        return pq.read_table(path, filesystem=self.fs, partitioning=None)

    def _delete_raw(self, path: str) -> None:
        try:
            self.fs.delete_file(path)
        except OSError:
            pass

    def _unlink(self, norm: str) -> bool:
        from pyarrow import fs as pafs
        info = self._info(norm)
        if info.type == pafs.FileType.NotFound:
            return False
        if info.type == pafs.FileType.Directory:
            raise UnsafePathError(f"refusing to delete directory {norm} as a file")
        try:
            self.fs.delete_file(norm)
            return True
        except FileNotFoundError:
            return False
        except OSError as e:
            log.warning("could not delete %s: %s", norm, e)
            return False

    # No _rmdir: pyarrow.fs has only a recursive `delete_dir`, and a file written into the
    # directory between a listing and that call would go with it. Directories stay.


def walk_files(io: FileIO, directory: str) -> Iterator[FileStatus]:
    """Depth-first listing of regular files (used by tests and reports)."""
    for st in io.list_status(directory):
        if st.is_dir:
            yield from walk_files(io, st.path)
        else:
            yield st
