"""Maintenance of a whole warehouse: every table `<warehouse>/<db>.db/<table>`, several at a
time, each with what its own options ask for.

Per table, in the order of post-commit maintenance (operations/maintenance_order.py, which
commits run too): compaction when asked (`compact=True`, `maintain --compact`: the small files
of every partition, with the table's compaction options; tables this library does not write
are left uncompacted with a warning, a compaction that loses a conflict fails the table after
the other steps ran), tag expiration (`tag.time-expire-enabled`: tags past their retention),
partition expiration (when `partition.expiration-time` is set), consumer expiration (when
`consumer.expiration-time` is set), snapshot expiration (always, with the table's `snapshot.*`
options); then orphan cleanup when asked. Tags are not created here: automatic tags are taken by commits, at the snapshot
that crossed a period boundary.

Paths are reported without credentials: a `s3://KEY:SECRET@bucket/wh` warehouse is reached
with its credentials moved into the storage options (io.uri.split_credentials), and every table
path, result, error and log line names `s3://bucket/wh/...`.

A table that fails is reported with its name and the reason and the run goes on with the
others. A time limit on the run (`max_duration_ms`, `maintain --max-duration`) is checked
between the steps of a table and inside expiration and orphan cleanup at their safe points
(operations/limits.py); a table it stopped, or one that ran out of memory, is `incomplete`
(what it did is reported; a rerun continues), and tables not started by then are `incomplete`
too, untouched. Every table started runs its first step, so every rerun makes progress.
A table whose metadata cannot be read (no readable schema, a bad option, a damaged
snapshot or tag) is skipped with its reason; nothing of it is deleted or "repaired".

Tables run in worker processes (`workers="process"`, the default when parallelism > 1: the
work is CPU-bound decoding, which threads would serialise on the GIL) or threads. Workers are
forked when the caller runs a single OS thread, else started through a fork server; they get
the caller's lease.lease_settings (`maintain --lease-wait`, `--lease-duration`). A stop
request (io.deletion.request_stop: the command line's SIGINT / SIGTERM) is forwarded to
them: every table stops at its next safe point and is `incomplete` (`stopped_by`
"interrupt"), and tables not started are left, `incomplete` too.
"""
from __future__ import annotations

import concurrent.futures
import contextlib
import fnmatch
import logging
import multiprocessing
import os
import signal
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from .io.metered import ContextExecutor, RequestBill, billed, credit
from .errors import (CorruptMetadataError, LeaseHeldError, OptionError, PaimonCommitError,
                     TableNotFoundError, UnsupportedTableError)
from .io import FileIO
from .io import for_path as file_io_for_path
from .io.deletion import StopDeleting, interrupt_reason, request_stop, stop_requested
from .io.uri import split_credentials
from .format import paths as P
from .lease import current_lease_settings, lease_manager, lease_settings, maintenance_lease
from .operations import maintenance_order
from .operations.orphan_context import RecentCutoffError
from .operations.limits import MAX_DURATION, MEMORY, check_max_duration_ms
from .progress import MAINTAINING, ProgressCallback, emit

log = logging.getLogger(__name__)

__all__ = ["TableRef", "TableMaintenanceResult", "find_tables", "resolve_table_pattern",
           "maintain_table", "maintain_warehouse", "is_table_pattern", "check_maintenance_args"]

_GLOB_CHARS = set("*?[")
# Errors meaning "this table's metadata cannot be read": skipped, never acted on.
_UNREADABLE = (CorruptMetadataError, OptionError, TableNotFoundError, UnsupportedTableError,
               UnicodeDecodeError)


@dataclass(frozen=True)
class TableRef:
    """A table found in a warehouse."""
    database: str
    name: str
    path: str

    @property
    def full_name(self) -> str:
        """`db.table`."""
        return f"{self.database}.{self.name}"


@dataclass
class TableMaintenanceResult:
    """What maintaining one table did. `status` is `ok`, `failed` (a step raised: `reason`
    says which and why), `skipped` (its metadata could not be read; nothing was done) or
    `incomplete` (the run's time limit or memory stopped it, or it was not started before the
    time limit: `stopped_by` and `reason` say which and what was done; a rerun continues)."""
    table: str
    path: str
    status: str = "ok"
    reason: Optional[str] = None
    dry_run: bool = False
    tags_expired: List[str] = field(default_factory=list)
    partitions_expired: List[Dict[str, Any]] = field(default_factory=list)
    consumers_expired: List[str] = field(default_factory=list)
    snapshots_expired: int = 0
    orphans_deleted: int = 0
    compacted_files: int = 0                # small files rewritten (would be, in a dry run)
    compact_snapshot_id: Optional[int] = None   # the COMPACT snapshot committed
    deleted_files: int = 0
    deleted_bytes: int = 0
    seconds: float = 0.0
    steps: Dict[str, Any] = field(default_factory=dict)
    warnings: List[str] = field(default_factory=list)   # e.g. partitions kept: no time
    stopped_by: Optional[str] = None   # incomplete: "max-duration" or "memory"
    # What the operation asked of the storage (io/metered.py).
    requests: RequestBill = field(default_factory=RequestBill)

    @property
    def ok(self) -> bool:
        """True when every step ran."""
        return self.status == "ok"

    @property
    def failed(self) -> bool:
        """True for `failed` and `skipped` tables: both make the CLI exit with 1."""
        return self.status in ("failed", "skipped")

    @property
    def incomplete(self) -> bool:
        """True when a limit stopped the table (the CLI exits with 3 if none failed)."""
        return self.status == "incomplete"

    def to_dict(self) -> Dict[str, Any]:
        """JSON-ready dict."""
        return {"requests": self.requests.to_dict(),
                "table": self.table, "path": self.path, "status": self.status,
                "reason": self.reason, "dry_run": self.dry_run,
                "tags_expired": self.tags_expired,
                "partitions_expired": self.partitions_expired,
                "consumers_expired": self.consumers_expired,
                "snapshots_expired": self.snapshots_expired,
                "orphans_deleted": self.orphans_deleted,
                "compacted_files": self.compacted_files,
                "compact_snapshot_id": self.compact_snapshot_id,
                "deleted_files": self.deleted_files, "deleted_bytes": self.deleted_bytes,
                "seconds": round(self.seconds, 6), "warnings": self.warnings,
                "steps": self.steps, "stopped_by": self.stopped_by}


# --- finding tables ------------------------------------------------------------------------

def _join(base: str, *parts: str) -> str:
    return "/".join([base.rstrip("/")] + list(parts))


def find_tables(warehouse: str, database: Optional[str] = None,
                table_glob: Optional[str] = None, file_io: Optional[FileIO] = None,
                storage_options: Optional[Dict[str, str]] = None) -> List[TableRef]:
    """Every table `<warehouse>/<db>.db/<table>` (a directory holding `schema/schema-N`).

    Args:
        warehouse: the warehouse directory (local path or URI).
        database: only this database (a glob such as `sales_*` is accepted).
        table_glob: only tables whose name (or `db.table`, when the glob has a dot) matches.
        file_io: storage to use (default: chosen from the warehouse URI).
        storage_options: how to reach the storage (`s3.endpoint`, ...), when no file_io.

    Returns:
        TableRefs sorted by `db.table`; their paths carry no credentials (pass the
        warehouse's as `storage_options` to open them: see split_credentials).

    Raises:
        TableNotFoundError: the warehouse directory does not exist or holds no database.
    """
    warehouse, storage = split_credentials(str(warehouse), storage_options)
    io = file_io or file_io_for_path(warehouse, storage)
    root = io.root
    dbs = [st for st in io.list_status(root) if st.is_dir and st.name.endswith(".db")
           and not getattr(st, "is_symlink", False)]
    if not dbs and not io.exists(root):
        raise TableNotFoundError(f"warehouse {warehouse} does not exist")
    out: List[TableRef] = []
    for db in dbs:
        db_name = db.name[:-3]
        if database is not None and not fnmatch.fnmatchcase(db_name, database):
            continue
        for st in io.list_status(db.path):
            if not st.is_dir or getattr(st, "is_symlink", False):
                continue
            if table_glob is not None:
                subject = f"{db_name}.{st.name}" if "." in table_glob else st.name
                if not fnmatch.fnmatchcase(subject, table_glob):
                    continue
            names = io.list_names(io.join(st.path, "schema"))
            if any(P.parse_schema_id(n) is not None for n in names):
                out.append(TableRef(db_name, st.name, _join(warehouse, db.name, st.name)))
    out.sort(key=lambda t: t.full_name)
    return out


def is_table_pattern(path: str) -> bool:
    """Whether a table argument is a `WAREHOUSE/db.db/*`-style pattern."""
    return any(c in _GLOB_CHARS for c in str(path))


def resolve_table_pattern(pattern: str, file_io: Optional[FileIO] = None,
                          storage_options: Optional[Dict[str, str]] = None) -> List[TableRef]:
    """Tables matching `<warehouse>/<db glob>.db/<table glob>` (like Paimon's `db.*`).

    Args:
        pattern: e.g. `/data/wh/sales.db/*`, `/data/wh/*.db/events_*`.
        file_io: storage of the warehouse (default: from the URI).
        storage_options: how to reach the storage, when no file_io.

    Returns:
        The matching tables (possibly none).

    Raises:
        ValueError: the pattern is not of that form (the warehouse part may not be a glob).
    """
    pattern, storage = split_credentials(str(pattern), storage_options)
    text = pattern.rstrip("/")
    parts = text.rsplit("/", 2)
    if len(parts) != 3 or not parts[1].endswith(".db") or is_table_pattern(parts[0]):
        raise ValueError(f"table pattern {pattern!r} must look like WAREHOUSE/db.db/* or "
                         f"WAREHOUSE/*.db/name* (globs only in the database and table parts)")
    warehouse, db_glob, table_glob = parts[0] or "/", parts[1][:-3], parts[2]
    return find_tables(warehouse, db_glob, table_glob, file_io, storage)


# --- one table -----------------------------------------------------------------------------

@billed   # result.requests: what it asked of the storage
def maintain_table(path: str, name: Optional[str] = None, orphans: bool = False,
                   older_than_ms: Optional[int] = None, dry_run: bool = False,
                   clock: Callable[[], float] = time.time,
                   progress: Optional[ProgressCallback] = None,
                   storage_options: Optional[Dict[str, str]] = None,
                   compact: bool = False, deadline_at: Optional[float] = None,
                   allow_recent_cutoff: bool = False) -> TableMaintenanceResult:
    """Maintain one table as its options ask (see the module docstring); never raises for a
    table-level problem, which is reported in the result instead.

    Args:
        path: the table directory.
        name: the name to report (default: the path).
        orphans: also remove orphan files.
        older_than_ms: orphan age threshold (epoch ms; default: a day before now).
        dry_run: report what would be done, change nothing.
        clock: seconds since the epoch.
        progress: optional callback (phases per step).
        storage_options: how to reach the storage (`s3.endpoint`, ...).
        compact: first compact the table's small files (Table.compact, every partition).
        deadline_at: when the run must stop (time.monotonic() seconds; maintain_warehouse's
            time limit): checked between the table's steps (its first step always runs),
            and given to expiration and orphan cleanup, which stop at their next safe
            point.
        allow_recent_cutoff: accept an `older_than_ms` less than an hour (or the table's
            commit.timeout) before now (orphan cleanup refuses it otherwise).

    Returns:
        TableMaintenanceResult with status `ok`, `failed`, `skipped` or `incomplete`.

    Raises:
        OptionError: a bad argument (see check_maintenance_args), before any I/O.
    """
    check_maintenance_args(orphans=orphans, older_than_ms=older_than_ms, dry_run=dry_run,
                           compact=compact, clock=clock,
                           allow_recent_cutoff=allow_recent_cutoff)
    t0 = time.perf_counter()
    path, storage_options = split_credentials(str(path), storage_options)
    name = name or path
    result = TableMaintenanceResult(name, path, dry_run=dry_run)
    limits = _Limits(deadline_at, result)
    out_of_memory = False
    step = "opening"
    tag_errors: List[str] = []
    compact_errors: List[str] = []
    lease = contextlib.ExitStack()
    try:
        from .operations.expire import ExpireConfig
        from .operations.tag_lifecycle import TagLifecycleConfig
        from .table import Table
        from .table_commit import TableCommit
        table = Table.open(path, storage_options=storage_options)
        store, options = table.store, table.store.options
        # Every configuration (and the partition formatter) before the first change: a bad
        # option skips the table untouched.
        tag_config = TagLifecycleConfig.from_options(options)
        expire_config = ExpireConfig.from_options(options)
        partition_expire = None
        if options["partition.expiration-time"] is not None and store.partition_keys:
            from .operations.partition_expire import PartitionExpire, PartitionExpireConfig
            commit = TableCommit(store, options={"write-only": "true"}, clock=clock)
            partition_expire = PartitionExpire(store, commit._commit,
                                               PartitionExpireConfig.from_options(options),
                                               clock=clock)
        if orphans and not allow_recent_cutoff and older_than_ms is not None:
            # A commit.timeout longer than the orphan age: refused before the first step
            # (orphan cleanup, the last step, would refuse it after the others had run).
            from .operations.orphan_context import check_cutoff_floor
            check_cutoff_floor(older_than_ms, int(clock() * 1000),
                               f"older_than_ms = {older_than_ms}",
                               "pass allow_recent_cutoff=True (--allow-recent-cutoff)",
                               options["commit.timeout"])
        compaction = _compaction(store, result) if compact else None
        # Refuse to act on a table we cannot fully read: every snapshot file listed must
        # parse before anything is deleted (expiration re-checks what it touches).
        step = "reading metadata"
        emit(progress, "reading metadata", 0, None, "snapshots", name)
        for _ in store.snapshots.snapshots():
            pass
        steps = _table_steps(store, options, tag_config, expire_config, partition_expire,
                             result, dry_run, clock, tag_errors, limits)
        steps[maintenance_order.COMPACTION] = _compaction_step(compaction, result, dry_run,
                                                               compact_errors)

        def before_step(name_of_step: str) -> None:
            nonlocal step
            limits.check(step, name_of_step)
            step = name_of_step
            emit(progress, step, 0, None, _UNITS[step], name)
        if not dry_run:   # one maintenance lease (lease.py) for the table: each step joins it
            step = "waiting for the maintenance lease"   # (an interrupt stops the wait)
            lease.enter_context(maintenance_lease(store, "maintain"))
        maintenance_order.run_in_order(steps, before_step)
        if orphans:
            limits.check(step, "orphan cleanup")
            step = "orphan cleanup"
            emit(progress, step, 0, None, "files", name)
            from .operations.orphan import CleanContext, OrphanFilesCleaner
            orr = OrphanFilesCleaner(CleanContext(
                path, older_than_ms=older_than_ms, dry_run=dry_run, clock=clock,
                file_io=file_io_for_path(path, storage_options),
                allow_recent_cutoff=allow_recent_cutoff,
                max_duration_ms=limits.remaining_ms())).clean()
            result.orphans_deleted = orr.deleted_files
            result.deleted_files += orr.deleted_files
            result.deleted_bytes += orr.deleted_bytes
            d = orr.to_dict()
            d.pop("files", None)
            result.steps["orphans"] = d
            limits.stopped(step, orr)
    except _Stop:
        pass   # _Limits set the status, the reason and what stopped it
    except StopDeleting as e:
        # Asked to stop (an interrupt, a lost lease) at a safe point of a step that does not
        # make its own incomplete result: what is left is what a crash there leaves.
        result.status, result.stopped_by = "incomplete", e.cause
        result.reason = (f"{step}: stopped before a delete step: {e.reason}; what the steps "
                         f"before did is reported, the table is consistent and a rerun "
                         f"continues")
    except LeaseHeldError as e:   # another process maintains it now: nothing was changed
        result.status, result.reason = "skipped", str(e)
    except MemoryError:
        # (Reported below, outside the except block: its traceback holds the frames, and the
        # memory, of whatever ran out.)
        out_of_memory = True
    except RecentCutoffError as e:   # (checked before the first step)
        result.status, result.reason = "skipped", f"{e}; nothing was changed"
    except _UNREADABLE as e:
        before_any_change = step in ("opening", "reading metadata")
        if before_any_change or isinstance(e, (CorruptMetadataError, UnicodeDecodeError)):
            result.status = "skipped"
            result.reason = f"metadata cannot be read ({e}); nothing was changed" \
                if before_any_change else f"{step}: metadata cannot be read ({e})"
        else:
            result.status = "failed"
            result.reason = f"{step}: {e}"
    except (PaimonCommitError, OSError, ValueError, TypeError, KeyError, RuntimeError) as e:
        result.status = "failed"
        result.reason = f"{step}: {type(e).__name__}: {e}"
    finally:
        lease.close()
    if out_of_memory:
        result.status, result.stopped_by = "incomplete", MEMORY
        result.reason = (f"{step}: ran out of memory; what the steps before did is reported, "
                         f"the table is consistent and a rerun continues (maintain "
                         f"--parallelism 1 runs one table at a time)")
    if result.status in ("ok", "incomplete") and (tag_errors or compact_errors):
        result.reason = "; ".join(
            ([f"{maintenance_order.COMPACTION}: " + "; ".join(compact_errors)]
             if compact_errors else []) +
            (["tag expiration: " + "; ".join(tag_errors)] if tag_errors else []) +
            ([result.reason] if result.status == "incomplete" else []))
        result.status = "failed"
    result.seconds = time.perf_counter() - t0
    if result.status != "ok":
        log.warning("maintain %s: %s (%s)", name, result.status, result.reason)
    return result


class _Stop(Exception):
    """A limit stopped a table (its result says why and what was done)."""


class _Limits:
    """The run's time limit (`deadline_at`, time.monotonic() seconds: the clock is the
    machine's, so the deadline holds in the local worker processes too, and a wall-clock step
    does not move it) as one table sees it; sets the table's result when a limit stops it."""

    def __init__(self, deadline_at: Optional[float], result: TableMaintenanceResult):
        self.at, self.result, self.ran = deadline_at, result, False

    def remaining_ms(self) -> Optional[int]:
        """What is left for the next step (at least 1 ms: its first chunk runs)."""
        return None if self.at is None else max(1, int((self.at - time.monotonic()) * 1000))

    def check(self, done: str, next_step: str) -> None:
        """Before `next_step`: stop if the time is up (never before the table's first step,
        so that every run makes progress)."""
        if self.at is None or not self.ran or time.monotonic() < self.at:
            self.ran = True
            return
        self.result.status, self.result.stopped_by = "incomplete", MAX_DURATION
        self.result.reason = (f"stopped by the run's time limit after {done}, before "
                              f"{next_step}; a rerun continues")
        raise _Stop

    def stopped(self, step: str, r: Any) -> None:
        """After a step: if a limit stopped it (`r.stopped_by`), so is the table."""
        # A limit, or a safe point (a lost maintenance lease, an interrupt); not the
        # per-run quota of max-deletes.
        if getattr(r, "stopped_by", None) not in (None, "max-deletes"):
            self.result.status, self.result.stopped_by = "incomplete", r.stopped_by
            self.result.reason = f"{step}: {r.message}"
            raise _Stop


def check_maintenance_args(orphans: bool = False, older_than_ms: Optional[int] = None,
                           dry_run: bool = False, compact: bool = False,
                           clock: Callable[[], float] = time.time,
                           max_duration_ms: Optional[int] = None,
                           allow_recent_cutoff: bool = False) -> None:
    """The arguments of a maintenance run, checked before any I/O: a bad one is the run's
    mistake, not a table's. Found only at the step that uses it, it would fail every table
    after the steps before it had deleted (orphan cleanup runs last). OptionError naming the
    argument otherwise. The orphan threshold follows orphan cleanup's own rules (an integer
    in epoch milliseconds, in the past, at least an hour before now unless
    `allow_recent_cutoff`), also when `orphans` is off."""
    for arg, value in (("orphans", orphans), ("dry_run", dry_run), ("compact", compact)):
        if not isinstance(value, bool):
            raise OptionError(f"{arg} must be True or False, got {value!r}")
    if not callable(clock):
        raise OptionError(f"clock must be callable (seconds since the epoch), got {clock!r}")
    check_max_duration_ms(max_duration_ms)
    if older_than_ms is not None:
        from .operations.orphan_context import CleanContext
        # Its checks only (a CleanContext touches no storage when constructed).
        CleanContext("", older_than_ms=older_than_ms, clock=clock,
                     allow_recent_cutoff=allow_recent_cutoff)


_UNITS = {maintenance_order.COMPACTION: "files", maintenance_order.TAGS: "tags",
          maintenance_order.PARTITIONS: "partitions", maintenance_order.CONSUMERS: "consumers",
          maintenance_order.SNAPSHOTS: "snapshots"}


def _table_steps(store, options, tag_config, expire_config, partition_expire,
                 result: TableMaintenanceResult, dry_run: bool, clock: Callable[[], float],
                 tag_errors: List[str], limits: Optional["_Limits"] = None
                 ) -> Dict[str, Optional[Callable[[], None]]]:
    """What each post-commit maintenance step does here (tags are expired, never created:
    see the module docstring); each adds what it did to `result`. Tags that cannot expire
    are added to `tag_errors`: the other steps still run, and the table is failed."""
    from .operations.expire import ExpireSnapshots
    from .operations.tag_lifecycle import expire_tags
    from .tags import ConsumerManager

    def tags() -> None:
        limit = limits.remaining_ms() if limits is not None else None
        r = expire_tags(store, dry_run=dry_run, clock=clock,
                        **({} if limit is None else {"max_duration_ms": limit}))
        result.tags_expired = list(r.expired_tags)
        result.deleted_files += r.deleted_files
        result.deleted_bytes += r.deleted_bytes
        result.warnings.extend(r.skipped)
        tag_errors.extend(r.errors)
        result.steps["tags"] = r.to_dict()
        if limits is not None:
            limits.stopped(maintenance_order.TAGS, r)

    def partitions() -> None:
        pr = partition_expire.expire(force=True, dry_run=dry_run)
        result.partitions_expired = [{k: str(v) for k, v in p.items()}
                                     for p in pr.expired_partitions]
        for sk in pr.skipped:
            spec = ",".join(f"{k}={v}" for k, v in sk.to_dict()["partition"].items())
            result.warnings.append(f"partition {spec} kept: {sk.reason}")
        for kp in pr.to_dict()["kept_new_data"]:
            spec = ",".join(f"{k}={v}" for k, v in kp.items())
            result.warnings.append(f"partition {spec} kept: it received new data during the "
                                   f"run (no longer expired by its update time)")
        result.steps["partitions"] = pr.to_dict()

    ttl = options["consumer.expiration-time"]

    def consumers() -> None:
        cr = ConsumerManager(store.io, store.root).expire(
            int(clock() * 1000) - ttl, dry_run=dry_run, lease=lease_manager(store))
        result.consumers_expired = list(cr)
        result.warnings.extend(cr.kept)
        result.steps["consumers"] = cr.to_dict()
        if limits is not None:   # a lost lease or an interrupt stopped it: incomplete
            limits.stopped(maintenance_order.CONSUMERS, cr)

    def snapshots() -> None:
        limit = limits.remaining_ms() if limits is not None else None
        er = ExpireSnapshots(store, expire_config, clock=clock).expire(
            dry_run=dry_run, **({} if limit is None else {"max_duration_ms": limit}))
        result.snapshots_expired = er.expired_snapshots
        result.deleted_files += er.deleted_files
        result.deleted_bytes += er.deleted_bytes
        result.warnings.extend(er.skipped)
        result.steps["snapshots"] = er.to_dict()
        if limits is not None:
            limits.stopped(maintenance_order.SNAPSHOTS, er)

    return {maintenance_order.TAGS: tags if tag_config.time_expire_enabled else None,
            maintenance_order.PARTITIONS: partitions if partition_expire is not None else None,
            maintenance_order.CONSUMERS: consumers if ttl is not None else None,
            maintenance_order.SNAPSHOTS: snapshots}


def _compaction(store, result: TableMaintenanceResult):
    """The table's compaction, configured before anything changes (its options were
    validated when the table was opened); None, with a warning, for a table this library
    does not write (primary-key, fixed bucket, ...): its own writers compact it."""
    from .operations.compact import AppendCompaction
    try:
        return AppendCompaction(store)
    except UnsupportedTableError as e:
        result.warnings.append(f"not compacted: {e}")
        return None


def _compaction_step(compaction, result: TableMaintenanceResult, dry_run: bool,
                     errors: List[str]) -> Optional[Callable[[], None]]:
    """The compaction step of maintain_table. A lost conflict (another commit removed its
    inputs: nothing committed, its files deleted) goes to `errors`: the other steps still
    run, and the table is failed."""
    if compaction is None:
        return None
    from .operations.compact import CompactionConflictError

    def run() -> None:
        try:
            r = compaction.run(dry_run=dry_run)
        except CompactionConflictError as e:
            errors.append(str(e))
            return
        result.compacted_files = r.rewritten_files
        result.compact_snapshot_id = r.snapshot_id
        result.steps["compaction"] = r.to_dict()
    return run


# Environment variables the storages read (endpoints, credentials, emulator switches).
_STORAGE_ENV = ("AWS_", "GOOGLE_", "AZURE_", "AZURITE_", "HADOOP_", "ARROW_")


def _storage_env() -> Dict[str, str]:
    return {k: v for k, v in os.environ.items() if k.startswith(_STORAGE_ENV)}


def _not_started(path: str, name: str, dry_run: bool) -> TableMaintenanceResult:
    """A table the run's time limit left untouched."""
    return TableMaintenanceResult(name, path, "incomplete", "not started: the run's time "
                                  "limit was reached before it; a rerun continues", dry_run,
                                  stopped_by=MAX_DURATION)


def _stopped_before(path: str, name: str, dry_run: bool,
                    stop: StopDeleting) -> TableMaintenanceResult:
    """A table left untouched because the run was asked to stop (an interrupt) before it."""
    return TableMaintenanceResult(name, path, "incomplete", f"not started: {stop.reason}; a "
                                  f"rerun continues", dry_run, stopped_by=stop.cause)


def _maintain_in_time(path: str, name: str, orphans: bool, older_than_ms: Optional[int],
                      dry_run: bool, clock: Callable[[], float] = time.time,
                      progress: Optional[ProgressCallback] = None,
                      storage_options: Optional[Dict[str, str]] = None, compact: bool = False,
                      deadline_at: Optional[float] = None, first: bool = False,
                      allow_recent_cutoff: bool = False) -> TableMaintenanceResult:
    """maintain_table, unless the run was asked to stop (an interrupt) or its time limit
    passed before the table could start (the `first` tables, those a run starts at once,
    always start within the time limit: every run progresses)."""
    stop = stop_requested()
    if stop is not None:
        return _stopped_before(path, name, dry_run, stop)
    if deadline_at is not None and not first and time.monotonic() >= deadline_at:
        return _not_started(path, name, dry_run)
    return maintain_table(path, name, orphans, older_than_ms, dry_run, clock, progress,
                          storage_options, compact, deadline_at,
                          allow_recent_cutoff=allow_recent_cutoff)


def _maintain_one(args: Tuple) -> Dict[str, Any]:
    """Process-pool entry point: returns the result as a dict (picklable)."""
    path, name, orphans, older_than_ms, dry_run, storage_options, env, compact, deadline_at, \
        first, allow_recent_cutoff, lease = args
    # A fork server is started once per process and keeps the environment of that moment:
    # its workers would reach the store an earlier call pointed at, with its credentials.
    for k in [k for k in os.environ if k.startswith(_STORAGE_ENV) and k not in env]:
        del os.environ[k]
    os.environ.update(env)
    # The caller's lease settings (maintain --lease-wait, --lease-duration): a process started
    # by a fork server or spawned does not have them.
    with lease_settings(**lease):
        r = _maintain_in_time(path, name, orphans, older_than_ms, dry_run,
                              storage_options=storage_options, compact=compact,
                              deadline_at=deadline_at, first=first,
                              allow_recent_cutoff=allow_recent_cutoff)
    return r.__dict__


# How the parent tells its workers to stop: the stop request of a process (io.deletion) is
# its own, and a signal to the command reaches only the parent.
_WHY_BYTES = 4096
_STOP_POLL_S = 0.1   # how often the parent looks for a stop request to forward


def _worker_init(stop: Any, why: Any) -> None:
    """Start a worker process of maintain_warehouse: it stops when its run does.

    SIGINT is ignored: a terminal's Ctrl-C reaches every process of the command, and the
    parent decides (the first stops the run and is forwarded here through `stop`; on the
    command line a second kills the workers, cli/interrupts.py). A forked worker would
    otherwise run the parent's handler, and one started fresh raise KeyboardInterrupt
    anywhere. A SIGTERM sent to the worker itself (a supervisor signalling every process of
    the command) asks it to stop at its next safe point, as the parent's does."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _worker_sigterm)
    threading.Thread(target=_forwarded_stop, args=(stop, why), daemon=True,
                     name="paimon-commit-stop").start()


def _worker_sigterm(signum: int, _frame: Any) -> None:
    request_stop(interrupt_reason(signum), "interrupt")


def _forwarded_stop(stop: Any, why: Any) -> None:
    stop.wait()
    cause, _, reason = why.value.decode("utf-8", "replace").partition("\n")
    request_stop(reason, cause)


# --- the warehouse -------------------------------------------------------------------------

def maintain_warehouse(warehouse: str, database: Optional[str] = None,
                       table_glob: Optional[str] = None, orphans: bool = False,
                       older_than_ms: Optional[int] = None, parallelism: int = 1,
                       dry_run: bool = False, progress: Optional[ProgressCallback] = None,
                       workers: Optional[str] = None,
                       clock: Callable[[], float] = time.time,
                       tables: Optional[Sequence[TableRef]] = None,
                       storage_options: Optional[Dict[str, str]] = None,
                       compact: bool = False, max_duration_ms: Optional[int] = None,
                       allow_recent_cutoff: bool = False) -> List[TableMaintenanceResult]:
    """Maintain every table of a warehouse (see the module docstring), `parallelism` tables
    at a time, going on past tables that fail.

    Args:
        warehouse: the warehouse directory (local path or URI).
        database: only this database (glob accepted).
        table_glob: only tables whose name (or `db.table`) matches.
        orphans: also remove orphan files of each table.
        older_than_ms: orphan age threshold (epoch ms; default a day before now).
        parallelism: tables maintained at the same time (>= 1).
        dry_run: report only.
        progress: optional callback; gets `maintaining` events counting tables (and, with
            parallelism 1, the steps of each table).
        workers: `process` or `thread` (default: process when parallelism > 1). A fake
            `clock` needs `thread` (or parallelism 1): it is not sent to other processes.
        clock: seconds since the epoch.
        tables: maintain exactly these (skips discovery).
        storage_options: how to reach the storage (`s3.endpoint`, ...).
        compact: first compact the small files of every table this library writes
            (bucket-unaware append tables; the others get a warning).
        max_duration_ms: a time limit on the whole run (> 0): tables stop at their next
            safe point once it is reached, tables not started are not started; both are
            `incomplete` (see the module docstring). It counts from when the tables are
            found.
        allow_recent_cutoff: accept an `older_than_ms` less than an hour (or a table's
            commit.timeout) before now, refused otherwise (only when no writer is running).

    Returns:
        One TableMaintenanceResult per table, sorted by `db.table`.

    Raises:
        ValueError: parallelism < 1, an unknown `workers` value, or any other bad argument
            (OptionError, see check_maintenance_args), before any I/O.
        TableNotFoundError: the warehouse does not exist.
    """
    if isinstance(parallelism, bool) or not isinstance(parallelism, int) or parallelism < 1:
        raise ValueError(f"parallelism must be an integer >= 1, got {parallelism!r}")
    if workers is None:
        workers = "process" if parallelism > 1 else "thread"
    if workers not in ("process", "thread"):
        raise ValueError(f"workers must be 'process' or 'thread', got {workers!r}")
    check_maintenance_args(orphans=orphans, older_than_ms=older_than_ms, dry_run=dry_run,
                           compact=compact, clock=clock, max_duration_ms=max_duration_ms,
                           allow_recent_cutoff=allow_recent_cutoff)
    warehouse, storage_options = split_credentials(str(warehouse), storage_options)
    refs = list(tables) if tables is not None else \
        find_tables(warehouse, database, table_glob, storage_options=storage_options)
    # The limit counts from here: finding the tables (a listing) is not maintenance.
    deadline_at = None if max_duration_ms is None else \
        time.monotonic() + max_duration_ms / 1000
    total = len(refs)
    emit(progress, MAINTAINING, 0, total, "tables")
    results: List[TableMaintenanceResult] = []

    def finished(r: TableMaintenanceResult) -> None:
        results.append(r)
        note = None if r.status == "ok" else f"{r.table}: {r.status}: {r.reason}"
        emit(progress, MAINTAINING, len(results), total, "tables", r.table, note)

    if parallelism == 1 or total <= 1:
        for ref in refs:
            stop = stop_requested()
            if stop is not None:   # an interrupt: the tables not started are left alone
                finished(_stopped_before(ref.path, ref.full_name, dry_run, stop))
                continue
            if deadline_at is not None and results and time.monotonic() >= deadline_at:
                # (The first table always starts: every run makes progress.)
                finished(_not_started(ref.path, ref.full_name, dry_run))
                continue
            finished(maintain_table(ref.path, ref.full_name, orphans, older_than_ms, dry_run,
                                    clock, progress=_per_table(progress, len(results), total),
                                    storage_options=storage_options, compact=compact,
                                    deadline_at=deadline_at,
                                    allow_recent_cutoff=allow_recent_cutoff))
    elif workers == "thread":
        with ContextExecutor(parallelism) as pool:
            futures = [pool.submit(_maintain_in_time, ref.path, ref.full_name, orphans,
                                   older_than_ms, dry_run, clock, None, storage_options,
                                   compact, deadline_at=deadline_at, first=i < parallelism,
                                   allow_recent_cutoff=allow_recent_cutoff)
                       for i, ref in enumerate(refs)]
            for f in concurrent.futures.as_completed(futures):
                finished(f.result())
    else:
        ctx = _process_context()
        env = _storage_env()
        lease = current_lease_settings()
        stop_workers, why = ctx.Event(), ctx.Array("c", _WHY_BYTES, lock=False)
        forwarded = False

        def forward(stop: StopDeleting) -> None:
            nonlocal forwarded
            why.value = f"{stop.cause}\n{stop.reason}".encode()[:_WHY_BYTES - 1]
            stop_workers.set()
            forwarded = True
            log.info("maintain: asking the worker processes to stop (%s)", stop.reason)

        with concurrent.futures.ProcessPoolExecutor(
                min(parallelism, total), mp_context=ctx, initializer=_worker_init,
                initargs=(stop_workers, why)) as pool:
            futures = {pool.submit(_maintain_one, (ref.path, ref.full_name, orphans,
                                                   older_than_ms, dry_run, storage_options,
                                                   env, compact, deadline_at,
                                                   i < parallelism,
                                                   allow_recent_cutoff, lease)): ref
                       for i, ref in enumerate(refs)}
            pending = set(futures)
            try:
                while pending:
                    stop = stop_requested()
                    if stop is not None and not forwarded:
                        # Every worker stops at its next safe point; the tables not started
                        # are reported as such (_maintain_in_time).
                        forward(stop)
                    done, pending = concurrent.futures.wait(
                        pending, _STOP_POLL_S, concurrent.futures.FIRST_COMPLETED)
                    for f in done:
                        ref = futures[f]
                        try:
                            r = TableMaintenanceResult(**f.result())
                            credit(r.requests)   # the worker's requests, in this run's total
                            finished(r)
                        except Exception as e:  # noqa: BLE001 - a dead worker fails its table
                            finished(TableMaintenanceResult(ref.full_name, ref.path, "failed",
                                                            f"worker failed: {e!r}", dry_run))
            except BaseException:
                # (A caller's KeyboardInterrupt, its default SIGINT handler: the workers
                # ignore SIGINT.) They stop at their next safe point, which the pool's
                # shutdown waits for, then it is raised.
                if not forwarded:
                    forward(StopDeleting("interrupted", "interrupt"))
                raise
    results.sort(key=lambda r: r.table)
    failed = [r for r in results if r.failed]
    log.info("maintained %d table(s) of %s: %d ok, %d failed or skipped", total, warehouse,
             total - len(failed), len(failed))
    return results


def _process_context():
    """fork when this process runs no thread beyond those pyarrow starts at import (workers
    start in milliseconds: spawning each made a 20-table run 7x slower than its work);
    otherwise a fork server (a child forked while another thread, Python or native such as the
    S3 client's, holds a lock can hang on it forever), else spawn."""
    import threading
    methods = multiprocessing.get_all_start_methods()
    if "fork" in methods and threading.active_count() == 1 and \
            0 < _os_threads() <= _BASE_THREADS:
        return multiprocessing.get_context("fork")
    if "forkserver" in methods:
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(["paimon_commit.warehouse"])
        return ctx
    return multiprocessing.get_context("spawn")


def _os_threads() -> int:
    """Threads of this process as the OS sees them (native ones included); 0 if unknown."""
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return 0


# The threads pyarrow starts when imported (jemalloc's background thread and one more, both
# fork-aware): more than these means someone else started threads.
import pyarrow  # noqa: E402,F401
_BASE_THREADS = max(_os_threads(), 1)


def _per_table(progress: Optional[ProgressCallback], done: int, total: int
               ) -> Optional[ProgressCallback]:
    """With one table at a time, show each table's steps under the table count."""
    if progress is None:
        return None

    def forward(event) -> None:
        progress(type(event)(MAINTAINING, done, total, "tables",
                             f"{event.table} ({event.phase})", None))
    return forward
