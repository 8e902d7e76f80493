"""What an orphan cleanup is asked to do (CleanContext, validated before any I/O) and what it
reports (OrphanCleanResult, OrphanCleanAborted), and how candidate files are classified."""
from __future__ import annotations

import time
from concurrent.futures import Executor
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, NamedTuple, Optional, Sequence, \
    Tuple

from ..io.metered import RequestBill
from ..errors import OptionError, OrphanCleanAborted
from ..format import paths as P
from ..io import FileIO, FileStatus
from .limits import check_max_duration_ms
from .orphan_inventory import PLAUSIBLE_MS

is_bucket_dir = P.is_bucket_dir   # (a layout fact; kept under this name for its callers)

__all__ = ["CleanContext", "OrphanCleanResult", "OrphanCleanAborted", "Candidate", "classify",
           "manifest_kind", "is_bucket_dir", "is_symlink", "DAY_MS", "PLAUSIBLE_MS", "KINDS",
           "MIN_ORPHAN_AGE_MS", "RecentCutoffError", "cutoff_floor_ms", "check_cutoff_floor"]

DAY_MS = 86_400_000
# The newest cutoff orphan cleanup accepts unless told otherwise (allow_recent_cutoff): a writer
# writes its data files before the commit that names them, so an uncommitted file is "unused"
# until then; a cutoff of seconds deletes it and the commit then names a file that is gone
# (delta-rs lost data exactly so; Delta and delta-rs refuse a retention under 7 days unless
# told). A table's commit.timeout, when longer, is the floor: a commit may retry that long.
MIN_ORPHAN_AGE_MS = 3_600_000

KINDS = ("data", "manifest", "manifest-list", "index", "statistics", "changelog", "snapshot",
         "temp")


class RecentCutoffError(OptionError):
    """An orphan cutoff newer than the floor (MIN_ORPHAN_AGE_MS, or the table's
    commit.timeout), refused before anything is listed. `age_ms` is how far before now the
    cutoff is, `floor_ms` the floor and `why` what sets it (for messages in other words)."""

    def __init__(self, message: str, age_ms: int, floor_ms: int, why: str):
        super().__init__(message)
        self.age_ms, self.floor_ms, self.why = age_ms, floor_ms, why


def cutoff_floor_ms(commit_timeout_ms: Optional[int] = None) -> Tuple[int, str]:
    """(the floor, what sets it): an hour, or the table's commit.timeout when longer."""
    from ..options import format_duration_ms
    if commit_timeout_ms is not None and commit_timeout_ms > MIN_ORPHAN_AGE_MS:
        return commit_timeout_ms, (f"the table's commit.timeout "
                                   f"({format_duration_ms(commit_timeout_ms)})")
    return MIN_ORPHAN_AGE_MS, f"{format_duration_ms(MIN_ORPHAN_AGE_MS)}"


def check_cutoff_floor(older_than_ms: int, now_ms: int, what: str, override: str,
                       commit_timeout_ms: Optional[int] = None) -> None:
    """RecentCutoffError when `older_than_ms` is newer than the floor: one line naming `what`
    (the argument as the caller gave it) and the `override`."""
    floor, why = cutoff_floor_ms(commit_timeout_ms)
    age = now_ms - older_than_ms
    if age < floor:
        raise RecentCutoffError(
            f"{what} is within {why} of now: a data file a writer has written but not committed yet would be deleted; give an "
            f"older cutoff, or {override} to allow it (only when no writer is running)",
            age, floor, why)


@dataclass
class CleanContext:
    """What an orphan cleanup should do (validated on construction, before any I/O).

    Args:
        table_path: the table: a Table, or its path (local path, file://, s3://, gs://,
            az://, abfs://, hdfs://).
        older_than_ms: only files last modified before this epoch-ms time are candidates
            (default: now - 1 day; must be in the past, and in milliseconds).
        dry_run: report what would be deleted; delete nothing.
        executor: listing and deleting run on it (default: thread pools of the table's
            `file-operation.thread-num`).
        should_be_retained: veto, called with each candidate's path relative to the root.
        options: table options overriding the table's for this run
            (`file-operation.thread-num`).
        file_io: storage to use instead of the one the path's scheme selects.
        clock: time source (tests).
        max_duration_ms: stop deleting at the first batch boundary after this long from
            the start of clean() (the first batch always runs; operations/limits.py); the
            result then says complete=False, stopped_by="max-duration".
        allow_recent_cutoff: accept an `older_than_ms` newer than the floor (an hour before
            now, or the table's commit.timeout when longer; RecentCutoffError otherwise):
            only when no writer is running, whose uncommitted files it would delete.
        partitions: only these partitions (`orphan_scope`): patterns of `key=glob` terms
            joined by `/` (`["dt=2024-01-*", "dt=2024-02-01/hr=0?"]`, their union); the
            matching partition directories are listed and only the manifests whose partition
            statistics can hold them are read; metadata directories are left alone. None
            (default): the whole table.
        file_list: a file list (an S3 Inventory or GCS inventory report, CSV or Parquet:
            `orphan_inventory`) that replaces the listing: a path, "-" (stdin) or a binary
            file object. Only files it shows are candidates; it must be newer than the
            cutoff and cover the table, and each candidate's status is read again right
            before it is deleted. Needs `file_list_time_ms` or `file_list_manifest`.
        file_list_time_ms: when the list was taken (epoch ms; at or before its first
            entry was read); in doubt, an earlier time.
        file_list_manifest: an S3 Inventory manifest.json: the list's columns (`fileSchema`,
            its CSV has no header), its bucket and its time (`creationTimestamp`).
        file_list_time_source: how the time was given, for messages (the CLI's flag).

    Raises:
        OptionError: a bad threshold, option, callback or time limit.
        RecentCutoffError: (an OptionError) the cutoff is newer than an hour before now.
    """

    table_path: Any   # a Table, or the path of one
    older_than_ms: Optional[int] = None
    dry_run: bool = False
    executor: Optional[Executor] = None
    should_be_retained: Optional[Callable[[str], bool]] = None  # gets the relative path
    options: Optional[Mapping[str, Any]] = None
    file_io: Optional[FileIO] = None
    clock: Callable[[], float] = time.time
    progress: Optional[Callable[[Any], None]] = None   # paimon_commit.progress callback
    max_duration_ms: Optional[int] = None
    allow_recent_cutoff: bool = False
    partitions: Optional[Sequence[str]] = None
    file_list: Any = None
    file_list_time_ms: Optional[int] = None
    file_list_manifest: Optional[str] = None
    file_list_time_source: Optional[str] = None

    def __post_init__(self) -> None:
        check_max_duration_ms(self.max_duration_ms)
        self._check_file_list_args()
        # [{key: glob}] of each pattern, or None: the whole table (checked against the
        # table's partition keys by the cleaner, before anything is listed)
        self.partition_patterns: Optional[List[Dict[str, str]]] = None
        if self.partitions is not None:
            from .orphan_scope import parse_partition_patterns
            self.partition_patterns = parse_partition_patterns(self.partitions)
        if not isinstance(self.table_path, str) and hasattr(self.table_path, "store"):
            # A Table: its storage (with the options it was opened with) and its path.
            table = self.table_path
            self.file_io = self.file_io or table.store.io
            self.table_path = table.path
            dynamic = getattr(table, "dynamic_options", None)   # Table.open(options=...)
            if dynamic:
                self.options = {**dynamic, **(self.options or {})}
        now_ms = int(self.clock() * 1000)
        if self.older_than_ms is None:
            self.older_than_ms = now_ms - DAY_MS
        elif isinstance(self.older_than_ms, bool) or not isinstance(self.older_than_ms, int):
            raise OptionError(f"older_than_ms must be an integer, got {self.older_than_ms!r}")
        elif self.older_than_ms >= now_ms:
            raise OptionError(
                f"older_than_ms = {self.older_than_ms} is not in the past (now = {now_ms}): "
                f"files of commits in progress would be deleted")
        elif self.older_than_ms < PLAUSIBLE_MS:
            raise OptionError(f"older_than_ms = {self.older_than_ms} looks like seconds, not "
                              f"milliseconds")
        if not isinstance(self.allow_recent_cutoff, bool):
            raise OptionError(f"allow_recent_cutoff must be True or False, got "
                              f"{self.allow_recent_cutoff!r}")
        if not self.allow_recent_cutoff:   # (the table's commit.timeout: OrphanFilesCleaner)
            check_cutoff_floor(self.older_than_ms, now_ms,
                               f"older_than_ms = {self.older_than_ms}",
                               "pass allow_recent_cutoff=True")
        if self.should_be_retained is not None and not callable(self.should_be_retained):
            raise OptionError("should_be_retained must be callable")
        if self.file_list is not None:
            self._check_file_list_time(now_ms)

    def _check_file_list_args(self) -> None:
        """The file list's arguments, before any I/O: a list needs its time."""
        self.manifest = None
        if self.file_list is None:
            if self.file_list_time_ms is not None or self.file_list_manifest is not None:
                raise OptionError("file_list_time_ms and file_list_manifest describe a "
                                  "file_list: give one")
            return
        if self.file_list_time_ms is not None and self.file_list_manifest is not None:
            raise OptionError("give file_list_time_ms or file_list_manifest (whose "
                              "creationTimestamp is the list's time), not both")
        if self.file_list_time_ms is None and self.file_list_manifest is None:
            raise OptionError(
                "a file list needs the time it was taken: file_list_time_ms=, or the "
                "inventory's manifest.json as file_list_manifest= (the newest last-modified "
                "time in a list is only a lower bound of it; in doubt, nothing is deleted)")
        if self.file_list_time_ms is not None and (
                isinstance(self.file_list_time_ms, bool)
                or not isinstance(self.file_list_time_ms, int)):
            raise OptionError(f"file_list_time_ms must be an integer, got "
                              f"{self.file_list_time_ms!r}")

    def _check_file_list_time(self, now_ms: int) -> None:
        """The list must be newer than the cutoff (and not from the future): reads the
        manifest, if one is given (a local file, nothing of the table)."""
        from .orphan_inventory import FileListError, format_utc, read_manifest
        if self.file_list_manifest is not None:
            self.manifest = read_manifest(self.file_list_manifest)
            self.file_list_time_ms = self.manifest.time_ms
            self.file_list_time_source = (self.file_list_time_source or
                                          f"creationTimestamp of {self.file_list_manifest}")
        t = self.file_list_time_ms
        source = self.file_list_time_source or f"file_list_time_ms = {t}"
        if t < PLAUSIBLE_MS:
            raise FileListError(f"{source} looks like seconds, not milliseconds")
        if t > now_ms:
            raise FileListError(f"the file list's time {format_utc(t)} ({source}) is in the "
                                f"future (now {format_utc(now_ms)}): a list cannot describe "
                                f"files it has not seen; nothing was deleted")
        if t <= self.older_than_ms:
            raise FileListError(
                f"the file list was taken at {format_utc(t)} ({source}), not after the cutoff "
                f"{format_utc(self.older_than_ms)}: a stale list (a file it shows old may have "
                f"been committed since, and a file newer than it is not in it); take a newer "
                f"inventory or an older cutoff; nothing was deleted")


@dataclass
class OrphanCleanResult:
    """What an orphan cleanup deleted (or would, with dry_run): paths relative to the root,
    counts and bytes by kind, directories removed, and phase timings."""

    dry_run: bool
    older_than_ms: int
    deleted_paths: List[str] = field(default_factory=list)   # relative to the table root
    by_kind: Dict[str, Dict[str, int]] = field(default_factory=dict)
    deleted_dirs: List[str] = field(default_factory=list)
    candidates: int = 0
    used: int = 0
    retained_young: int = 0
    retained_vetoed: int = 0
    seconds: Dict[str, float] = field(default_factory=dict)
    # False when a limit stopped the run (operations/limits.py): `stopped_by` says which
    # ("max-duration", "memory"), `message` what was done and how to go on, `remaining` how
    # many orphans found were not deleted (a rerun finds them again).
    complete: bool = True
    stopped_by: Optional[str] = None
    message: Optional[str] = None
    remaining: int = 0
    # A partition-scoped run (CleanContext.partitions): its patterns, how many partition
    # directories matched, and how many of the manifests the roots name were read / skipped
    # by their partition statistics. None / 0 for a run over the whole table.
    partitions: Optional[List[str]] = None
    partitions_listed: int = 0
    manifests_read: int = 0
    manifests_skipped: int = 0
    # An inventory-fed run (CleanContext.file_list): the list (a path, or "stdin"), the time
    # it was taken (epoch ms; UTC text) and how that time is known, the rows it had, and how
    # many candidates were kept because their status changed (or they went) since it.
    file_list: Optional[str] = None
    file_list_time_ms: Optional[int] = None
    file_list_time_source: Optional[str] = None
    file_list_rows: int = 0
    file_list_changed: int = 0
    # What the operation asked of the storage (io/metered.py).
    requests: RequestBill = field(default_factory=RequestBill)

    @property
    def deleted_files(self) -> int:
        """How many files were (or would be) deleted."""
        return len(self.deleted_paths)

    @property
    def deleted_bytes(self) -> int:
        """How many bytes were (or would be) deleted."""
        return sum(v["bytes"] for v in self.by_kind.values())

    def to_dict(self) -> Dict[str, Any]:
        """The result as a JSON-ready dict (what the CLI prints with --json): each attribute
        and property under its own name (`deleted_dirs` is the list, as the attribute);
        `files` and `dirs` are the older names of `deleted_paths` and `deleted_dirs`."""
        return {"requests": self.requests.to_dict(),
                "deleted_files": self.deleted_files, "deleted_bytes": self.deleted_bytes,
                "deleted_paths": self.deleted_paths, "deleted_dirs": self.deleted_dirs,
                "dry_run": self.dry_run, "files": self.deleted_paths, "dirs": self.deleted_dirs,
                "by_kind": self.by_kind, "candidates": self.candidates, "used": self.used,
                "retained_young": self.retained_young,
                "retained_vetoed": self.retained_vetoed,
                "older_than_ms": self.older_than_ms,
                "complete": self.complete, "stopped_by": self.stopped_by,
                "message": self.message, "remaining": self.remaining,
                "partitions": self.partitions, "partitions_listed": self.partitions_listed,
                "manifests_read": self.manifests_read,
                "manifests_skipped": self.manifests_skipped,
                "file_list": self.file_list, "file_list_time_ms": self.file_list_time_ms,
                "file_list_time": (None if self.file_list_time_ms is None else
                                   _utc(self.file_list_time_ms)),
                "file_list_time_source": self.file_list_time_source,
                "file_list_rows": self.file_list_rows,
                "file_list_changed": self.file_list_changed,
                "seconds": {k: round(v, 6) for k, v in self.seconds.items()}}


def _utc(ms: int) -> str:
    from .orphan_inventory import format_utc
    return format_utc(ms)


class Candidate(NamedTuple):
    status: FileStatus
    kind: str


def classify(name: str, kind: Optional[str]) -> str:
    """Kind of a candidate for the result: temp files anywhere, else by place and prefix."""
    if P.is_temp_file(name):
        return "temp"
    return kind or manifest_kind(name)


def manifest_kind(name: str) -> str:
    if name.startswith("manifest-list-"):
        return "manifest-list"
    if name.startswith("index-manifest-"):
        return "index"
    return "manifest"


def is_symlink(st: FileStatus) -> bool:
    return st.is_symlink
