"""Partition expiration: drop partitions whose time is older than `partition.expiration-time`.

Port of Java's `NormalPartitionExpire` with the values-time and update-time strategies
(maintenance-algorithms.md §5). Partitions are chosen from the live files of the latest
snapshot and dropped one OVERWRITE snapshot per batch; data files stay on disk until snapshot
expiration removes the snapshots that still use them.

How a batch is dropped depends on the strategy:
* values-time: `FileStoreCommit.drop_partitions`, which deletes whatever is live in the
  partitions when the drop publishes. The policy drops a partition by its values, so a row
  committed into an expired partition value meanwhile is dropped with it (its value is old
  whatever its write time), as Paimon does.
* update-time: `FileStoreCommit.remove_files`, judging again from each commit attempt's latest
  snapshot (audit issue25x x1): a selected partition is dropped only if all of its live files
  are still older than the cutoff, and then only those files. A partition that received a file
  after the selection (another writer's commit landing before the drop published) is no longer
  expired by its update time: it is kept and reported in `kept_new_data`. Java's
  `PartitionExpire` selects the same partitions (`PartitionUpdateTimeExpireStrategy`: the
  cutoff is after the partition's last file creation time) but then drops them whole, so its
  drop deletes such a late row, although the writer's commit reported success (read from its
  sources, not checked with the jar).

Deliberate differences from Java:
* The first `expire()` of a fresh object always checks (Java waits up to a whole interval,
  so "one commit object per write" never expired anything: apache/fluss#2861).
* Drop specs are built from the typed partition values, never from the joined sort strings
  (Java once split them on commas and dropped the wrong partition).
* Only a DATE or TIMESTAMP *column* is taken as a time directly; Java also read any INT value
  as a day number.
* Only a subset of DateTimeFormatter letters is supported, and a formatter or pattern that
  could never produce a time is an OptionError instead of a silent "nothing ever expires".

How a partition value is read as a time is `partition_time`'s.
"""
from __future__ import annotations

import calendar
import contextlib
import datetime
import logging
import time
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from ..io.metered import RequestBill, billed
from ..errors import OptionError
from ..format import paths as P
from ..format.types import TIMESTAMP_ROOTS, as_atomic
from ..lease import maintenance_lease
from ..options import CoreOptions, ConfigOption
from ..store import FileStore
from .commit import FileStoreCommit
from .partition_time import NoPartitionTime, TimePattern, TimestampFormatter, parse_default_time

log = logging.getLogger(__name__)

__all__ = [
    "PartitionExpireConfig",
    "PartitionExpire",
    "PartitionExpireResult",
    "SkippedPartition",
    "TimestampFormatter",
    "VALUES_TIME",
    "UPDATE_TIME",
]

VALUES_TIME = "values-time"
UPDATE_TIME = "update-time"

# Config field -> the table option it overrides.
_FIELD_OPTIONS: Dict[str, ConfigOption] = {
    "expiration_time_ms": CoreOptions.PARTITION_EXPIRATION_TIME,
    "check_interval_ms": CoreOptions.PARTITION_EXPIRATION_CHECK_INTERVAL,
    "strategy": CoreOptions.PARTITION_EXPIRATION_STRATEGY,
    "timestamp_formatter": CoreOptions.PARTITION_TIMESTAMP_FORMATTER,
    "timestamp_pattern": CoreOptions.PARTITION_TIMESTAMP_PATTERN,
    "max_num": CoreOptions.PARTITION_EXPIRATION_MAX_NUM,
    "batch_size": CoreOptions.PARTITION_EXPIRATION_BATCH_SIZE,
}


# --------------------------------------------------------------------------------------------
# Configuration
# --------------------------------------------------------------------------------------------

def _check_int(name: str, value: Any, minimum: int, optional: bool) -> None:
    option = _FIELD_OPTIONS[name].key
    if value is None and optional:
        return
    if isinstance(value, bool) or not isinstance(value, int):
        raise OptionError(f"option '{option}' = {value!r}: expected an integer")
    if value < minimum:
        raise OptionError(f"option '{option}' = {value!r}: must be >= {minimum}")


@dataclass(frozen=True)
class PartitionExpireConfig:
    """Validated partition-expiration settings. Durations in milliseconds;
    `expiration_time_ms` None disables expiration; `batch_size` None means `max_num`."""
    expiration_time_ms: Optional[int] = None
    check_interval_ms: int = CoreOptions.PARTITION_EXPIRATION_CHECK_INTERVAL.default
    strategy: str = VALUES_TIME
    timestamp_formatter: Optional[str] = None
    timestamp_pattern: Optional[str] = None
    max_num: int = CoreOptions.PARTITION_EXPIRATION_MAX_NUM.default
    batch_size: Optional[int] = None

    def __post_init__(self) -> None:
        _check_int("expiration_time_ms", self.expiration_time_ms, 1, optional=True)
        _check_int("check_interval_ms", self.check_interval_ms, 0, optional=False)
        _check_int("max_num", self.max_num, 1, optional=False)
        _check_int("batch_size", self.batch_size, 1, optional=True)
        if self.strategy not in (VALUES_TIME, UPDATE_TIME):
            raise OptionError(f"option '{CoreOptions.PARTITION_EXPIRATION_STRATEGY.key}' = "
                              f"{self.strategy!r}: must be one of {VALUES_TIME}, {UPDATE_TIME}")
        for name in ("timestamp_formatter", "timestamp_pattern"):
            v = getattr(self, name)
            if v is not None and not isinstance(v, str):
                raise OptionError(f"option '{_FIELD_OPTIONS[name].key}' = {v!r}: expected text")
        # Formatter and pattern are only checked when they will be used: tables written by
        # other engines may carry values we do not support without ever expiring anything.
        if self.uses_values_time and self.timestamp_formatter is not None:
            TimestampFormatter(self.timestamp_formatter)
        if self.uses_values_time and self.timestamp_pattern is not None \
                and "$" not in self.timestamp_pattern:
            raise OptionError(
                f"option '{CoreOptions.PARTITION_TIMESTAMP_PATTERN.key}' = "
                f"{self.timestamp_pattern!r}: references no partition key; use $<key> tokens")

    @property
    def uses_values_time(self) -> bool:
        return self.expiration_time_ms is not None and self.strategy == VALUES_TIME

    @property
    def effective_batch_size(self) -> int:
        return self.batch_size if self.batch_size is not None else self.max_num

    @classmethod
    def from_options(cls, parsed_options: Mapping[str, Any],
                     **overrides: Any) -> "PartitionExpireConfig":
        """From parsed table options (`FileStore.options`), with explicit overrides by field
        name (None = not given). Overrides may be raw option text ('7 d') or values (ms)."""
        unknown = sorted(set(overrides) - set(_FIELD_OPTIONS))
        if unknown:
            raise TypeError(f"unknown PartitionExpireConfig override(s) {unknown}; "
                            f"expected some of {sorted(_FIELD_OPTIONS)}")
        values: Dict[str, Any] = {}
        for name, option in _FIELD_OPTIONS.items():
            given = overrides.get(name)
            if given is not None:
                values[name] = option.value({option.key: given})  # parse + range check
            else:
                values[name] = parsed_options.get(option.key, option.default)
        return cls(**values)


# --------------------------------------------------------------------------------------------
# Results
# --------------------------------------------------------------------------------------------

def _display_value(v: Any) -> Optional[str]:
    """Readable text of a typed partition value for JSON: ISO 8601 for DATE / TIME /
    TIMESTAMP, null for the default partition, the directory value otherwise."""
    if v is None:
        return None
    if isinstance(v, (datetime.date, datetime.time)):  # datetime is a date subclass
        return v.isoformat()
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return P.partition_value_string(v, "DOUBLE") if v == v and abs(v) != float("inf") \
            else repr(v)
    if isinstance(v, (bytes, bytearray)):
        return bytes(v).hex()
    if isinstance(v, Decimal):
        return format(v, "f")
    return str(v)


@dataclass(frozen=True)
class SkippedPartition:
    """A partition kept because its time could not be determined."""
    partition: Dict[str, Any]
    reason: str

    def to_dict(self) -> Dict[str, Any]:
        return {"partition": {k: _display_value(v) for k, v in self.partition.items()},
                "reason": self.reason}


@dataclass
class PartitionExpireResult:
    checked: bool                       # False: disabled, or the check interval had not passed
    expired_partitions: List[Dict[str, Any]] = field(default_factory=list)  # key -> typed value
    snapshot_ids: List[int] = field(default_factory=list)  # one OVERWRITE snapshot per batch
    skipped: List[SkippedPartition] = field(default_factory=list)
    # update-time only: selected as expired, then kept because the partition received new data
    # during the run (a file committed after the selection: no longer expired by update time).
    kept_new_data: List[Dict[str, Any]] = field(default_factory=list)
    dry_run: bool = False
    seconds: float = 0.0
    cutoff: Optional[datetime.datetime] = None  # local wall clock; older partitions expire
    # What the operation asked of the storage (io/metered.py).
    requests: RequestBill = field(default_factory=RequestBill)

    def to_dict(self) -> Dict[str, Any]:
        return {"requests": self.requests.to_dict(),
                
            "checked": self.checked,
            "dry_run": self.dry_run,
            "cutoff": self.cutoff.isoformat() if self.cutoff else None,
            "expired_partitions": [{k: _display_value(v) for k, v in p.items()}
                                   for p in self.expired_partitions],
            "snapshot_ids": list(self.snapshot_ids),
            "skipped": [s.to_dict() for s in self.skipped],
            "kept_new_data": [{k: _display_value(v) for k, v in p.items()}
                              for p in self.kept_new_data],
            "seconds": round(self.seconds, 6),
        }


# --------------------------------------------------------------------------------------------
# The operation
# --------------------------------------------------------------------------------------------

def _local_as_utc_millis(t: datetime.datetime) -> int:
    # The representation of DataFileMeta.creation_time: wall-clock fields read as UTC.
    return calendar.timegm(t.timetuple()) * 1000 + t.microsecond // 1000


def _is_expired_by_update_time(creation_times: Sequence[Optional[int]],
                               cutoff_ms: int) -> bool:
    """update-time: every live file of the partition was created before the cutoff (a file
    without a creation time keeps the partition, as in `_select`)."""
    return bool(creation_times) and all(ct is not None and cutoff_ms > ct
                                        for ct in creation_times)


class PartitionExpire:
    """Drops expired partitions of one table. Not thread-safe: one caller (or the commit
    wrapper's single maintenance thread) at a time."""

    def __init__(self, store: FileStore, file_store_commit: FileStoreCommit,
                 config: Optional[PartitionExpireConfig] = None,
                 clock: Callable[[], float] = time.time):
        self.store = store
        self.commit = file_store_commit
        self.config = config if config is not None else \
            PartitionExpireConfig.from_options(store.options)
        self.clock = clock
        self._keys: Tuple[str, ...] = tuple(store.partition_keys)
        self._roots = [as_atomic(t).root for t in store.schema.partition_types]
        self._last_check_ms: Optional[float] = None
        self._formatter: Optional[TimestampFormatter] = None
        self._pattern: Optional[TimePattern] = None
        cfg = self.config
        if self.enabled and cfg.strategy == VALUES_TIME:
            if cfg.timestamp_formatter is not None:
                self._formatter = TimestampFormatter(cfg.timestamp_formatter)
            if cfg.timestamp_pattern is not None:
                self._pattern = TimePattern(cfg.timestamp_pattern, self._keys)

    @property
    def enabled(self) -> bool:
        return bool(self._keys) and self.config.expiration_time_ms is not None

    @billed   # result.requests: what it asked of the storage
    def expire(self, commit_identifier: Optional[int] = None, force: bool = False,
               dry_run: bool = False) -> PartitionExpireResult:
        """Drop the expired partitions if a check is due (always when `force`).

        `dry_run` selects them without committing and leaves the check schedule alone.
        Partitions are dropped with `commit_identifier` (None: the batch identifier), so the
        commit wrapper's identifier bookkeeping keeps working.
        """
        start = time.monotonic()
        if not self.enabled:
            return PartitionExpireResult(checked=False, dry_run=dry_run)
        now_ms = self.clock() * 1000.0
        if not (force or self._due(now_ms)):
            return PartitionExpireResult(checked=False, dry_run=dry_run,
                                         seconds=time.monotonic() - start)

        # Selected and dropped under the table's maintenance lease (lease.py); a dry run
        # takes none.
        with contextlib.nullcontext() if dry_run else \
                maintenance_lease(self.store, "expire-partitions"):
            return self._expire(now_ms, start, commit_identifier, dry_run)

    def _expire(self, now_ms: float, start: float, commit_identifier: Optional[int],
                dry_run: bool) -> PartitionExpireResult:
        cutoff = self._cutoff(now_ms)
        expired, skipped = self._select(cutoff)
        snapshot_ids: List[int] = []
        kept_new_data: List[Tuple[Any, ...]] = []
        if expired and not dry_run:
            size = self.config.effective_batch_size
            dropped: List[Tuple[Any, ...]] = []
            for i in range(0, len(expired), size):
                batch = expired[i:i + size]
                if self.config.strategy == UPDATE_TIME:
                    r, done, kept = self._drop_still_expired(batch, cutoff, commit_identifier)
                    dropped.extend(done)
                    kept_new_data.extend(kept)
                else:
                    r = self.commit.drop_partitions(
                        [self.store.partition_dict(v) for v in batch], commit_identifier)
                    dropped.extend(batch)
                if r.snapshot_id is not None:
                    snapshot_ids.append(r.snapshot_id)
            expired = dropped
            log.info("partition expiration of %s dropped %d partition(s) older than %s in "
                     "snapshot(s) %s", self.store.path, len(expired), cutoff.isoformat(),
                     snapshot_ids)
            for values in kept_new_data:
                log.warning("partition expiration of %s keeps partition %s: it received new "
                            "data during the run (a file committed after it was selected), so "
                            "it is no longer expired by its update time",
                            self.store.path, self.store.partition_dict(values))
        if not dry_run:
            # Only after success, like Java: a failed check is retried by the next call.
            self._last_check_ms = now_ms
        specs = [self.store.partition_dict(values) for values in expired]
        return PartitionExpireResult(
            checked=True, expired_partitions=specs, snapshot_ids=snapshot_ids,
            skipped=skipped,
            kept_new_data=[self.store.partition_dict(v) for v in kept_new_data],
            dry_run=dry_run, seconds=time.monotonic() - start, cutoff=cutoff)

    def _drop_still_expired(self, batch: Sequence[Tuple[Any, ...]], cutoff: datetime.datetime,
                            commit_identifier: Optional[int]):
        """update-time: drop the partitions of `batch` that are still expired in the latest
        snapshot of the commit attempt that publishes; (CommitResult, the partitions dropped,
        the partitions kept because they received new data). Judged again on every attempt,
        like the selection (`_is_expired_by_update_time`), and only files that attempt judged
        expired are deleted: a file committed after the selection keeps its partition."""
        cutoff_ms = _local_as_utc_millis(cutoff)
        wanted = set(batch)
        decode = self.store.manifests.decode_partition
        dropped: List[Tuple[Any, ...]] = []
        kept: List[Tuple[Any, ...]] = []

        def pick(latest: Any, live: List[Any]) -> List[Any]:
            dropped.clear()
            kept.clear()
            files: Dict[Tuple[Any, ...], List[Any]] = {}
            for e in live:
                values = tuple(decode(e.partition))
                if values in wanted:
                    files.setdefault(values, []).append(e)
            out: List[Any] = []
            for values in batch:
                entries = files.get(values)
                if not entries:
                    continue   # nothing live any more (dropped meanwhile): nothing to do
                if _is_expired_by_update_time([e.file.creation_time for e in entries],
                                              cutoff_ms):
                    out.extend(entries)
                    dropped.append(values)
                else:
                    kept.append(values)
            return out

        r = self.commit.remove_files(pick, commit_identifier)
        if r.snapshot_id is None:
            dropped.clear()   # nothing published (nothing was still expired)
        return r, list(dropped), list(kept)

    # --- scheduling ----------------------------------------------------------------------
    def _due(self, now_ms: float) -> bool:
        interval = self.config.check_interval_ms
        if interval == 0 or self._last_check_ms is None:
            return True
        return now_ms >= self._last_check_ms + interval

    def _cutoff(self, now_ms: float) -> datetime.datetime:
        # Java subtracts the duration from LocalDateTime.now(): wall-clock arithmetic.
        now = datetime.datetime.fromtimestamp(now_ms / 1000.0)
        try:
            return now - datetime.timedelta(milliseconds=self.config.expiration_time_ms)
        except OverflowError:
            return datetime.datetime.min  # longer than history: nothing can be older

    # --- selection -----------------------------------------------------------------------
    def _select(self, cutoff: datetime.datetime
                ) -> Tuple[List[Tuple[Any, ...]], List[SkippedPartition]]:
        """Expired partitions (typed values; sorted by their joined directory values, at
        most max_num) and the partitions kept because their time is unknown."""
        store = self.store
        latest = store.snapshots.latest_snapshot()
        if latest is None:
            return [], []
        # partition values -> (max creation time, whether some file has none)
        partitions: Dict[Tuple[Any, ...], Tuple[Optional[int], bool]] = {}
        for e in store.live_entries(latest):
            values = tuple(store.manifests.decode_partition(e.partition))
            newest, unknown = partitions.get(values, (None, False))
            ct = e.file.creation_time
            if ct is None:
                unknown = True
            elif newest is None or ct > newest:
                newest = ct
            partitions[values] = (newest, unknown)

        expired: List[Tuple[Any, ...]] = []
        skipped: List[SkippedPartition] = []
        cutoff_ms = _local_as_utc_millis(cutoff)
        for values, (newest, unknown) in partitions.items():
            try:
                if self.config.strategy == UPDATE_TIME:
                    if unknown or newest is None:
                        raise NoPartitionTime("a live file has no creation time")
                    # Java: expirationTime.isAfter(lastFileCreationTime).
                    is_expired = cutoff_ms > newest
                else:
                    is_expired = cutoff > self._partition_time(values)
            except NoPartitionTime as e:
                spec = store.partition_dict(values)
                log.warning("partition expiration of %s keeps partition %s: cannot determine "
                            "its time (%s). Check partition.timestamp-formatter / "
                            "partition.timestamp-pattern, drop it by hand, or use "
                            "partition.expiration-strategy = update-time.",
                            store.path, spec, e)
                skipped.append(SkippedPartition(spec, str(e)))
                continue
            if is_expired:
                expired.append(values)

        expired.sort(key=self._sort_key)
        skipped.sort(key=lambda s: self._sort_key(tuple(s.partition.values())))
        return expired[:self.config.max_num], skipped

    def _sort_key(self, values: Sequence[Any]) -> str:
        return ",".join(self._dir_value(v, i) for i, v in enumerate(values))

    def _dir_value(self, v: Any, i: int) -> str:
        try:
            return P.partition_value_string(v, self.store.schema.partition_types[i],
                                            self.store.default_partition_name)
        except (TypeError, ValueError):
            return str(v)

    # --- values-time extraction ----------------------------------------------------------
    def _typed_time(self, v: Any, i: int) -> Optional[datetime.datetime]:
        root = self._roots[i]
        if root == "DATE":
            return datetime.datetime.combine(v, datetime.time())
        if root in TIMESTAMP_ROOTS:
            if v.tzinfo is not None:  # TIMESTAMP_LTZ: its UTC wall clock, as Java
                v = v.astimezone(datetime.timezone.utc).replace(tzinfo=None)
            return v
        return None

    def _time_text(self, v: Any, i: int) -> str:
        t = self._typed_time(v, i)
        if t is not None:
            # Readable forms the default parser accepts (a DATE's directory value is a day
            # number, useless inside a pattern).
            if self._roots[i] == "DATE":
                return t.date().isoformat()
            return t.isoformat(sep=" ")
        if self._roots[i] == "VARCHAR" or self._roots[i] == "CHAR":
            return v
        return self._dir_value(v, i)

    def _partition_time(self, values: Sequence[Any]) -> datetime.datetime:
        keys = self._keys
        pattern = self._pattern
        if pattern is None or pattern.single_key is not None:
            i = 0 if pattern is None else keys.index(pattern.single_key)
            if values[i] is None:
                raise NoPartitionTime(f"{keys[i]!r} is null (the default partition)")
            direct = self._typed_time(values[i], i)
            if direct is not None:
                return direct
            text = self._time_text(values[i], i)
        else:
            texts: Dict[str, str] = {}
            for k in pattern.referenced:
                i = keys.index(k)
                if values[i] is None:
                    raise NoPartitionTime(f"{k!r} is null (the default partition)")
                texts[k] = self._time_text(values[i], i)
            text = pattern.substitute(texts)
        if self._formatter is not None:
            return self._formatter.parse(text)
        return parse_default_time(text)
