"""The FileIO base: storage of one table root, and the deletion gate.

Everything that removes a file or a directory goes through `FileIO.delete_quietly`,
`FileIO.delete_files` or `FileIO.delete_empty_dir`, which refuse any path that is not
physically inside the table root. The path check is one rule set for every storage
(`check_path_shape`); concrete storages (local.py, arrow.py, object_store.py) only implement
primitives (and symlink resolution where they have symlinks); none of them can remove
anything the gate has not accepted. tests/unit/test_one_door.py checks that no module outside
this package calls a raw delete primitive.
"""
from __future__ import annotations

import logging
import os
import posixpath
import threading
import uuid
from abc import ABC, abstractmethod
from array import array
from concurrent.futures import as_completed
from contextlib import contextmanager, nullcontext
from typing import Callable, ContextManager, Dict, Iterable, Iterator, List, NamedTuple, \
    Optional, Sequence, Tuple

from ..errors import UnsafePathError

log = logging.getLogger(__name__)

__all__ = ["FileStatus", "FileEntries", "FileIO", "FileTooLargeError", "walk_files",
           "check_path_shape", "file_entries"]


class FileTooLargeError(Exception):
    """`FileIO.read_bytes_at_most`: the file is larger than the caller's limit; it was not
    read. Not an OSError: no caller's `except OSError` takes it for an I/O failure."""

    def __init__(self, path: str, size: int):
        super().__init__(f"{path}: {size} bytes")
        self.path, self.size = path, size


class FileStatus(NamedTuple):
    # A NamedTuple, not a dataclass: listings build one per file, millions for big tables.
    path: str
    name: str
    size: int
    mtime_ms: int
    is_dir: bool
    is_symlink: bool = False


class FileEntries(NamedTuple):
    """The regular files directly in one directory (no directories, no symlinks), with their
    size and modification time, from one listing (`FileIO.list_files`): parallel sequences,
    not an object per file (orphan cleanup holds the listing of the whole table)."""
    directory: str
    names: List[str]
    sizes: Sequence[int]
    mtimes_ms: Sequence[int]


def file_entries(directory: str, statuses: Iterable[FileStatus]) -> FileEntries:
    """The FileEntries of a `list_status` of `directory`."""
    names: List[str] = []
    sizes, mtimes = array("q"), array("q")
    for st in statuses:
        if not st.is_dir and not st.is_symlink:
            names.append(st.name)
            sizes.append(st.size)
            mtimes.append(st.mtime_ms)
    return FileEntries(directory, names, sizes, mtimes)


def check_path_shape(path: str, root: str, describe: Callable[[str], str] = str) -> str:
    """The one lexical rule set of the deletion gate, shared by every storage: `path` must be
    a non-empty string below `root`, spelled without `..`, `.`, empty segments (`a//b`, a
    trailing `/`), and must not be the root itself. Nothing is normalised away: a path that
    needs normalising was not built by this library, and guessing what it meant is how a
    delete ends up somewhere else. Returns the path; UnsafePathError otherwise."""
    if not isinstance(path, str) or not path:
        raise UnsafePathError(f"refusing to touch {path!r}: not a path")
    root = root.rstrip("/") or "/"
    if path == root or path.rstrip("/") == root:
        raise UnsafePathError(f"refusing to delete the table root {describe(root)}")
    parts = path.split("/")
    # An absolute path starts with one empty segment; any other empty one is a `//` or a
    # trailing slash (a directory named as a file).
    if ".." in parts or "." in parts or "" in parts[1 if path.startswith("/") else 0:]:
        raise UnsafePathError(
            f"refusing path with '..', '.' or an empty segment: {describe(path)}")
    prefix = root if root.endswith("/") else root + "/"
    if not path.startswith(prefix):
        raise UnsafePathError(
            f"refusing to touch {describe(path)}: outside the table root {describe(root)}")
    return path


class LocalResolver:
    """The symlink part of the gate for storage on a local file system (LocalFileIO, and
    pyarrow's LocalFileSystem): the directory of a path must resolve inside the physical
    root, so that no symlinked partition or bucket directory leads a delete elsewhere.

    Resolutions are cached only inside a scope (`FileIO.resolution_scope()`): one operation,
    on the thread that runs it, and each `delete_files` call. Outside a scope every check
    resolves afresh. A FileIO lives as long as its Table or commit object: a cache that
    outlived one operation would let a later one delete through a directory that has become
    a symlink since (an operator moving a partition to another volume)."""

    def __init__(self, root: str):
        self.root = root
        self._local = threading.local()   # .dirs: this thread's scope's cache, or None

    # A FileIO is shipped to Spark executors: the copy starts with no scope (and no cache).
    def __getstate__(self):
        return {"root": self.root}

    def __setstate__(self, state) -> None:
        self.root = state["root"]
        self._local = threading.local()

    @contextmanager
    def scope(self) -> Iterator[None]:
        """Cache resolutions on this thread until the outermost scope ends."""
        local = self._local
        outermost = getattr(local, "dirs", None) is None
        if outermost:
            local.dirs = {}
        try:
            yield
        finally:
            if outermost:
                local.dirs = None

    def forget(self) -> None:
        """Drop this thread's cached resolutions (its scope goes on, re-resolving)."""
        dirs = getattr(self._local, "dirs", None)
        if dirs is not None:
            dirs.clear()

    def _resolve(self, directory: str) -> str:
        dirs = getattr(self._local, "dirs", None)
        if dirs is None:
            return os.path.realpath(directory)
        real = dirs.get(directory)
        if real is None:
            real = os.path.realpath(directory)
            if len(dirs) > 100_000:
                dirs.clear()
            dirs[directory] = real
        return real

    def check(self, path: str, norm: str) -> None:
        self.check_real_dir(path, self._resolve(os.path.dirname(norm)))

    def check_real_dir(self, path: str, real_parent: str) -> None:
        """UnsafePathError unless `real_parent` (the physical directory `path` is in) is
        the physical root or below it."""
        proot = self._resolve(self.root)
        if real_parent != proot and not real_parent.startswith(proot.rstrip(os.sep) + os.sep):
            raise UnsafePathError(
                f"refusing to touch {path}: its directory resolves to {real_parent}, outside "
                f"the table root {proot} (symlink?)")


def _temp_name(final_name: str) -> str:
    # Same convention as Paimon Java and pypaimon: readers skip names starting with '.'.
    return f".{final_name}.{uuid.uuid4()}.tmp"


#: The `_check_resolved` functions known to judge by the directory alone, by identity: a
#: flag on the function would be copied onto a wrapper by functools.wraps (audit issue26b F2).
_PER_DIRECTORY: set = set()


def _judges_by_directory(fn):
    """Mark a `_check_resolved` whose verdict depends only on the directory of the path
    (see `FileIO._check_all`): this very function, not a wrapper or an override of it."""
    _PER_DIRECTORY.add(fn)
    return fn


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

    def read_bytes_versioned(self, path: str) -> Tuple[bytes, Optional[str]]:
        """The whole file and the version (`file_versions`' validator) of exactly what was
        read, or None where the storage cannot tell it with the read: a later listing that
        shows the same version then stands for these bytes (expiration's cache of snapshot
        files). Where read_bytes is overridden (a wrapper, fault injection), its bytes and
        None."""
        return self.read_bytes(path), None

    def read_bytes_at_most(self, path: str, limit: int) -> bytes:
        """The whole file if it holds at most `limit` bytes; FileTooLargeError (its size)
        otherwise, without reading it (records that are a few hundred bytes: a huge file of
        that name must not be read whole into memory). FileNotFoundError if absent.

        Here: the size (one HEAD), then the read. Storages that learn the size from the read
        itself override this with one request (object stores: the GET's metadata, before
        its body; pyarrow.fs: a read of at most limit + 1 bytes)."""
        size = self.file_size(path)
        if size > limit:
            raise FileTooLargeError(path, size)
        return self.read_bytes(path)

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

    def list_files(self, directory: str) -> FileEntries:
        """The regular files directly in a directory with their size and modification time,
        in one listing (no request per file); directories and symlinks are left out, and a
        directory that does not exist has none. Here: one `list_status`."""
        return file_entries(directory, self.list_status(directory))

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
        """Drop this thread's cached path resolutions (see resolution_scope)."""
        resolver = getattr(self, "_resolver", None)
        if resolver is not None:
            resolver.forget()

    def resolution_scope(self) -> ContextManager[None]:
        """One operation's deletion checks, on this thread: inside, each directory's symlink
        resolution is looked up once; outside any scope, every check resolves afresh, so no
        resolution outlives the operation that made it. Reentrant; a no-op on storage
        without symlinks."""
        resolver = getattr(self, "_resolver", None)
        return resolver.scope() if resolver is not None else nullcontext()

    def _check_inside(self, path: str) -> str:
        """The path if it is physically inside the root (and not the root); UnsafePathError
        otherwise. One rule set for every storage (`check_path_shape`), then, where the
        storage has symlinks, the directory must resolve inside the root too."""
        norm = check_path_shape(path, self.root, self._describe)
        self._check_resolved(path, norm)
        return norm

    def _describe(self, path: str) -> str:
        """How error messages name a path (object stores add their scheme)."""
        return path

    @_judges_by_directory
    def _check_resolved(self, path: str, norm: str) -> None:
        """Raise UnsafePathError if the directory of `norm` resolves (through a symlink)
        outside the root. A no-op on storage without symlinks.

        An override whose verdict depends on the directory of `norm` alone (and on nothing
        else of the path) is registered by `_judges_by_directory`: `_check_all` then checks
        each directory once per call. Any other function (an override, a wrapper, even one
        made with functools.wraps) is asked per path."""

    # Paths one request can delete where the store batches deletes (S3: 1,000); None where
    # each file is its own system call and small chunks parallelise better.
    delete_batch_size: Optional[int] = None
    # Metadata reads an operation may keep in flight at once (io/read_ahead.py): 1 where a read
    # costs no round trip; an object store, where each is a request of tens of ms, says more.
    read_concurrency: int = 1

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

    # True where `_unlink_many` checks each directory again as it opens it (local disk: see
    # LocalFileIO), so that the paths of one `delete_files` call may be unlinked later, on
    # an executor, without trusting checks made before the other slices ran.
    unlinks_recheck_dirs: bool = False

    def delete_files(self, paths: Iterable[str], executor=None) -> List[str]:
        """Delete several files through the gate (every path is checked before the first
        delete); returns the ones deleted. Object stores batch the requests. With an
        executor, on storage whose unlinks re-check their directory
        (`unlinks_recheck_dirs`), the checked paths are unlinked on it in slices of one
        directory each, the directories interleaved (unlinks in one directory serialise on
        it); the calling thread only checks paths, the pool only unlinks."""
        norms = self._check_all(paths)
        if executor is not None and self.unlinks_recheck_dirs and len(norms) > 64:
            return self._unlink_slices(executor, _dir_slices(norms))
        try:
            deleted = self._unlink_many(norms)
        except BaseException as e:
            if self.deletion_log is not None:   # what went before the error is logged too
                self.deletion_log.extend(deleted_before(e))
            raise
        if self.deletion_log is not None:
            self.deletion_log.extend(deleted)
        return deleted

    def _check_all(self, paths: Iterable[str]) -> List[str]:
        """`_check_inside` of every path, in one resolution scope (each distinct directory
        resolved once), raising at the first refused. The same verdicts at a fraction of the
        cost: once a path of directory D was accepted, another path D + "/" + NAME is accepted
        on its name alone, when NAME is not "", "." or ".." (it holds no "/": rpartition).
        Such a path passes every rule `check_path_shape` applies, because D's part of it is
        the accepted path's (its segments, its start with the root's prefix, which ends within
        D + "/"), and the rest is one non-empty segment that is neither "." nor ".." (and
        makes the path longer than the root); and the symlink check (`_check_resolved`) looks
        at the directory only, whose resolution this scope caches anyway. Anything else (the
        first path of each directory, a name that is not plain, a non-str, a storage whose
        `_check_inside` or `_check_resolved` is not one known to judge by directory) goes
        through `_check_inside` itself, so a refusal and its message are the same as ever."""
        check = self._check_inside
        if getattr(check, "__func__", None) is not _GATE_CHECK or \
                getattr(self._check_resolved, "__func__", None) not in _PER_DIRECTORY:
            with self.resolution_scope():
                return [check(p) for p in paths]
        norms: List[str] = []
        append = norms.append
        accepted: set = set()   # directories a path was accepted in, this call
        with self.resolution_scope():
            for p in paths:
                if type(p) is str:
                    d, slash, name = p.rpartition("/")
                    if slash and d in accepted and name and name != "." and name != "..":
                        append(p)
                        continue
                    append(check(p))
                    if slash:
                        accepted.add(d)
                else:
                    append(check(p))   # (refused: not a path)
        return norms

    def _unlink_slices(self, executor, slices: List[List[str]]) -> List[str]:
        """Unlink the slices on the executor, each slice's deletions logged as it completes.
        If a slice raises, the others are still waited for and logged before the first
        error is re-raised: a caller (the CLI) must learn what was deleted, and nothing goes
        on unlinking after the call returned."""
        futures = {executor.submit(self._unlink_many, s): i for i, s in enumerate(slices)}
        parts: List[List[str]] = [[] for _ in slices]
        error: Optional[BaseException] = None
        for future in as_completed(futures):
            try:
                part = future.result()
            except BaseException as e:   # noqa: B902 (re-raised below, after the others)
                error = error or e
                part = deleted_before(e)
                if self.deletion_log is not None:
                    self.deletion_log.extend(part)
                continue
            parts[futures[future]] = part
            if self.deletion_log is not None:
                self.deletion_log.extend(part)
        if error is not None:
            raise error
        return [p for part in parts for p in part]

    @property
    def removes_dirs(self) -> bool:
        """Whether `delete_empty_dir` can remove anything on this storage: not where
        directories are only prefixes of keys (object stores: `_rmdir` is FileIO's)."""
        cls = type(self)
        return cls._rmdir is not FileIO._rmdir or \
            cls.delete_empty_dir is not FileIO.delete_empty_dir

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
        """Remove files at paths the gate accepted; the ones removed (if it raises, the ones
        removed before are on the error: `deleted_before`)."""
        out: List[str] = []
        try:
            for p in norms:
                if self._unlink(p):
                    out.append(p)
        except BaseException as e:
            note_deleted(e, out)
            raise
        return out

    def _rmdir(self, norm: str) -> bool:
        """Remove an empty directory at a path the gate accepted; False = left alone."""
        return False


# `_check_inside` as FileIO defines it (`_check_all` takes its shortcut only while a storage's is
# this function: not an override, nor a wrapper set on the class in place).
_GATE_CHECK = FileIO._check_inside


def note_deleted(error: BaseException, paths: List[str]) -> None:
    """Record on an error raised mid-deletion the paths deleted before it (prepended to
    any an inner call recorded), so that the caller can log them before re-raising."""
    try:
        error._paimon_deleted_before = list(paths) + deleted_before(error)  # type: ignore
    except AttributeError:
        pass   # an exception without attributes: nothing to add


def deleted_before(error: BaseException) -> List[str]:
    """The paths `note_deleted` recorded on `error` (none if it did not)."""
    return list(getattr(error, "_paimon_deleted_before", ()))


def by_directory(norms: Iterable[str]) -> Dict[str, List[str]]:
    """Paths grouped by their directory, the directories in the order each first appears
    and each group in the paths' order."""
    by_dir: Dict[str, List[str]] = {}
    for p in norms:
        d = p.rpartition("/")[0]
        group = by_dir.get(d)
        if group is None:
            group = by_dir[d] = []
        group.append(p)
    return by_dir


def _dir_slices(norms: List[str], size: int = 256) -> List[List[str]]:
    """Paths in slices of at most `size` of one directory each, round robin over the
    directories (each slice's order kept)."""
    per_dir = [[g[i:i + size] for i in range(0, len(g), size)]
               for g in by_directory(norms).values()]
    out: List[List[str]] = []
    for i in range(max((len(x) for x in per_dir), default=0)):
        out.extend(x[i] for x in per_dir if i < len(x))
    return out


def walk_files(io: FileIO, directory: str) -> Iterator[FileStatus]:
    """Depth-first listing of regular files (used by tests and reports)."""
    for st in io.list_status(directory):
        if st.is_dir:
            yield from walk_files(io, st.path)
        else:
            yield st
