"""What a snapshot, tag or long-lived changelog references: the one answer to "is this file
still needed?" that expiration, changelog expiration, delete_tag, rollback and orphan cleanup
(local and Spark) all use.

A root (snapshot, tag, long-lived changelog, of the table or of a branch) references its
manifest lists (base, delta, changelog), the manifests they list, the data and changelog files
those manifests name (with their extra files), its index manifest and the index files it lists
(deletion vectors, hash indexes), and its statistics file. Every one of these is immutable and
named uniquely, so what is read is cached by file name for as long as the object lives.

The partial-view rules, in one place:
- What must be KEPT is read strictly: a needed file that is missing or unreadable raises
  `Unreadable`, and the caller deletes less (skips a step) or nothing (aborts). A plan is never
  made larger by what could not be read.
- What MAY BE DELETED is read tolerantly: an unreadable candidate contributes nothing (its
  files are left for orphan cleanup) and the reason is reported.
- A long-lived changelog needs only what a changelog reader reads: its changelog manifest list
  or, without one (`changelog-producer` = none), its delta list. Paimon's own expiration
  deletes the other lists of such changelogs by design, so those are protected while they
  exist and their absence is not an error (as in Paimon's orphan cleanup).
"""
from __future__ import annotations

import gc
import logging
from concurrent.futures import Future
from contextlib import closing, contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Set, Tuple

from .errors import CorruptMetadataError
from .io import read_ahead
from .io.metered import ContextExecutor
from .format import paths as P
from .format.manifest import FileKind, FileRef
from .format.snapshot import Snapshot

log = logging.getLogger(__name__)

__all__ = ["Root", "Reachability", "ReAdds", "KeptIndex", "KeptNames",
           "Unreadable", "UNREADABLE", "APPEND_SOURCE", "collector_paused", "BranchUse",
           "branch_dirs", "branch_roots"]

# Errors that mean "this file cannot be read": absent, or not a valid Paimon file.
UNREADABLE = (FileNotFoundError, CorruptMetadataError)
APPEND_SOURCE = 0   # DataFileMeta._FILE_SOURCE: 0 = APPEND (written by a writer), 1 = COMPACT


@contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off for one maintenance operation, as it was after.

    Decoding millions of manifest entries allocates millions of short-lived objects, and
    every so many allocations the collector walks every live container object: the caches
    that grow with the number of snapshots (parsed snapshots, manifest lists) and a chunk's
    candidates. Measured on a 200k-file expiration: ~30% of the CPU time, and growing faster
    than the table (more snapshots make every walk longer). Nothing here builds reference
    cycles: what the operation drops is freed by reference counting as before; only cyclic
    garbage made meanwhile (by anyone in the process) waits until the collector is back."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


class Unreadable(Exception):
    """Something that must be known to protect files could not be read."""

    def __init__(self, what: str, cause: BaseException):
        super().__init__(f"cannot read what {what} uses ({cause})")
        self.what = what
        self.cause = cause


@dataclass(frozen=True)
class Root:
    """A snapshot, tag or long-lived changelog file (`where`), and what it holds."""
    where: str
    snapshot: Snapshot
    kind: str = "snapshot"      # "snapshot", "tag" or "changelog"
    # Lists kept by name without reading them: the delta and changelog lists of a snapshot
    # newer than the first retained one hold only manifests its own commit wrote, which no
    # expiring snapshot can name (the base list, which carries older manifests, is read).
    names_only: Tuple[str, ...] = ()

    def lists(self, producer: str = "none") -> Tuple[Tuple[str, bool], ...]:
        """(manifest list, needed) pairs. One that is not needed may be gone: a tag's
        changelog list (Paimon's expiration deletes a tagged snapshot's changelog; ours keeps
        it while the tag exists, because Paimon 1.0's orphan cleanup then drops the tag's
        other lists), a long-lived changelog's lists other than the one it is read by: its
        changelog list, or with `changelog-producer` none its delta list (with another
        producer, a changelog without a changelog list has nothing to read)."""
        s = self.snapshot
        if self.kind != "changelog":
            return tuple((n, self.kind != "tag" or n != s.changelog_manifest_list)
                         for n in s.manifest_lists())
        return tuple((n, n == self.read_by(producer)) for n in s.manifest_lists())

    def read_by(self, producer: str) -> Optional[str]:
        """The list a long-lived changelog's streaming readers read (None: nothing)."""
        s = self.snapshot
        return s.changelog_manifest_list or (s.delta_manifest_list if producer == "none"
                                             else None)


class ReAdds:
    """Where each path was last ADDed in the deltas of a lineage, by a hash of the path:
    what `deleted_files` checks a DELETE against (a later ADD of the same file protects it).
    One int per ADDed file instead of the path and its entry, so that a run over millions of
    files holds no decoded entries; kept across the chunks of one expiration, where each
    delta is scanned once. A hash collision can only make a path look re-added, i.e. KEEP a
    file, never delete one; a delta scanned that a rollback later replaced leaves positions
    that only keep more."""

    def __init__(self) -> None:
        self.last: Dict[int, int] = {}
        self.scanned: Dict[int, str] = {}   # snapshot id -> the delta list scanned for it
        # The first snapshot the whole run keeps (None: unknown). The entry cache is for the
        # next run: a delta this run expires in a later chunk is read again then (for its
        # DELETE manifests only) instead of being held until then.
        self.memo_from: Optional[int] = None

    @staticmethod
    def position(sid: int, manifest: int = 0, entry: int = 0) -> int:
        """Orders entries by snapshot, then manifest in its delta list, then entry in the
        manifest: a delta whose manifests are read selectively (`Reachability.delta_refs`)
        gives every entry the position a full read gives it."""
        return (sid << 64) | (manifest << 32) | entry

    @staticmethod
    def snapshot_of(position: int) -> int:
        return position >> 64

    def add(self, path: str, position: int) -> None:
        key = hash(path)
        if self.last.get(key, -1) < position:
            self.last[key] = position

    def later(self, path: str, position: int) -> bool:
        """Whether `path` is ADDed after `position` (or a colliding path is)."""
        return self.last.get(hash(path), -1) > position


class KeptIndex:
    """For the chunks of one expiration: each metadata name the retained snapshots after a
    chunk's end use (read as `Root`s with `names_only`), with the newest such snapshot id.
    A chunk needs "is this name used by a snapshot at or after my end?"; answered from here,
    each retained snapshot is read once per run instead of once per chunk (which made a
    20,000-snapshot expiration quadratic). A snapshot re-created with other content since it
    was indexed (a rollback) is indexed again; what it used before stays, and only keeps
    more (a vanished snapshot's names likewise)."""

    def __init__(self) -> None:
        self.last: Dict[str, int] = {}
        self.indexed: Dict[int, Snapshot] = {}   # snapshot id -> the parse that was indexed

    def note(self, sid: int, names: Iterable[str]) -> None:
        last = self.last
        for n in names:
            if last.get(n, -1) < sid:
                last[n] = sid


class KeptNames:
    """What a chunk ending at `end` keeps: `names` (what its first retained snapshot, tags
    and long-lived changelogs use) and every name a KeptIndex has at `end` or later."""
    __slots__ = ("names", "last", "end")

    def __init__(self, names: Set[str], last: Dict[str, int], end: int) -> None:
        self.names, self.last, self.end = names, last, end

    def __contains__(self, name: object) -> bool:
        return name in self.names or self.last.get(name, -1) >= self.end  # type: ignore


class Reachability:
    """Reads of one table's metadata, cached by immutable file name, and what roots use.

    Long-lived owners (the expirer a TableCommit keeps) call `start()` before a run and
    `prune()` after it, so that the cache holds what the last run touched and no more.
    Manifest entries are read as FileRefs (names, sizes, identity; no stats) and cached for
    at most MEMO_REFS entries: a run over millions of files holds what it decides with, not
    every entry it read.

    On an object store the reads a loop makes one per snapshot (deltas, lists, index
    manifests, a tag's base manifests) are made a few in flight at once (io/read_ahead.py:
    `prefetch`, `_deltas_ahead`), only those the loop makes, and handled in the loop's order:
    an unreadable file raises or is skipped at its turn, as before. Local storage reads one
    at a time, each at its turn (`reads` is 1)."""

    MEMO_REFS = 200_000
    # At most this many entries of the deltas a run expires in a later chunk are cached
    # meanwhile (_later_fit): a few MB, whatever the backlog.
    LATER_REFS = 20_000

    def __init__(self, store, full_lists: bool = False):
        self.store = store
        # Manifest lists decoded whole (ManifestFileMeta, with partition statistics), not as
        # bare references: what a partition-scoped orphan cleanup prunes manifests by.
        self._read_list = store.manifests.read_list if full_lists \
            else store.manifests.read_list_refs
        self.io = store.io
        self.mio = store.manifests
        self._lists: Dict[str, list] = {}
        self._entries: Dict[str, List[FileRef]] = {}
        # list name -> where each of its manifests starts in _entries[list name] (+ the end)
        self._bounds: Dict[str, Tuple[int, ...]] = {}
        self._memo_refs = 0
        self._index: Dict[str, List[str]] = {}
        self._touched: Set[str] = set()
        # (partition, bucket) -> (its directory, the prefix a bare file name is appended to,
        # or None where the storage's join is not that)
        self._bucket_dirs: Dict[Tuple[bytes, int], Tuple[str, Optional[str]]] = {}
        self.producer = store.options.get("changelog-producer") or "none"
        self._dirs = {"index": store.io.join(store.root, P.INDEX_DIR),
                      "statistics": store.io.join(store.root, P.STATISTICS_DIR)}
        # Reads kept in flight (io/read_ahead.py): 1 on local storage, where every read is
        # made at its turn as before; more on an object store.
        self.reads = read_ahead.concurrency_of(store.io)
        # (id(memo), name) -> the error a read ahead (`prefetch`) met: raised at the read's
        # turn instead of asking the storage a second time.
        self._failed: Dict[Tuple[int, str], BaseException] = {}

    def start(self) -> None:
        self._touched = set()
        self._failed = {}

    def prune(self) -> None:
        self._failed = {}
        if not self._touched:   # a run that read nothing keeps what it had
            return
        for memo in (self._lists, self._entries, self._bounds, self._index):
            for name in [n for n in memo if n not in self._touched]:
                del memo[name]
        self._memo_refs = sum(len(v) for v in self._entries.values())

    # --- reads, once per file name -------------------------------------------------------
    def _read(self, memo: Dict[str, list], name: str, load: Callable[[str], list]) -> list:
        self._touched.add(name)
        value = memo.get(name)
        if value is None:
            failed = self._failed.pop((id(memo), name), None) if self._failed else None
            if failed is not None:
                raise failed   # (what the read ahead met is what this read would meet)
            value = memo[name] = load(name)
        return value

    def _prefetch(self, memo: Dict[str, list], names: Iterable[Optional[str]],
                  load: Callable[[str], list]) -> None:
        """Read the files among `names` not read yet, `self.reads` in flight at once, into
        `memo`; one that fails leaves its error for its read (`_read`), which raises it at
        its turn as it would have. Only names the caller reads next (nothing more is read
        than before); what is held is what `memo` holds after those reads anyway. A no-op
        where reads are serial (local storage: each read is made at its turn)."""
        if self.reads <= 1:
            return
        todo = [n for n in dict.fromkeys(names)
                if n and n not in memo and (id(memo), n) not in self._failed]
        if len(todo) < 2:
            return
        with closing(read_ahead.ordered(load, todo, self.reads)) as reads:
            for name, got in zip(todo, reads):
                e = got.exception()
                if e is None:
                    memo[name] = got.result()
                elif isinstance(e, Exception):   # (an interrupt is not kept for later)
                    self._failed[(id(memo), name)] = e
                else:
                    raise e

    def prefetch(self, lists: Iterable[Optional[str]] = (),
                 index: Iterable[Optional[str]] = ()) -> None:
        """Manifest lists and index manifests the caller reads next (`manifests`,
        `index_files`), read with several in flight on an object store (see `_prefetch`)."""
        self._prefetch(self._lists, lists, self._read_list)
        self._prefetch(self._index, index, self.mio.read_index_file_names)

    def keep_lists(self, names: Iterable[str]) -> None:
        """Keep the manifest lists among `names` that were read (ahead) past this plan's
        prune, as if the plan had read them: for a caller that read ahead lists the run
        reads in a later plan (one then not read again)."""
        self._touched.update(n for n in names if n in self._lists)

    def prefetch_roots(self, roots: Iterable[Root], keep: bool = False) -> None:
        """What `metadata_names(root, keep)` reads for each root, read ahead (`prefetch`)."""
        if self.reads <= 1:
            return
        lists: List[str] = []
        index: List[str] = []
        for r in roots:
            lists.extend(n for n, _ in r.lists(self.producer)
                         if not (keep and n in r.names_only))
            if r.snapshot.index_manifest and not (keep and r.kind == "changelog"):
                index.append(r.snapshot.index_manifest)
        self.prefetch(lists, index)

    def prefetch_lists(self, names: Iterable[str], workers: int) -> None:
        """Read the manifest lists among `names` not read yet, `workers` in flight at once
        (io/read_ahead.py), into this run's memo; `manifests()` then finds them. One that
        cannot be read is left out: the strict read where it is needed raises as before."""
        if workers <= 1:
            return
        todo = [n for n in dict.fromkeys(names) if n not in self._lists]
        # (self._read_list: decoded whole where the run prunes by partition statistics)
        for name, refs in zip(todo, read_ahead.ordered(self._read_list, todo, workers)):
            if refs.exception() is None:
                self._lists[name] = refs.result()

    def list_prefetcher(self, workers: int) -> "ListPrefetcher":
        """`prefetch_lists` fed root by root while the roots are still being read (their
        lists' reads in flight beside the reads of the next roots): `add(root)`, then
        `finish()` (or `close()` on the way out of an error)."""
        return ListPrefetcher(self, workers)

    def manifests(self, list_name: str) -> list:
        """(file_name, file_size) of each manifest a list names. Raises if unreadable."""
        return self._read(self._lists, list_name, self._read_list)

    def entries(self, list_name: str, memo: bool = True) -> List[FileRef]:
        """Every entry (as a FileRef) of every manifest of a list, in order. Raises if
        unreadable. Cached while the cache holds fewer than MEMO_REFS entries (`memo`
        False: a list no later run reads, e.g. an expiring delta)."""
        refs = self._entries.get(list_name)
        if refs is not None:
            self._touched.add(list_name)
            return refs
        parts = self.delta_refs(list_name, memo)
        refs = self._entries.get(list_name)   # (the cached list itself, once cached)
        if refs is not None:
            return refs
        return parts[0][1] if len(parts) == 1 else [e for _, r in parts for e in r]

    def delta_refs(self, list_name: str, memo: bool = True, deletes_only: bool = False,
                   fetched: Optional["Future"] = None) -> List[Tuple[int, List[FileRef]]]:
        """(index of the manifest in the list, its entries) for the manifests of a list.
        Raises if unreadable. With `deletes_only`, a manifest the list says has no DELETE
        entry is not read (the caller wants only DELETEs; were the count wrong, fewer
        files would be deleted, never more). Cached like `entries` when read whole.
        `fetched`: what `_deltas_ahead` read for it (its outcome stands for these reads)."""
        self._touched.add(list_name)
        refs = self._entries.get(list_name)
        if refs is not None:
            b = self._bounds[list_name]
            if len(b) == 2:
                return [(0, refs)]
            return [(i, refs[b[i]:b[i + 1]]) for i in range(len(b) - 1)]
        got = fetched.result() if fetched is not None else None   # (the list's own error)
        if got is not None:
            metas, parts, whole, error = got
            if list_name not in self._lists:   # (as `manifests` caches it)
                self._failed.pop((id(self._lists), list_name), None)
                self._lists[list_name] = metas
            if error is not None:
                raise error   # (the first manifest that could not be read, at its turn)
        else:
            parts, whole = self._delta_parts(self.manifests(list_name), deletes_only)
        n = sum(len(r) for _, r in parts)
        if memo and whole and parts and self._memo_refs + n <= self.MEMO_REFS:
            bounds = [0]
            for _, r in parts:
                bounds.append(bounds[-1] + len(r))
            self._entries[list_name] = parts[0][1] if len(parts) == 1 \
                else [e for _, r in parts for e in r]
            self._bounds[list_name] = tuple(bounds)
            self._memo_refs += n
        return parts

    def _delta_parts(self, metas: list, deletes_only: bool
                     ) -> Tuple[List[Tuple[int, List[FileRef]]], bool]:
        parts: List[Tuple[int, List[FileRef]]] = []
        whole = True
        for i, m in enumerate(metas):
            if deletes_only and getattr(m, "num_deleted_files", None) == 0:
                whole = False
                continue
            parts.append((i, self.mio.read_manifest_files(m.file_name)))
        return parts, whole

    # Deltas read ahead at most (their entries held until their turn): a few, whatever the
    # number of reads in flight elsewhere.
    DELTAS_AHEAD = 16

    def _deltas_ahead(self, items: List[Tuple[str, bool]]) -> Iterator["Future"]:
        """For each (delta list, deletes_only), in order, the outcome of the reads
        `delta_refs` makes for it (its list unless read, then its manifests), a few deltas
        in flight at once (io/read_ahead.py); pass each to `delta_refs` as `fetched`. On
        local storage each is read at its turn, as before."""
        def fetch(item: Tuple[str, bool]):
            name, deletes_only = item
            if name in self._entries:
                return None   # (delta_refs answers from the cache)
            metas = self._lists.get(name)
            if metas is None:
                metas = self._read_list(name)   # (its error: the future's, raised first)
            parts: List[Tuple[int, List[FileRef]]] = []
            whole = True
            for i, m in enumerate(metas):
                if deletes_only and getattr(m, "num_deleted_files", None) == 0:
                    whole = False
                    continue
                try:
                    parts.append((i, self.mio.read_manifest_files(m.file_name)))
                except Exception as e:   # raised by delta_refs, after the list is noted
                    return metas, parts, whole, e
            return metas, parts, whole, None
        if self.reads <= 1:   # (local storage: delta_refs reads each at its turn)
            return iter([None] * len(items))
        workers = min(self.reads, self.DELTAS_AHEAD)
        return read_ahead.ordered(fetch, items, workers, window=workers)

    def index_files(self, index_manifest: str) -> List[str]:
        """Names (under index/) an index manifest lists. Raises if unreadable."""
        return self._read(self._index, index_manifest, self.mio.read_index_file_names)

    # --- paths ---------------------------------------------------------------------------
    def file_paths(self, e: FileRef) -> List[str]:
        """Where an entry's file and its extra files (e.g. file indexes) are; [] when it
        lives outside the table root (never ours to delete). ValueError for a hostile name."""
        if e.external_path:
            return []
        name = e.file_name
        if not _plain_name(name):
            P.validate_bare_file_name(name, "data file name")
        key = (e.partition, e.bucket)
        known = self._bucket_dirs.get(key)
        if known is None:
            directory = self.store.bucket_dir(self.mio.decode_partition(e.partition), e.bucket)
            # A bare name is appended to the prefix the storage's join gives (checked once
            # per directory): millions of entries, one string concatenation each.
            prefix: Optional[str] = self.io.join(directory, "")
            if self.io.join(directory, "f") != prefix + "f":
                prefix = None
            if len(self._bucket_dirs) > 100_000:
                self._bucket_dirs.clear()
            known = self._bucket_dirs[key] = (directory, prefix)
        directory, prefix = known
        path = prefix + name if prefix is not None else self.io.join(directory, name)
        if not e.extra_files:
            return [path]
        out = [path]
        for extra in e.extra_files:
            if not _plain_name(extra):
                P.validate_bare_file_name(extra, "extra file name")
            out.append(prefix + extra if prefix is not None else self.io.join(directory, extra))
        return out

    def path(self, kind: str, name: str) -> str:
        """Path of a metadata file named in a snapshot or list, by kind."""
        if kind in self._dirs:
            return self.io.join(self._dirs[kind], P.validate_bare_file_name(name, f"{kind} file"))
        return self.mio.path(name)

    # --- what roots use: strict ----------------------------------------------------------
    def metadata_names(self, root: Root, keep: bool = False) -> Set[str]:
        """Names of every metadata file a root uses: lists, manifests, index manifest,
        index files, statistics. Raises Unreadable if a needed one cannot be read. With
        `keep`: what expiration must keep for it (a long-lived changelog does not keep its
        snapshot's index and statistics files: Paimon deletes them with the snapshot)."""
        s = root.snapshot
        out: Set[str] = set()
        if keep and root.kind == "changelog":
            s = s.with_(index_manifest=None, statistics=None)
        try:
            for name, needed in root.lists(self.producer):
                if keep and name in root.names_only:
                    out.add(name)
                    continue
                try:
                    out.update(m.file_name for m in self.manifests(name))
                except FileNotFoundError:
                    if needed:
                        raise
                    continue
                out.add(name)
            if s.index_manifest:
                try:
                    out.update(self.index_files(s.index_manifest))
                    out.add(s.index_manifest)
                except FileNotFoundError:
                    # A changelog's index manifest is its snapshot's: expiration removes it.
                    if root.kind != "changelog":
                        raise
        except UNREADABLE as e:   # (a hostile file name raises ValueError: loudly)
            raise Unreadable(root.where, e) from None
        if s.statistics:
            out.add(s.statistics)
        return out

    def kept_metadata(self, roots: Iterable[Root]) -> Set[str]:
        out: Set[str] = set()
        for r in roots:
            out |= self.metadata_names(r, keep=True)
        return out

    def kept_after(self, end: int, later: Dict[int, Snapshot],
                   root_of: Callable[[int, Snapshot], Root], others: Iterable[Root],
                   index: Optional[KeptIndex] = None) -> KeptNames:
        """What expiring the snapshots before `end` must keep: what `others` use (the first
        retained snapshot, tags, long-lived changelogs: read in full every time) and what
        the retained snapshots in `later` (id -> snapshot, ids > end; `root_of` makes their
        Root) use, noted in `index` and read only for snapshots it has not seen. Raises
        Unreadable."""
        index = index if index is not None else KeptIndex()
        indexed = index.indexed
        others = list(others)
        # (What the loop and kept_metadata read, read ahead on an object store.)
        self.prefetch_roots([root_of(sid, snap) for sid, snap in later.items()
                             if indexed.get(sid) is not snap] + others, keep=True)
        for sid, snap in later.items():
            if indexed.get(sid) is not snap:
                index.note(sid, self.metadata_names(root_of(sid, snap), keep=True))
                indexed[sid] = snap
        return KeptNames(self.kept_metadata(others), index.last, end)

    def live_files(self, snapshot: Snapshot, where: str) -> Dict[str, int]:
        """path -> size of the data files live in a snapshot (merged base + delta), with
        their extra files. Raises Unreadable."""
        try:
            live: Dict[Tuple[Any, ...], FileRef] = {}
            # Base manifests are read one at a time and not cached (a base list can name
            # millions of files); the delta is cached like every other delta.
            # (A few in flight on an object store, merged in order: io/read_ahead.py.)
            with closing(read_ahead.ordered(
                    lambda m: self.mio.read_manifest_files(m.file_name),
                    self.manifests(snapshot.base_manifest_list),
                    min(self.reads, self.DELTAS_AHEAD))) as reads:
                for refs in reads:
                    _merge_live(live, refs.result())
            _merge_live(live, self.entries(snapshot.delta_manifest_list))
            out: Dict[str, int] = {}
            for e in live.values():
                for i, p in enumerate(self.file_paths(e)):
                    out[p] = 0 if i else e.file_size
            return out
        except (ValueError,) + UNREADABLE as e:
            raise Unreadable(where, e) from None

    def live_data(self, snapshot: Snapshot, where: str) -> Set[str]:
        return set(self.live_files(snapshot, where))

    def added(self, lists: Iterable[str], where: str) -> Set[str]:
        """Paths ADDed in the given lists (deltas of later snapshots, a changelog's list).
        Raises Unreadable."""
        try:
            return {p for name in lists for e in self.entries(name) if e.kind == FileKind.ADD
                    for p in self.file_paths(e)}
        except (ValueError,) + UNREADABLE as e:
            raise Unreadable(where, e) from None

    def added_names(self, lists: Iterable[str], where: str) -> Set[str]:
        """Names (entry_names: the rule orphan cleanup's plan keeps files by) of the files
        ADDed in the given lists, external ones included. An entry under the table root with
        a name that is not a bare file name raises Unreadable (as `added` does: what it
        names cannot be told). Raises Unreadable."""
        try:
            out: Set[str] = set()
            for name in lists:
                for e in self.entries(name):
                    if e.kind != FileKind.ADD:
                        continue
                    if not e.external_path:
                        for n in (e.file_name,) + tuple(e.extra_files or ()):
                            if not _plain_name(n):
                                P.validate_bare_file_name(n, "data file name")
                    out.update(entry_names(e))
            return out
        except (ValueError,) + UNREADABLE as e:
            raise Unreadable(where, e) from None

    def used_metadata(self, roots: Iterable[Root]) -> Tuple[Set[str], Dict[str, bool]]:
        """(names of every metadata file the roots use, {manifest name: needed}); a manifest
        only lists that may be gone name may be gone too. Raises Unreadable."""
        names: Set[str] = set()
        manifests: Dict[str, bool] = {}
        for r in roots:
            used = self.metadata_names(r)
            names |= used
            for lst, needed in r.lists(self.producer):
                if lst in used:
                    for m in self.manifests(lst):
                        manifests[m.file_name] = needed or manifests.get(m.file_name, False)
        return names, manifests

    def used_names(self, roots: Iterable[Root]) -> Set[str]:
        """File names (not paths: Paimon's orphan cleanup matches names) of everything the
        roots use, files of ADD and DELETE entries included. Raises Unreadable."""
        names, manifests = self.used_metadata(roots)
        for m, needed in manifests.items():
            names.update(manifest_names(self.mio, m, needed))
        return names

    # --- what may be deleted: tolerant ---------------------------------------------------
    def unused_metadata(self, s: Snapshot, lists: Iterable[str], keep: Set[str],
                        skip: Callable[[str], None], index_and_statistics: bool = True
                        ) -> Dict[str, Tuple[str, int]]:
        """path -> (kind, size) of the metadata of `s` that nothing in `keep` uses: the
        given lists and their manifests, its index manifest and index files, its statistics
        file. Unreadable parts contribute nothing (reported through `skip`)."""
        out: Dict[str, Tuple[str, int]] = {}
        sizes = {s.base_manifest_list: s.base_manifest_list_size,
                 s.delta_manifest_list: s.delta_manifest_list_size,
                 s.changelog_manifest_list: s.changelog_manifest_list_size}
        for name in lists:
            if not name or name in keep:
                continue
            try:
                refs = self.manifests(name)
            except FileNotFoundError:
                continue   # deleted by an earlier, interrupted run
            except CorruptMetadataError as e:
                skip(f"{e}; its manifests are left for orphan cleanup")
                refs = []
            for m in refs:
                if m.file_name not in keep:
                    out[self.mio.path(m.file_name)] = ("manifest", m.file_size)
            out[self.mio.path(name)] = ("manifest-list", sizes.get(name) or 0)
        if index_and_statistics and s.index_manifest and s.index_manifest not in keep:
            try:
                files = self.index_files(s.index_manifest)
            except FileNotFoundError:
                files = None
            except CorruptMetadataError as e:
                skip(f"index manifest {s.index_manifest} is unreadable ({e}); kept")
                files = None
            if files is not None:
                for f in files:
                    if f not in keep:
                        out[self.path("index", f)] = ("index", 0)
                out[self.mio.path(s.index_manifest)] = ("index", 0)
        if index_and_statistics and s.statistics and s.statistics not in keep:
            try:
                out[self.path("statistics", s.statistics)] = ("statistics", 0)
            except ValueError as e:
                skip(str(e))
        return out

    def added_files(self, list_name: str, skip: Callable[[str], None]) -> Dict[str, int]:
        """path -> size of the files ADDed in a list (changelog files of a changelog list).
        An unreadable list gives nothing."""
        out: Dict[str, int] = {}
        try:
            entries = self.entries(list_name)
        except FileNotFoundError:
            return out   # an earlier run (or Paimon, for a tag's changelog) deleted it
        except CorruptMetadataError as e:
            skip(f"changelog manifests of {list_name} unreadable ({e}); their files are left")
            return out
        for e in entries:
            if e.kind != FileKind.ADD:
                continue
            try:
                for p in self.file_paths(e):
                    out.setdefault(p, e.file_size)
            except ValueError as err:
                skip(str(err))
        return out

    def deleted_files(self, lineage: List[Tuple[int, Optional[Snapshot]]], until: int,
                      protected: Callable[[], Set[str]], skip: Callable[[str], None],
                      keep_entry: Callable[[FileRef], bool] = lambda e: False,
                      readds: Optional[ReAdds] = None) -> Dict[str, int]:
        """path -> size of the files DELETEd by the deltas of `lineage` (ascending ids, None
        for a missing one) with id <= `until`, that nothing still needs:
        - not in `protected()` (files live in a tag, ...; read only when there are
          candidates; if it raises Unreadable nothing is returned) nor kept by `keep_entry`;
        - not ADDed again by any later delta of the lineage (an upgrade to another level in
          the same delta, a rollback-to-as-latest, a manual re-commit);
        - not deleted at or before a delta that could not be read (it could have re-added
          them): those are left for orphan cleanup.
        `readds` carries the ADD positions already scanned (an expiration in chunks scans
        each delta once); deltas up to `until` are not cached (they are being expired)."""
        readds = readds if readds is not None else ReAdds()
        candidates: List[Tuple[int, List[str], int]] = []
        blind_before = 0
        paths_of = self.file_paths
        memo_all: Optional[bool] = None   # decided when the first later delta is read
        ADD = FileKind.ADD

        def read(sid: int, s: Optional[Snapshot]) -> bool:   # (the loop reads its delta)
            return s is not None and (sid <= until
                                      or readds.scanned.get(sid) != s.delta_manifest_list)
        # The expiring deltas, then the later ones (only once there are candidates): each
        # part's deltas are read a few in flight on an object store (_deltas_ahead) and
        # handled in order, each outcome (an error included) at its turn.
        first_later = next((i for i, (sid, _) in enumerate(lineage) if sid > until),
                           len(lineage))
        for part in (lineage[:first_later], lineage[first_later:]):
            if not part:
                continue
            if part[0][0] > until:
                if not candidates:
                    return {}   # later deltas only protect candidates: none, nothing to read
                if memo_all is None and any(read(sid, s) for sid, s in part):
                    # (as at the first later delta read, before any of them is read)
                    memo_all = readds.memo_from is None or \
                        self._later_fit(lineage, until, readds)
            ahead = self._deltas_ahead([(s.delta_manifest_list,
                                         readds.scanned.get(sid) == s.delta_manifest_list)
                                        for sid, s in part if read(sid, s)])
            try:
                for sid, s in part:
                    expiring = sid <= until
                    if not expiring and not candidates:
                        return {}
                    if s is None:
                        blind_before = sid
                        continue
                    delta = s.delta_manifest_list
                    scan = readds.scanned.get(sid) != delta
                    if not scan and not expiring:
                        continue
                    fetched = next(ahead)
                    try:
                        # A delta whose ADDs are known already is read for its DELETEs only.
                        if not expiring and memo_all is None:
                            memo_all = readds.memo_from is None or \
                                self._later_fit(lineage, until, readds)
                        memo = not expiring and (memo_all or sid >= readds.memo_from)
                        parts = self.delta_refs(delta, memo=memo, deletes_only=not scan,
                                                fetched=fetched)
                    except UNREADABLE as e:
                        skip(f"delta of snapshot {sid} is unreadable ({e}); data files "
                             f"deleted at or before it are left for orphan cleanup")
                        blind_before = sid
                        continue
                    for mi, refs in parts:
                        base = ReAdds.position(sid, mi)
                        for ei, e in enumerate(refs):
                            add = e.kind == ADD
                            if add:
                                if not scan:
                                    continue
                            elif not expiring or keep_entry(e):
                                continue
                            try:
                                paths = paths_of(e)
                            except ValueError as err:
                                skip(f"snapshot {sid}: {err}")
                                continue
                            if not paths:
                                continue
                            if add:
                                readds.add(paths[0], base + ei)
                            else:
                                candidates.append((base + ei, paths, e.file_size))
                    readds.scanned[sid] = delta
            finally:
                close = getattr(ahead, "close", None)
                if close is not None:
                    close()
        out: Dict[str, int] = {}
        if not candidates:
            return out
        try:
            kept = protected()
        except Unreadable as e:
            skip(f"{e}; no data file is deleted")
            return out
        blind = ReAdds.position(blind_before + 1)
        # The gate's verdict on a bare name depends only on its directory (shape and where
        # it resolves): asked once per directory; a refusal is asked again per file for its
        # own message.
        accepted: Set[str] = set()
        for position, paths, size in candidates:
            path = paths[0]
            if position < blind or path in kept or readds.later(path, position):
                continue
            directory = path[:path.rfind("/") + 1]
            if directory not in accepted:
                refused = self.io.deletion_refused(path)
                if refused:
                    skip(f"snapshot {ReAdds.snapshot_of(position)}: {refused}")
                    continue
                accepted.add(directory)
            out[path] = size
            for extra in paths[1:]:
                out.setdefault(extra, 0)
        return out


    def _later_fit(self, lineage: List[Tuple[int, Optional[Snapshot]]], until: int,
                   readds: ReAdds) -> bool:
        """Whether the entries of the later deltas still to scan fit the cache (their
        lists' counts): all of them within MEMO_REFS, and those this run expires in a later
        chunk (below `ReAdds.memo_from`) within LATER_REFS. Then all are cached, as for a run
        of one chunk; else only those the next run reads again: a backlog is held only while
        it is small (a run's memory follows its chunk and the retained snapshots, not the
        range: a delta expired in a later chunk is read again then, for its DELETE
        manifests only)."""
        budget = self.MEMO_REFS - self._memo_refs
        total = expiring = 0
        # (The lists this reads, read ahead on an object store; the scan reads each of
        # them after this in any case.)
        self.prefetch([s.delta_manifest_list for sid, s in lineage
                       if sid > until and s is not None
                       and readds.scanned.get(sid) != s.delta_manifest_list])
        for sid, s in lineage:
            if sid <= until or s is None or readds.scanned.get(sid) == s.delta_manifest_list:
                continue
            try:
                refs = self.manifests(s.delta_manifest_list)
            except UNREADABLE:
                continue   # reported when the delta itself is read
            n = sum((getattr(m, "num_added_files", 0) or 0)
                    + (getattr(m, "num_deleted_files", 0) or 0) for m in refs)
            total += n
            if readds.memo_from is not None and sid < readds.memo_from:
                expiring += n
                if expiring > self.LATER_REFS:
                    return False
            if total > budget:
                return False
        return True


def _plain_name(name: Any) -> bool:
    """True for a name P.validate_bare_file_name accepts without a doubt (the common case,
    checked fast); anything else goes to that function, which decides and explains."""
    return (name.__class__ is str and "/" not in name and "\\" not in name
            and "\x00" not in name and name[1:2] != ":" and name not in ("", ".", ".."))


def _merge_live(live: Dict[Tuple[Any, ...], FileRef], refs: Iterable[FileRef]) -> None:
    """Full-state merge (as manifests.live_entries): an ADD makes a file live (a second ADD
    of a live file is ignored), a DELETE cancels the ADD it names."""
    for e in refs:
        if e.kind == FileKind.ADD:
            live.setdefault(e.identifier, e)
        else:
            live.pop(e.identifier, None)


def manifest_names(mio, manifest: str, needed: bool = True) -> List[str]:
    """Names a manifest's entries make used: files, extra files, external files' names. A
    manifest that is not needed may be gone (Unreadable only if it is needed)."""
    try:
        entries = mio.read_manifest_files(manifest)
    except UNREADABLE as e:
        if needed or not isinstance(e, FileNotFoundError):
            raise Unreadable(f"manifest {manifest}", e) from None
        return []
    out: List[str] = []
    for f in entries:   # (millions of entries: the plain ones without a call)
        if f.extra_files or f.external_path:
            out.extend(entry_names(f))
        else:
            out.append(f.file_name)
    return out


def entry_names(f: FileRef) -> List[str]:
    """The names one manifest entry makes used, the rule of orphan cleanup (Paimon's: it
    matches names, not paths): its file name, its extra files' names and, for a file written
    to an external path, that path's last name. The plan (manifest_names) and the delete
    phase's re-check of what was committed since (Reachability.added_names) both use it, so
    the re-check keeps everything the plan would have kept (audit issue25d d3)."""
    if not f.extra_files and not f.external_path:
        return [f.file_name]
    out = [f.file_name]
    if f.extra_files:
        out.extend(f.extra_files)
    if f.external_path:
        out.append(f.external_path.rsplit("/", 1)[-1])
    return out


# --- branches: roots of every deletion -------------------------------------------------------
class ListPrefetcher:
    """See `Reachability.list_prefetcher`. Every list is held until `finish` (as
    `prefetch_lists` holds them: the run's memo keeps them all anyway)."""

    def __init__(self, reach: Reachability, workers: int):
        self.reach = reach
        self._pool = ContextExecutor(max(1, workers), thread_name_prefix="paimon-lists")
        self._pending: Dict[str, "Future"] = {}

    def add(self, root: Root) -> None:
        for name, _ in root.lists(self.reach.producer):
            if name not in self._pending and name not in self.reach._lists:
                self._pending[name] = self._pool.submit(self.reach._read_list, name)

    def finish(self) -> None:
        """Wait for every read; what was read goes into the run's memo. One that could not
        be read is left out: the strict read where it is needed raises as before."""
        try:
            for name, f in self._pending.items():
                if f.exception() is None:
                    self.reach._lists[name] = f.result()
        finally:
            self.close()

    def close(self) -> None:
        for f in self._pending.values():
            f.cancel()
        self._pending = {}
        self._pool.shutdown(wait=True)


def branch_dirs(io, root: str) -> List[str]:
    """The metadata root of every branch besides main (`branch/branch-<name>/`, as Paimon
    Java's createBranch lays them out): one listing of `branch/` ([] without one). The one
    branch enumeration: orphan cleanup, abort and every deletion (BranchUse) use it."""
    return [st.path for st in io.list_status(io.join(root, P.BRANCH_DIR))
            if st.is_dir and st.name.startswith("branch-")]


def branch_roots(io, root: str, dirs: Optional[List[str]] = None) -> List[Root]:
    """Every snapshot, tag and long-lived changelog of every branch besides main, read
    strictly: a root file that is listed but cannot be read raises Unreadable (what it uses
    is unknown). `dirs`: the branches, if listed already (`branch_dirs`)."""
    from .snapshots import SnapshotManager
    from .format.snapshot import Tag
    out: List[Root] = []
    for meta_root in branch_dirs(io, root) if dirs is None else dirs:
        for sub, parse, kind in (("snapshot", P.parse_snapshot_id, "snapshot"),
                                 ("changelog", P.parse_changelog_id, "changelog")):
            directory = io.join(meta_root, sub)
            for name in sorted(io.list_names(directory)):
                sid = parse(name)
                if sid is None:
                    continue
                path = io.join(directory, name)
                try:
                    out.append(Root(path, SnapshotManager.parse(io.read_bytes(path), path, sid),
                                    kind))
                except UNREADABLE as e:
                    raise Unreadable(f"branch {kind} {path}", e) from None
        tag_dir = io.join(meta_root, "tag")
        for name in sorted(io.list_names(tag_dir)):
            tag_name = P.parse_tag_name(name)
            if tag_name is None or P.is_temp_file(name):
                continue
            path = io.join(tag_dir, name)
            try:
                out.append(Root(path, Tag.from_json(tag_name, io.read_bytes(path), path).snapshot,
                                "tag"))
            except UNREADABLE as e:
                raise Unreadable(f"branch tag {path}", e) from None
    return out


def _root_key(r: Root) -> Tuple[Any, ...]:
    """What decides the names a root uses: its kind and the immutable, uniquely named files
    its JSON names (two roots with the same key use the same files)."""
    s = r.snapshot
    return (r.kind, s.manifest_lists(), s.index_manifest, s.statistics)


class BranchUse:
    """The names of every file any branch's snapshot, tag or long-lived changelog uses (the
    rule of orphan cleanup: `Reachability.used_names`, by file name), for the deletions that
    act on main (snapshot and changelog expiration, delete_tag and tag expiration): none of
    them deletes a file a branch uses (audit issue25x x2; Paimon Java's apache/paimon#6272).

    Asked right before the first delete (the latest view); a table without `branch/` pays one
    listing. What the branches use is kept per set of roots (`_root_key`): a run in chunks,
    or an expirer reused after every commit, reads a branch's manifests once while its roots
    are unchanged."""

    def __init__(self, store) -> None:
        self.store = store
        self._memo: Optional[Tuple[frozenset, Set[str]]] = None

    def names(self) -> Set[str]:
        """Names every branch root uses (empty without branches). Raises Unreadable when a
        branch root, or what it uses, cannot be read."""
        io = self.store.io
        dirs = branch_dirs(io, self.store.root)
        if not dirs:
            return set()
        roots = branch_roots(io, self.store.root, dirs)
        if not roots:
            return set()
        key = frozenset(_root_key(r) for r in roots)
        if self._memo is not None and self._memo[0] == key:
            return self._memo[1]
        try:
            names = Reachability(self.store).used_names(roots)
        except ValueError as e:   # a hostile name in what a branch uses: unknown, so kept
            raise Unreadable("a branch", e) from None
        self._memo = (key, names)
        return names

    def spare(self, groups: Iterable[Dict[str, Any]], skip: Callable[[str], None],
              what: str) -> None:
        """Remove from each path-keyed dict in `groups` the files a branch uses (by name,
        as orphan cleanup matches). If what the branches use cannot be read, every group is
        emptied (nothing a branch might use is deleted; left for orphan cleanup)."""
        groups = list(groups)
        try:
            names = self.names()
        except Unreadable as e:
            n = sum(len(g) for g in groups)
            for g in groups:
                g.clear()
            if n:
                skip(f"{e}; none of the {n} file(s) {what} planned to delete is deleted "
                     f"(a branch might use them; left for orphan cleanup)")
            return
        if not names:
            return
        kept = 0
        for g in groups:
            for path in [p for p in g if p[p.rfind("/") + 1:] in names]:
                del g[path]
                kept += 1
        if kept:
            log.info("%s: %d file(s) kept because a branch uses them", what, kept)
