"""FileStoreCommit: publish snapshots with optimistic, retry-limited concurrency.

One attempt reads the latest snapshot, computes its changes against it, writes manifests and
manifest lists, and publishes `snapshot-<latest+1>` with an atomic create-if-absent. Losing
that race deletes the base list the attempt wrote and retries (tenacity, exponential backoff
with jitter); the delta manifests and list depend only on the changes and are reused while
the changes stay the same, and deleted if the commit gives up. A real conflict (a DELETE of a
file that is no longer live, an ADD of a live file) fails at once. An attempt whose publish
outcome is unknown keeps its files, and the next attempt first settles it from content
(publish.py): its snapshot is found, or shown never to have landed, before the changes are
published again; if nothing left can tell, the commit fails and keeps every file. A data file
is committed once: a repeated call returns the earlier snapshot or is refused (RepeatScreen, with
the process's record, in commit_record.py); calls of this process adding the same files run one
after the other (InFlight), so a repeat racing the call it repeats sees its outcome.
"""
from __future__ import annotations

import logging
import random
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, List, Mapping, Optional, Sequence, Set, \
    Tuple

from tenacity import RetryError, Retrying, retry_if_exception_type, stop_after_delay, \
    stop_never

from ..io.metered import ContextExecutor, RequestBill, billed
from ..errors import AtomicCreateUnsupportedError, CommitConflictError, CommitFailedError, \
    PublishOutcomeUnknownError
from ..format.commit_message import CommitMessage
from ..format.paths import validate_bare_file_name
from ..format.entry import local_millis_as_utc as _local_millis_as_utc
from ..format.manifest import FileKind, ManifestEntry
from ..format.snapshot import BATCH_COMMIT_IDENTIFIER, CommitKind, Snapshot
from ..manifests import ManifestWriteSession, live_identifiers
from ..store import FileStore, PartitionSpec
from . import commit_record
from .commit_record import Committed, RepeatScreen
from .publish import built_on_check, own_in_lineage, resolve_uncertain

log = logging.getLogger(__name__)

__all__ = ["FileStoreCommit", "CommitConfig", "CommitResult"]


@dataclass(frozen=True)
class CommitConfig:
    max_retries: int
    timeout_ms: Optional[int]
    min_retry_wait_ms: int
    max_retry_wait_ms: int
    ignore_empty_commit: bool
    dynamic_partition_overwrite: bool
    merge_min_count: int
    full_compaction_size: int
    single_writer: bool = False  # commit.single-writer: skip the storage's atomicity probe

    @classmethod
    def from_options(cls, o: Mapping[str, Any]) -> "CommitConfig":
        return cls(o["commit.max-retries"], o["commit.timeout"], o["commit.min-retry-wait"],
                   o["commit.max-retry-wait"], o["snapshot.ignore-empty-commit"],
                   o["dynamic-partition-overwrite"], o["manifest.merge-min-count"],
                   o["manifest.full-compaction-threshold-size"],
                   o.get("commit.single-writer", False))


@dataclass
class CommitResult:
    """One commit call: the snapshot published (None: nothing committed), attempts made,
    its kind, files added and deleted, and the time it took."""

    snapshot_id: Optional[int]   # None: nothing was committed
    attempts: int
    kind: str
    added_files: int = 0
    deleted_files: int = 0
    seconds: float = 0.0
    already_committed: bool = False  # a repeated call: snapshot_id is the earlier commit's
    # What the operation asked of the storage (io/metered.py).
    requests: RequestBill = field(default_factory=RequestBill)


class _Stalled(Exception):
    """More than commit.max-retries attempts failed (races lost to other writers not counted)."""

    def __init__(self, cause: Optional[BaseException]):
        super().__init__(str(cause))
        self.cause = cause


class _RaceLost(Exception):
    """Another writer published the snapshot id first, or the publish outcome is unknown."""

    def __init__(self, message: str, uncertain_base: Optional[int] = None):
        super().__init__(message)
        self.uncertain_base = uncertain_base


_Changes = Callable[[Optional[Snapshot]], List[ManifestEntry]]


@dataclass(frozen=True)
class _Uncertain:
    """An attempt whose publish failed with an I/O error: its create may have landed, or may
    still land (whenever its name is free), so it is settled again before every later
    publish of the call, never once and for all."""
    snapshot: Snapshot             # what it tried to publish
    base_id: int                   # the id of the snapshot it was built on (0: none)
    base: Optional[Snapshot]       # that snapshot, as the attempt read it


@dataclass
class _AttemptState:
    uncertains: List[_Uncertain] = field(default_factory=list)   # in attempt order
    attempts: int = 0
    failed_base: Optional[int] = None     # base id of the attempt that just failed
    last_failure: Optional["_RaceLost"] = None
    stalls: int = 0                       # failed attempts after which the table did not
                                          # move, or whose publish failed with an I/O error
    base: int = 0                         # id of the latest snapshot this attempt builds on
    delta: Optional["_Delta"] = None       # delta manifests + list, kept across lost races
    entries: List[ManifestEntry] = field(default_factory=list)
    # Lowest base id of the attempts that may have published (entered the publish and did not
    # come back with a plain "lost the race"); None: nothing can have been published.
    publish_base: Optional[int] = None
    # Set by the repeat screen when it let the call through after walking the table's history
    # for an earlier call with these files (one that raised, or that the bounded record
    # forgot): that call's snapshot is newer than this id, and may land during this one.
    landed_since: Optional[int] = None


@dataclass
class _Delta:
    """The delta manifests and list of an attempt. They depend only on the entries, not on the
    base snapshot, so a retry with the same entries publishes them again instead of writing
    and deleting copies: a lost race then costs one base list, and the window in which the
    next race can be lost is shorter."""
    entries: List[ManifestEntry]
    name: str
    size: int
    session: ManifestWriteSession
    keep: bool = False   # named by a snapshot whose publish outcome is unknown


class FileStoreCommit:
    def __init__(self, store: FileStore, commit_user: Optional[str] = None,
                 config: Optional[CommitConfig] = None):
        self.store = store
        self.commit_user = commit_user or str(uuid.uuid4())
        self.config = config or CommitConfig.from_options(store.options)

    # --- public operations ---------------------------------------------------------------
    @billed   # result.requests: what it asked of the storage
    def commit(self, messages: Sequence[CommitMessage],
               commit_identifier: Optional[int] = None,
               check_append_conflicts: bool = False) -> CommitResult:
        """APPEND the new files (or OVERWRITE if messages carry deleted files).

        Files this commit user already committed are never added twice: the same files with
        the same identifier and kind return the earlier snapshot (exactly-once), anything
        else raises CommitConflictError (see commit_record.RepeatScreen)."""
        ident = BATCH_COMMIT_IDENTIFIER if commit_identifier is None else commit_identifier
        entries = _entries_of(messages)
        adds = [e for e in entries if e.kind == FileKind.ADD]
        self._refuse_repeated(adds)
        if adds:
            self.store.check_writable()
        has_deletes = len(adds) < len(entries)
        kind = CommitKind.OVERWRITE if has_deletes else CommitKind.APPEND
        if not entries and self.config.ignore_empty_commit:
            return CommitResult(None, 0, kind)
        return self._run_once(adds, kind, ident, lambda check, state: self._run(
            lambda latest: entries, kind, ident,
            check_conflicts=has_deletes or check_append_conflicts or check, state=state))

    @billed   # result.requests: what it asked of the storage
    def overwrite(self, messages: Sequence[CommitMessage],
                  partition: Optional[Mapping[str, Any]] = None,
                  commit_identifier: Optional[int] = None) -> CommitResult:
        """Replace partitions with the new files (Paimon semantics, see README)."""
        ident = BATCH_COMMIT_IDENTIFIER if commit_identifier is None else commit_identifier
        adds = _entries_of(messages)
        self._refuse_repeated([e for e in adds if e.kind == FileKind.ADD])
        store = self.store
        if adds:
            store.check_writable()
        if partition is not None and store.partition_keys:
            spec = store.partition_spec(partition)
            for m in messages:
                if m.new_files and not spec.matches(m.partition):
                    raise ValueError(
                        f"overwrite of partition {partition!r}: new file "
                        f"{m.new_files[0].file_name} belongs to partition "
                        f"{store.partition_dict(m.partition)!r}, outside it")
            target: Callable[[Sequence[Any]], bool] = spec.matches
        elif store.partition_keys and self.config.dynamic_partition_overwrite:
            if not adds:
                return CommitResult(None, 0, CommitKind.OVERWRITE)
            parts = {tuple(m.partition) for m in messages if m.new_files}
            target = lambda values: tuple(values) in parts  # noqa: E731
        else:
            target = lambda values: True  # noqa: E731

        def changes(latest: Optional[Snapshot]) -> List[ManifestEntry]:
            # Recomputed from each attempt's latest snapshot: the overwrite replaces whatever
            # is live in the target partitions when it publishes.
            return self._deletes_matching(latest, target) + adds

        new = [e for e in adds if e.kind == FileKind.ADD]
        return self._run_once(new, CommitKind.OVERWRITE, ident, lambda check, state: self._run(
            changes, CommitKind.OVERWRITE, ident, check_conflicts=True, state=state))

    @billed   # result.requests: what it asked of the storage
    def drop_partitions(self, partitions: Sequence[Mapping[str, Any]],
                        commit_identifier: Optional[int] = None) -> CommitResult:
        """OVERWRITE snapshot with a DELETE for every live file of the matching partitions."""
        if isinstance(partitions, Mapping) or not isinstance(partitions, (list, tuple)):
            raise TypeError(f"drop_partitions expects a list of partition specs (dicts), "
                            f"got {partitions!r}")
        if not partitions:
            raise ValueError("drop_partitions needs at least one partition spec")
        specs: List[PartitionSpec] = [self.store.partition_spec(p) for p in partitions]
        ident = BATCH_COMMIT_IDENTIFIER if commit_identifier is None else commit_identifier

        def target(values: Sequence[Any]) -> bool:
            return any(s.matches(values) for s in specs)

        return self._run(lambda latest: self._deletes_matching(latest, target),
                         CommitKind.OVERWRITE, ident, check_conflicts=True,
                         empty_means_noop=True)

    def remove_files(self, pick: Callable[[Snapshot, List[ManifestEntry]], List[ManifestEntry]],
                     commit_identifier: Optional[int] = None) -> CommitResult:
        """OVERWRITE snapshot with a DELETE for each live entry `pick(latest, live entries)`
        returns (what `repair` publishes). Chosen again from each attempt's latest snapshot:
        a lost race recomputes them. Nothing picked: no snapshot (snapshot_id None)."""
        ident = BATCH_COMMIT_IDENTIFIER if commit_identifier is None else commit_identifier

        def changes(latest: Optional[Snapshot]) -> List[ManifestEntry]:
            if latest is None:
                return []
            return [e.as_delete() for e in pick(latest, self.store.live_entries(latest))]

        return self._run(changes, CommitKind.OVERWRITE, ident, check_conflicts=True,
                         empty_means_noop=True)

    def filter_committed(self, identifiers: Iterable[int]) -> List[int]:
        """Identifiers this commit user has not committed yet (needs increasing ids)."""
        return self._filter_committed(identifiers)[0]

    def _filter_committed(self, identifiers: Iterable[int],
                          adds: Sequence[ManifestEntry] = ()) -> Tuple[List[int], Optional[str]]:
        """(the identifiers not committed yet, why the table cannot tell or None). Like
        Paimon's filterCommitted, from the user's latest retained snapshot; when the user has
        none and snapshots have expired, its commits may have expired with them (then every
        identifier counts as not committed: filter_and_commit checks the files).

        When a call of this process with some of `adds` raised after it may have published,
        its create can land late, also as a re-created id below the latest after another
        writer's snapshot of that id expired: a snapshot of the user from that call's base on
        counts only if later snapshots build on it (audit issue25u u3: `filter_and_commit`
        took such a copy for the user's last commit and published nothing, the rows lost)."""
        sm = self.store.snapshots
        doubt = self._doubt_from(adds)
        accept = None
        if doubt is not None:
            latest = sm.latest_snapshot()
            accept = (lambda s: s.id < doubt or latest is None or self._in_lineage(s, latest))
        last = sm.latest_snapshot_of_user(self.commit_user, accept)
        ids = sorted(set(identifiers))
        if last is not None:
            return [i for i in ids if i > last.commit_identifier], None
        earliest = sm.earliest_snapshot_id()
        if not ids or earliest is None:
            return ids, None   # nothing to commit, or an empty table
        if earliest <= 1:
            # The whole history is retained: this user never committed. But the files may
            # have been, by another user (a job restarted with a new commit user: the default
            # one is random): a file the table names is refused by filter_and_commit, as
            # after an expiration (audit issue25r r5: after a compaction they were published
            # again, rows read twice).
            return ids, (f"commit user {self.commit_user!r} has no snapshot in "
                         f"{self.store.root} (a job restarted under another commit user, such "
                         f"as a new default random one, cannot tell what it committed before)")
        what = f"identifier {ids[0]}" if len(ids) == 1 else \
            f"identifiers {', '.join(map(str, ids))}"
        why = (f"commit user {self.commit_user!r} has no snapshot left in {self.store.root} "
               f"and {'snapshot 1 has' if earliest == 2 else f'snapshots 1 to {earliest - 1} have'}"
               f" expired, so whether it committed {what} cannot be told from the table")
        log.warning("filter_committed: %s; counting them as not committed", why)
        return ids, why

    def _doubt_from(self, adds: Sequence[ManifestEntry]) -> Optional[int]:
        """The lowest snapshot id a call of this user with some of `adds` that raised after it
        may have published can have landed as, or None if the process recorded none."""
        if not adds:
            return None
        key = commit_record.table_identity(self.store.io)
        hits = commit_record.RECORD.lookup(key, [e.identifier for e in adds])
        lows = [c.lowest_id for c in hits.values()
                if c.commit_user == self.commit_user and c.snapshot_id is None]
        return min(lows) if lows else None

    def filter_and_commit(self, by_identifier: Mapping[int, Sequence[CommitMessage]]
                          ) -> List[CommitResult]:
        """Re-commit, after a restart, only what is missing; refuse vanished files, and when
        the table cannot tell what this user committed, files the table still names."""
        # Across identifiers too, before the table is read: each identifier is its own
        # commit, so a file under two of them would be published by the first and (as a
        # live file) refused by the second only after that.
        adds = [e for i in by_identifier for e in _entries_of(by_identifier[i])
                if e.kind == FileKind.ADD]
        self._refuse_repeated(adds)
        pending, undecided = self._filter_committed(by_identifier.keys(), adds)
        for ident in pending:
            for m in by_identifier[ident]:
                for f in m.new_files:
                    entry = ManifestEntry(FileKind.ADD, m.partition_bytes, m.bucket,
                                          m.total_buckets, f)
                    path = self.store.data_file_path(entry)
                    if not self.store.io.exists(path):
                        raise CommitConflictError(
                            f"cannot re-commit identifier {ident}: data file {path} no longer "
                            f"exists (deleted by orphan cleanup or abort?)")
        if pending and undecided is not None:
            self._refuse_named(pending, by_identifier, undecided)
        return [self.commit(by_identifier[i], i, check_append_conflicts=True) for i in pending]

    def _refuse_named(self, pending: List[int],
                      by_identifier: Mapping[int, Sequence[CommitMessage]], why: str) -> None:
        """The user's snapshots expired: its pending identifiers may have been committed.
        A file the table still names (a retained snapshot, a tag, a long-lived changelog, of
        any branch: the used set of orphan cleanup and abort, `reachability.py`) was
        committed, and perhaps compacted or overwritten since (its rows then live in other
        files; the conflict check, which sees only live files, passed it and the rows were
        read twice): CommitConflictError. A file nothing names is published (it may still
        have been committed once, its snapshots and tags all expired since, as in Paimon
        Java; docs/safety.md §3b). Reads the metadata of the whole table, on this rare path
        only."""
        from .abort import used_names
        used, unreadable = used_names(self.store)
        for ident in pending:
            for m in by_identifier[ident]:
                for f in m.new_files:
                    if used is not None and f.file_name not in used:
                        continue
                    path = self.store.data_file_path(ManifestEntry(
                        FileKind.ADD, m.partition_bytes, m.bucket, m.total_buckets, f))
                    named = (f"{unreadable}, so whether data file {path} is named cannot be "
                             f"told" if used is None else
                             f"data file {path} is named by a retained snapshot, tag or "
                             f"changelog of the table: it was committed (its rows may be in "
                             f"other files since, after a compaction or an overwrite)")
                    raise CommitConflictError(
                        f"cannot re-commit identifier {ident}: {why}, and {named}; refusing "
                        f"to commit it again, as its rows could be read twice. Check whether "
                        f"the rows are in the table, and write them again with a new writer "
                        f"if they are missing")

    # --- committing each file once -------------------------------------------------------
    def _refuse_repeated(self, adds: List[ManifestEntry]) -> None:
        """CommitConflictError when one call ADDs a data file twice (the same CommitMessage
        handed twice, e.g. a retried task whose first report was kept). Checked before the
        table is read: a plain append checks nothing against the table, and a delta with two
        ADDs of one file is read twice by pypaimon (Paimon Java refuses it when reading:
        "Trying to add file ... which is already added"). By path: two entries naming one
        file on disk are one file, whatever their level."""
        seen: Set[str] = set()
        for e in adds:
            path = self.store.data_file_path(e)
            if path in seen:
                raise CommitConflictError(
                    f"data file {path} is listed twice in the messages of one call (the same "
                    f"CommitMessage handed twice?); refusing to commit it, as its rows would "
                    f"be read twice. Nothing was committed: commit each message once")
            seen.add(path)

    def _run_once(self, adds: List[ManifestEntry], kind: str, identifier: int,
                  run: Callable[[bool, "_AttemptState"], CommitResult]) -> CommitResult:
        """Screen the ADDs against what this process committed, run the commit
        (`run(True, state)`: check the table too), and remember its files under the table's
        resolved identity (one table however its path is spelled)."""
        screen = RepeatScreen(self.store, self.commit_user)
        keys = [e.identifier for e in adds]
        # Screened and committed while no other call of this process commits any of these
        # files: a repeat racing the call it repeats waits for it and sees its record.
        with commit_record.IN_FLIGHT.claim(screen.key, keys, f"commit of user "
                                           f"{self.commit_user!r} to {self.store.root}"):
            return self._screened_run(screen, adds, keys, kind, identifier, run)

    def _screened_run(self, screen: RepeatScreen, adds: List[ManifestEntry], keys: List[Any],
                      kind: str, identifier: int,
                      run: Callable[[bool, "_AttemptState"], CommitResult]) -> CommitResult:
        done, check_table = screen.screen(adds, identifier, kind)
        if done is not None:
            return CommitResult(done, 0, kind, already_committed=True)
        root, user = screen.key, self.commit_user
        times = [e.file.creation_time for e in adds]
        record = commit_record.RECORD   # looked up per call: a test swaps in a fresh process's
        state = _AttemptState()
        if screen.walked_from is not None:
            state.landed_since = screen.walked_from - 1
        try:
            result = run(check_table, state)
        except BaseException:
            # It may have published (an unknown outcome, or interrupted right after): a later
            # call with these files looks for its snapshot in the table's history, which
            # starts after `publish_base`. A call that never reached the publish published
            # nothing and leaves nothing to look for.
            if keys and state.publish_base is not None:
                record.record(root, keys, Committed(user, identifier, kind, None,
                                                    state.publish_base),
                              replace=False, times=times)
            raise
        if keys and result.snapshot_id is not None:
            record.record(root, keys, Committed(user, identifier, kind, result.snapshot_id),
                          times=times)
            if identifier != BATCH_COMMIT_IDENTIFIER:
                record.note_identifier(root, user, identifier, result.snapshot_id)
        return result

    # --- the retry loop ------------------------------------------------------------------
    def _wait(self, retry_state) -> float:
        n = retry_state.attempt_number - 1
        base = min(self.config.min_retry_wait_ms * (2 ** min(n, 30)),
                   self.config.max_retry_wait_ms)
        jitter = random.uniform(0, max(1.0, 0.2 * base))
        return (base + jitter) / 1000.0

    def _run(self, changes: _Changes, kind: str, identifier: int, check_conflicts: bool,
             empty_means_noop: bool = False,
             state: Optional[_AttemptState] = None) -> CommitResult:
        start = time.monotonic()
        state = state if state is not None else _AttemptState()
        cfg = self.config
        if not cfg.single_writer:  # before anything is published (object stores probe once)
            self.store.io.check_atomic_create()
        # commit.max-retries counts failed attempts except races lost to another writer
        # (see _attempt_once). Such a race is progress of the table, not a failure: with 8
        # writers committing back to back on S3, 5 commits in 400 lost more than 10 races in a
        # row and landed a moment later (at most 15 attempts). Races are bounded by
        # commit.timeout instead.
        stop = stop_never if cfg.timeout_ms is None else stop_after_delay(cfg.timeout_ms / 1000.0)
        retrying = Retrying(stop=stop, wait=self._wait,
                            retry=retry_if_exception_type(_RaceLost), reraise=False)
        try:
            sid = retrying(self._attempt, changes, kind, identifier, check_conflicts,
                           empty_means_noop, state)
        except BaseException as e:
            self._drop_delta(state)
            if not isinstance(e, (RetryError, _Stalled)):
                raise
            cause = e.last_attempt.exception() if isinstance(e, RetryError) else e.cause
            attempts = state.attempts - (1 if isinstance(e, _Stalled) else 0)
            raise CommitFailedError(
                f"{kind} commit to {self.store.path} by user {self.commit_user!r} failed after "
                f"{attempts} attempt(s) (commit.max-retries = {cfg.max_retries}, races lost "
                f"to other writers not counted; commit.timeout = {cfg.timeout_ms} ms): "
                f"{cause}") from cause
        if sid is None:
            self._drop_delta(state)
        added = sum(1 for e in state.entries if e.kind == FileKind.ADD)
        return CommitResult(sid, state.attempts, kind, added, len(state.entries) - added,
                            time.monotonic() - start)

    @staticmethod
    def _drop_delta(state: _AttemptState) -> None:
        """Delete the kept delta files, unless a snapshot whose publish is unknown names them
        (they are then kept, like every file of such an attempt)."""
        d, state.delta = state.delta, None
        if d is not None and not d.keep:
            d.session.delete_written()

    def _attempt(self, changes: _Changes, kind: str, identifier: int, check_conflicts: bool,
                 empty_means_noop: bool, state: _AttemptState) -> Optional[int]:
        try:
            return self._attempt_once(changes, kind, identifier, check_conflicts,
                                      empty_means_noop, state)
        except _RaceLost as e:
            state.failed_base, state.last_failure = state.base, e
            raise

    def _attempt_once(self, changes: _Changes, kind: str, identifier: int,
                      check_conflicts: bool, empty_means_noop: bool,
                      state: _AttemptState) -> Optional[int]:
        state.attempts += 1
        store = self.store
        latest = store.snapshots.latest_snapshot()
        state.base = latest.id if latest else 0
        if state.uncertains:
            done = self._find_own_snapshot(state)
            if done is not None:
                log.info("commit %s/%d was published as snapshot %d by an earlier attempt",
                         self.commit_user, identifier, done)
                return done
        if state.failed_base is not None:
            # A publish that failed with an I/O error (and did not land, see above) counts
            # even if other writers moved the table meanwhile: our requests are failing.
            io_error = state.last_failure.uncertain_base is not None
            if io_error or state.base <= state.failed_base:
                state.stalls += 1
                if state.stalls > self.config.max_retries:
                    raise _Stalled(state.last_failure)
            state.failed_base = None

        session = ManifestWriteSession(store.manifests)
        try:
            entries = changes(latest)
            state.entries = entries
            if not entries and (empty_means_noop or self.config.ignore_empty_commit):
                return None
            since = [b for b in (state.publish_base, state.landed_since) if b is not None]
            if since:
                # An earlier attempt of this call entered a publish whose outcome was not a
                # plain lost race (each such snapshot is settled above, by content), or an
                # earlier call with these files may still land (the screen's walk found
                # nothing yet: audit issue25u u7). Look for a snapshot of ours above that
                # base as well; else check the live files, so that this attempt does not add
                # files such a snapshot added (audit issue25t t2).
                own = self._landed_late(min(since), latest, entries, kind, identifier)
                if own is not None:
                    session.delete_written()
                    log.info("commit %s/%d was published as snapshot %d by an earlier attempt "
                             "(it landed after its publish failed)", self.commit_user,
                             identifier, own)
                    return own
                check_conflicts = True
            self._check_old_files_exist(entries)
            full = False
            if check_conflicts and latest is not None:
                full = self._check_conflicts(latest, entries)
            delta = self._delta_files(state, entries)
            snapshot = self._write_snapshot_files(session, latest, delta, entries, kind,
                                                  identifier, full)
        except FileNotFoundError as e:
            session.delete_written()
            self._base_vanished(latest, e)
            raise
        except BaseException:
            session.delete_written()
            raise
        # Lowered before the publish, so that an interrupt anywhere in it leaves it lowered;
        # restored only when the publish says plainly that nothing of ours landed. The lowest
        # base of any attempt that may have landed: after a rollback a later attempt's base
        # can be lower than an earlier one's.
        before_publish = state.publish_base
        state.publish_base = state.base if before_publish is None \
            else min(before_publish, state.base)
        try:
            # False also when our base was expired meanwhile and our id turned out to be a
            # re-created one (see try_commit): retry.
            published = store.snapshots.try_commit(
                snapshot, latest.id if latest else 0, built_on_check(store, snapshot),
                self.config.single_writer, base=latest)
        except OSError as e:
            # Only an I/O error leaves the outcome unknown: the snapshot may or may not exist
            # now, so keep every file and let every later attempt settle it.
            base_id = latest.id if latest else 0
            state.uncertains.append(_Uncertain(snapshot, base_id, latest))
            state.delta.keep = True
            raise _RaceLost(f"publishing snapshot {snapshot.id} failed: {e!r}",
                            base_id) from e
        except AtomicCreateUnsupportedError:
            session.delete_written()   # refused before anything was created
            state.publish_base = before_publish
            raise
        except BaseException:
            # A verdict on a snapshot that exists (a re-created id that could not be removed,
            # or one whose place in the lineage cannot be decided): it names these files.
            # Looking for "our" snapshot again would report that copy as success.
            state.delta.keep = True
            raise
        if not published:
            session.delete_written()
            state.publish_base = before_publish
            raise _RaceLost(f"snapshot {snapshot.id} was published by another writer first")
        # From here on the published snapshot names the delta: whatever interrupts us now
        # (Ctrl-C, SystemExit, a failing hint write) must not let _run delete it.
        state.delta.keep = True
        store.snapshots.commit_latest_hint(snapshot.id)
        return snapshot.id

    def _base_vanished(self, latest: Optional[Snapshot], error: Exception) -> None:
        """A metadata file of our base went missing. If the table moved on meanwhile, an
        expiration is removing our base (it deletes manifests before the snapshot file):
        a lost race, retry from the new latest. If our base is still the latest, the table
        is damaged: fail with the missing file's name."""
        if latest is None:
            return
        sm = self.store.snapshots
        if not sm.snapshot_exists(latest.id) or sm.latest_snapshot_id() != latest.id:
            raise _RaceLost(f"base snapshot {latest.id} was expired during the attempt "
                            f"({error})") from error

    def _landed_late(self, since: int, latest: Optional[Snapshot],
                     entries: List[ManifestEntry], kind: str, identifier: int
                     ) -> Optional[int]:
        """The id of a snapshot above `since` of this commit user, identifier and kind whose
        delta ADDs every file `entries` adds and that is in the lineage (an earlier
        attempt's or call's, landed late); None if none (or nothing is added)."""
        adds = {e.identifier for e in entries if e.kind == FileKind.ADD}
        if not adds or latest is None:
            return None
        sm = self.store.snapshots
        for sid in range(latest.id, since, -1):
            s = latest if sid == latest.id else sm.try_snapshot(sid)
            if s is None or (s.commit_user, s.commit_identifier, s.commit_kind) != \
                    (self.commit_user, identifier, kind):
                continue
            added = {e.identifier for e in self.store.delta_entries(s)
                     if e.kind == FileKind.ADD}
            if adds <= added and self._in_lineage(s, latest):
                return sid
        return None

    def _in_lineage(self, s: Snapshot, latest: Snapshot) -> bool:
        """Whether snapshot `s` of ours (found by its commit user, identifier and files) is
        one the latest builds on: a create that failed on the client can land whenever its
        name is free, also after another writer's snapshot of that id was expired, below the
        latest and outside the lineage (audit issue25u u2). False for such a copy;
        PublishOutcomeUnknownError if the snapshots that would tell are gone."""
        if s.id == latest.id:
            return True
        verdict = own_in_lineage(self.store, s)
        if verdict is None:
            raise PublishOutcomeUnknownError(
                f"snapshot {s.id} of commit user {self.commit_user!r} adds this commit's files, "
                f"but whether later snapshots build on it cannot be decided (the snapshot "
                f"after it is being expired): the commit may or may not be in the table. "
                f"Every file it names is kept; check whether its rows are there before "
                f"committing it again")
        return verdict

    def _find_own_snapshot(self, state: _AttemptState) -> Optional[int]:
        """Settle every attempt of this call whose publish failed with an I/O error, by
        content: the snapshot id of the one that landed and is in the lineage (also if it
        was expired since), None if none is (its changes can then be published again);
        PublishOutcomeUnknownError if that cannot be decided, so that the same delta is
        never published twice.

        Each is settled again on every attempt, not once: not landed *now* is not never. A
        create that failed on the client may land on the store later, whenever its name is
        free (a conditional PUT that timed out): settled once as "not landed" and then
        landed, built on and expired before the next attempt looked, it was published again
        (audit issue25u u1, u10). The call also stays recorded as one that may have
        published (audit issue25t t1), so a retry is refused unless its snapshot is found."""
        for u in state.uncertains:
            if resolve_uncertain(self.store, u.snapshot, u.base_id, u.base):
                return u.snapshot.id
        return None

    def _check_old_files_exist(self, entries: List[ManifestEntry]) -> None:
        """CommitConflictError, before anything is published, if a data file this commit
        adds and that was written more than OLD_FILE_MS ago is gone.

        Orphan cleanup deletes files no snapshot names once they are older than its cutoff
        (an hour at the least, `orphan_context.MIN_ORPHAN_AGE_MS`): a commit coming later than
        that after its write (a compaction rewriting for hours, a slow job) would otherwise
        publish a snapshot naming deleted files, which does not read (audit issue25v v3).
        Only files that may be old are looked at, so an ordinary commit asks nothing more of
        the storage. By the file's creation time, the writer's wall clock as if UTC (as Paimon
        writes it): its time zone is not recorded, so a time more than OLD_FILE_MS *ahead* of
        ours may be an old file of a writer east of us (audit issue25w w3: written 2 h before
        in Tokyo, it looked 7 h ahead to a committer in UTC and was never looked at); it is
        looked at, as one without a time. A writer in another time zone so costs one request
        per file. This narrows the race with orphan cleanup to the moments between this check
        and the publish; it cannot close it (docs/safety.md)."""
        now = _local_millis_as_utc()
        old = [e for e in entries if e.kind == FileKind.ADD
               and (e.file.creation_time is None
                    or not now - OLD_FILE_MS < e.file.creation_time < now + OLD_FILE_MS)]
        if not old:
            return
        io = self.store.io
        paths = [self.store.data_file_path(e) for e in old]
        workers = max(1, min(len(paths), io.read_concurrency))
        if workers == 1:
            there = [io.exists(p) for p in paths]
        else:
            with ContextExecutor(workers) as pool:
                there = list(pool.map(io.exists, paths))
        gone = [p for p, ok in zip(paths, there) if not ok]
        if gone:
            raise CommitConflictError(
                f"{len(gone)} data file(s) this commit adds to {self.store.path} no longer "
                f"exist (e.g. {gone[0]}): written more than {OLD_FILE_MS // 60_000} minutes "
                f"ago and not committed since, they were deleted (by orphan cleanup, whose "
                f"cutoff they passed, or an abort); nothing was committed. Write the rows "
                f"again")

    def _delta_files(self, state: _AttemptState, entries: List[ManifestEntry]) -> _Delta:
        """The delta manifests and list of these entries: the ones an earlier attempt wrote
        if its entries were the same, else new ones (the earlier ones are deleted)."""
        if state.delta is None or state.delta.entries != entries or state.delta.keep:
            # (Not one a snapshot whose publish is unknown names: that snapshot may land late
            # as a re-created id below the latest, and an expiration of it deletes its lists,
            # which the snapshot published now would then name too: audit issue25u u1 a.)
            self._drop_delta(state)
            session = ManifestWriteSession(self.store.manifests)
            try:
                name, size = session.write_list(session.write_manifests(entries))
            except BaseException:
                session.delete_written()
                raise
            state.delta = _Delta(entries, name, size, session)
        return state.delta

    def _write_snapshot_files(self, session: ManifestWriteSession, latest: Optional[Snapshot],
                              delta: _Delta, entries: List[ManifestEntry], kind: str,
                              identifier: int, full_compaction: bool) -> Snapshot:
        store, cfg = self.store, self.config
        mio = store.manifests
        if latest is not None:
            previous = mio.read_list(latest.base_manifest_list) + \
                mio.read_list(latest.delta_manifest_list)
        else:
            previous = []
        base = session.merge(previous, cfg.merge_min_count, cfg.full_compaction_size,
                             force_full=full_compaction)
        base_name, base_size = session.write_list(base)
        delta_rows = sum(e.file.row_count if e.kind == FileKind.ADD else -e.file.row_count
                         for e in entries)
        schema_id = store.schema.id if latest is None else max(store.schema.id,
                                                               latest.schema_id)
        return Snapshot(
            id=(latest.id + 1) if latest else 1,
            schema_id=schema_id,
            base_manifest_list=base_name,
            base_manifest_list_size=base_size,
            delta_manifest_list=delta.name,
            delta_manifest_list_size=delta.size,
            commit_user=self.commit_user,
            commit_identifier=identifier,
            commit_kind=kind,
            time_millis=int(time.time() * 1000),
            total_record_count=(latest.total_record_count if latest else 0) + delta_rows,
            delta_record_count=delta_rows,
            # Carried forward so that statistics, index and row tracking of other writers
            # survive our commits.
            index_manifest=latest.index_manifest if latest else None,
            watermark=latest.watermark if latest else None,
            statistics=latest.statistics if latest else None,
            next_row_id=latest.next_row_id if latest else None,
        )

    # --- changes and conflicts -----------------------------------------------------------
    def _deletes_matching(self, latest: Optional[Snapshot],
                          target: Callable[[Sequence[Any]], bool]) -> List[ManifestEntry]:
        if latest is None:
            return []
        decode = self.store.manifests.decode_partition
        return [e.as_delete() for e in self.store.live_entries(latest)
                if target(decode(e.partition))]

    def _check_conflicts(self, latest: Snapshot, entries: List[ManifestEntry]) -> bool:
        """Raise on a conflict. Returns True when the base must be fully compacted: an ADD
        re-adds a file that an older DELETE entry still names, and pypaimon treats any DELETE
        as final whatever follows it, so the pair must be compacted away for readers to agree.
        """
        changed = {e.partition for e in entries}
        mio = self.store.manifests
        all_entries = mio.read_entries(mio.read_list(latest.base_manifest_list)
                                       + mio.read_list(latest.delta_manifest_list))
        live = live_identifiers(all_entries, changed)
        old_deletes = {e.identifier for e in all_entries
                       if e.kind == FileKind.DELETE and e.partition in changed}
        seen_adds: Set[Any] = set()
        deleted_here: Set[Any] = set()
        for e in entries:
            ident = e.identifier
            if e.kind == FileKind.DELETE:
                deleted_here.add(ident)
                if ident not in live:
                    raise CommitConflictError(
                        f"file deletion conflict: {self.store.data_file_path(e)} is not live "
                        f"in snapshot {latest.id} (removed by a concurrent commit?); giving up")
                live.discard(ident)
            else:
                if ident in deleted_here:
                    # Readers disagree on DELETE-then-ADD of one identity in one delta (Java
                    # re-adds, pypaimon drops), so Paimon's conflict check refuses it.
                    raise CommitConflictError(
                        f"file {self.store.data_file_path(e)} is deleted and added again by "
                        f"the same commit; an upgrade must change its level")
                if ident in live or ident in seen_adds:
                    raise CommitConflictError(
                        f"file {self.store.data_file_path(e)} is already live in snapshot "
                        f"{latest.id}; refusing to add it twice")
                seen_adds.add(ident)
        return bool(seen_adds & old_deletes)


# Data files written longer ago than this are checked to still exist before a commit
# publishes them (`_check_old_files_exist`): a third of orphan cleanup's smallest cutoff.
OLD_FILE_MS = 20 * 60_000


def _entries_of(messages: Sequence[CommitMessage]) -> List[ManifestEntry]:
    entries: List[ManifestEntry] = []
    for m in messages:
        if not isinstance(m, CommitMessage):
            raise TypeError(f"expected CommitMessage, got {type(m).__name__}")
        for f in m.new_files + m.deleted_files:
            validate_bare_file_name(f.file_name, "data file name")
            for extra in f.extra_files:
                validate_bare_file_name(extra, "extra file name")
        for f in m.deleted_files:
            entries.append(ManifestEntry(FileKind.DELETE, m.partition_bytes, m.bucket,
                                         m.total_buckets, f))
        for f in m.new_files:
            entries.append(ManifestEntry(FileKind.ADD, m.partition_bytes, m.bucket,
                                         m.total_buckets, f))
    return entries
