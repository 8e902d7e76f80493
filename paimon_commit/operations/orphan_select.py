"""What orphan cleanup holds between its phases, kept to what the decision needs.

A table with millions of live files is listed before its used set is read (Paimon's order),
so the whole listing is held while the manifests are read. Per directory it is one string
(the names joined by '/', which no name contains) instead of a list of strings, ~55 bytes per
name instead of ~110, and the sizes and modification times the listing returned as two arrays
of 8-byte ints (`FileIO.list_files`: one listing with the status, no request per file). The
used set is the hashes of the used names (`UsedNames`).
"""
from __future__ import annotations

from array import array
from typing import Callable, Dict, Iterable, List, NamedTuple, Optional, Sequence, Set, Tuple

from ..io import FileStatus
from ..io.base import FileEntries
from .orphan_context import PLAUSIBLE_MS, Candidate, OrphanCleanAborted, classify

__all__ = ["Listed", "UsedNames", "Found", "pack", "select_unused"]

SEP = "/"          # never part of a file name, on any storage


class Listed(NamedTuple):
    """One listed directory: its candidate files' names (joined by '/'), how many, the kind
    of its files (None: by name), and their sizes and modification times (in name order)."""
    directory: str
    joined: str
    count: int
    kind: Optional[str]
    sizes: Sequence[int]
    mtimes_ms: Sequence[int]

    def names(self) -> List[str]:
        return self.joined.split(SEP) if self.count else []

    def statuses(self) -> List[FileStatus]:
        prefix = self.directory.rstrip("/") + "/"
        return [FileStatus(prefix + n, n, size, mtime, False)
                for n, size, mtime in zip(self.names(), self.sizes, self.mtimes_ms)]


def pack(listing: FileEntries, kind: Optional[str],
         keep: Optional[Callable[[str], bool]] = None) -> Listed:
    """A listing in its compact form (the list of names is dropped); with `keep`, only the
    files whose name it accepts."""
    names, sizes, mtimes = listing.names, listing.sizes, listing.mtimes_ms
    if keep is not None:
        picked = [i for i, n in enumerate(names) if keep(n)]
        if len(picked) != len(names):
            names = [names[i] for i in picked]
            sizes = array("q", [sizes[i] for i in picked])
            mtimes = array("q", [mtimes[i] for i in picked])
    return Listed(listing.directory, SEP.join(names), len(names), kind, sizes, mtimes)


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


def select_unused(listed: Iterable[Listed], used: UsedNames
                  ) -> Tuple[int, List[Tuple[str, Optional[str], List["Entry"]]]]:
    """(names listed, per directory (directory, kind, entries of its unused files)): the
    status comes from the listing, nothing is asked of the storage."""
    total = 0
    hashes = used._hashes
    groups: List[Tuple[str, Optional[str], List[Entry]]] = []
    for d in listed:
        total += d.count
        if d.count:
            groups.append((d.directory, d.kind,
                           [e for e in zip(d.names(), d.sizes, d.mtimes_ms)
                            if hash(e[0]) not in hashes]))
    return total, groups


# (name, size, mtime_ms) of one file: a plain tuple, not a FileStatus and a Candidate (three
# times cheaper to build, for each of possibly millions of orphans).
Entry = Tuple[str, int, int]


class Found:
    """Orphans (or candidates) grouped by directory: (directory, kind, entries) per group,
    `kind` None meaning by name (`classify`). What a local clean selects, deletes and
    reports, without an object per file beyond its tuple."""

    def __init__(self, groups: List[Tuple[str, Optional[str], List[Entry]]]):
        self.groups = [g for g in groups if g[2]]

    @classmethod
    def of_candidates(cls, candidates: Iterable[Candidate]) -> "Found":
        """From candidates with their status (distributed mode), one group per file."""
        return cls([(c.status.path.rpartition("/")[0], c.kind,
                     [(c.status.name, c.status.size, c.status.mtime_ms)])
                    for c in candidates])

    def __len__(self) -> int:
        return sum(len(g[2]) for g in self.groups)

    def paths(self) -> List[str]:
        return [d + "/" + e[0] for d, _, entries in self.groups for e in entries]

    def keep(self, paths: Set[str]) -> "Found":
        """Only the entries whose path is in `paths` (what a delete removed)."""
        return Found([(d, k, [e for e in entries if d + "/" + e[0] in paths])
                      for d, k, entries in self.groups])

    def rel_paths(self, root: str) -> List[str]:
        """Paths relative to `root`, sorted."""
        prefix = root.rstrip("/") + "/"
        out: List[str] = []
        for d, _, entries in self.groups:
            full = d + "/"
            rel = full[len(prefix):] if full.startswith(prefix) else full
            out.extend([rel + e[0] for e in entries])
        out.sort()
        return out

    def by_kind(self) -> Dict[str, Dict[str, int]]:
        out: Dict[str, Dict[str, int]] = {}

        def add(kind: str, files: int, size: int) -> None:
            k = out.get(kind)
            if k is None:
                k = out[kind] = {"files": 0, "bytes": 0}
            k["files"] += files
            k["bytes"] += size
        for _, kind, entries in self.groups:
            if kind is not None and not any(e[0][:1] == "." for e in entries):
                add(kind, len(entries), sum(e[1] for e in entries))
                continue
            for e in entries:   # only temp files ('.' first) change a directory's kind
                add(classify(e[0], kind), 1, e[1])
        return out

    def filter(self, older_than_ms: int, rel: Callable[[str], str],
               should_be_retained: Optional[Callable[[str], bool]]) -> Tuple["Found", int, int]:
        """(the entries older than the threshold and not vetoed, how many were young, how
        many vetoed). OrphanCleanAborted if an old one's time looks like seconds."""
        young = vetoed = 0
        groups = []
        for d, kind, entries in self.groups:
            old = [e for e in entries if e[2] < older_than_ms]
            young += len(entries) - len(old)
            bad = next((e for e in old if 0 <= e[2] < PLAUSIBLE_MS), None)
            if bad is not None:
                raise OrphanCleanAborted(
                    f"{d}/{bad[0]} reports modification time {bad[2]}, which looks like "
                    f"seconds rather than milliseconds; nothing was deleted")
            if should_be_retained is not None:
                kept = [e for e in old if not should_be_retained(rel(d + "/" + e[0]))]
                vetoed += len(old) - len(kept)
                old = kept
            groups.append((d, kind, old))
        return Found(groups), young, vetoed
