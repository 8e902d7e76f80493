"""The FileIO base: storage of one table root, and the deletion gate.

Everything that removes a file or a directory goes through `FileIO.delete_quietly`,
`FileIO.delete_files` or `FileIO.delete_empty_dir`, which refuse any path that is not
physically inside the table root. Concrete storages (local.py, arrow.py, object_store.py) only
implement primitives; none of them can remove anything the gate has not accepted.
"""
from __future__ import annotations

import logging
import posixpath
import uuid
from abc import ABC, abstractmethod
from typing import Callable, Dict, Iterable, Iterator, List, NamedTuple, Optional

from ..errors import UnsafePathError

log = logging.getLogger(__name__)

__all__ = ["FileStatus", "FileIO", "walk_files"]


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
                          precondition: Optional[Callable[[], bool]] = None,
                          single_writer: bool = False) -> bool:
        """Create `path` with `data` only if it does not exist, atomically across processes.
        Returns False when it already exists with other contents (a lost reply of our own
        create is True). Any exception means the outcome is unknown.

        `precondition` is called once the data is durable, right before the atomic step;
        if it returns False nothing is created and the result is False. (The slow part,
        writing and syncing, then lies outside the window between the check and the create.)

        Where the storage turns out not to support an atomic create (no hard links, a store
        answering "not implemented" to a conditional PUT), AtomicCreateUnsupportedError,
        unless `single_writer` (the caller declares that nobody else creates this path): then
        check-then-create. Never a silent fallback."""

    def check_atomic_create(self) -> None:
        """Raise AtomicCreateUnsupportedError if this storage cannot prove that
        `try_create_atomic` is atomic (several writers could then both publish one snapshot
        id). Local disk can (link(2)); object stores probe once; pyarrow.fs cannot."""

    def file_versions(self, directory: str) -> Optional[Dict[str, str]]:
        """name -> a version of each file in a directory that changes whenever the file is
        replaced (a cache validator), in one listing; None where the storage has none."""
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


def walk_files(io: FileIO, directory: str) -> Iterator[FileStatus]:
    """Depth-first listing of regular files (used by tests and reports)."""
    for st in io.list_status(directory):
        if st.is_dir:
            yield from walk_files(io, st.path)
        else:
            yield st
