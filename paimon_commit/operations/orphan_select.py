"""What orphan cleanup holds between its phases, kept to what the decision needs.

A table with millions of live files is listed before its used set is read (Paimon's order),
so the whole listing is held while the manifests are read. Per directory it is one string
(the names joined by '/', which no name contains) instead of a list of strings: ~55 bytes per
name instead of ~110. The used set is the hashes of the used names (`UsedNames`). The status
of a file (size, modification time) is asked for only once its name is known to be unused,
on the I/O pool, one task per directory or slice of one (`stat_tasks`).
"""
from __future__ import annotations

from typing import Dict, Iterable, List, NamedTuple, Optional, Tuple

from ..io import FileStatus
from ..io.base import NameListing

__all__ = ["Listed", "UsedNames", "pack", "stat_tasks", "STAT_SLICE"]

SEP = "/"          # never part of a file name, on any storage
STAT_SLICE = 2048  # names per status task: enough to amortise a task, small enough to spread


class Listed(NamedTuple):
    """One listed directory: its candidate names (joined by '/'), how many, the kind of its
    files (None: by name), and the statuses the listing returned where it returns them
    anyway (object stores; None on local disk, where names cost much less)."""
    directory: str
    joined: str
    count: int
    kind: Optional[str]
    statuses: Optional[Dict[str, FileStatus]]

    def names(self) -> List[str]:
        return self.joined.split(SEP) if self.count else []


def pack(listing: NameListing, kind: Optional[str]) -> Listed:
    """A listing in its compact form (the list of names is dropped)."""
    names = listing.names
    return Listed(listing.directory, SEP.join(names), len(names), kind, listing.statuses)


class UsedNames:
    """The names of every used file, held as their hashes: an int per name, not the name.

    Safety: a used name is always found (equal strings hash equally within the process that
    built the set and asks it). An unused name is reported used only if its hash collides
    with a used one's; a collision therefore only ever KEEPS a file, never deletes a used one.
    The set is never shipped to another process (string hashes are salted per process)."""

    def __init__(self, names: Iterable[str] = ()) -> None:
        self._hashes = set(map(hash, names))

    def update(self, names: Iterable[str]) -> None:
        self._hashes.update(map(hash, names))

    def __contains__(self, name: object) -> bool:
        return hash(name) in self._hashes

    def __len__(self) -> int:
        return len(self._hashes)

    def unused(self, names: List[str]) -> List[str]:
        """The names not in the set (one hash lookup each, no method call per name)."""
        hashes = self._hashes
        return [n for n in names if hash(n) not in hashes]


def stat_tasks(listed: Iterable[Listed], used: UsedNames
               ) -> Tuple[int, List[Tuple[NameListing, Optional[str]]]]:
    """(names listed, the status requests to make): per directory, its unused names, in
    slices of at most STAT_SLICE so that one big directory spreads over the pool."""
    total = 0
    tasks: List[Tuple[NameListing, Optional[str]]] = []
    for d in listed:
        total += d.count
        if not d.count:
            continue
        unused = used.unused(d.names())
        for i in range(0, len(unused), STAT_SLICE):
            tasks.append((NameListing(d.directory, unused[i:i + STAT_SLICE], d.statuses),
                          d.kind))
    return total, tasks
