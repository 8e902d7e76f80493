"""`check`: which snapshots, tags and long-lived changelogs are broken?

After a bad manual delete, a bucket lifecycle rule or a partial restore, readers fail with
FileNotFoundError (or read a truncated file). This walks what every retained root (snapshot,
tag, long-lived changelog; of the table and of every branch) needs, as `reachability.Root`
defines it, and says which of those files are missing or not of the size the metadata
records, and which roots each one breaks. It is read-only: it deletes and writes nothing.

What a root needs (the strict side of reachability's rules):
- the schema file of its schema id, in its branch's schema/ directory;
- its needed manifest lists (`Root.lists`: a tag's changelog list and a long-lived
  changelog's lists other than the one it is read by may be gone by design), with the size the
  snapshot records (Java >= 1.1 writes it);
- every manifest those lists name, with the size the list records;
- the data files live in it (base + delta merged: an ADD not DELETEd later in the same root),
  with the size their entry records, and their extra files; the files ADDed in the changelog
  list of a snapshot, and in the list a long-lived changelog is read by (without a changelog
  list, producer `none`: the APPEND files of its delta, which is what its readers read);
- its index manifest and the index files it lists (deletion vectors, hash index) with their
  recorded size, and its statistics file (not for a long-lived changelog: Paimon deletes those
  with the snapshot).

Cost: one listing per directory (manifest/, index/, statistics/, each bucket directory the
manifests name, and the snapshot/, changelog/, tag/ and schema/ directories), never one request per
file; every manifest list, manifest and index manifest is read once, shared by every root
that names it, with up to `file-operation.thread-num` (default 16) reads in flight: with 10 ms
per read, 1,210 reads take 0.84 s instead of 12.7 s one at a time (300 snapshots). Memory: the name and size of each file in those directories, the positions
of the DELETE entries of the manifests a root merges (one int each), and the entries that
found a problem.

Concurrent writers are harmless: every root is read before any directory it names is listed,
and a file is written before the root that names it is published. A concurrent expiration
can delete what a root named after the root was read: each broken root is read again at the
end, and one that has gone or changed since is not reported.
"""
from __future__ import annotations

import hashlib
import itertools
import logging
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterable, Iterator, List, Mapping, Optional, Set, \
    Tuple

from ..errors import CorruptMetadataError
from ..format import paths as P
from ..format.manifest import FileKind, decode_index_manifest_files
from ..format.snapshot import Tag
from ..io import FileStatus
from ..io.metered import ContextExecutor, MeteredReadOnlyIO, billed
from ..progress import LISTING, READING, Throttle, emit
from ..reachability import (APPEND_SOURCE, UNREADABLE, Reachability, Root,
                            collector_paused)
from ..snapshots import SnapshotManager
from ..store import FileStore
from .limits import MAX_DURATION, Deadline

log = logging.getLogger(__name__)

__all__ = ["CheckProblem", "CheckResult", "TableCheck", "check_table", "PROBLEM_KINDS",
           "STATES"]

# The kinds of file a problem names, in the order problems are listed.
PROBLEM_KINDS = ("snapshot", "tag", "changelog", "schema", "manifest-list", "manifest",
                 "index-manifest", "index", "statistics", "data", "extra")
STATES = ("missing", "wrong-size", "unreadable", "not-a-file")
_KIND_ORDER = {k: i for i, k in enumerate(PROBLEM_KINDS)}
# Reads in flight at once (default of `file-operation.thread-num`): each read waits on the
# storage (an object store's GET: tens of ms), and what was read is decoded and checked on
# the calling thread, in order, while the next reads wait.
IO_THREADS = 16


@dataclass(frozen=True)
class CheckProblem:
    """One file a root needs that readers cannot use.

    Attributes:
        path: relative to the table root.
        kind: one of PROBLEM_KINDS (`data` covers changelog files; `extra` a data file's
            extra file, e.g. a file index).
        state: `missing`; `wrong-size` (not the size the metadata records); `unreadable`
            (there, but not a valid file of its kind: `detail` says why); `not-a-file` (a
            directory or a symlink where a file should be).
        expected_size: the size the metadata records (None where it records none).
        actual_size: the size found (None when missing or not a file).
        roots: what it breaks ("snapshot 3", "tag t1", "changelog 2", "branch b snapshot
            1"), in order.
        detail: why an unreadable file is unreadable.
    """
    path: str
    kind: str
    state: str
    expected_size: Optional[int]
    actual_size: Optional[int]
    roots: Tuple[str, ...]
    detail: Optional[str] = None

    def describe(self) -> str:
        """One line: what is wrong with the file, and what it breaks."""
        if self.state == "wrong-size":
            what = f"wrong size: {self.actual_size} bytes, the metadata says " \
                   f"{self.expected_size}"
        elif self.state == "missing":
            what = "missing" + (f" ({self.expected_size} bytes)"
                                if self.expected_size is not None else "") + \
                (f" ({self.detail})" if self.detail else "")
        elif self.state == "not-a-file":
            what = "not a regular file"
        else:
            what = "unreadable" + (f" ({self.detail})" if self.detail else "")
        return f"{self.kind} {self.path}: {what}; breaks {', '.join(self.roots)}"

    def to_dict(self) -> Dict[str, Any]:
        return {"path": self.path, "kind": self.kind, "state": self.state,
                "expected_size": self.expected_size, "actual_size": self.actual_size,
                "roots": list(self.roots), "detail": self.detail}


@dataclass(frozen=True)
class CheckResult:
    """What `check` found (Table.check, `paimon-commit check`).

    Attributes:
        table: the table path.
        snapshots, tags, changelogs: the roots checked (of every branch); branches: how many
            branches besides main.
        checked: kind -> {"files": n, "bytes": b} of the files found as recorded (bytes:
            the recorded sizes, 0 where none is recorded).
        problems: every missing, wrong-sized or unreadable file a root needs.
        broken: every root at least one problem breaks, in order ("snapshot 3", "tag t1").
        external: data and index files outside the table root (not checked).
        listings: directories listed (each once); reads: files read (roots, manifest lists,
            manifests, index manifests; each once, broken roots once more).
        requests: what the storage was asked, by kind (io/metered.py: LIST, GET, HEAD, PUT,
            DELETE; PUT and DELETE are always 0) and `bytes_read`.
        seconds: time per phase ("roots", "lists", "manifests", "confirm").
        complete: False when `max_duration` stopped the run (`stopped_by`, `message`);
            `unchecked` then names the roots whose data files were not all checked.
    """
    table: str
    snapshots: int
    tags: int
    changelogs: int
    branches: int
    checked: Mapping[str, Mapping[str, int]]
    problems: Tuple[CheckProblem, ...]
    broken: Tuple[str, ...]
    external: int = 0
    listings: int = 0
    reads: int = 0
    requests: Mapping[str, int] = field(default_factory=dict)
    seconds: Mapping[str, float] = field(default_factory=dict)
    complete: bool = True
    stopped_by: Optional[str] = None
    message: Optional[str] = None
    unchecked: Tuple[str, ...] = ()

    @property
    def healthy(self) -> bool:
        """True when the whole table was checked and nothing is wrong."""
        return self.complete and not self.problems

    @property
    def broken_snapshots(self) -> List[int]:
        """Ids of the main branch's broken snapshots."""
        return [int(r.split()[1]) for r in self.broken if r.startswith("snapshot ")]

    @property
    def broken_tags(self) -> List[str]:
        """Names of the main branch's broken tags."""
        return [r[len("tag "):] for r in self.broken if r.startswith("tag ")]

    @property
    def broken_changelogs(self) -> List[int]:
        """Ids of the main branch's broken long-lived changelogs."""
        return [int(r.split()[1]) for r in self.broken if r.startswith("changelog ")]

    def to_dict(self) -> Dict[str, Any]:
        """The result as a JSON-ready dict (what the CLI prints with --json)."""
        return {"table": self.table, "healthy": self.healthy, "snapshots": self.snapshots,
                "tags": self.tags, "changelogs": self.changelogs, "branches": self.branches,
                "checked": {k: dict(v) for k, v in self.checked.items()},
                "problems": [p.to_dict() for p in self.problems],
                "broken": list(self.broken), "external": self.external,
                "listings": self.listings, "reads": self.reads,
                "requests": dict(self.requests),
                "complete": self.complete, "stopped_by": self.stopped_by,
                "message": self.message, "unchecked": list(self.unchecked),
                "seconds": {k: round(v, 6) for k, v in self.seconds.items()}}


class _Problem:
    """A problem while it collects the roots it breaks."""
    __slots__ = ("path", "kind", "state", "expected", "actual", "detail", "roots")

    def __init__(self, path: str, kind: str, state: str, expected: Optional[int],
                 actual: Optional[int], detail: Optional[str] = None):
        self.path, self.kind, self.state = path, kind, state
        self.expected, self.actual, self.detail = expected, actual, detail
        self.roots: Set[int] = set()   # indexes into TableCheck._roots


class _Root:
    """A root being checked: reachability's Root, how it is named, what it merges."""
    __slots__ = ("root", "label", "digest", "meta_root", "live", "added")

    def __init__(self, root: Root, label: str, data: bytes, meta_root: str):
        self.root, self.label, self.meta_root = root, label, meta_root
        self.digest = _digest(data)   # (is it the same file at the end?)
        # Manifests merged for its live files (base, then delta); None: a list is unusable
        # (the root is broken by that already; its live files cannot be known).
        self.live: Optional[List[str]] = None
        # (manifests, APPEND files only) whose every ADDed file it needs (changelog lists).
        self.added: List[Tuple[List[str], bool]] = []


def _digest(data: bytes) -> bytes:
    return hashlib.blake2b(data, digest_size=16).digest()


def check_table(store: FileStore, progress: Optional[Callable[[Any], None]] = None,
                max_duration_ms: Optional[int] = None) -> CheckResult:
    """Check every file the table's roots need (see the module docstring).

    Raises:
        UnsupportedTableError: the table's layout options name data file paths this library
            cannot compute (store.layout_refusal), before any I/O beyond the schema.
    """
    store.check_layout("check")
    return TableCheck(store, progress, max_duration_ms).run()


class TableCheck:
    """One run of `check` on one table (read-only)."""

    def __init__(self, store: FileStore, progress: Optional[Callable[[Any], None]] = None,
                 max_duration_ms: Optional[int] = None):
        # A fresh view of the table (the caller's store caches decoded manifests, e.g. of a
        # Table that wrote them: a check reads what the storage holds now), through a
        # metered read-only view: every request is counted by kind, and no write or delete
        # can reach the storage from here.
        self.meter = MeteredReadOnlyIO(store.io)
        fresh = FileStore.from_schema(store.path, self.meter, store.schema)
        fresh.options = store.options
        store = self.store = fresh
        self.io = store.io
        self.root = store.root.rstrip("/")
        self.reach = Reachability(store)
        self.mio = store.manifests
        self.progress = progress
        self.deadline = Deadline.after(max_duration_ms)
        self._roots: List[_Root] = []
        self._listings: Dict[str, Dict[str, Optional[int]]] = {}
        self._problems: Dict[Tuple[str, str], _Problem] = {}
        # Whatever was checked once (a list, an index manifest, ...): its value and problems.
        self._memo: Dict[Tuple[str, str], Tuple[Any, List[_Problem]]] = {}
        self._checked: Dict[str, Dict[str, int]] = {}
        self._external = 0
        self._seen: Set[int] = set()   # hashes of data paths counted (counts only)
        # manifest -> (position in it, hash of the entry's identity, file source, problems)
        # of each ADD entry whose files have a problem.
        self._bad: Dict[str, List[Tuple[int, int, Optional[int], List[_Problem]]]] = {}
        # hash of an identity -> (manifest, position) of each DELETE entry of a merged
        # manifest. (A hash collision could only make a broken file look deleted in one
        # root: the chance is about n^2 / 2^64 for n entries; a rerun hashes afresh.)
        self._deletes: Dict[int, List[Tuple[str, int]]] = {}
        self._read_manifests: Set[str] = set()
        self._manifest_sizes: Dict[str, int] = {}   # manifest -> the size its list records
        self._index_counted: Set[str] = set()
        self._lists_read: Dict[str, Any] = {}   # list -> its manifests, or why unreadable
        self.threads = store.options.get("file-operation.thread-num") or IO_THREADS

    # --- the run -------------------------------------------------------------------------
    @billed   # result.requests: what it asked of the storage
    def run(self) -> CheckResult:
        seconds: Dict[str, float] = {}
        stopped = False
        t = time.perf_counter()
        with collector_paused():
            branches = self._read_roots()
            seconds["roots"] = time.perf_counter() - t
            t = time.perf_counter()
            self._read_lists()
            for i, r in enumerate(self._roots):
                self._check_root_metadata(i, r)
            seconds["lists"] = time.perf_counter() - t
            t = time.perf_counter()
            stopped = not self._check_manifests()
            unchecked = self._attribute_data()
            seconds["manifests"] = time.perf_counter() - t
            t = time.perf_counter()
            self._confirm()
            seconds["confirm"] = time.perf_counter() - t
        return self._result(branches, seconds, stopped, unchecked)

    # --- listings --------------------------------------------------------------------------
    def _list(self, directory: str) -> List[FileStatus]:
        return self.io.list_status(directory)

    def _sizes(self, directory: str) -> Dict[str, Optional[int]]:
        """name -> size (None: not a regular file) of a directory, listed once per run."""
        sizes = self._listings.get(directory)
        if sizes is None:
            sizes = self._listings[directory] = {
                st.name: None if st.is_dir or st.is_symlink else st.size
                for st in self._list(directory)}
        return sizes

    def _look(self, path: str, kind: str, expected: Optional[int]) -> Optional[_Problem]:
        """The problem of the file at `path` (None: there, of the expected size)."""
        directory, _, name = path.rpartition("/")
        sizes = self._sizes(directory)
        if name not in sizes:
            return self._problem(path, kind, "missing", expected, None)
        actual = sizes[name]
        if actual is None:
            return self._problem(path, kind, "not-a-file", expected, None)
        if expected is not None and actual != expected:
            return self._problem(path, kind, "wrong-size", expected, actual)
        return None

    def _problem(self, path: str, kind: str, state: str, expected: Optional[int],
                 actual: Optional[int], detail: Optional[str] = None) -> _Problem:
        rel = self._rel(path)
        p = self._problems.get((kind, rel))
        if p is None:
            p = self._problems[(kind, rel)] = _Problem(rel, kind, state, expected, actual,
                                                      detail)
        return p

    def _count(self, kind: str, size: Optional[int]) -> None:
        c = self._checked.get(kind)
        if c is None:
            c = self._checked[kind] = {"files": 0, "bytes": 0}
        c["files"] += 1
        c["bytes"] += size or 0

    def _rel(self, path: str) -> str:
        return path[len(self.root) + 1:] if path.startswith(self.root + "/") else path

    def _in_parallel(self, read: Callable[[Any], Any], items: Iterable[Any]
                     ) -> Iterator[Tuple[Any, Any, Optional[BaseException]]]:
        """(item, read(item), None) or (item, None, why it is unreadable) for each item, in
        order, with up to `threads` reads in flight; anything else a read raises is raised
        here. A consumer that stops early leaves no read running."""
        items = list(items)
        if self.threads <= 1 or len(items) < 2:
            for x in items:
                try:
                    value = read(x)
                except UNREADABLE as e:
                    yield x, None, e
                    continue
                yield x, value, None
            return
        pool = ContextExecutor(min(self.threads, len(items)))
        try:
            it = iter(items)
            pending = deque((x, pool.submit(read, x)) for x in itertools.islice(it, self.threads))
            while pending:
                x, future = pending.popleft()
                for y in itertools.islice(it, 1):
                    pending.append((y, pool.submit(read, y)))
                try:
                    value = future.result()
                except UNREADABLE as e:
                    yield x, None, e
                    continue
                yield x, value, None
        finally:
            pool.shutdown(wait=True, cancel_futures=True)

    # --- phase 1: the roots ---------------------------------------------------------------
    def _read_roots(self) -> int:
        """Every snapshot, tag and long-lived changelog of every branch; returns how many
        branches there are besides main. A root file that cannot be parsed is a problem
        that breaks that root; one gone since its directory was listed (a concurrent
        expiration) is no longer a root."""
        io = self.io
        branches = [(None, self.root)] + sorted(
            (st.name[len("branch-"):], st.path) for st in
            self._list(io.join(self.root, P.BRANCH_DIR))
            if st.is_dir and not st.is_symlink and st.name.startswith("branch-"))
        files: List[Tuple[str, str, Any, str, str]] = []
        for branch, meta_root in branches:
            prefix = "" if branch is None else f"branch {branch} "
            for sub, kind, parse in ((P.SNAPSHOT_DIR, "snapshot", P.parse_snapshot_id),
                                     (P.TAG_DIR, "tag", P.parse_tag_name),
                                     (P.CHANGELOG_DIR, "changelog", P.parse_changelog_id)):
                directory = io.join(meta_root, sub)
                found = [(ident, name) for name in self._sizes(directory)
                         for ident in [parse(name)] if ident is not None]
                for ident, name in sorted(found):   # ids by number, tags by name
                    files.append((io.join(directory, name), kind, ident,
                                  f"{prefix}{kind} {ident}", meta_root))
        emit(self.progress, LISTING, len(files), len(files), "roots")
        for (path, kind, ident, label, meta_root), data, error in self._in_parallel(
                lambda f: self.io.read_bytes(f[0]), files):
            if error is not None:
                log.info("check of %s: %s vanished while checking (a concurrent "
                         "expiration?)", self.root, path)
                continue
            self._read_root(path, kind, ident, label, meta_root, data)
        return len(branches) - 1

    def _read_root(self, path: str, kind: str, ident: Any, label: str, meta_root: str,
                   data: bytes) -> None:
        try:
            if kind == "tag":
                snap = Tag.from_json(ident, data, path).snapshot
            else:
                snap = SnapshotManager.parse(data, path, ident)
        except CorruptMetadataError as e:
            r = _Root(Root(path, None, kind), label, data, meta_root)  # type: ignore[arg-type]
            self._roots.append(r)
            p = self._problem(path, kind, "unreadable", None, len(data), str(e))
            p.roots.add(len(self._roots) - 1)
            return
        self._roots.append(_Root(Root(path, snap, kind), label, data, meta_root))

    # --- phase 2: lists, index, statistics ---------------------------------------------------
    def _use(self, i: int, key: Tuple[str, str], check: Callable[[], Tuple[Any, List[_Problem]]]
             ) -> Any:
        """`check()` once per key; root `i` is added to the problems it found."""
        memo = self._memo.get(key)
        if memo is None:
            memo = self._memo[key] = check()
        for p in memo[1]:
            p.roots.add(i)
        return memo[0]

    def _check_root_metadata(self, i: int, r: _Root) -> None:
        s = r.root.snapshot
        if s is None:
            return   # its file is unreadable: reported already
        producer = self.reach.producer
        # Readers resolve the snapshot's schema in its own branch's schema/ directory.
        schema = self.io.join(r.meta_root, P.SCHEMA_DIR, P.schema_file_name(s.schema_id))
        self._use(i, ("schema", schema), lambda: self._check_path("schema", schema))
        sizes = {s.base_manifest_list: s.base_manifest_list_size,
                 s.delta_manifest_list: s.delta_manifest_list_size}
        if s.changelog_manifest_list:
            sizes[s.changelog_manifest_list] = s.changelog_manifest_list_size
        lists: Dict[str, Optional[List[str]]] = {}
        for name, needed in r.root.lists(producer):
            if needed:
                lists[name] = self._use(i, ("manifest-list", name),
                                        lambda n=name: self._check_list(n, sizes.get(n)))
        if r.root.kind == "changelog":
            read_by = r.root.read_by(producer)
            if read_by is not None and lists.get(read_by) is not None:
                # Without a changelog list (producer none) its readers read the APPEND
                # files of its delta.
                r.added.append((lists[read_by], read_by != s.changelog_manifest_list))
            return   # its index and statistics files went with its snapshot
        base, delta = lists.get(s.base_manifest_list), lists.get(s.delta_manifest_list)
        if base is not None and delta is not None:
            r.live = base + delta
        if r.root.kind == "snapshot" and s.changelog_manifest_list and \
                lists.get(s.changelog_manifest_list) is not None:
            r.added.append((lists[s.changelog_manifest_list], False))
        if s.index_manifest:
            self._use(i, ("index-manifest", s.index_manifest),
                      lambda: self._check_index(s.index_manifest))
        if s.statistics:
            self._use(i, ("statistics", s.statistics),
                      lambda: self._check_one("statistics", s.statistics))

    def _read_lists(self) -> None:
        """Every needed manifest list the listing of manifest/ shows, read once (in
        parallel): `_check_list` decides with what was read."""
        names: Dict[str, None] = {}
        for r in self._roots:
            if r.root.snapshot is not None:
                names.update((n, None) for n, needed in r.root.lists(self.reach.producer)
                             if needed)
        present = []
        for name in names:
            try:
                path = self.mio.path(name)
            except ValueError:
                continue   # (reported by _check_list)
            directory, _, base = path.rpartition("/")
            if self._sizes(directory).get(base) is not None:
                present.append(name)
        for name, metas, error in self._in_parallel(self.mio.read_list_refs, present):
            self._lists_read[name] = error if error is not None else metas

    def _check_list(self, name: str, expected: Optional[int]
                    ) -> Tuple[Optional[List[str]], List[_Problem]]:
        """(the manifests a list names, None if it is unusable; its problems)."""
        try:
            path = self.mio.path(name)
        except ValueError as e:   # a hostile name in the root file
            return None, [self._problem(name, "manifest-list", "unreadable", expected, None,
                                        str(e))]
        p = self._look(path, "manifest-list", expected)
        if p is not None and p.state != "wrong-size":
            return None, [p]
        metas = self._lists_read.get(name)
        if metas is None:   # not there when listed: read it now (and fail, most likely)
            try:
                metas = self.mio.read_list_refs(name)
            except UNREADABLE as e:
                metas = e
        if isinstance(metas, BaseException):
            e = metas
            if p is None:
                p = self._problem(path, "manifest-list", "unreadable", expected,
                                  self._sizes(path.rpartition("/")[0]).get(name), str(e))
            else:
                p.detail = str(e)
            return None, [p]
        if p is None:
            self._count("manifest-list", expected)
        out = []
        for m in metas:
            self._manifest_sizes.setdefault(m.file_name, m.file_size)
            out.append(m.file_name)
        return out, [p] if p is not None else []

    def _check_one(self, kind: str, name: str) -> Tuple[None, List[_Problem]]:
        """A file whose size nothing records (statistics)."""
        try:
            path = self.reach.path(kind, name)
        except ValueError as e:
            return None, [self._problem(name, kind, "unreadable", None, None, str(e))]
        return self._check_path(kind, path)

    def _check_path(self, kind: str, path: str) -> Tuple[None, List[_Problem]]:
        p = self._look(path, kind, None)
        if p is None:
            self._count(kind, None)
        return None, [p] if p is not None else []

    def _check_index(self, name: str) -> Tuple[None, List[_Problem]]:
        """An index manifest (its size is recorded nowhere) and every index file it ADDs."""
        try:
            path = self.mio.path(name)
        except ValueError as e:
            return None, [self._problem(name, "index-manifest", "unreadable", None, None,
                                        str(e))]
        p = self._look(path, "index-manifest", None)
        if p is not None:
            return None, [p]
        try:
            entries = decode_index_manifest_files(self.io.read_bytes(path), path)
        except UNREADABLE as e:
            return None, [self._problem(path, "index-manifest", "unreadable", None,
                                        self._sizes(path.rpartition("/")[0]).get(name),
                                        str(e))]
        self._count("index-manifest", None)
        problems = []
        for f in entries:
            if f.kind != FileKind.ADD:
                continue
            if f.external_path:
                self._external += 1
                continue
            q = self._look(self.reach.path("index", f.file_name), "index", f.file_size)
            if q is not None:
                problems.append(q)
            elif f.file_name not in self._index_counted:   # (index manifests share files)
                self._index_counted.add(f.file_name)
                self._count("index", f.file_size)
        return None, problems

    # --- phase 3: manifests and data files ------------------------------------------------
    def _check_manifests(self) -> bool:
        """Read every manifest some root needs, once; False if the time limit stopped it
        (after at least one manifest)."""
        users: Dict[str, Set[int]] = {}
        merged: Set[str] = set()
        for i, r in enumerate(self._roots):
            for m in r.live or ():
                users.setdefault(m, set()).add(i)
                merged.add(m)
            for seq, _ in r.added:
                for m in seq:
                    users.setdefault(m, set()).add(i)
        tick = Throttle(self.progress)
        total, done = len(users), 0
        # What the listing of manifest/ already says: only the manifests it shows are read.
        to_read = []
        for name, who in users.items():
            found = self._look_manifest(name, who)
            if found is None:
                done += 1
                self._read_manifests.add(name)
            else:
                to_read.append((name, found))
        for n, ((name, (path, p)), entries, error) in enumerate(self._in_parallel(
                lambda item: self.mio.read_manifest_files(item[0]), to_read)):
            if n and self.deadline is not None and self.deadline.reached():
                return False   # (the reads in flight are waited for, their results dropped)
            tick(READING, done, total, "manifests")
            self._check_manifest(name, users[name], name in merged, path, p, entries, error)
            self._read_manifests.add(name)
            done += 1
        tick(READING, total, total, "manifests")
        return True

    def _look_manifest(self, name: str, users: Set[int]
                       ) -> Optional[Tuple[str, Optional[_Problem]]]:
        """(its path, a wrong-size problem or None) of a manifest to read; None (and its
        problem noted) for one that cannot be read: a hostile name, not there."""
        expected = self._manifest_sizes.get(name)
        try:
            path = self.mio.path(name)
        except ValueError as e:
            self._problem(name, "manifest", "unreadable", expected, None,
                          str(e)).roots.update(users)
            return None
        p = self._look(path, "manifest", expected)
        if p is not None:
            p.roots.update(users)
            if p.state != "wrong-size":
                return None
        return path, p

    def _check_manifest(self, name: str, users: Set[int], merged: bool, path: str,
                        p: Optional[_Problem], entries: Any,
                        error: Optional[BaseException]) -> None:
        expected = self._manifest_sizes.get(name)
        if error is not None:
            if p is None:
                p = self._problem(path, "manifest", "unreadable", expected,
                                  self._sizes(path.rpartition("/")[0]).get(name), str(error))
                p.roots.update(users)
            else:
                p.detail = str(error)
            return
        if p is None:
            self._count("manifest", expected)
        paths_of, look, seen = self.reach.file_paths, self._look, self._seen
        ADD = FileKind.ADD
        for pos, e in enumerate(entries):
            if e.kind != ADD:
                if merged:
                    self._deletes.setdefault(hash(e.identifier), []).append((name, pos))
                continue
            try:
                paths = paths_of(e)
            except ValueError as err:   # a hostile file name: the manifest is damaged
                q = self._problem(path, "manifest", "unreadable", expected, None, str(err))
                q.roots.update(users)
                continue
            if not paths:
                self._external += 1
                continue
            found = []
            q = look(paths[0], "data", e.file_size)
            if q is not None:
                found.append(q)
            for extra in paths[1:]:
                q = look(extra, "extra", None)
                if q is not None:
                    found.append(q)
            h = hash(paths[0])
            if h not in seen and not found:
                seen.add(h)
                self._count("data", e.file_size)
                for _ in paths[1:]:
                    self._count("extra", None)
            if found:
                self._bad.setdefault(name, []).append(
                    (pos, hash(e.identifier), e.file_source, found))

    def _attribute_data(self) -> Tuple[int, ...]:
        """Add to each data problem the roots it breaks: those that merge the entry and do
        not DELETE it later, and those that need every file their list ADDs. Returns the
        roots whose manifests were not all read (a time limit)."""
        read = self._read_manifests
        unchecked = []
        for i, r in enumerate(self._roots):
            needed = list(r.live or ()) + [m for seq, _ in r.added for m in seq]
            if any(m not in read for m in needed):
                unchecked.append(i)
                continue
            if r.live is not None and any(m in self._bad for m in r.live):
                at = {m: k for k, m in enumerate(r.live)}
                for k, m in enumerate(r.live):
                    for pos, h, _, found in self._bad.get(m, ()):
                        if any((at.get(m2, -1), p2) > (k, pos)
                               for m2, p2 in self._deletes.get(h, ())):
                            continue   # DELETEd later in this root: not live in it
                        for q in found:
                            q.roots.add(i)
            for seq, append_only in r.added:
                for m in seq:
                    for pos, h, source, found in self._bad.get(m, ()):
                        if append_only and source not in (None, APPEND_SOURCE):
                            continue
                        for q in found:
                            q.roots.add(i)
        return tuple(unchecked)

    # --- phase 4: confirm ------------------------------------------------------------------
    def _confirm(self) -> None:
        """Read each broken root again: one deleted or replaced meanwhile (a concurrent
        expiration, rollback or tag deletion) may have lost its files to that, and is not
        reported."""
        broken = {i for p in self._problems.values() for i in p.roots}
        gone = set()
        for i in broken:
            r = self._roots[i]
            try:
                same = _digest(self.io.read_bytes(r.root.where)) == r.digest
            except FileNotFoundError:
                same = False
            if not same:
                log.info("check of %s: %s changed while checking; not reported", self.root,
                         r.label)
                gone.add(i)
        if gone:
            for p in self._problems.values():
                p.roots -= gone

    # --- the result ------------------------------------------------------------------------
    def _result(self, branches: int, seconds: Dict[str, float], stopped: bool,
                unchecked: Tuple[int, ...]) -> CheckResult:
        labels = [r.label for r in self._roots]
        problems = tuple(
            CheckProblem(p.path, p.kind, p.state, p.expected, p.actual,
                         tuple(labels[i] for i in sorted(p.roots)), p.detail)
            for p in sorted(self._problems.values(),
                            key=lambda p: (_KIND_ORDER[p.kind], p.path))
            if p.roots)   # a file no root needs (an ADD DELETEd later) breaks nothing
        broken = tuple(labels[i] for i in sorted({i for p in self._problems.values()
                                                  for i in p.roots}))
        kinds = [r.root.kind for r in self._roots]
        requests = self.meter.requests()
        message = None
        if stopped:
            message = (f"stopped by {self.deadline.describe()} after reading "
                       f"{len(self._read_manifests)} manifest(s): the data files of "
                       f"{len(unchecked)} root(s) were not all checked; a rerun checks "
                       f"everything again")
        result = CheckResult(
            self.store.path, kinds.count("snapshot"), kinds.count("tag"),
            kinds.count("changelog"), branches,
            {k: dict(v) for k, v in sorted(self._checked.items())}, problems, broken,
            self._external, requests["LIST"], requests["GET"], requests, seconds, not stopped,
            MAX_DURATION if stopped else None, message,
            tuple(labels[i] for i in unchecked) if stopped else ())
        log.info("check of %s: %d root(s), %d problem(s), %d broken root(s)", self.root,
                 len(self._roots), len(problems), len(broken))
        return result
