"""`repair`: one new snapshot without the data files that are gone, so that readers of the
latest snapshot work again (Paimon Java's `remove_unexisting_files` procedure, delta-rs's FSCK
`repair`).

How: `check` (check.py) finds the data files that are missing, with one listing per
directory. The ones live in the latest snapshot are removed from it by one OVERWRITE snapshot
of DELETE entries, published through the commit path every commit takes
(FileStoreCommit.remove_files: atomic, retried on a lost race). Each attempt chooses them again
from the latest snapshot it builds on, and lists their directories again: a concurrent commit
that added files keeps them, one that removed a missing file already leaves nothing to
remove, a file restored meanwhile is kept. OVERWRITE, as a dropped partition: streaming
readers do not read the DELETE entries as deleted rows.

What it does not do:
- delete anything: the files are gone already; the snapshot is published with the commit's
  create-if-absent, and a lost attempt deletes only the manifests it wrote itself;
- change existing snapshots or tags: those that name a missing file stay broken (reading them
  fails until the files are restored). The result names them (`still_broken`, from check);
  expiring those snapshots and deleting those tags removes them;
- give up a file that is there: a data file of the wrong size, unreadable, or a missing extra
  file (a file index) of a data file that is there, is listed in `unrepaired`;
- give up a file that is there under another layout: a writer with a dynamic option (a job's
  own `partition.default-name`, pypaimon's `partition.legacy-name` = false; no schema change
  records it) put it in a directory the table's stored options do not name, which may well
  exist (another writer's files of the same partition). Before anything is given up, the
  table's data directories (every directory under the root but its metadata ones) are listed
  recursively once, and an entry whose file name (UUID-unique) is found anywhere there is
  kept and listed in `unrepaired`, its `detail` naming where it was found (audit issue27d
  h2/h6);
- give up the files of a bucket directory that does not exist at all: that is what a wrong
  path computation looks like, and it would drop a whole partition (RepairError; paths are
  computed by FileStore.bucket_dir, which honours `partition.legacy-name` and
  `data-file.path-directory` and refuses what it cannot spell: store.layout_refusal);
- compute a path with a schema that is not the table's: a table whose schemas place data
  files in different directories (an ALTER of a layout option, store.check_layout_history)
  is refused up front; under the lease, after the check and in every commit attempt, the
  schema history is read again and a newer schema (an ALTER while repair ran) refuses the
  run (RepairError, nothing written; _Repair._check_schema);
- repair the latest snapshot's own metadata (a missing manifest list or manifest): it cannot
  know its files; RepairError names the damage (roll back to an intact snapshot instead).

Refused with one line (UnsupportedTableError, before any I/O beyond the schema): primary-key
tables (a data file is one level of an LSM tree: removing it can bring back older versions of
the keys it held, or rows it deleted, and deletion vectors hide rows of other files because of
it) and data-evolution tables (files share row ids, each with some of the columns). After the
check: a latest snapshot with an index manifest, when there is something to remove (its
deletion vectors name data files by name).

Cost: check's (one listing per directory, every metadata file read once), then per plan and
per commit attempt the latest snapshot's manifests and one listing of each directory that
holds a missing file; and, only when some file would be given up, one recursive listing of
the table's data directories (one listing per partition and bucket directory, and the root),
once per run.

With `apply`, it runs under the table's maintenance lease (lease.py), as every explicit
maintenance command: LeaseHeldError names the holder (the CLI exits 75). A dry run takes none.
"""
from __future__ import annotations

import contextlib
import dataclasses
import logging
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, Optional, Set, Tuple

from ..io.metered import RequestBill, billed
from ..errors import PaimonCommitError, UnsupportedTableError
from ..format.manifest import ManifestEntry
from ..format.snapshot import Snapshot
from ..lease import LEASE_DIR, maintenance_lease
from ..store import FileStore, SchemaManager
from .check import CheckProblem, CheckResult, check_table
from .commit import FileStoreCommit

log = logging.getLogger(__name__)

__all__ = ["RepairError", "RepairFile", "RepairGroup", "RepairResult", "repair_table",
           "repair_refusal"]

# Problems of the latest snapshot's own metadata: its files cannot be known.
_METADATA = ("snapshot", "schema", "manifest-list", "manifest")

# The table root's directories that hold no data file: not searched for a missing file's name.
_METADATA_DIRS = frozenset(("snapshot", "manifest", "schema", "tag", "changelog", "branch",
                            "consumer", "index", "statistics", LEASE_DIR))


class RepairError(PaimonCommitError):
    """The latest snapshot cannot be repaired by removing data files (its own metadata is
    damaged, or a bucket directory of missing files does not exist at all). Nothing was
    written."""


@dataclass(frozen=True)
class RepairFile:
    """A data file given up: it is missing, and the repair snapshot no longer names it.

    Attributes:
        path: relative to the table root.
        partition: partition values by key ({} for an unpartitioned table).
        bucket: its bucket.
        directory: its bucket directory, relative to the table root.
        record_count: the rows its manifest entry records (what readers lose).
        file_size: the size its manifest entry records.
    """
    path: str
    partition: Dict[str, Any]
    bucket: int
    directory: str
    record_count: int
    file_size: int

    def to_dict(self) -> Dict[str, Any]:
        return {"path": self.path, "partition": _jsonable_dict(self.partition),
                "bucket": self.bucket, "record_count": self.record_count,
                "file_size": self.file_size}


@dataclass(frozen=True)
class RepairGroup:
    """The files given up in one partition and bucket."""
    partition: Dict[str, Any]
    bucket: int
    directory: str
    files: int
    records: int
    bytes: int

    def to_dict(self) -> Dict[str, Any]:
        return {"partition": _jsonable_dict(self.partition), "bucket": self.bucket,
                "directory": self.directory, "files": self.files, "records": self.records,
                "bytes": self.bytes}


@dataclass(frozen=True)
class RepairResult:
    """What `repair` did (Table.repair, `paimon-commit repair`), or with dry_run would do.

    Attributes:
        table: the table path.
        dry_run: True: nothing was written (the default; `apply=True` commits).
        base_snapshot_id: the latest snapshot the files were chosen from (the one the repair
            snapshot was built on when applied); None for a table without snapshots.
        snapshot_id: the snapshot published (None: a dry run, or nothing to repair).
        files: the data files given up (missing, live in the base snapshot), by path.
        still_broken: every snapshot, tag and long-lived changelog (of every branch) that
            check found broken: repair changes none of them, reading them keeps failing
            until the files are restored (the base snapshot among them, when it missed
            files).
        unrepaired: problems check found in the latest snapshot that repair does not fix
            (a data file of the wrong size or unreadable, a missing extra file of a data file
            that is there, a missing data file whose name is found elsewhere under the table:
            its `detail` says where): its readers still fail on them.
        check: the check the repair was planned from.
        attempts: commit attempts (0: nothing committed).
        seconds: time per phase ("check", "plan", "commit").
    """
    table: str
    dry_run: bool
    base_snapshot_id: Optional[int]
    snapshot_id: Optional[int]
    files: Tuple[RepairFile, ...]
    still_broken: Tuple[str, ...]
    unrepaired: Tuple[CheckProblem, ...]
    check: CheckResult
    attempts: int = 0
    seconds: Mapping[str, float] = field(default_factory=dict)
    # What the operation asked of the storage (io/metered.py).
    requests: RequestBill = field(default_factory=RequestBill)

    @property
    def nothing_to_repair(self) -> bool:
        """True when the base snapshot names no missing data file."""
        return not self.files

    @property
    def records(self) -> int:
        """Rows given up (the files' recorded row counts)."""
        return sum(f.record_count for f in self.files)

    @property
    def bytes(self) -> int:
        return sum(f.file_size for f in self.files)

    @property
    def groups(self) -> List[RepairGroup]:
        """The files given up per partition and bucket, in directory order."""
        by: Dict[str, List[RepairFile]] = {}
        for f in self.files:
            by.setdefault(f.directory, []).append(f)
        return [RepairGroup(fs[0].partition, fs[0].bucket, d, len(fs),
                            sum(f.record_count for f in fs), sum(f.file_size for f in fs))
                for d, fs in sorted(by.items())]

    @property
    def message(self) -> str:
        """One line: what was (or would be) done."""
        if self.base_snapshot_id is None:
            return f"nothing to repair: {self.table} has no snapshot"
        elsewhere = self.found_elsewhere
        if self.nothing_to_repair:
            if elsewhere:
                return (f"nothing to repair: the {len(elsewhere)} missing data file(s) of "
                        f"snapshot {self.base_snapshot_id} of {self.table} were found "
                        f"elsewhere under the table (written under another layout: a dynamic "
                        f"partition option?); not given up")
            return (f"nothing to repair: snapshot {self.base_snapshot_id} of {self.table} "
                    f"names no missing data file")
        what = (f"{len(self.files)} missing data file(s) of snapshot "
                f"{self.base_snapshot_id}: {self.records} record(s), {self.bytes} bytes")
        kept = (f" ({len(elsewhere)} more found elsewhere under the table: not given up)"
                if elsewhere else "")
        if self.dry_run:
            return (f"dry run, nothing changed: a repair would give up {what}{kept}; --apply "
                    f"(Python: apply=True) commits a snapshot without them")
        return (f"committed snapshot {self.snapshot_id} (OVERWRITE) without {what} given "
                f"up{kept}; no file was deleted")

    @property
    def found_elsewhere(self) -> Tuple[CheckProblem, ...]:
        """The missing data files of the base snapshot kept because a file of that name is
        elsewhere under the table (in `unrepaired`; `detail` says where)."""
        return tuple(p for p in self.unrepaired
                     if p.kind == "data" and p.state == "missing")

    def to_dict(self) -> Dict[str, Any]:
        """The result as a JSON-ready dict (what the CLI prints with --json)."""
        c = self.check
        return {"requests": self.requests.to_dict(),
                "table": self.table, "dry_run": self.dry_run,
                "base_snapshot_id": self.base_snapshot_id, "snapshot_id": self.snapshot_id,
                "nothing_to_repair": self.nothing_to_repair, "message": self.message,
                "removed_files": len(self.files), "removed_records": self.records,
                "removed_bytes": self.bytes,
                "groups": [g.to_dict() for g in self.groups],
                "files": [f.to_dict() for f in self.files],
                "still_broken": list(self.still_broken),
                "unrepaired": [p.to_dict() for p in self.unrepaired],
                "check": {"problems": len(c.problems), "broken": list(c.broken),
                          "listings": c.listings, "reads": c.reads,
                          "requests": dict(c.requests)},
                "attempts": self.attempts,
                "seconds": {k: round(v, 6) for k, v in self.seconds.items()}}


def _jsonable_dict(d: Mapping[str, Any]) -> Dict[str, Any]:
    return {k: v if v is None or isinstance(v, (bool, int, float, str)) else str(v)
            for k, v in d.items()}


def repair_refusal(store: FileStore) -> Optional[str]:
    """Why `repair` refuses this table whatever its files (None: an append table)."""
    if store.schema.primary_keys:
        return (f"cannot repair {store.path}: it is a {store.table_kind}; a data file is one "
                f"level of its LSM tree, and removing it can bring back older versions of the "
                f"keys it held or rows it deleted (deletion vectors hide rows because of it). "
                f"Restore the files, or roll back to a snapshot `check` finds intact")
    raw = store.schema.options
    if str(raw.get("data-evolution.enabled", "false")).strip().lower() == "true":
        return (f"cannot repair {store.path}: option 'data-evolution.enabled' = 'true' (data "
                f"files share row ids, each holding some of the columns: removing one "
                f"breaks the rows of the others). Restore the files, or roll back to a "
                f"snapshot `check` finds intact")
    return None


def repair_table(store: FileStore, apply: bool = False,
                 progress: Optional[Callable[[Any], None]] = None,
                 commit_user: Optional[str] = None,
                 check: Optional[CheckResult] = None) -> RepairResult:
    """Plan (and with `apply`, commit) the repair of the latest snapshot (module docstring).

    `check`: a dry run only (ValueError with `apply`): plan from this result of
    check_table(store), made just before, instead of checking the table again (the health
    report's integrity section, which has checked it already). The files are still chosen
    from the latest snapshot and its directories listed again, as in every plan.

    Raises:
        UnsupportedTableError: a primary-key or data-evolution table (before any I/O beyond
            the schema), or a base snapshot with an index manifest that names files to remove.
        RepairError: the latest snapshot's own metadata is damaged.
        LeaseHeldError: with `apply`, another process kept the maintenance lease.
    """
    if apply and check is not None:
        raise ValueError("repair: a check result is planned from in a dry run only (apply "
                         "checks the table itself, under the lease)")
    problem = repair_refusal(store)
    if problem:
        raise UnsupportedTableError(problem)
    store.check_layout_history("repair")
    with maintenance_lease(store, "repair") if apply else contextlib.nullcontext():
        # Again under the lease (its wait may be long), in every plan and commit attempt
        # (_Repair._pick): an ALTER meanwhile would make files look missing (issue25d d2).
        return _Repair(store, apply, progress, commit_user).run(check)


class _Repair:
    def __init__(self, store: FileStore, apply: bool,
                 progress: Optional[Callable[[Any], None]], commit_user: Optional[str]):
        self.store, self.apply, self.progress = store, apply, progress
        self.commit_user = commit_user or f"repair-{uuid.uuid4()}"
        self.root = store.root.rstrip("/")
        self.missing: Set[str] = set()
        self.picked: List[ManifestEntry] = []
        self.picked_from: Optional[Snapshot] = None
        # missing path (relative) -> where a file of its name is (relative), of the last plan
        self.elsewhere: Dict[str, str] = {}
        self._found: Optional[Dict[str, List[str]]] = None   # the walk, once per run

    @billed   # result.requests: what it asked of the storage
    def run(self, check: Optional[CheckResult] = None) -> RepairResult:
        seconds: Dict[str, float] = {}
        t = time.perf_counter()
        if self.apply:   # under the lease (its wait may be long), before the long check
            self._check_schema(None)
        if check is None:   # (given: a dry run planned from the caller's check)
            check = check_table(self.store, self.progress)
        seconds["check"] = time.perf_counter() - t
        t = time.perf_counter()
        self.missing = {p.path for p in check.problems
                        if p.kind == "data" and p.state == "missing"}
        latest = self.store.snapshots.latest_snapshot()
        if latest is None:
            return RepairResult(self.store.path, not self.apply, None, None, (), check.broken,
                                (), check, 0, seconds)
        self._refuse_damaged(check, latest)
        files = self._pick(latest, self.store.live_entries(latest))
        seconds["plan"] = time.perf_counter() - t
        # What check found wrong with the planned snapshot, other than missing data files.
        label = f"snapshot {latest.id}"
        others = [p for p in check.problems if label in p.roots and
                  not (p.kind == "data" and p.state == "missing")]
        snapshot_id, attempts = None, 0
        if files and self.apply:
            t = time.perf_counter()
            r = FileStoreCommit(self.store, self.commit_user).remove_files(self._pick)
            seconds["commit"] = time.perf_counter() - t
            snapshot_id, attempts = r.snapshot_id, r.attempts
            latest, files = self.picked_from or latest, list(self.picked)
            if snapshot_id is None:
                files = []   # a concurrent commit removed them first
        removed = self._removed_paths(files)
        unrepaired = tuple(p for p in others if p.path not in removed) + tuple(
            dataclasses.replace(p, detail=self._found_at(p.path)) for p in check.problems
            if label in p.roots and p.kind == "data" and p.state == "missing" and
            p.path in self.elsewhere and p.path not in removed)
        result = RepairResult(self.store.path, not self.apply, latest.id, snapshot_id,
                              tuple(sorted((self._file(e) for e in files),
                                           key=lambda f: f.path)),
                              check.broken, unrepaired, check, attempts, seconds)
        log.info("repair of %s: %s", self.store.path, result.message)
        return result

    def _refuse_damaged(self, check: CheckResult, latest: Snapshot) -> None:
        label = f"snapshot {latest.id}"
        damaged = [p for p in check.problems if label in p.roots and p.kind in _METADATA]
        if damaged:
            raise RepairError(
                f"cannot repair {self.store.path}: the metadata of its latest snapshot "
                f"{latest.id} is damaged ({damaged[0].describe()}): which data files it "
                f"names cannot be known. Roll back to a snapshot `check` finds intact, or "
                f"restore the file")

    def _pick(self, latest: Snapshot, live: List[ManifestEntry]) -> List[ManifestEntry]:
        """The entries of `latest` whose data file check found missing and a listing of its
        directory, now, still does not show (each directory listed once)."""
        store, io = self.store, self.store.io
        found: List[ManifestEntry] = []
        listed: Dict[str, Set[str]] = {}
        absent: Dict[str, int] = {}   # bucket directory that does not exist -> files in it
        for e in live:
            if e.file.external_path:
                continue   # outside the table root: check does not check it
            path = store.data_file_path(e)
            if self._rel(path) not in self.missing:
                continue
            directory, _, name = path.rpartition("/")
            names = listed.get(directory)
            if names is None:
                names = listed[directory] = {st.name for st in io.list_status(directory)}
                if not names and not io.exists(directory):
                    absent[directory] = 0
            if name in names:
                log.info("repair of %s: %s is there again; kept", store.path, path)
                continue
            if directory in absent:
                absent[directory] += 1
                continue
            found.append(e)
        found = self._not_elsewhere(found)
        if absent:
            # Defence in depth: a file is given up only when its own bucket directory was
            # listed. A whole directory the manifests name being absent is what a wrong path
            # computation looks like (a layout option misread): every file of the partition
            # would be dropped. Refused, whatever else there is to repair.
            directory, n = sorted(absent.items())[0]
            more = f" (and {len(absent) - 1} more)" if len(absent) > 1 else ""
            raise RepairError(
                f"cannot repair {store.path}: the bucket directory {self._rel(directory)}"
                f"{more} of {n} missing data file(s) live in snapshot {latest.id} does not "
                f"exist at all; repair gives up a file only when its directory is there and "
                f"listed, since an absent directory may mean the table's paths are computed "
                f"wrongly. Nothing was written. Restore the files, or, if the whole "
                f"directory is really lost, recreate it empty and run repair again")
        if found and latest.index_manifest:
            raise UnsupportedTableError(
                f"cannot repair {store.path}: snapshot {latest.id} has an index manifest "
                f"({latest.index_manifest}), whose deletion vectors (or other index files) "
                f"name data files: removing {len(found)} missing file(s) would leave them "
                f"naming files the table no longer has. Restore the files, or roll back to a "
                f"snapshot `check` finds intact")
        # Last, right before the plan is used (published, or reported): every path above
        # was computed with this handle's schema, which must still be the table's.
        self._check_schema(latest)
        self.picked, self.picked_from = found, latest
        return found

    def _not_elsewhere(self, found: List[ManifestEntry]) -> List[ManifestEntry]:
        """`found` less the entries whose file name is somewhere under the table (another
        layout: a writer's dynamic partition option, audit issue27d h2/h6), noted in
        self.elsewhere. The data directories are listed (once per run) only when there is
        something to give up."""
        self.elsewhere = {}
        if not found:
            return found
        if self._found is None:
            wanted = {p.rpartition("/")[2] for p in self.missing}
            self._found = self._walk(wanted)
        kept = []
        for e in found:
            rel = self._rel(self.store.data_file_path(e))
            where = [w for w in self._found.get(rel.rpartition("/")[2], ()) if w != rel]
            if where:
                self.elsewhere[rel] = where[0]
                log.warning("repair of %s: %s is missing, but %s is there; not given up",
                            self.store.path, rel, where[0])
            else:
                kept.append(e)
        return kept

    def _walk(self, wanted: Set[str]) -> Dict[str, List[str]]:
        """name -> where it is (relative, sorted), of the names in `wanted` found anywhere
        under the table root but its metadata directories (and under the table's
        `data-file.path-directory` whatever its name). Symlinks are not followed; whatever
        bears the name counts (in doubt, keep). A symlinked directory met on the way (not
        followed: never a path out of the table) may hold any of them: refused, nothing
        written (audit issue25h k1: a partition directory moved to another volume and
        linked back)."""
        io = self.store.io
        out: Dict[str, List[str]] = {}
        starts = [self.root]
        top = self.store.data_root_names
        if top and top[0] in _METADATA_DIRS:
            starts.append(self.store.data_root.rstrip("/"))
        stack = list(reversed(starts))
        seen: Set[str] = set()
        while stack:
            directory = stack.pop()
            if directory in seen:
                continue
            seen.add(directory)
            listed = io.list_status(directory)
            if not listed and directory not in starts:
                # Listed by its parent a moment ago, read as empty now: a listing reads a
                # directory that is gone (moved, renamed, being linked back) as empty, and
                # would give its files up (audit issue25i m1). Asked again: gone then too,
                # refused, as an absent bucket directory is.
                listed = io.list_status(directory)
            if not listed and directory not in starts and not io.exists(directory):
                raise RepairError(
                    f"cannot repair {self.store.path}: {self._rel(directory)} disappeared "
                    f"while repair looked for {len(wanted)} missing data file(s) under the "
                    f"table: they may have moved with it. Nothing was written. Run repair "
                    f"again once the table's directories stay put")
            for st in listed:
                if st.name in wanted:
                    out.setdefault(st.name, []).append(self._rel(st.path))
                if directory == self.root and st.name in _METADATA_DIRS:
                    continue
                if st.is_symlink and st.name not in wanted:
                    # (a link to a file or a directory alike: listings do not say which)
                    raise RepairError(
                        f"cannot repair {self.store.path}: {len(wanted)} data file(s) its "
                        f"latest snapshot names are not where the table's layout puts them, "
                        f"and {self._rel(st.path)} is a symbolic link, which repair does "
                        f"not follow: they may be behind it. Nothing was written. Restore "
                        f"the files, or replace the link with the directory itself and run "
                        f"repair again")
                if st.is_dir:
                    stack.append(st.path.rstrip("/"))
        for v in out.values():
            v.sort()
        return out

    def _found_at(self, path: str) -> str:
        return (f"found at {self.elsewhere[path]}: written under another layout (a dynamic "
                f"partition option?); not given up")

    def _check_schema(self, latest: Optional[Snapshot]) -> None:
        """Refuse (nothing written) unless the paths computed with the handle's schema are
        still where the table's files are: no schema newer than it (an ALTER since the
        handle was opened, e.g. while repair waited for the lease or ran its check) named by
        the schema directory or by `latest` (the snapshot an attempt builds on), and no
        schema of the table placing data files elsewhere (store.check_layout_history).
        Otherwise a file written under the new schema looks missing at the path the old
        one gives, and would be given up although it exists (audit issue25d d2); the
        snapshot would be published under the older schema too."""
        store = self.store
        sid = store.schema.id
        ids = SchemaManager(store.io, store.root).list_ids()
        newer = max([i for i in ids if i > sid] +
                    ([latest.schema_id] if latest is not None and latest.schema_id > sid
                     else []), default=None)
        if newer is not None:
            raise RepairError(
                f"cannot repair {store.path}: its schema changed while repair ran (schema "
                f"{newer} is newer than schema {sid}, with which repair computed the paths of "
                f"the data files): files written under it may be where schema {sid} does not "
                f"look. Nothing was written; run repair again (open the table again first)")
        store.check_layout_history("repair", ids, "nothing was written")

    def _rel(self, path: str) -> str:
        return path[len(self.root) + 1:] if path.startswith(self.root + "/") else path

    def _removed_paths(self, files: List[ManifestEntry]) -> Set[str]:
        """The data files given up and their extra files, relative."""
        out: Set[str] = set()
        for e in files:
            path = self.store.data_file_path(e)
            out.add(self._rel(path))
            directory = path.rpartition("/")[0]
            out.update(self._rel(self.store.io.join(directory, x)) for x in e.file.extra_files)
        return out

    def _file(self, e: ManifestEntry) -> RepairFile:
        store = self.store
        values = store.manifests.decode_partition(e.partition)
        path = self._rel(store.data_file_path(e))
        return RepairFile(path, store.partition_dict(values), e.bucket,
                          path.rpartition("/")[0], e.file.row_count, e.file.file_size)
