"""Local file system storage: `os` directly (the fast path), `link(2)` to publish."""
from __future__ import annotations

import errno
import logging
import os
import stat
import threading
from array import array
from typing import Callable, Dict, List, Optional, Tuple

from ..errors import AtomicCreateUnsupportedError, UnsafePathError
from .base import FileEntries, FileIO, FileStatus, LocalResolver, _judges_by_directory, \
    _temp_name, by_directory, note_deleted
from .metered import note as _bill

log = logging.getLogger(__name__)

# The directory `_unlink_in` has open on this thread: (storage, directory, descriptor).
_AT = threading.local()

__all__ = ["LocalFileIO"]

_LOCAL_FS = None


def _local_fs():
    """pyarrow's local file system (one per process; it is thread-safe)."""
    global _LOCAL_FS
    if _LOCAL_FS is None:
        from pyarrow import fs as pafs
        _LOCAL_FS = pafs.LocalFileSystem()
    return _LOCAL_FS


def _selector(directory: str):
    from pyarrow import fs as pafs
    return pafs.FileSelector(directory, allow_not_found=True)

#: Declared in options.py as CoreOptions.COMMIT_SINGLE_WRITER; repeated here for messages.
SINGLE_WRITER_OPTION = "commit.single-writer"

#: `_unlink_in` checks the directory it unlinks in against the root again after this many
#: unlinks: bounds what a directory moved out of the root mid-run loses. Cost within noise
#: (20,000 unlinks in 4 directories, 4 threads: median 0.229 s vs 0.238 s never re-checked;
#: re-checked before every unlink: 0.628 s).
RECHECK_EVERY = 16
_READ_CHUNK = 1 << 20      # bytes per read() of read_bytes


def _version(st: os.stat_result) -> str:
    """A file's version (`LocalFileIO.file_versions`): inode + change time + size. A file
    re-created (temp file + link) is a new inode, and a reused inode number comes with a new
    change time."""
    return f"{st.st_ino}:{st.st_ctime_ns}:{st.st_size}"


class LocalFileIO(FileIO):
    def __init__(self, root: str):
        self.root = os.path.abspath(root)
        self._resolver = LocalResolver(self.root)

    # --- path safety (the lexical rules are the gate's, in base.py) ------------------
    @_judges_by_directory   # (the resolver looks at the directory of norm only)
    def _check_resolved(self, path: str, norm: str) -> None:
        self._resolver.check(path, norm)

    def forget_resolved_dirs(self) -> None:
        """Drop cached directory resolutions (call at the start of each operation)."""
        self._resolver.forget()

    # --- reading -------------------------------------------------------------------------
    def read_bytes(self, path: str) -> bytes:
        # os.read on a descriptor: no buffered file object around it (a compaction reads
        # thousands of small files, and the file object cost twice the read)
        # One read of the size fstat gives (+1, to see the end), then reads until one
        # returns nothing: a short read is not taken for the end of the file, and a file
        # that grew meanwhile is read whole. One buffer of the file's size in the common
        # case (reading in chunks and joining them held the file twice).
        return self._read_stat(path)[0]

    def read_bytes_versioned(self, path: str) -> Tuple[bytes, Optional[str]]:
        # The version of the file descriptor read (`file_versions`' validator: inode, change
        # time, size), taken before its bytes: a file replaced since is a new inode, one
        # written in place since has a new change time; a file whose bytes are not its size
        # (it changed while read) gets none. An override of read_bytes (a subclass, an
        # instance attribute: fault injection, tests) is the one read: no version then.
        if getattr(self.read_bytes, "__func__", None) is not _OWN_READ:
            return self.read_bytes(path), None
        data, st = self._read_stat(path)
        return data, (_version(st) if st is not None and st.st_size == len(data)
                      and stat.S_ISREG(st.st_mode) else None)

    def _read_stat(self, path: str):
        """(the whole file, its fstat before the read: None for an empty file)."""
        _bill("local", "GET")   # (the request bill, io/metered.py)
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        try:
            st = os.fstat(fd)
            first = os.read(fd, st.st_size + 1)
            if not first:
                return first, None
            parts = [first]
            while True:
                part = os.read(fd, _READ_CHUNK)
                if not part:
                    data = first if len(parts) == 1 else b"".join(parts)
                    _bill("local", "GET", 0, read=len(data))
                    return data, st
                parts.append(part)
        finally:
            os.close(fd)

    def exists(self, path: str) -> bool:
        _bill("local", "HEAD")
        return os.path.exists(path)

    def file_size(self, path: str) -> int:
        _bill("local", "HEAD")
        return os.stat(path).st_size

    def list_status(self, directory: str) -> List[FileStatus]:
        # One listing, the status of its entries included (as a LIST page returns sizes).
        _bill("local", "LIST")
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

    def list_files(self, directory: str) -> FileEntries:
        """One listing with each file's size and modification time: pyarrow's local listing
        stats the entries in C++ without the interpreter lock, so a directory per thread runs
        on every core (100k files in 100 directories: 0.29 s in one thread, where os.scandir
        and a stat per entry took 0.37-0.45 s and held the lock throughout). pyarrow follows
        symlinks, so the rest is checked here: the directory is opened without following a
        symlink (one is never listed), must still be that directory once listed (not swapped
        for a symlink meanwhile), and its symlinks are left out by the directory's own entry
        types (d_type: no stat), as are directories, sockets and pipes (no size)."""
        empty = FileEntries(directory, [], array("q"), array("q"))
        _bill("local", "LIST")   # one listing, its stats included
        fd = self._open_listed_dir(directory)
        if fd is None:
            return empty   # absent, or a symlink: never entered
        try:
            opened = os.fstat(fd)
            infos = _local_fs().get_file_info(_selector(directory))
            try:
                now = os.lstat(directory)
            except FileNotFoundError:
                return empty
            if (now.st_dev, now.st_ino) != (opened.st_dev, opened.st_ino):
                log.warning("not listing %s: it was replaced while being listed (by a "
                            "symlink?)", directory)
                return empty
            with os.scandir(fd) as it:
                links = {e.name for e in it if e.is_symlink()}
        finally:
            os.close(fd)
        # (size is None for anything but a file: a directory, a pipe, a socket)
        files = [i for i in infos if i.size is not None]
        if links:
            files = [i for i in files if i.base_name not in links]
        names: List[str] = [i.base_name for i in files]
        sizes = array("q", [i.size for i in files])
        mtimes = array("q", [i.mtime_ns // 1_000_000 for i in files])
        return FileEntries(directory, names, sizes, mtimes)

    @staticmethod
    def _open_listed_dir(directory: str) -> Optional[int]:
        """A descriptor of a directory, or None if it is absent or a symlink."""
        try:
            # O_NOFOLLOW: a directory that is a symlink is not entered.
            return os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW |
                           getattr(os, "O_CLOEXEC", 0))
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as e:
            if e.errno != errno.ELOOP:
                raise
            return None   # a symlink

    def file_versions(self, directory: str) -> Optional[Dict[str, str]]:
        # (`_version`: inode + change time + size)
        out: Dict[str, str] = {}
        _bill("local", "LIST")
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
                out[e.name] = _version(st)
        return out

    def list_names(self, directory: str) -> List[str]:
        _bill("local", "LIST")
        try:
            return os.listdir(directory)
        except (FileNotFoundError, NotADirectoryError):
            return []

    # --- writing -------------------------------------------------------------------------
    def mkdirs(self, directory: str) -> None:
        os.makedirs(directory, exist_ok=True)

    def write_new(self, path: str, data: bytes) -> None:
        _bill("local", "PUT", written=len(data))
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
        _bill("local", "PUT", written=len(data))   # temp file + rename: one write
        tmp = self._write_temp(path, data, sync=False)
        try:
            os.replace(tmp, path)
        except BaseException:
            self._remove_own_temp(tmp)
            raise

    def try_create_atomic(self, path: str, data: bytes,
                          precondition: Optional[Callable[[], bool]] = None,
                          single_writer: bool = False) -> bool:
        # One stat, then one write (temp file + link + unlink of the temp; a read-back
        # where the name was taken counts as a read).
        _bill("local", "HEAD")
        if os.path.exists(path):
            return self._holds(path, data)
        _bill("local", "PUT", written=len(data))
        tmp = self._write_temp(path, data, sync=True)
        try:
            if precondition is not None and not precondition():
                return False
            # link(2) fails with EEXIST if the target exists: a true cross-process
            # create-if-absent, unlike rename which silently replaces.
            os.link(tmp, path)
            return True
        except FileExistsError:
            # EEXIST does not prove a rival: on NFS a LINK whose reply was lost is
            # retransmitted and answered EEXIST although our own link took effect. The
            # contract (io/base.py) is "a lost reply of our own create is True", so read the
            # target back: our bytes there mean we published.
            return self._holds(path, data)
        except OSError as e:
            if e.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV):
                raise
            if not single_writer:
                raise AtomicCreateUnsupportedError(
                    f"the file system of {path} has no hard links ({e.strerror}), so it cannot "
                    f"create a file only if it is absent: with several writers, commits could "
                    f"be lost silently, so nothing was created. Declare "
                    f"'{SINGLE_WRITER_OPTION}' = 'true' in the table or commit options if only "
                    f"one process ever commits to this table.") from None
            log.warning("hard links unsupported under %s (%s); creating it by check-then-rename "
                        "as '%s' declares a single writer", path, e, SINGLE_WRITER_OPTION)
            if os.path.exists(path):
                return self._holds(path, data)
            os.rename(tmp, path)
            return True
        finally:
            self._remove_own_temp(tmp)

    @staticmethod
    def _holds(path: str, data: bytes) -> bool:
        """Whether ``path`` holds exactly ``data`` (our own earlier create), as the pyarrow and
        object-store storages decide after an ambiguous answer."""
        _bill("local", "GET")
        try:
            with open(path, "rb") as f:
                return f.read() == data
        except FileNotFoundError:
            return False

    def open_input_file(self, path: str):
        _bill("local", "GET")
        return open(path, "rb")

    def read_parquet(self, path: str):
        _bill("local", "GET")
        import pyarrow.parquet as pq
        from pyarrow import fs as pafs
        return pq.read_table(path, filesystem=pafs.LocalFileSystem(), partitioning=None)

    def open_output_stream(self, path: str):
        _bill("local", "PUT")   # (its bytes are not counted)
        try:
            return open(path, "xb")
        except FileNotFoundError:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            return open(path, "xb")

    # --- deleting ------------------------------------------------------------------------
    def _unlink(self, norm: str) -> bool:
        # Inside `_unlink_in` (this thread, this storage, a file directly in the directory it
        # opened): relative to that directory's descriptor. `_unlink` stays the one per-file
        # primitive either way (fault injection wraps it; `_unlink_in` runs its own loop,
        # `_unlink`'s body, only where `_unlink` is this very function: see there).
        at = getattr(_AT, "dir", None)
        if at is not None and at[0] is self and norm.rfind("/") == len(at[1]) \
                and norm.startswith(at[1]):
            target, dir_fd = norm[len(at[1]) + 1:], at[2]
        else:
            target, dir_fd = norm, None
        _bill("local", "DELETE")
        try:
            os.unlink(target, dir_fd=dir_fd)
            return True
        except FileNotFoundError:
            return False
        except OSError as e:
            return self._unlink_failed(norm, e)

    @staticmethod
    def _unlink_failed(norm: str, e: OSError) -> bool:
        """What a failed unlink of `norm` means (after FileNotFoundError, which is False):
        UnsafePathError for a directory, False (logged) otherwise."""
        if isinstance(e, IsADirectoryError) or (os.path.isdir(norm) and
                                                 not os.path.islink(norm)):
            raise UnsafePathError(f"refusing to delete directory {norm} as a file") from None
        log.warning("could not delete %s: %s", norm, e)
        return False

    unlinks_recheck_dirs = True   # see _unlink_in

    def _unlink_many(self, norms: List[str]) -> List[str]:
        """Unlink the paths of each directory relative to one open descriptor of it
        (`_unlink_in`), directory by directory in the order each first appears. One call's
        paths have no order among themselves (the callers' crash-safe order is between
        calls), and plans interleave directories (expiration's data files alternate
        partitions as the snapshots that deleted them did): opening the directory again for
        each run of one path cost 4x the unlink itself (bench_expire)."""
        out: List[str] = []
        for directory, group in by_directory(norms).items():
            try:
                out.extend(self._unlink_in(directory, group))
            except BaseException as e:
                note_deleted(e, out)   # the directories before (the inner ones are on e)
                raise
        return out

    def _unlink_in(self, directory: str, norms: List[str]) -> List[str]:
        """Unlink paths of one directory relative to an open descriptor of it: the kernel
        resolves one name per file instead of the whole path, and the directory cannot be
        swapped for a symlink between the gate's check and the unlinks (it is opened without
        following a symlink, and the directory opened is itself checked against the root,
        before the first unlink and again every RECHECK_EVERY unlinks: a directory moved out
        of the root meanwhile loses at most that many more of its selected orphans).

        Each file is unlinked by `_unlink` where that is overridden (a subclass, an instance
        attribute: fault injection, tests); otherwise by the loop below, which is `_unlink`'s
        body for a file of the directory open (`os.unlink(name, dir_fd=fd)`, the same
        outcomes: `_unlink_failed`) without a method call, a thread-local lookup and a
        request count per file (the requests are counted once, when the directory is done):
        the loop's Python competes for the interpreter lock with the other threads' (see
        benchmarks/orphan_delete_phase.py)."""
        try:
            fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except (FileNotFoundError, NotADirectoryError):
            return []   # gone, with its files
        except OSError as e:
            if e.errno != errno.ELOOP:
                raise
            log.warning("not deleting %d files in %s: the directory is a symlink now",
                        len(norms), directory)
            return []
        own = getattr(self._unlink, "__func__", None) is _OWN_UNLINK
        cut = len(directory) + 1
        out: List[str] = []
        tried = 0
        try:
            _AT.dir = (self, directory, fd)
            # (no resolution scope here: the root is resolved again at each re-check, so a
            # root re-pointed mid-directory stops the unlinks within RECHECK_EVERY; audit
            # issue26b F1)
            for k in range(0, len(norms), RECHECK_EVERY):
                if not self._opened_inside(directory, fd, norms[k], len(norms) - k):
                    break
                chunk = norms[k:k + RECHECK_EVERY]
                if not own:
                    for p in chunk:
                        if self._unlink(p):
                            out.append(p)
                    continue
                for p in chunk:
                    tried += 1
                    try:
                        os.unlink(p[cut:], dir_fd=fd)   # (in sight of test_one_door)
                    except FileNotFoundError:
                        continue
                    except OSError as e:
                        self._unlink_failed(p, e)   # (raises, or False: not deleted)
                        continue
                    out.append(p)
        except BaseException as e:
            note_deleted(e, out)   # what this directory lost before the error
            raise
        finally:
            _AT.dir = None
            os.close(fd)
            if tried:
                _bill("local", "DELETE", tried)   # (one count per directory's unlinks)
        return out

    def _opened_inside(self, directory: str, fd: int, path: str, left: int) -> bool:
        """Whether the directory open at `fd` is (still) in the root: what was opened, not
        what the path names now, checked like the gate checks. False (with a warning unless
        it was removed) leaves its files, reported not deleted."""
        try:
            real = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            real = None
        if real is None:
            # No /proc (macOS, BSDs, sandboxes): the directory the path resolves to now,
            # if it is the very directory opened (same device and inode).
            real = os.path.realpath(directory)
            try:
                now, opened = os.stat(real), os.fstat(fd)
            except OSError:
                return False   # gone, with its files
            if (now.st_dev, now.st_ino) != (opened.st_dev, opened.st_ino):
                log.warning("not deleting %d files in %s: it is not the directory opened "
                            "any more (moved or swapped since)", left, directory)
                return False
        elif real.endswith(" (deleted)"):
            return False   # removed since it was opened: its files are gone
        try:
            self._resolver.check_real_dir(path, real)
        except UnsafePathError as e:
            # (e.g. a parent swapped for a symlink out of the root since the gate's check,
            # or the directory moved out): left, like a directory that is a symlink now.
            log.warning("not deleting %d files in %s: %s", left, directory, e)
            return False
        return True

    def _remove_own_temp(self, tmp: str) -> None:
        """Remove a temp file this storage just wrote (after a link or a failed replace).
        Not through the deletion log: it never was a table file. Still checked by the gate's
        rules, so that even this can never remove anything outside the root."""
        try:
            os.unlink(self._check_inside(tmp))
        except FileNotFoundError:
            pass   # linked and removed, or never created
        except UnsafePathError as e:
            log.warning("temp file %s left in place: %s", tmp, e)
        except OSError as e:
            log.debug("could not remove temp file %s: %s", tmp, e)

    def _rmdir(self, norm: str) -> bool:
        if os.path.islink(norm):
            raise UnsafePathError(f"refusing to remove {norm}: it is a symlink")
        _bill("local", "DELETE")
        try:
            os.rmdir(norm)  # rmdir(2) fails on a non-empty directory: never recursive
            return True
        except OSError:
            return False  # not empty, gone, or not a directory: all mean "leave it"


# `_unlink` as defined above: `_unlink_in` runs its own loop only while a storage's `_unlink`
# is this function (not an override, an instance attribute, nor a wrapper set on the class
# itself: tests/faults/kill_worker.py wraps LocalFileIO._unlink in place).
_OWN_UNLINK = LocalFileIO._unlink
# `read_bytes` as defined above: read_bytes_versioned reads with its own fstat only while a
# storage's read_bytes is this function (else it reads through the override, unversioned).
_OWN_READ = LocalFileIO.read_bytes
