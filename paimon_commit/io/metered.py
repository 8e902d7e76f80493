"""A read-only, metered view of a FileIO: what an operation that only reads (`check`) asked
of the storage, by request kind, and a guarantee that it cannot write or delete.

Kinds, as an object store bills them (and their local equivalents):
- LIST: one directory listed (`list_status`, `list_names`, `list_files`; on local
  disk one scandir/listdir). A listing an object store returns in pages of 1,000 keys is one
  LIST here: the store's client pages it below this layer.
- GET: one file read (`read_bytes`; `open_input_file` counts one, whatever it reads);
  `bytes_read` adds what `read_bytes` returned.
- HEAD: one status asked (`exists`, `file_size`).
- PUT, DELETE: never: every write and every removal raises PermissionError before it reaches
  the storage (a removal still goes through the deletion gate's path check first, as always).
"""
from __future__ import annotations

import threading
from typing import Callable, Dict, List, Optional

from .base import FileEntries, FileIO, FileStatus

__all__ = ["MeteredReadOnlyIO", "REQUEST_KINDS"]

REQUEST_KINDS = ("LIST", "GET", "HEAD", "PUT", "DELETE")


class MeteredReadOnlyIO(FileIO):
    """`inner` for reading only, counting each request by kind (`requests()`)."""

    def __init__(self, inner: FileIO):
        self.inner = inner
        self.root = inner.root
        self._lock = threading.Lock()
        self._counts: Dict[str, int] = {k: 0 for k in REQUEST_KINDS}
        self._bytes = 0

    def requests(self) -> Dict[str, int]:
        """{kind: count} for every kind of REQUEST_KINDS, and `bytes_read`."""
        with self._lock:
            return {**self._counts, "bytes_read": self._bytes}

    def _note(self, kind: str, size: int = 0) -> None:
        with self._lock:
            self._counts[kind] += 1
            self._bytes += size

    # --- what is passed through (paths are the inner storage's) ----------------------------
    def join(self, *parts: str) -> str:
        return self.inner.join(*parts)

    def _describe(self, path: str) -> str:
        return self.inner._describe(path)

    def read_bytes(self, path: str) -> bytes:
        data = self.inner.read_bytes(path)
        self._note("GET", len(data))
        return data

    def open_input_file(self, path: str):
        self._note("GET")
        return self.inner.open_input_file(path)

    def exists(self, path: str) -> bool:
        self._note("HEAD")
        return self.inner.exists(path)

    def file_size(self, path: str) -> int:
        self._note("HEAD")
        return self.inner.file_size(path)

    def list_status(self, directory: str) -> List[FileStatus]:
        self._note("LIST")
        return self.inner.list_status(directory)

    def list_names(self, directory: str) -> List[str]:
        self._note("LIST")
        return self.inner.list_names(directory)

    def list_files(self, directory: str) -> FileEntries:
        self._note("LIST")
        return self.inner.list_files(directory)

    # --- refused: this view only reads --------------------------------------------------------
    def _refuse(self, what: str, path: str):
        raise PermissionError(f"read-only view of {self._describe(self.root)}: refusing to "
                              f"{what} {self._describe(path)}")

    def mkdirs(self, directory: str) -> None:
        self._refuse("create", directory)

    def write_new(self, path: str, data: bytes) -> None:
        self._refuse("write", path)

    def overwrite_atomic(self, path: str, data: bytes) -> None:
        self._refuse("write", path)

    def try_create_atomic(self, path: str, data: bytes,
                          precondition: Optional[Callable[[], bool]] = None,
                          single_writer: bool = False) -> bool:
        self._refuse("write", path)
        return False   # (not reached)

    def open_output_stream(self, path: str):
        self._refuse("write", path)

    def _unlink(self, norm: str) -> bool:
        self._refuse("delete", norm)
        return False   # (not reached)

    def _rmdir(self, norm: str) -> bool:
        self._refuse("delete", norm)
        return False   # (not reached)
