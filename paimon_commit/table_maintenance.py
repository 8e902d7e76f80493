"""Table's maintenance methods, by the names users try first (`table.expire_snapshots()`,
`table.remove_orphan_files()`, ...), with keyword arguments named as the command line's flags
(`--retain-min` is `retain_min=`, `--older-than-duration` is `older_than_duration=`) and
returning the operations' result objects.

They run the operations the CLI runs (operations/*), so the two cannot drift apart. Cutoffs
and durations are read as the CLI reads them and follow the same rules: a cutoff
(`older_than`) must be in the past, a duration must not be negative; errors quote the
argument as given, before any I/O.
"""
from __future__ import annotations

import datetime
import time
from typing import Any, Optional, Sequence, Union

from .errors import OptionError
from .format.python_values import parse_iso_datetime
from .options import parse_duration_ms

__all__ = ["TableMaintenance", "cutoff_ms", "duration_ms", "max_duration_arg", "int_at_least"]

Cutoff = Union[None, int, float, str, datetime.datetime, datetime.date]
Duration = Union[None, int, str]

_PLAUSIBLE_MS = 10 ** 11   # 1973 in ms; a smaller number is almost surely seconds


def cutoff_ms(value: Cutoff, name: str, clock=time.time) -> Optional[int]:
    """A cutoff in epoch milliseconds: a datetime (naive = local time), a date (its local
    midnight), 'YYYY-MM-DD HH:MM:SS' or another ISO text (local time unless it has an offset),
    or epoch milliseconds. It must be in the past: a future cutoff would reach snapshots, tags
    or files being written now."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise OptionError(f"{name}={value!r} is not a time")
    if isinstance(value, (int, float)):
        if value < _PLAUSIBLE_MS:
            raise OptionError(f"{name}={value!r} looks like seconds; give epoch milliseconds "
                              f"or a datetime")
        ms = int(value)
    else:
        if isinstance(value, str):
            try:
                value = parse_iso_datetime(value.strip())
            except ValueError:
                raise OptionError(f"{name}={value!r} is an invalid time (expected "
                                  f"'YYYY-MM-DD HH:MM:SS', local time, or a datetime)") from None
        if not isinstance(value, datetime.datetime) and isinstance(value, datetime.date):
            value = datetime.datetime(value.year, value.month, value.day)
        if not isinstance(value, datetime.datetime):
            raise OptionError(f"{name}={value!r} is not a time (expected a datetime, "
                              f"'YYYY-MM-DD HH:MM:SS' or epoch milliseconds)")
        ms = int(value.timestamp() * 1000)
    now = clock()
    if ms >= now * 1000:
        shown = datetime.datetime.fromtimestamp(now).isoformat(sep=" ", timespec="seconds")
        raise OptionError(f"{name}={_shown(value)} is not in the past (it is {shown} now, "
                          f"local time): a cutoff must be a past time")
    return ms


def duration_ms(value: Duration, name: str) -> Optional[int]:
    """A duration ('1 h', '7 d', or milliseconds); never negative."""
    if value is None:
        return None
    try:
        ms = parse_duration_ms(value, name)
    except OptionError:
        raise OptionError(f"{name}={value!r} is an invalid duration (expected e.g. '500 ms', "
                          f"'30 s', '10 min', '1 h', '7 d', or milliseconds)") from None
    if ms < 0:
        raise OptionError(f"{name}={value!r} must not be negative")
    return ms


def max_duration_arg(value: Duration, name: str = "max_duration") -> Optional[int]:
    """A time limit ('10 min', '1 h', or milliseconds), more than 0 (a limit of nothing would
    stop every run before it started)."""
    ms = duration_ms(value, name)
    if ms is not None and ms == 0:
        raise OptionError(f"{name}={value!r} must be longer than 0")
    return ms


def int_at_least(value: Optional[int], name: str, minimum: int) -> Optional[int]:
    """An optional integer argument >= `minimum`, refused in the caller's words."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise OptionError(f"{name}={value!r} is not an integer")
    if value < minimum:
        raise OptionError(f"{name}={value!r} must be >= {minimum}")
    return value


def _shown(value: Any) -> str:
    return repr(value.isoformat(sep=" ")) if isinstance(value, datetime.datetime) \
        else repr(value)


# How expire_snapshots' results name the arguments (kept_because, notes).
_API_LABELS = {"retain_min": "retain_min", "retain_max": "retain_max",
               "older_than": "older_than", "time_retained": "time_retained",
               "max_deletes": "max_deletes"}


class TableMaintenance:
    """Mixed into Table (which provides `store`, `path`, `partition_keys`, `new_commit`)."""

    def expire_snapshots(self, *, retain_min: Optional[int] = None,
                         retain_max: Optional[int] = None, older_than: Cutoff = None,
                         time_retained: Duration = None, max_deletes: Optional[int] = None,
                         dry_run: bool = False, progress=None, max_duration: Duration = None):
        """Expire old snapshots and delete the files only they used (`expire-snapshots`).
        Unset arguments fall back to the table's options (snapshot.num-retained.min/max,
        snapshot.time-retained, snapshot.expire.limit).

        Args:
            retain_min: snapshots always kept.
            retain_max: snapshots kept at most; below the table's
                snapshot.num-retained.min it lowers the minimum for this run ("keep the
                newest N"; said in the result's `notes`).
            older_than: expire snapshots replaced before this time (must be in the past).
            time_retained: how long a replaced snapshot stays readable ('1 h', '7 d').
            max_deletes: snapshots expired in this run at most.
            dry_run: report, delete nothing.
            max_duration: a time limit ('10 min', or milliseconds; more than 0): the run
                stops between two chunks of snapshots once it is reached (the first chunk
                always runs).

        Returns:
            ExpireResult (expired_snapshots, deleted_files, deleted_bytes, deleted_paths, ...).
            `complete` is False when the time limit, memory or max_deletes stopped the run
            (`stopped_by`, `message`): the table is consistent and a rerun continues.
            `kept_because` says why the snapshots left were kept, `notes` what the run
            changed of the table's retention for itself (both naming these arguments).
        """
        older = cutoff_ms(older_than, "older_than")
        retained = duration_ms(time_retained, "time_retained")
        int_at_least(retain_min, "retain_min", 1)
        int_at_least(retain_max, "retain_max", 1)
        int_at_least(max_deletes, "max_deletes", 0)
        limit = max_duration_arg(max_duration)
        if retain_min is not None and retain_max is not None and retain_max < retain_min:
            raise OptionError(f"retain_max={retain_max} must be >= retain_min={retain_min}")
        with self.new_commit(options={"write-only": "true"}) as c:
            return c.expire_snapshots(dry_run=dry_run, retain_min=retain_min,
                                      retain_max=retain_max, older_than_ms=older,
                                      time_retained_ms=retained, max_deletes=max_deletes,
                                      progress=progress, max_duration_ms=limit,
                                      labels=_API_LABELS)

    def expire_partitions(self, *, expiration_time: Duration, timestamp_formatter: Optional[str]
                          = None, timestamp_pattern: Optional[str] = None,
                          expire_strategy: Optional[str] = None,
                          max_expires: Optional[int] = None, dry_run: bool = False):
        """Drop partitions older than `expiration_time` in one OVERWRITE snapshot
        (`expire-partitions`); their files go when the snapshots using them expire.

        Args:
            expiration_time: partitions older than this are dropped ('30 d').
            timestamp_formatter: Java DateTimeFormatter of the partition values ('yyyyMMdd').
            timestamp_pattern: how partition values make a time ('$dt $hour:00:00').
            expire_strategy: 'values-time' (default) or 'update-time'.
            max_expires: partitions dropped at most.
            dry_run: report, change nothing.

        Returns:
            PartitionExpireResult (expired_partitions, snapshot_ids, ...).
        """
        from .operations.partition_expire import PartitionExpire, PartitionExpireConfig
        ms = duration_ms(expiration_time, "expiration_time")
        if ms is None:
            raise OptionError("expiration_time is required (e.g. '30 d')")
        int_at_least(max_expires, "max_expires", 1)
        if not self.partition_keys:
            raise OptionError(f"table {self.path} is not partitioned")
        cfg = PartitionExpireConfig.from_options(
            self.store.options, expiration_time_ms=ms, timestamp_formatter=timestamp_formatter,
            timestamp_pattern=timestamp_pattern, strategy=expire_strategy, max_num=max_expires)
        with self.new_commit(options={"write-only": "true"}) as c:
            return PartitionExpire(self.store, c._commit, cfg).expire(force=True,
                                                                       dry_run=dry_run)

    def remove_orphan_files(self, *, older_than: Cutoff = None,
                            older_than_duration: Duration = None, dry_run: bool = False,
                            parallelism: Optional[int] = None, progress=None,
                            max_duration: Duration = None, allow_recent_cutoff: bool = False,
                            partitions: Optional[Sequence[str]] = None):
        """Delete files no snapshot, tag, branch, changelog or consumer uses
        (`remove-orphan-files`), if older than a day (or `older_than` / `older_than_duration`).

        Args:
            older_than: only files modified before this time (must be in the past).
            older_than_duration: only files older than this ('2 d'); more than 0.
            dry_run: report, delete nothing.
            parallelism: threads listing and deleting (default: the table's
                file-operation.thread-num, or one per CPU).
            max_duration: a time limit ('10 min', or milliseconds; more than 0): deleting
                stops between two batches once it is reached (the first batch always runs).
            allow_recent_cutoff: accept a cutoff less than an hour (or the table's
                commit.timeout) before now, which is refused otherwise: only when no writer
                is running, whose files not yet committed it would delete.
            partitions: only the partitions matching these patterns (`--partition`):
                `key=glob` terms joined by `/`, e.g. `["dt=2024-01-*", "dt=2024-02-01/hr=0?"]`
                (their union); only those partition directories are listed, only the
                manifests whose partition statistics can hold them are read, and no metadata
                file is a candidate (operations/orphan_scope.py).

        Returns:
            OrphanCleanResult (deleted_paths, deleted_dirs, deleted_files, deleted_bytes, ...).
            `complete` is False when the time limit or memory stopped the run
            (`stopped_by`, `message`, `remaining`): a rerun deletes the rest.
        """
        from .operations.orphan import CleanContext, OrphanFilesCleaner
        if older_than is not None and older_than_duration is not None:
            raise OptionError("give older_than or older_than_duration, not both")
        older = cutoff_ms(older_than, "older_than")
        age = duration_ms(older_than_duration, "older_than_duration")
        if age is not None:
            if age == 0:
                raise OptionError(f"older_than_duration={older_than_duration!r} must be longer "
                                  f"than 0: files being written now would be deleted")
            older = int(time.time() * 1000) - age
        int_at_least(parallelism, "parallelism", 1)
        limit = max_duration_arg(max_duration)
        ctx = CleanContext(self, older_than_ms=older, dry_run=dry_run, max_duration_ms=limit,
                           allow_recent_cutoff=allow_recent_cutoff, partitions=partitions)
        ctx.progress = progress
        if parallelism:
            from .io.metered import ContextExecutor
            with ContextExecutor(parallelism) as pool:
                ctx.executor = pool
                return OrphanFilesCleaner(ctx).clean()
        return OrphanFilesCleaner(ctx).clean()

    def report(self, progress=None):
        """The table's health report (`report`): live vs on-disk bytes, reclaimable bytes by
        cause, history, partitions, tags, integrity (`check`, and for a broken latest
        snapshot what `repair` would give up). Read only; takes no maintenance lease.

        Returns:
            HealthReport (to_dict(); paimon_commit.report.render_html for the HTML page).
        """
        from .report import build_report
        return build_report(self, progress=progress)
