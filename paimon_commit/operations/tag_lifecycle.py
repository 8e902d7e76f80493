"""Tag lifecycle: automatic tag creation and the post-commit tag run (Paimon's TagAutoCreation,
TagBatchCreation and TagTimeExpire semantics, written from their documented behaviour).

Automatic creation (`tag.automatic-creation`):
- `process-time`: a snapshot's time is its commit time (`timeMillis`) in the local time zone;
- `watermark`: its watermark in `sink.watermark-time-zone` (snapshots without one are skipped);
- for both, walking the snapshots not seen yet in id order, a snapshot whose time minus
  `tag.creation-delay` reaches the end of the period after the last automatic tag creates the
  tag of the period *before* the snapshot's own (a tag names a period that is over: the first
  snapshot of 2024-01-02 creates tag `2024-01-01`). The very first automatic tag of a table is
  created by the first snapshot seen, without waiting for the delay (as Paimon does).
  `tag.automatic-completion=true` names each new tag after the period that follows the last one
  instead, so skipped periods are filled one per qualifying snapshot;
- `batch`: after every one-shot batch commit, tag the latest snapshot `batch-write-yyyy-MM-dd`
  (local date of its commit time) or `tag.batch.customized-name`, replacing a tag of that name.

New tags get `tag.default-time-retained` (create time = now, local wall clock, as Paimon writes
it). `tag.num-retained-max` keeps at most that many *automatic* tags (names the period
formatter parses, or batch tag names), deleting the oldest first; unlike Paimon's batch mode,
which counts every tag, a tag a user named otherwise is never deleted by count.

Expiring and deleting tags is `tag_expire`'s.
"""
from __future__ import annotations

import datetime
import logging
import re
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, Optional

from ..io.metered import RequestBill, billed
from ..errors import OptionError
from ..format.snapshot import Snapshot, Tag
from ..store import FileStore
from ..tags import tag_manager, validate_tag_name
from .tag_expire import (create_tag_into, delete_tag_into, expire_tags, local_now, local_time,
                         readable_tags)

log = logging.getLogger(__name__)

__all__ = ["TagLifecycleConfig", "TagPeriodHandler", "TagAutoCreation", "TagLifecycle",
           "TagLifecycleResult", "BATCH_TAG_PREFIX"]

BATCH_TAG_PREFIX = "batch-write-"
_BATCH_TAG = re.compile(r"^batch-write-\d{4}-\d{2}-\d{2}$")
_LONG_MIN = -9223372036854775808
_EPOCH = datetime.datetime(1970, 1, 1)


# --- configuration -------------------------------------------------------------------------

@dataclass(frozen=True)
class TagLifecycleConfig:
    """The tag options of a table, parsed and checked (no I/O)."""
    mode: str = "none"                       # none | process-time | watermark | batch
    period: str = "daily"                    # daily | hourly | two-hours
    delay_ms: int = 0
    formatter: str = "with_dashes"
    num_retained_max: Optional[int] = None
    default_time_retained_ms: Optional[int] = None
    time_expire_enabled: bool = True
    automatic_completion: bool = False
    batch_customized_name: Optional[str] = None
    watermark_time_zone: str = "UTC"

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> "TagLifecycleConfig":
        """Build from parsed table options (FileStore.options / validate_options output).

        Args:
            options: parsed options; every `tag.*` key declared in options.py must be there.

        Returns:
            The config.

        Raises:
            OptionError: `tag.batch.customized-name` is not a valid tag name.
        """
        name = options["tag.batch.customized-name"]
        if name is not None:
            try:
                validate_tag_name(name)
            except ValueError as e:
                raise OptionError(f"option 'tag.batch.customized-name' = {name!r}: {e}") from None
        return cls(mode=options["tag.automatic-creation"],
                   period=options["tag.creation-period"],
                   delay_ms=options["tag.creation-delay"],
                   formatter=options["tag.period-formatter"],
                   num_retained_max=options["tag.num-retained-max"],
                   default_time_retained_ms=options["tag.default-time-retained"],
                   time_expire_enabled=options["tag.time-expire-enabled"],
                   automatic_completion=options["tag.automatic-completion"],
                   batch_customized_name=name,
                   watermark_time_zone=options["sink.watermark-time-zone"])

    @property
    def periodic(self) -> bool:
        """True for `process-time` and `watermark` creation."""
        return self.mode in ("process-time", "watermark")

    @property
    def active(self) -> bool:
        """Whether post-commit maintenance has anything to do for tags."""
        return self.mode != "none" or self.time_expire_enabled


# --- periods and names ---------------------------------------------------------------------

_PERIOD = {"daily": datetime.timedelta(days=1), "hourly": datetime.timedelta(hours=1),
           "two-hours": datetime.timedelta(hours=2)}


class TagPeriodHandler:
    """Names of automatic tags and the arithmetic of periods.

    Names: daily `yyyy-MM-dd`; hourly `yyyy-MM-dd HH` (with_dashes) or `yyyyMMdd HH`
    (without_dashes); two-hours always `yyyy-MM-dd HH`. A tag is automatic when its name
    parses (for daily, the part before the first space is parsed, as Paimon does).
    """

    def __init__(self, period: str, formatter: str = "with_dashes"):
        if period not in _PERIOD:
            raise OptionError(f"option 'tag.creation-period': {period!r} is not one of "
                              f"{', '.join(_PERIOD)}")
        self.period = period
        self.one = _PERIOD[period]
        if period == "daily":
            self._fmt, self._re = "%Y-%m-%d", re.compile(r"^(\d{1,10})-(\d{2})-(\d{2})$")
        elif period == "hourly" and formatter == "without_dashes":
            self._fmt, self._re = "%Y%m%d %H", re.compile(r"^(\d{1,10})(\d{2})(\d{2}) (\d{2})$")
        elif period == "hourly" and formatter == "without_dashes_and_spaces":
            self._fmt, self._re = "%Y%m%d%H", re.compile(r"^(\d{1,10})(\d{2})(\d{2})(\d{2})$")
        else:
            self._fmt = "%Y-%m-%d %H"
            self._re = re.compile(r"^(\d{1,10})-(\d{2})-(\d{2}) (\d{2})$")

    def tag_to_time(self, name: str) -> Optional[datetime.datetime]:
        """The period start a tag name stands for, or None if it is not an automatic tag."""
        text = name.split(" ")[0] if self.period == "daily" else name
        m = self._re.match(text)
        if not m:
            return None
        try:
            return datetime.datetime(*(int(g) for g in m.groups()))
        except (ValueError, OverflowError):
            return None

    def is_auto_tag(self, name: str) -> bool:
        """Whether `name` is the name of an automatic tag of this period."""
        return self.tag_to_time(name) is not None

    def time_to_tag(self, t: datetime.datetime) -> str:
        """The tag name of the period starting at `t`."""
        return t.strftime(self._fmt)

    def normalize_to_previous_tag(self, t: datetime.datetime) -> datetime.datetime:
        """Start of the period before the one `t` falls in (periods counted from 1970-01-01
        00:00 of the same wall clock, so two-hour periods start at even hours)."""
        step = int(self.one.total_seconds() * 1000)
        ms = (t - _EPOCH) // datetime.timedelta(milliseconds=1)
        return _EPOCH + datetime.timedelta(milliseconds=(ms // step) * step) - self.one

    def next_tag_time(self, t: datetime.datetime) -> datetime.datetime:
        """The period start after `t`."""
        return t + self.one


def _in_zone(ms: int, zone: str) -> datetime.datetime:
    import zoneinfo
    return datetime.datetime.fromtimestamp(ms / 1000.0, zoneinfo.ZoneInfo(zone)) \
        .replace(tzinfo=None)


# --- results -------------------------------------------------------------------------------

@dataclass
class TagLifecycleResult:
    """What one post-commit tag run did."""
    created: List[str] = field(default_factory=list)
    expired: List[str] = field(default_factory=list)      # by retention
    removed_by_count: List[str] = field(default_factory=list)   # tag.num-retained-max
    deleted_files: int = 0
    deleted_bytes: int = 0
    skipped: List[str] = field(default_factory=list)
    errors: List[str] = field(default_factory=list)   # tags that could not be deleted
    # What the operation asked of the storage (io/metered.py).
    requests: RequestBill = field(default_factory=RequestBill)

    def to_dict(self) -> Dict[str, Any]:
        """JSON-ready dict."""
        return {"requests": self.requests.to_dict(),
                "created": self.created, "expired": self.expired,
                "removed_by_count": self.removed_by_count, "deleted_files": self.deleted_files,
                "deleted_bytes": self.deleted_bytes, "skipped": self.skipped,
                "errors": self.errors}


# --- automatic creation --------------------------------------------------------------------

class TagAutoCreation:
    """Periodic tag creation (`process-time` / `watermark`), carrying its position from one
    run to the next: a run reads only the snapshots committed since the last one."""

    def __init__(self, store: FileStore, config: TagLifecycleConfig,
                 clock: Callable[[], float] = time.time):
        if not config.periodic:
            raise ValueError(f"TagAutoCreation needs process-time or watermark mode, not "
                             f"{config.mode!r}")
        self.store = store
        self.config = config
        self.clock = clock
        self.handler = TagPeriodHandler(config.period, config.formatter)
        self.tags = tag_manager(store)
        self.delay = datetime.timedelta(milliseconds=config.delay_ms)
        self._next_snapshot: Optional[int] = None
        self._next_tag: Optional[datetime.datetime] = None

    def _auto_tags(self) -> List[Tag]:
        return [t for t in readable_tags(self.tags) if self.handler.is_auto_tag(t.name)]

    def _init(self) -> None:
        auto = self._auto_tags()
        if not auto:
            self._next_snapshot = self.store.snapshots.earliest_snapshot_id() or 1
            self._next_tag = None
            return
        last_id = max(t.id for t in auto)
        last = max((t for t in auto if t.id == last_id),
                   key=lambda t: self.handler.tag_to_time(t.name))
        self._next_snapshot = last_id + 1
        self._next_tag = self.handler.next_tag_time(self.handler.tag_to_time(last.name))

    def _time_of(self, s: Snapshot) -> Optional[datetime.datetime]:
        if self.config.mode == "process-time":
            return local_time(s.time_millis)
        if s.watermark is None or s.watermark == _LONG_MIN:
            return None
        return _in_zone(s.watermark, self.config.watermark_time_zone)

    @billed   # result.requests: what it asked of the storage
    def run(self, result: Optional[TagLifecycleResult] = None) -> TagLifecycleResult:
        """Create the tags due for every snapshot not seen yet.

        Args:
            result: where to record what was done (a new one if None).

        Returns:
            The result.

        Raises:
            CorruptMetadataError: a snapshot or tag file cannot be parsed.
        """
        result = result if result is not None else TagLifecycleResult()
        if self._next_snapshot is None:
            self._init()
        sm = self.store.snapshots
        latest_id = sm.latest_snapshot_id()
        latest = sm.try_snapshot(latest_id) if latest_id is not None else None
        while True:
            if latest is not None and self._next_snapshot <= latest.id and \
                    self._next_tag is not None and not self._due(latest):
                # Snapshot times grow with ids: when the latest is not due, none before it
                # is. Without this, a job opening a commit object per write would read every
                # snapshot since the last tag after each commit.
                self._next_snapshot = latest.id + 1
                break
            s = sm.try_snapshot(self._next_snapshot)
            if s is not None:
                self._maybe_tag(s, result)
                self._next_snapshot += 1
                continue
            earliest = sm.earliest_snapshot_id()
            if earliest is not None and earliest > self._next_snapshot:
                self._next_snapshot = earliest   # expired meanwhile
                continue
            break
        return result

    def _due(self, s: Snapshot) -> bool:
        """Whether snapshot `s` would create a tag (False without a time)."""
        t = self._time_of(s)
        return t is not None and (self._next_tag is None or
                                  t - self.delay >= self.handler.next_tag_time(self._next_tag))

    def _maybe_tag(self, s: Snapshot, result: TagLifecycleResult) -> None:
        t = self._time_of(s)
        if t is None:
            return
        h = self.handler
        if self._next_tag is not None and t - self.delay < h.next_tag_time(self._next_tag):
            return
        this = h.normalize_to_previous_tag(t)
        if self.config.automatic_completion and self._next_tag is not None:
            this = self._next_tag
        name = h.time_to_tag(this)
        validate_tag_name(name)
        if not self.tags.exists(name):
            if any(h.is_auto_tag(o.name) for o in readable_tags(self.tags) if o.id == s.id):
                result.skipped.append(f"snapshot {s.id} already has an automatic tag; "
                                      f"{name} not created")
            else:
                retained = self.config.default_time_retained_ms
                tag = Tag(name, s, local_now(self.clock) if retained else None, retained)
                created = create_tag_into(self.store, self.tags, tag, result)
                if created is None:
                    # A stopped expiration's mark covers it: the next snapshot is tagged as
                    # if this one were not there (its own period, as Paimon names it; with
                    # tag.automatic-completion the period still due). Naming a later
                    # snapshot after this one's period would tag later data (audit 25n n4).
                    return
                if created:
                    result.created.append(name)
                    log.info("created tag %s for snapshot %d of %s", name, s.id,
                             self.store.path)
        self._next_tag = h.next_tag_time(this)
        self._enforce_max(result)

    def _enforce_max(self, result: TagLifecycleResult) -> None:
        limit = self.config.num_retained_max
        if limit is None:
            return
        auto = sorted(self._auto_tags(), key=lambda t: (t.id, self.handler.tag_to_time(t.name)))
        for t in auto[:max(0, len(auto) - limit)]:
            # (Only while it points at the snapshot it was counted with.)
            if delete_tag_into(self.store, t.name, result, "deleted (tag.num-retained-max)",
                               expected=t.snapshot):
                result.removed_by_count.append(t.name)
                log.info("deleted tag %s of %s: more than tag.num-retained-max = %d automatic "
                         "tags", t.name, self.store.path, limit)


# --- the post-commit entry point -----------------------------------------------------------

class TagLifecycle:
    """What post-commit maintenance does for tags, per TableCommit (it keeps the creation
    position between runs). `before_expiration` runs periodic creation and retention expiry
    first; `after_commit_batch` creates the batch tag once the rest of maintenance is done."""

    def __init__(self, store: FileStore, config: TagLifecycleConfig,
                 clock: Callable[[], float] = time.time):
        self.store = store
        self.config = config
        self.clock = clock
        self.auto = TagAutoCreation(store, config, clock) if config.periodic else None

    def before_expiration(self) -> TagLifecycleResult:
        """Periodic tag creation, then expiry of tags past their retention.

        Returns:
            TagLifecycleResult.

        Raises:
            CorruptMetadataError: a snapshot or tag file cannot be parsed.
            OSError: a tag could not be deleted.
        """
        result = TagLifecycleResult()
        if self.auto is not None:
            self.auto.run(result)
        if self.config.time_expire_enabled:
            r = expire_tags(self.store, clock=self.clock, finish_pending=False)
            result.expired.extend(r.expired_tags)
            result.deleted_files += r.deleted_files
            result.deleted_bytes += r.deleted_bytes
            result.skipped.extend(r.skipped)
            result.errors.extend(r.errors)
        return result

    def after_batch_commit(self, result: Optional[TagLifecycleResult] = None
                           ) -> TagLifecycleResult:
        """`batch` mode: tag the latest snapshot after a one-shot batch commit (replacing a
        tag of the same name), then keep at most `tag.num-retained-max` batch tags.

        Args:
            result: where to record what was done (a new one if None).

        Returns:
            TagLifecycleResult.
        """
        result = result if result is not None else TagLifecycleResult()
        if self.config.mode != "batch":
            return result
        store = self.store
        tags = tag_manager(store)
        s = store.snapshots.latest_snapshot()
        if s is None:
            return result
        name = self.config.batch_customized_name or \
            BATCH_TAG_PREFIX + local_time(s.time_millis).strftime("%Y-%m-%d")
        old = tags.try_tag(name)
        if old is not None and old.id == s.id:
            return result
        if old is not None:
            # Only the tag read above: one replaced under its name since (a user, another
            # engine) is nobody's to delete here; creating ours then finds the name taken.
            delete_tag_into(store, name, result, "replaced", expected=old.snapshot)
        retained = self.config.default_time_retained_ms
        tag = Tag(name, s, local_now(self.clock) if retained else None, retained)
        try:
            if create_tag_into(store, tags, tag, result):
                result.created.append(name)
        except OSError as e:
            result.skipped.append(f"could not create tag {name} for snapshot {s.id} ({e}); "
                                  f"create it by hand")
            log.warning("tag %s of %s: %s", name, store.path, result.skipped[-1])
        limit = self.config.num_retained_max
        if limit is not None:
            custom = self.config.batch_customized_name
            batch = [t for t in readable_tags(tags)
                     if _BATCH_TAG.match(t.name) or t.name == custom]
            for t in batch[:max(0, len(batch) - limit)]:
                # (Only while it points at the snapshot it was counted with.)
                if delete_tag_into(store, t.name, result, "deleted (tag.num-retained-max)",
                                   expected=t.snapshot):
                    result.removed_by_count.append(t.name)
        return result
