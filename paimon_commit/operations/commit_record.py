"""What this process has committed: the memory that makes a repeated commit call a no-op.

A retried notebook cell or a caller that retries on an error hands the same CommitMessages to
`commit()` again. Checking every append against the live files of the table would make each
commit read all of them (measured: twice the commit latency after 400 commits, growing), so
the files this process committed are remembered instead, per table and commit user, and only a
commit that names one of them is checked further (see FileStoreCommit._screen). A duplicate from
another process is not seen here; filter_and_commit, overwrites and commits that delete files
check the table itself.
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Dict, Iterable, Optional, Tuple

__all__ = ["Committed", "CommitRecord", "RECORD"]

# The most recent files remembered per process (a few tens of MB at most); older ones are only
# caught by the table checks.
CAPACITY = 50_000


@dataclass(frozen=True)
class Committed:
    """One data file handed to a commit call of this process."""
    commit_user: str
    identifier: int
    kind: str
    snapshot_id: Optional[int]   # None: the call raised; whether it published is unknown


class CommitRecord:
    """Thread-safe, bounded map (table root, file identity) -> Committed, plus the last
    identifier each commit user published per table."""

    def __init__(self, capacity: int = CAPACITY):
        self.capacity = capacity
        self._files: "OrderedDict[Tuple[str, Any], Committed]" = OrderedDict()
        self._last: Dict[Tuple[str, str], Tuple[int, int]] = {}
        self._lock = threading.Lock()

    def lookup(self, root: str, keys: Iterable[Any]) -> Dict[Any, Committed]:
        with self._lock:
            out = {}
            for k in keys:
                c = self._files.get((root, k))
                if c is not None:
                    out[k] = c
            return out

    def record(self, root: str, keys: Iterable[Any], committed: Committed,
               replace: bool = True) -> None:
        """Remember the files; `replace=False` keeps what is already known about a file."""
        with self._lock:
            for k in keys:
                if not replace and (root, k) in self._files:
                    continue
                self._files[(root, k)] = committed
                self._files.move_to_end((root, k))
            while len(self._files) > self.capacity:
                self._files.popitem(last=False)

    def note_identifier(self, root: str, commit_user: str, identifier: int,
                        snapshot_id: int) -> None:
        """A streaming identifier (not the batch one) this user published as snapshot_id."""
        with self._lock:
            last = self._last.get((root, commit_user))
            if last is None or identifier >= last[0]:
                self._last[(root, commit_user)] = (identifier, snapshot_id)

    def forget(self, root: str, keys: Iterable[Any]) -> None:
        with self._lock:
            for k in keys:
                self._files.pop((root, k), None)

    def last_identifier(self, root: str, commit_user: str) -> Optional[Tuple[int, int]]:
        """(identifier, snapshot id) of the highest identifier this user published here."""
        with self._lock:
            return self._last.get((root, commit_user))

    def forget_user(self, root: str, commit_user: str) -> None:
        with self._lock:
            self._last.pop((root, commit_user), None)


RECORD = CommitRecord()
