"""TableCommit: the commit object a job holds. FileStoreCommit plus post-commit maintenance.

After every commit call: compaction of the partitions the commit wrote to (only with
`compaction.post-commit.enabled=true`), tag auto-creation and tag expiration, partition
expiration, consumer expiration, snapshot expiration, then the batch tag (in that order; none
with `write-only=true`). This is the order of Paimon's TableCommitImpl since 1.4.1 (1.3.x ran
consumer, snapshot, partition, then tags): a period's tag is taken on the snapshot that crossed
the period boundary before snapshot expiration can remove that snapshot, an expired tag's files
are freed by the snapshot expiration of the same run, and snapshot expiration, the slowest,
comes last. The `batch` tag (`tag.automatic-creation=batch`, after one-shot batch commits) is
taken at the very end, on the state the batch leaves, as Paimon's batch tag step runs after the
commit. Compaction comes first, as Paimon's writers compact before the commit that their
maintenance follows; a compaction that loses a conflict (another commit removed its input
files meanwhile) is not a failure: it committed nothing, deleted what it wrote, is logged and
recorded in `last_maintenance.compaction_conflict`, and those files are compacted after a later
commit. `snapshot.expire.execution-mode`:
- `sync`: in the committing thread;
- `async`: on one background thread, in order.
A maintenance failure never fails the commit that triggered it: it is parked in an error slot
and raised by the next commit call *before* it publishes anything. (Paimon raises it after
publishing; a caller that retries on the error would then commit the same data twice.) The
slot stays set, so a new TableCommit is the way to recover. A one-shot batch commit
(`commit_identifier=None`) runs maintenance inline and raises directly; its snapshot is
published then, and repeating the call with the same messages is a no-op.
"""
from __future__ import annotations

import contextlib
import logging
import concurrent.futures
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Dict, FrozenSet, Iterable, List, Mapping, Optional, Sequence

from .io.metered import ContextExecutor, RequestBill, billed
from .errors import AtomicCreateUnsupportedError, LeaseRecordError, PaimonCommitError
from .format.commit_message import CommitMessage
from .lease import lease_manager, maintenance_lease
from .operations.commit import CommitConfig, CommitResult, FileStoreCommit
from .operations.expire import ExpireConfig, ExpireResult, ExpireSnapshots
from .option_names import check_table_option_names
from .options import validate_options
from .store import FileStore
from .tags import ConsumerExpireResult, ConsumerManager
from .writer import message_paths

log = logging.getLogger(__name__)

__all__ = ["TableCommit", "MaintenanceError", "MaintenanceResult"]


class MaintenanceError(PaimonCommitError):
    """Post-commit maintenance failed earlier; raised by the next commit call of the same
    TableCommit before it publishes anything (that call committed nothing)."""


@dataclass
class MaintenanceResult:
    """What one post-commit maintenance run did (TableCommit.last_maintenance)."""

    partitions: Any = None            # PartitionExpireResult or None
    # The consumers removed (a list); `complete` False with `stopped_by` when a safe point
    # stopped that step, `kept` those a reader wrote again after the listing.
    consumers_expired: ConsumerExpireResult = field(default_factory=ConsumerExpireResult)
    snapshots: Optional[ExpireResult] = None
    seconds: float = 0.0
    tags: Any = None                  # TagLifecycleResult or None
    compaction: Any = None            # CompactResult or None
    compaction_conflict: Optional[str] = None   # a compaction that lost a conflict: why
    # The steps after compaction were skipped this turn, and why: another process held the
    # table's maintenance lease (the holder does the work), the storage cannot take it, or a
    # lease record cannot be used (the error, naming the file).
    lease_skipped: Optional[str] = None
    # What the operation asked of the storage (io/metered.py).
    requests: RequestBill = field(default_factory=RequestBill)


class TableCommit:
    """The commit object a job holds: publishes snapshots (FileStoreCommit) and runs
    post-commit maintenance after each (see the module docstring). Use it as a context
    manager, or call close(), so queued asynchronous maintenance finishes.

    Args (through Table.new_commit):
        commit_user: stable name of the logical writer; exactly-once needs one.
        options: table options overriding the table's (validated before any I/O).
    """

    def __init__(self, store: FileStore, commit_user: Optional[str] = None,
                 options: Optional[Mapping[str, Any]] = None, clock=time.time):
        overrides = {k: str(v).lower() if isinstance(v, bool) else str(v)
                     for k, v in (options or {}).items()}
        if overrides:
            check_table_option_names(options, "commit option",
                                     "ignored: only Paimon's options act on a commit",
                                     stacklevel=4)
            from .dynamic_options import check_commit_options
            check_commit_options(overrides, store.schema, f"commit options of {store.path}")
            parsed = validate_options({**store.schema.options, **overrides})  # before any I/O
        else:
            parsed = store.options
        self.store = store
        self.options = parsed
        self.clock = clock
        self._commit = FileStoreCommit(store, commit_user, CommitConfig.from_options(parsed))
        self.expire_config = ExpireConfig.from_options(parsed)
        self.write_only: bool = parsed["write-only"]
        self.async_mode = parsed["snapshot.expire.execution-mode"] == "async"
        self.partition_expire = None
        if parsed["partition.expiration-time"] is not None and store.partition_keys \
                and not self.write_only:
            from .operations.partition_expire import PartitionExpire, PartitionExpireConfig
            self.partition_expire = PartitionExpire(
                store, self._commit, PartitionExpireConfig.from_options(parsed), clock=clock)
        from .operations.tag_lifecycle import TagLifecycle, TagLifecycleConfig
        tag_config = TagLifecycleConfig.from_options(parsed)   # before any I/O
        self.tag_lifecycle = TagLifecycle(store, tag_config, clock=clock) \
            if tag_config.active and not self.write_only else None
        self._compact_options = overrides
        self.compaction = parsed["compaction.post-commit.enabled"] and not self.write_only
        if self.compaction:   # a table compaction would refuse: say so now, before any I/O
            from .errors import UnsupportedTableError
            from .operations.compact import AppendCompaction
            try:
                AppendCompaction(store, options=overrides)
            except UnsupportedTableError as e:
                raise UnsupportedTableError(
                    f"option 'compaction.post-commit.enabled' = 'true': {e}") from None
        self.last_result: Optional[CommitResult] = None
        self.last_maintenance: Optional[MaintenanceResult] = None
        self._error: Optional[Exception] = None
        self._error_lock = threading.Lock()
        self._executor: Optional[ThreadPoolExecutor] = None
        self._last_future: Optional[Future] = None
        self._closed = False
        self._expirer: Optional[ExpireSnapshots] = None

    @property
    def commit_user(self) -> str:
        """The commit user written into every snapshot of this object."""
        return self._commit.commit_user

    @property
    def maintenance_error(self) -> Optional[Exception]:
        """The first maintenance failure of this object, if any."""
        return self._error

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("this TableCommit is closed")

    # --- commits -------------------------------------------------------------------------
    def commit(self, messages: Sequence[CommitMessage],
               commit_identifier: Optional[int] = None) -> Optional[int]:
        """Publish the messages as one APPEND snapshot, then run maintenance.

        Args:
            messages: CommitMessages from TableWriter.prepare_commit (any process).
            commit_identifier: increasing id of this commit for exactly-once (e.g. a
                streaming batch id); None = a one-shot batch commit.

        Returns:
            The new snapshot id, or None when nothing was committed (no files and
            snapshot.ignore-empty-commit = true). Repeating a call with messages this commit
            user already committed with the same identifier returns the earlier snapshot id
            and publishes nothing (see README, "Commit semantics").

        Raises:
            UnsupportedTableError: the table is not one this library writes to.
            CommitConflictError: a file is no longer live / already live / already committed
                by this commit user under another identifier, or the identifier does not
                increase, or a rollback removed the snapshot these messages were committed as
                (their files are orphan cleanup's: write the rows again) (no retry helps).
            CommitFailedError: the retry budget ran out (commit.max-retries / .timeout).
            MaintenanceError: an earlier maintenance run failed (nothing was committed).
        """
        self._start_call()
        messages = list(messages)
        self.last_result = self._commit.commit(messages, commit_identifier)
        self._maintain(commit_identifier, _written(messages))
        return self.last_result.snapshot_id

    def overwrite(self, messages: Sequence[CommitMessage],
                  partition: Optional[Mapping[str, Any]] = None,
                  commit_identifier: Optional[int] = None) -> Optional[int]:
        """Publish an OVERWRITE snapshot replacing partitions with the new files: exactly
        `partition` if given, else the partitions present in the new files
        (dynamic-partition-overwrite = true), else the whole table. The files replaced are
        recomputed from the latest snapshot on every retry.

        Returns:
            The new snapshot id, or None when nothing was committed.

        Raises:
            ValueError: a new file lies outside `partition`; and as commit().
        """
        self._start_call()
        messages = list(messages)
        self.last_result = self._commit.overwrite(messages, partition, commit_identifier)
        self._maintain(commit_identifier, _written(messages))
        return self.last_result.snapshot_id

    def drop_partitions(self, partitions: Sequence[Mapping[str, Any]],
                        commit_identifier: Optional[int] = None) -> Optional[int]:
        """Publish one OVERWRITE snapshot with a DELETE entry for every live file of the
        matching partitions (works on every table kind). Specs may be partial; None or the
        default partition name mean NULL, '' means ''.

        Returns:
            The new snapshot id, or None when no live file matched.

        Raises:
            TypeError / ValueError: a malformed spec, unknown key or wrongly typed value.
        """
        self._start_call()
        self.last_result = self._commit.drop_partitions(partitions, commit_identifier)
        self._maintain(commit_identifier)
        return self.last_result.snapshot_id

    def filter_committed(self, identifiers) -> List[int]:
        """The identifiers this commit user has not committed yet (they must increase)."""
        return self._commit.filter_committed(identifiers)

    def filter_and_commit(self, by_identifier: Mapping[int, Sequence[CommitMessage]]
                          ) -> List[Optional[int]]:
        """After a restart: commit, in order, only the identifiers not committed yet.

        Returns:
            The snapshot ids of the commits made.

        Raises:
            CommitConflictError: a data file of a pending commit has vanished; a data file is
                listed twice; or this commit user has no retained snapshot left (the table
                cannot tell what it committed) and a retained snapshot, tag or changelog
                still names a pending file (docs/commit.md, "Exactly-once").
        """
        self._start_call()
        results = self._commit.filter_and_commit(by_identifier)
        if results:
            self.last_result = results[-1]
            self._maintain(max(by_identifier),
                           _written(m for ms in by_identifier.values() for m in ms))
        return [r.snapshot_id for r in results]

    last_abort = None   # AbortResult of the last abort(): what it deleted and kept, and why

    def abort(self, messages: Sequence[CommitMessage]) -> int:
        """Delete the data files of messages that will not be committed.

        A file is deleted only if no snapshot, tag or long-lived changelog (of the table or
        a branch) names it: messages that were committed after all (e.g. by an earlier call
        that seemed to fail) keep their files, even once a later snapshot replaced them, as
        long as anything retained reads them. If what the table uses cannot be read, nothing
        is deleted (see paimon_commit.operations.abort). Returns the number of files
        deleted."""
        from .operations.abort import abort_files
        self.last_abort = abort_files(self.store, message_paths(self.store, messages))
        return len(self.last_abort.deleted)

    # --- maintenance ---------------------------------------------------------------------
    def expire_snapshots(self, dry_run: bool = False, progress=None,
                         max_duration_ms: Optional[int] = None,
                         labels: Optional[Dict[str, str]] = None,
                         **overrides: Any) -> ExpireResult:
        """Run snapshot expiration now with this commit's options (plus overrides such as
        retain_min=..., older_than_ms=...); `progress` is an optional
        paimon_commit.progress callback; `max_duration_ms` a time limit
        (ExpireSnapshots.expire). The result says why what is left was kept
        (`kept_because`), naming each setting by `labels` ({"retain_min": "--retain-min"})
        or else by its option name."""
        # A setting is named in the caller's words only where the caller gave it.
        given = {"older_than": "older_than_ms", "time_retained": "time_retained_ms"}
        labels = dict(labels or {})
        used = {k: v for k, v in labels.items() if overrides.get(given.get(k, k)) is not None}
        notes = _widen_retention(self.options, overrides, labels)
        if notes:   # the widened bound is the typed one's doing
            widened, typed = ("retain_min", "retain_max") if "retain_min" not in used \
                else ("retain_max", "retain_min")
            used[widened] = labels.get(typed, typed)
        cfg = ExpireConfig.from_options(self.options, **overrides)
        expirer = ExpireSnapshots(self.store, cfg, clock=self.clock, progress=progress)
        expirer.explain, expirer.labels = True, used
        result = expirer.expire(dry_run=dry_run, max_duration_ms=max_duration_ms)
        result.notes = notes
        return result

    def _start_call(self) -> None:
        """Before a commit call publishes anything: refuse on a closed object or a parked
        maintenance failure, so that a MaintenanceError means this call committed nothing."""
        self._check_open()
        self.last_result = None
        if self._error is not None:
            raise MaintenanceError(
                f"post-commit maintenance of {self.store.path} failed earlier: "
                f"{self._error!r} (nothing was committed by this call; open a new commit "
                f"object to continue)") from self._error

    def _maintain(self, identifier: Optional[int], written: FrozenSet[bytes] = frozenset()
                  ) -> None:
        """Run post-commit maintenance; `written`: the partitions (serialized) the commit
        added files to, which post-commit compaction looks at."""
        if self.write_only or self._error is not None or \
                (self.last_result is not None and self.last_result.already_committed):
            # A parked failure stops further runs (the next call raises it); a repeated
            # call published nothing to maintain.
            return
        if identifier is None:  # one-shot batch commit: inline, errors propagate
            self._run_maintenance(identifier, written)
        elif self.async_mode:
            if self._executor is None:
                # (Its requests count in its own MaintenanceResult, and in a meter the caller
                # has open around this call; never in the commit's, closed by now.)
                self._executor = ContextExecutor(1, thread_name_prefix="paimon-maintenance")
            self._last_future = self._executor.submit(self._guarded, identifier, written)
        else:
            self._guarded(identifier, written)

    def _guarded(self, identifier: Optional[int], written: FrozenSet[bytes] = frozenset()
                 ) -> None:
        try:
            self._run_maintenance(identifier, written)
        except Exception as e:  # noqa: BLE001 - parked, raised by the next commit
            # (Not BaseException: Ctrl-C or SystemExit in the committing thread must stop
            # the program now, not at the next commit.)
            log.error("post-commit maintenance of %s failed: %r", self.store.path, e)
            with self._error_lock:
                if self._error is None:
                    self._error = e

    @billed   # result.requests: what it asked of the storage
    def _run_maintenance(self, identifier: Optional[int],
                         written: FrozenSet[bytes] = frozenset()) -> MaintenanceResult:
        from .operations import maintenance_order as order
        t0 = time.perf_counter()
        result = MaintenanceResult()
        tags, consumer_ttl = self.tag_lifecycle, self.options["consumer.expiration-time"]

        def compact() -> None:
            from .operations.compact import AppendCompaction, CompactionConflictError
            try:
                compaction = AppendCompaction(self.store, options=self._compact_options,
                                              partition_rows=written)
                compaction.post_commit = True   # its abort does not wait for the lease
                result.compaction = compaction.run()
            except CompactionConflictError as e:
                # Lost to a concurrent overwrite, drop, compaction or rollback: nothing was
                # committed and its files are gone; the next commit's run tries again.
                log.warning("post-commit compaction of %s: %s", self.store.path, e)
                result.compaction_conflict = str(e)

        def expire_tags() -> None:
            result.tags = tags.before_expiration()

        def expire_partitions() -> None:
            result.partitions = self.partition_expire.expire(commit_identifier=identifier)

        def expire_consumers() -> None:
            result.consumers_expired = ConsumerManager(self.store.io, self.store.root).expire(
                int(self.clock() * 1000) - consumer_ttl, lease=lease_manager(self.store))

        def expire_snapshots() -> None:
            if self._expirer is None:   # one per TableCommit: it carries what it read forward
                self._expirer = ExpireSnapshots(self.store, self.expire_config,
                                                clock=self.clock)
            result.snapshots = self._expirer.expire()

        def batch_tag() -> None:
            result.tags = tags.after_batch_commit(result.tags)

        # Every step after compaction (a commit: no lease) runs under the table's maintenance
        # lease (lease.py), taken at the first of them and joined by each operation. Held by
        # another process, this turn skips them: the holder does the work, and the next
        # commit's turn tries again.
        lease = contextlib.ExitStack()
        turn: List[Optional[bool]] = [None]   # None: not taken yet; then: held by us

        def leased(step):
            def run() -> None:
                if turn[0] is None:
                    try:
                        skipped: List[str] = []
                        held = lease.enter_context(maintenance_lease(
                            self.store, "post-commit maintenance", skip_if_held=True,
                            skipped=skipped))
                        # (held by another, or free with a waiter ahead in line: its turn)
                        why = skipped[0] if skipped \
                            else "the maintenance lease is held by another process"
                    except AtomicCreateUnsupportedError as e:
                        # The commit has published: a store answering 501 to the lease's
                        # create makes this turn skip, never the commit fail with a
                        # CommitFailedError, which says nothing was committed. (An I/O error
                        # propagates as any maintenance step's does: the fault matrix's rerun.)
                        held, why = None, f"could not take the maintenance lease ({e})"
                        log.warning("post-commit maintenance of %s: %s; skipped this turn",
                                    self.store.path, why)
                    except LeaseRecordError as e:
                        # A damaged lease record (or lease directory) is maintenance's
                        # problem, not the data's: commits never take the lease, and parked
                        # in the error slot it would make every later commit of a stream
                        # raise until someone ran `lease --break`. Skipped with a warning
                        # naming the file, each turn until it is fixed; explicit maintenance
                        # refuses with the same error.
                        held, why = None, f"a maintenance lease record cannot be used: {e}"
                        log.warning("post-commit maintenance of %s skipped this turn: %s",
                                    self.store.path, e)
                    turn[0] = held is not None
                    if held is None:
                        result.lease_skipped = f"{why}; skipped this turn"
                if turn[0]:
                    step()
            return run if step is not None else None

        with lease:
            order.run_in_order({   # the order: operations/maintenance_order.py
                order.COMPACTION: compact if self.compaction and written else None,
                order.TAGS: leased(expire_tags if tags is not None else None),
                order.PARTITIONS: leased(expire_partitions
                                         if self.partition_expire is not None else None),
                order.CONSUMERS: leased(expire_consumers if consumer_ttl is not None else None),
                order.SNAPSHOTS: leased(expire_snapshots),
                order.BATCH_TAG: leased(batch_tag if tags is not None and identifier is None
                                        else None)})
        result.seconds = time.perf_counter() - t0
        self.last_maintenance = result
        return result

    def wait_for_maintenance(self, timeout: Optional[float] = None) -> bool:
        """Block until queued maintenance finished; False on timeout."""
        f = self._last_future
        if f is None:
            return True
        try:
            f.result(timeout=timeout)
        except concurrent.futures.TimeoutError:  # not the builtin TimeoutError before 3.11
            return False
        except Exception:  # noqa: BLE001 - recorded in the slot by _guarded
            pass
        return True

    def close(self, timeout: Optional[float] = 300.0) -> None:
        """Wait (up to `timeout` seconds) for queued maintenance, then stop the worker."""
        if self._closed:
            return
        self._closed = True
        if self._executor is not None:
            try:
                if self._last_future is not None:
                    self._last_future.result(timeout=timeout)
            except concurrent.futures.TimeoutError:
                log.warning("maintenance of %s still running after %s s; abandoning queued "
                            "runs", self.store.path, timeout)
            except Exception:  # noqa: BLE001 - already in the error slot
                pass
            self._executor.shutdown(wait=False, cancel_futures=True)

    def __enter__(self) -> "TableCommit":
        """Use as a context manager: close() on exit."""
        return self

    def __exit__(self, *exc) -> None:
        """close() with the default timeout."""
        self.close()


def _written(messages: Iterable[CommitMessage]) -> FrozenSet[bytes]:
    """The partitions (serialized, as in the manifests) that messages add files to."""
    return frozenset(m.partition_bytes for m in messages if m.new_files)


def _widen_retention(options: Mapping[str, Any], overrides: Dict[str, Any],
                     labels: Mapping[str, str]) -> List[str]:
    """A retain_max below the table's snapshot.num-retained.min lowers the minimum to it for
    this run (and a retain_min above the table's maximum raises the maximum): the user asked
    to keep the newest N, and two numbers of which only one was typed cannot conflict in the
    user's eyes. (Paimon Java's expire_snapshots procedure refuses instead: `retainMax (3)
    must not be less than retainMin (10)`; docs/safety.md section 6.) Returns what was
    changed, in the caller's words, for the result's `notes`; `overrides` is updated."""
    def said(key: str, value: int) -> str:
        label = labels.get(key, key)
        return f"{label} {value}" if label.startswith("-") else f"{label}={value}"
    rmin, rmax = overrides.get("retain_min"), overrides.get("retain_max")
    table_min = options["snapshot.num-retained.min"]
    table_max = options["snapshot.num-retained.max"]
    if rmax is not None and rmin is None and rmax < table_min:
        overrides["retain_min"] = rmax
        return [f"{said('retain_max', rmax)} is below the table's snapshot.num-retained.min = "
                f"{table_min}: this run keeps at least {rmax} (the table's option is "
                f"unchanged)"]
    if rmin is not None and rmax is None and rmin > table_max:
        overrides["retain_max"] = rmin
        return [f"{said('retain_min', rmin)} is above the table's snapshot.num-retained.max = "
                f"{table_max}: this run keeps at most {rmin} (the table's option is "
                f"unchanged)"]
    return []
