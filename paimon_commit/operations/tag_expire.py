"""Tag expiration (Paimon's TagTimeExpire and expire_tags procedure, written from their
documented behaviour), and the tag deletions and creations of the whole tag lifecycle.

Expiration: a tag with a create time and a retention expires once `now > create time +
retention` (when `tag.time-expire-enabled`, the default). A tag without retention is never
expired automatically; an explicit `expire_tags(older_than_ms=...)` also expires tags created
before that time, using the tag file's modification time when the tag has no create time
(Paimon's expire_tags procedure).

Every deletion goes through `TagOperations.delete_tag`: the files only that tag kept are
deleted, crash-safe and finishable (a deletion marker lets a rerun finish). Unfinished
deletions found at the start of an explicit expiration run (expire_tags, `maintain`) are
finished first; post-commit runs skip that listing (one storage request per commit).

A tag that is due but cannot be deleted (a name this library refuses, a hostile file name in
what the tags use) is an error naming the tag, never a silent skip.
"""
from __future__ import annotations

import contextlib
import datetime
import logging
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Tuple

from ..io.metered import RequestBill, billed
from ..errors import CorruptMetadataError
from ..expiring import ExpiringMarkers
from ..format import paths as P
from ..format.snapshot import Tag
from ..io.deletion import StopDeleting
from ..lease import maintenance_lease
from ..store import FileStore
from ..tags import TagManager, tag_manager, validate_tag_name
from .limits import MAX_DURATION, Deadline

# The records keep the logger of the tag lifecycle they are part of.
log = logging.getLogger("paimon_commit.operations.tag_lifecycle")

__all__ = ["TagExpireResult", "expire_tags", "listed_tags", "readable_tags", "delete_tag_into",
           "create_tag_into", "local_time", "local_now"]


def local_time(ms: int) -> datetime.datetime:
    """Epoch milliseconds as a naive local wall-clock time: tag times are local, as Paimon
    writes them."""
    return datetime.datetime.fromtimestamp(ms / 1000.0)


def local_now(clock: Callable[[], float]) -> datetime.datetime:
    """Now (from `clock`, seconds) as a naive local wall-clock time."""
    return datetime.datetime.fromtimestamp(clock())


@dataclass
class TagExpireResult:
    """What an explicit tag expiration did (or would do, with dry_run)."""
    expired_tags: List[str] = field(default_factory=list)
    snapshot_ids: Dict[str, int] = field(default_factory=dict)
    finished_deletions: List[str] = field(default_factory=list)
    deleted_files: int = 0
    deleted_bytes: int = 0
    deleted_paths: List[str] = field(default_factory=list)
    dry_run: bool = False
    skipped: List[str] = field(default_factory=list)
    # Tags due to expire that cannot be deleted, each naming the tag and why: they would
    # otherwise never expire without anyone noticing.
    errors: List[str] = field(default_factory=list)
    # False when the time limit stopped the run between two tags (operations/limits.py).
    complete: bool = True
    stopped_by: Optional[str] = None
    message: Optional[str] = None
    # What the operation asked of the storage (io/metered.py).
    requests: RequestBill = field(default_factory=RequestBill)

    def to_dict(self) -> Dict[str, Any]:
        """JSON-ready dict (paths are left to the caller, which knows the table root)."""
        return {"requests": self.requests.to_dict(),
                "expired_tags": self.expired_tags, "snapshot_ids": self.snapshot_ids,
                "finished_deletions": self.finished_deletions,
                "deleted_files": self.deleted_files, "deleted_bytes": self.deleted_bytes,
                "dry_run": self.dry_run, "skipped": self.skipped, "errors": self.errors,
                "complete": self.complete, "stopped_by": self.stopped_by,
                "message": self.message}


# --- deleting through TagOperations ----------------------------------------------------------

def delete_tag_into(store: FileStore, name: str, into, action: str = "expired",
                    expected=None) -> bool:
    """delete_tag(name) with its files; adds counts to `into`. False if it failed: a tag
    deleted concurrently is logged; a tag delete_tag refuses (a name we do not accept, a
    hostile file name in what the tags use) is an error in `into.errors`; a tag that no
    longer points at `expected` (the snapshot it was chosen with), or that changed while its
    deletion was planned, is kept and the reason is in `into.skipped`."""
    from .tag_ops import TagOperations
    try:
        r = TagOperations(store).delete_tag(name, expected)
    except ValueError as e:
        tags = tag_manager(store)
        try:
            gone = not tags.exists(name) and tags.deletion_marker(name) is None
        except ValueError:
            gone = False
        if gone:
            log.info("tag %s of %s was deleted concurrently", name, store.path)
            return False
        into.errors.append(f"tag {name!r} cannot be {action}: {e}")
        log.error("%s: %s", store.path, into.errors[-1])
        return False
    into.deleted_files += r.deleted_files
    into.deleted_bytes += r.deleted_bytes
    if hasattr(into, "deleted_paths"):
        into.deleted_paths.extend(r.deleted_paths)
    into.skipped.extend(f"tag {name}: {s}" for s in r.skipped)
    if not r.complete:   # a safe point stopped it: the caller's run stops there too
        raise StopDeleting(r.message or f"deleting tag {name!r} stopped",
                           r.stopped_by or "stop")
    return r.deleted


def create_tag_into(store: FileStore, tags: TagManager, tag: Tag, into) -> Optional[bool]:
    """TagManager.create, finishing first an unfinished deletion of an earlier tag of that
    name (as delete_tag(name) would). None (falsy) when a stopped expiration's mark covers
    the snapshot: the tag belongs on a later one. While that deletion cannot be finished the tag is not
    created (reported in `into.skipped`): the marker is the only record of the files the
    earlier tag alone kept. False if not created."""
    name = tag.name
    if tags.has_deletion_marker(name):
        delete_tag_into(store, name, into,
                        "created (finishing the deletion of an earlier tag of that name)")
    # Under the maintenance lease: no expiration of ours runs meanwhile, but one stopped
    # half-way may have deleted files of this snapshot (its mark: expiring.py).
    mark = ExpiringMarkers(store.io, store.root).covering_snapshot(tag.snapshot.id,
                                                                   store.snapshots)
    if mark is not None:
        into.skipped.append(f"tag {name} not created on snapshot {tag.snapshot.id}: "
                            f"{mark.describe()}, so some of its files may be gone")
        log.warning("%s: %s", store.path, into.skipped[-1])
        return None   # (not False: a later snapshot may take the tag; audit issue25m m3)
    try:
        return tags.create(tag)
    except ValueError:   # the marker is still there
        into.skipped.append(f"tag {name} not created: an earlier deletion of a tag with this "
                            f"name is unfinished; the next run finishes it first")
        log.warning("%s: %s", store.path, into.skipped[-1])
        return False


def _finish_pending(store: FileStore, tags: TagManager, into) -> List[str]:
    """Finish tag deletions a crash or a failed delete interrupted (a marker). A live tag
    of that name on another snapshot (created again since, by an engine that does not know
    the markers) is kept: delete_tag finishes only the earlier deletion."""
    done = []
    for name in tags.pending_deletions():
        if tags.exists(name):
            try:
                live, earlier = tags.try_tag(name), tags.deletion_marker(name)
            except (ValueError, CorruptMetadataError) as e:   # not decided here
                into.skipped.append(f"tag {name}: unfinished deletion not finished ({e})")
                continue
            if live is not None and (earlier is None or earlier.id == live.id):
                continue   # interrupted before its tag file went: the tag is still whole
        if delete_tag_into(store, name, into, "deleted (finishing its interrupted deletion)"):
            done.append(name)
    return done


# Parsed tags by (path, size, modification time): tag files are written whole and replaced
# whole, so a listing tells whether a parse is still good. Post-commit expiry lists tag/ after
# every commit; this spares it a read of every tag file each time (a GET each on object
# stores), also across the commit objects of one process.
_TAG_CACHE: Dict[Tuple[str, int, int], Tag] = {}
_TAG_CACHE_MAX = 10_000


def listed_tags(tags: TagManager, skipped: Optional[List[str]] = None
                ) -> List[Tuple[Tag, Any]]:
    """(tag, its file status) for every tag that can be parsed, sorted by snapshot id; an
    unreadable tag file is skipped (and reported in `skipped`): deciding what to expire or
    create must not stop on it, while deleting a tag still reads every tag (delete_tag) and
    stops there."""
    out = []
    for st in tags.io.list_status(tags.tag_dir):
        name = P.parse_tag_name(st.name)
        if name is None or st.is_dir or P.is_temp_file(st.name):
            continue
        key = (st.path, st.size, st.mtime_ms)
        t = _TAG_CACHE.get(key)
        if t is None or t.name != name:
            try:
                t = tags.try_tag(name)
            except CorruptMetadataError as e:
                log.warning("tag %s is unreadable and skipped: %s", name, e)
                if skipped is not None:
                    skipped.append(f"tag {name} is unreadable ({e}); skipped")
                continue
            if t is None:
                continue
            if len(_TAG_CACHE) >= _TAG_CACHE_MAX:
                _TAG_CACHE.clear()
            _TAG_CACHE[key] = t
        out.append((t, st))
    out.sort(key=lambda x: (x[0].id, x[0].name))
    return out


def readable_tags(tags: TagManager, skipped: Optional[List[str]] = None) -> List[Tag]:
    """Every tag that can be parsed, sorted by snapshot id (see listed_tags)."""
    return [t for t, _ in listed_tags(tags, skipped)]


def _retention_over(tag: Tag, now: datetime.datetime) -> bool:
    return tag.create_time is not None and tag.time_retained_ms is not None and \
        now > tag.create_time + datetime.timedelta(milliseconds=tag.time_retained_ms)


@billed   # result.requests: what it asked of the storage
def expire_tags(store: FileStore, older_than_ms: Optional[int] = None, dry_run: bool = False,
                clock: Callable[[], float] = time.time,
                finish_pending: bool = True,
                max_duration_ms: Optional[int] = None) -> TagExpireResult:
    """Expire tags now: every tag past its own retention (create time + time retained), and,
    with `older_than_ms`, every tag created before that time (tags without a create time use
    their file's modification time). Tags without retention are only expired through
    `older_than_ms`. Deleting a tag also deletes the files only it kept (as delete_tag).

    Args:
        store: the table.
        older_than_ms: epoch milliseconds; None = retention only.
        dry_run: report what would be expired; delete nothing (file counts stay 0).
        clock: seconds since the epoch (tests pass a fake clock).
        finish_pending: first finish tag deletions an earlier run left unfinished (one more
            listing; post-commit maintenance leaves this to explicit runs and `maintain`).
        max_duration_ms: a time limit, checked between two tag deletions (each is
            crash-safe and finishable; the first always runs): the result then says
            complete=False, stopped_by="max-duration", and a rerun expires the rest.

    Returns:
        TagExpireResult. A due tag that cannot be deleted (a name this library refuses, a
        hostile file name in what the tags use) is in `errors`, naming the tag and why; the
        other tags still expire.

    Raises:
        CorruptMetadataError: a tag file cannot be parsed (nothing is deleted).
        OSError: a tag file could not be deleted.
    """
    deadline = Deadline.after(max_duration_ms)
    result = TagExpireResult(dry_run=dry_run)
    # The table's maintenance lease (lease.py) for the whole run; a dry run takes none.
    with contextlib.nullcontext() if dry_run else maintenance_lease(store, "expire-tags"):
        try:
            return _expire_tags(store, older_than_ms, dry_run, clock, finish_pending,
                                deadline, result)
        except StopDeleting as e:   # before a delete step: each tag deletion is finishable
            result.complete, result.stopped_by = False, e.cause
            result.message = (f"stopped before a delete step: {e.reason}; expired "
                              f"{len(result.expired_tags)} tag(s), deleted "
                              f"{result.deleted_files} file(s); a rerun continues")
            log.warning("tags of %s: %s", store.path, result.message)
            return result


def _expire_tags(store: FileStore, older_than_ms: Optional[int], dry_run: bool,
                 clock: Callable[[], float], finish_pending: bool,
                 deadline: Optional[Deadline], result: "TagExpireResult") -> "TagExpireResult":
    tags = tag_manager(store)
    if finish_pending and not dry_run:
        result.finished_deletions = _finish_pending(store, tags, result)
    now = local_now(clock)
    older = local_time(older_than_ms) if older_than_ms is not None else None
    for tag, st in listed_tags(tags, result.skipped):
        created = tag.create_time
        if created is None and older is not None:
            created = local_time(st.mtime_ms)
        if not (_retention_over(tag, now) or (older is not None and created is not None
                                              and created < older)):
            continue
        if dry_run:
            try:   # what delete_tag refuses first (a dry run reads no more)
                validate_tag_name(tag.name)
            except ValueError as e:
                result.errors.append(f"tag {tag.name!r} cannot be expired: {e}")
                log.error("%s: %s", store.path, result.errors[-1])
                continue
        if deadline is not None and (result.expired_tags or result.finished_deletions) \
                and deadline.reached():
            result.complete, result.stopped_by = False, MAX_DURATION
            result.message = (f"stopped by {deadline.describe()} between two tags: expired "
                              f"{len(result.expired_tags)} tag(s), deleted "
                              f"{result.deleted_files} file(s); a rerun continues")
            log.warning("tags of %s: %s", store.path, result.message)
            break
        # (The tag as listed: one replaced under its name since is not this one.)
        if dry_run or delete_tag_into(store, tag.name, result, expected=tag.snapshot):
            result.expired_tags.append(tag.name)
            result.snapshot_ids[tag.name] = tag.id
    if result.expired_tags:
        log.info("tags of %s %s: %s", store.path, "would expire" if dry_run else "expired",
                 ", ".join(result.expired_tags))
    return result
