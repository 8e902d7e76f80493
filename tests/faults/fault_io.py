"""A LocalFileIO that fails the k-th operation *of one kind*, in one of several ways.

Kinds (the method names are LocalFileIO's operations):

    write    write_new, overwrite_atomic, open_output_stream, mkdirs
    publish  try_create_atomic          (Paimon's rename / link step)
    delete   _unlink, _rmdir          (what the gate calls for each file / directory, whether
                                      through delete_quietly, delete_files or delete_empty_dir)
    list     list_status, list_names, list_files
    read     read_bytes, open_input_file, exists, file_size

Modes:

    error        the k-th operation of the kind fails with an OSError before touching
                 anything, and the process carries on (later calls work). Deletes never raise
                 on I/O errors by contract, so for them the failure is simulated: the file
                 (directory) stays and the call returns False.
    error_after  (write, publish) the operation is carried out, *then* raises an OSError: an
                 unknown outcome, e.g. a timeout after the server applied the request.
    unlink       (delete) the real LocalFileIO._unlink / _rmdir runs, but
                 the underlying os.unlink / os.rmdir raises PermissionError: tests the
                 library's own handling of an OS-level failure.
    empty        (list) the listing silently comes back empty, as for a directory that does
                 not exist (the FileIO contract) or a lost / truncated object-store listing:
                 the partial view the library promises never to act on.
    crash        the process stops at the k-th operation of the kind: that call raises
                 `Crash` (a BaseException nothing may swallow) and so does every later call of
                 any kind. A publish (try_create_atomic) or overwrite_atomic that crashes
                 leaves its temp file behind, as a process killed between writing the temp
                 file and the link/rename would.
    crash_after  (write, publish) the k-th operation is carried out, then the process stops.

Every operation is counted per kind and logged as (kind, method, path) in `log`, whatever the
mode, so a run without a fault (`at=None`) measures how many operations of each kind an
operation performs.
"""
from __future__ import annotations

import errno
import os
import threading
import types
from array import array
from collections import Counter
from typing import Dict, List, Optional, Tuple

import paimon_commit.io.local as _fileio
from paimon_commit.io.base import FileEntries
from paimon_commit.io.local import LocalFileIO

from faults.faulty_io import Crash

__all__ = ["Crash", "InjectedIOError", "FaultIO", "KINDS", "MODES", "KIND_OF", "modes_for"]

KINDS: Dict[str, Tuple[str, ...]] = {
    "write": ("write_new", "overwrite_atomic", "open_output_stream", "mkdirs"),
    "publish": ("try_create_atomic",),
    "delete": ("_unlink", "_rmdir"),
    "list": ("list_status", "list_names", "list_files"),
    "read": ("read_bytes", "open_input_file", "exists", "file_size"),
}
KIND_OF: Dict[str, str] = {m: k for k, ms in KINDS.items() for m in ms}
MODES = ("error", "error_after", "unlink", "empty", "crash", "crash_after")


def modes_for(kind: str) -> Tuple[str, ...]:
    """The modes that make sense for a kind."""
    if kind in ("write", "publish"):
        return ("error", "error_after", "crash", "crash_after")
    if kind == "delete":
        return ("error", "unlink", "crash")
    if kind == "list":
        return ("error", "empty", "crash")
    return ("error", "crash")


class InjectedIOError(OSError):
    """The injected I/O failure (an OSError, like the real thing)."""


# --- OS-level injection ------------------------------------------------------------------
# LocalFileIO calls `os.unlink` / `os.rmdir` through its module global `os`. To make exactly
# those calls fail, that global is replaced (once, for the session) by a transparent proxy of
# the real module that raises only while the calling thread has armed it. Unarmed, and in
# every other thread, it is the os module.

_tls = threading.local()
_install_lock = threading.Lock()


class _OsProxy(types.ModuleType):
    def __init__(self, real):
        super().__init__(real.__name__)
        self.__dict__["_real"] = real

    def __getattr__(self, name):
        return getattr(self.__dict__["_real"], name)

    def _armed(self):
        return getattr(_tls, "os_error", None)

    def unlink(self, path, *args, **kwargs):
        err = self._armed()
        if err is not None:
            raise err
        return self.__dict__["_real"].unlink(path, *args, **kwargs)

    def rmdir(self, path, *args, **kwargs):
        err = self._armed()
        if err is not None:
            raise err
        return self.__dict__["_real"].rmdir(path, *args, **kwargs)


def _install_os_proxy() -> None:
    with _install_lock:
        if not isinstance(_fileio.os, _OsProxy):
            _fileio.os = _OsProxy(os)


class _ArmedOs:
    def __init__(self, err: OSError):
        self.err = err

    def __enter__(self):
        _tls.os_error = self.err

    def __exit__(self, *exc):
        _tls.os_error = None


# --- the FileIO ----------------------------------------------------------------------------

class FaultIO(LocalFileIO):
    def __init__(self, root: str, kind: Optional[str] = None, at: Optional[int] = None,
                 mode: str = "crash"):
        super().__init__(root)
        if kind is not None and kind not in KINDS:
            raise ValueError(f"unknown kind {kind!r}; one of {sorted(KINDS)}")
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}; one of {MODES}")
        if kind is not None and mode not in modes_for(kind):
            raise ValueError(f"mode {mode!r} does not apply to kind {kind!r}")
        self.kind, self.at, self.mode = kind, at, mode
        self.counts: Counter = Counter()
        self.log: List[Tuple[str, str, str]] = []
        self.dead = False
        self.fired: Optional[Tuple[str, str, str]] = None   # the operation that failed
        self._lock = threading.Lock()
        if mode == "unlink":
            _install_os_proxy()

    def _count(self, method: str, path: str) -> bool:
        """Count and log the call; True when this call is the one to fail."""
        kind = KIND_OF[method]
        with self._lock:
            if self.dead:
                raise Crash(f"dead (crashed at {self.fired})")
            self.counts[kind] += 1
            self.log.append((kind, method, path))
            hit = kind == self.kind and self.at is not None and self.counts[kind] == self.at
            if hit:
                self.fired = (kind, method, path)
                if self.mode == "crash":
                    self.dead = True
            return hit

    def _die(self, method: str, path: str):
        with self._lock:
            self.dead = True
        return Crash(f"injected crash at {self.kind} op {self.at}: {method} {path}")


def _leave_temp(io: FaultIO, path: str, data: bytes) -> None:
    """What a process killed inside a publish / atomic overwrite leaves: the temp file."""
    try:
        LocalFileIO._write_temp(io, path, data, sync=False)
    except OSError:
        pass


def _wrap(method: str):
    base = getattr(LocalFileIO, method)
    kind = KIND_OF[method]

    def call(self: FaultIO, path, *args, **kwargs):
        if not self._count(method, path):
            return base(self, path, *args, **kwargs)
        mode = self.mode
        if mode == "crash":
            if method in ("try_create_atomic", "overwrite_atomic"):
                _leave_temp(self, path, args[0] if args else kwargs["data"])
            raise Crash(f"injected crash at {kind} op {self.at}: {method} {path}")
        if mode == "error":
            if kind == "delete":
                return False  # the contract: never raises on I/O errors; nothing deleted
            raise InjectedIOError(errno.EIO, f"injected I/O error at {kind} op {self.at}: "
                                             f"{method}", path)
        if mode == "empty":
            return FileEntries(path, [], array("q"), array("q")) if method == "list_files" \
                else []
        if mode == "unlink":
            with _ArmedOs(PermissionError(errno.EACCES, "injected: permission denied", path)):
                return base(self, path, *args, **kwargs)
        # error_after / crash_after: the operation happens, then the failure.
        result = base(self, path, *args, **kwargs)
        if method == "open_output_stream":
            result.close()  # the caller never gets the stream: an empty file is left
        if mode == "crash_after":
            raise self._die(method, path)
        raise InjectedIOError(errno.ETIMEDOUT, f"injected I/O error after {kind} op "
                                               f"{self.at}: {method}", path)

    call.__name__ = method
    call.__qualname__ = f"FaultIO.{method}"
    return call


for _m in KIND_OF:
    setattr(FaultIO, _m, _wrap(_m))
