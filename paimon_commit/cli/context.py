"""What one command-line run touches: how the storage is reached, and the deletion log.

The TABLE (or WAREHOUSE) argument is split at its user-info once, when the run starts
(io.uri.split_credentials): commands see only the credential-free path, and the credentials
travel as storage options to every FileIO the run opens, so that no path the CLI prints, no
result, error or log line can carry them."""
from __future__ import annotations

from typing import Dict, List, Mapping

from ..io import FileIO
from ..io import for_path as file_io_for_path
from ..io.uri import split_credentials
from ..table import Table

__all__ = ["Run", "open_io", "open_table", "rel"]


class Run:
    """State of the current run (one per process: the CLI runs one command)."""
    # Every path removed through the gate by this run: a failure after the first delete is
    # not "invalid input, nothing touched", and the output says what went.
    deleted: List[str] = []
    root: str = ""
    # --option KEY=VALUE, plus the credentials of the TABLE argument's user-info.
    storage: Dict[str, str] = {}

    @classmethod
    def start(cls, path: str, options: Mapping[str, str]) -> str:
        """Begin a run on `path` with `--option`s; returns the path to use (and print)."""
        cls.deleted.clear()
        cls.root = ""
        shown, cls.storage = split_credentials(path, options)
        return shown

    @classmethod
    def storage_options(cls) -> Dict[str, str]:
        """A copy of the run's storage options (credentials included: never print them)."""
        return dict(cls.storage)


def open_io(path: str) -> FileIO:
    """The storage of `path` (credential-free) with the run's options and deletion log."""
    io = file_io_for_path(path, Run.storage_options())
    io.deletion_log = Run.deleted
    Run.root = io.root.rstrip("/") + "/"
    return io


def open_table(path: str) -> Table:
    """The table at `path`, opened through `open_io`."""
    return Table.open(path, file_io=open_io(path))


def rel(root: str, path: str) -> str:
    """`path` relative to `root` when under it."""
    root = root.rstrip("/") + "/"
    return path[len(root):] if path.startswith(root) else path
