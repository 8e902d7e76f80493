"""What one expiration run plans (ExpirePlan) and reports (ExpireResult)."""
from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Set, Tuple

from ..io.metered import RequestBill

log = logging.getLogger("paimon_commit.operations.expire")   # (the expirer's log)

__all__ = ["ExpirePlan", "ExpireResult", "ExpireTotals", "KINDS", "tag_changes"]

KINDS = ("data", "changelog", "manifest", "manifest-list", "index", "statistics", "snapshot",
         "long-lived-changelog", "directory")


def tag_changes(before: Mapping[str, Any], now: Mapping[str, Any]) -> List[str]:
    """How the tags (name -> target Snapshot) changed between two readings, one phrase per
    tag. Content decides: a tag deleted and created again under its name on another snapshot
    is a change, although the names are the same."""
    out = []
    for name in sorted(set(before) | set(now)):
        was, is_ = before.get(name), now.get(name)
        if was is None:
            out.append(f"tag {name} was created on snapshot {is_.id}")
        elif is_ is None:
            out.append(f"tag {name} was deleted")
        elif is_ != was:
            out.append(f"tag {name} now points at snapshot {is_.id}, was {was.id}"
                       if is_.id != was.id else
                       f"tag {name} was replaced (snapshot {is_.id} with other content)")
    return out


@dataclass
class ExpirePlan:
    """What one run would delete: kind -> path -> size (0 when unknown), kinds in deletion
    order. For changelog expiration (`changelogs`) the ids are long-lived changelog ids."""
    earliest: Optional[int]
    latest: Optional[int]
    begin: Optional[int] = None
    end: Optional[int] = None
    expiring: List[int] = field(default_factory=list)
    changelogs: bool = False
    # id -> its snapshot (or long-lived changelog) file, for every id in `expiring`: what
    # deleting a file means for EARLIEST and the result is looked up by id, never by position
    # (an id whose file vanished concurrently has no file).
    metadata: Dict[int, str] = field(default_factory=dict)
    files: Dict[str, Dict[str, int]] = field(default_factory=lambda: {k: {} for k in KINDS})
    bucket_dirs: Set[str] = field(default_factory=set)
    tag_names: List[str] = field(default_factory=list)
    # What the plan's safety rests on, read again right before the first delete (content,
    # not names: `_execute` stops on any difference). (directory, file name) -> (what it is,
    # the bytes planned with, the listed version they were read at or None) of every
    # snapshot and long-lived changelog the plan keeps; tag name -> its target snapshot; the
    # lowest position a consumer may have (the first kept id, or lower where a consumer
    # already was: its snapshot was missing and the plan went to the next one).
    kept: Dict[Tuple[str, str], Tuple[str, bytes, Optional[str]]] = field(default_factory=dict)
    tags: Dict[str, Any] = field(default_factory=dict)
    consumer_floor: Optional[int] = None
    skipped: List[str] = field(default_factory=list)
    deleted: Dict[str, List[str]] = field(default_factory=dict)   # filled by execution
    # The marker of this expiration in progress (expiring.py), written before the re-check
    # and removed once the range is gone; `deleting`: the re-check passed, deletes may have
    # begun (a later refusal then leaves the marker: the snapshots are half expired).
    marker: Any = None
    deleting: bool = False
    # Data files of this plan deleted by other processes (Spark executors): a stop later
    # does not mean nothing is gone.
    deleted_elsewhere: bool = False

    def skip(self, reason: str) -> None:
        """Record (and log) something the run leaves for later, with the reason."""
        log.warning("expire: %s", reason)
        self.skipped.append(reason)

    def add(self, kind: str, files: Dict[str, int]) -> None:
        """Plan to delete `files` (path -> size) of one kind."""
        planned = self.files[kind]
        for path, size in files.items():
            planned.setdefault(path, size or 0)
        if kind in ("data", "changelog"):
            # The directory part, computed once per directory (os.path.dirname per file
            # was a tenth of planning a large expiration).
            seen: Set[str] = set()
            for path in files:
                head = path[:path.rfind("/") + 1]
                if head not in seen:
                    seen.add(head)
                    self.bucket_dirs.add(os.path.dirname(path))

    def add_metadata(self, files: Dict[str, Tuple[str, int]]) -> None:
        """Plan to delete metadata files (path -> (kind, size))."""
        for path, (kind, size) in files.items():
            self.files[kind].setdefault(path, size or 0)

    def add_expiring(self, sid: int, path: str, size: int) -> None:
        """Plan to delete snapshot (or long-lived changelog) `sid`, whose file is `path`."""
        self.metadata[sid] = path
        self.files[self.metadata_kind].setdefault(path, size or 0)

    @property
    def metadata_kind(self) -> str:
        return "long-lived-changelog" if self.changelogs else "snapshot"

    @property
    def metadata_files(self) -> Dict[str, int]:
        """The snapshot (or long-lived changelog) files, ascending."""
        return self.files[self.metadata_kind]


@dataclass
class ExpireResult:
    """What a run expired and deleted (or would, with dry_run)."""
    expired_snapshots: int
    expired_ids: List[int]
    deleted_files: int
    deleted_bytes: int
    by_kind: Dict[str, Dict[str, int]]
    earliest: Optional[int]
    latest: Optional[int]
    dry_run: bool
    skipped: List[str]
    deleted_paths: List[str]
    seconds: Dict[str, float]
    expired_changelogs: List[int] = field(default_factory=list)
    # False when a limit stopped the run (operations/limits.py): `stopped_by` says which
    # ("max-duration", "memory", "max-deletes") and `message` what was done and how to go on.
    # What is left is what a rerun plans again.
    complete: bool = True
    stopped_by: Optional[str] = None
    message: Optional[str] = None
    # Why the snapshots left were kept, in the words of the option or argument that kept
    # them ("10 snapshot(s) kept by snapshot.num-retained.min = 10"): a run that expired
    # less than the user hoped says why (ExpireSnapshots.kept_because).
    kept_because: List[str] = field(default_factory=list)
    # What the run changed of the table's settings for itself (a retain_max below the
    # table's minimum lowers the minimum: TableCommit.expire_snapshots).
    notes: List[str] = field(default_factory=list)
    # What the operation asked of the storage (io/metered.py).
    requests: RequestBill = field(default_factory=RequestBill)

    def to_dict(self) -> Dict[str, Any]:
        """The result as a JSON-ready dict (what the CLI prints with --json)."""
        return {"requests": self.requests.to_dict(),
                "expired_snapshots": self.expired_snapshots, "expired_ids": self.expired_ids,
                "expired_changelogs": self.expired_changelogs,
                "deleted_files": self.deleted_files, "deleted_bytes": self.deleted_bytes,
                "by_kind": self.by_kind, "earliest": self.earliest, "latest": self.latest,
                "dry_run": self.dry_run, "skipped": self.skipped, "seconds": self.seconds,
                "complete": self.complete, "stopped_by": self.stopped_by,
                "message": self.message, "kept_because": self.kept_because, "notes": self.notes}


class ExpireTotals:
    """What the plans of one run (the chunks of a snapshot expiration, then a changelog
    expiration) expired and deleted, folded in plan by plan so that a plan's file lists are
    dropped once it has run: counts and bytes by kind, the deleted paths, ids, reasons."""

    def __init__(self) -> None:
        self.by_kind: Dict[str, Dict[str, int]] = {}
        self.paths: List[str] = []
        self.expired: List[int] = []
        self.expired_changelogs: List[int] = []
        self.skipped: List[str] = []
        self.earliest: Optional[int] = None
        self.latest: Optional[int] = None
        self._first = True

    def add(self, plan: ExpirePlan, dry_run: bool) -> None:
        if not plan.changelogs and self._first:
            self.earliest, self.latest, self._first = plan.earliest, plan.latest, False
        if not plan.changelogs and self.latest is not None and plan.latest is not None:
            self.latest = max(self.latest, plan.latest)
        self.skipped.extend(plan.skipped)
        done = plan.files if dry_run else plan.deleted
        for kind in KINDS:
            paths = done.get(kind)
            if not paths:
                continue
            sizes = plan.files.get(kind, {})
            k = self.by_kind.setdefault(kind, {"files": 0, "bytes": 0})
            k["files"] += len(paths)
            k["bytes"] += sum(sizes.get(p, 0) for p in paths)
            self.paths.extend(paths)
        if dry_run:
            ids = sorted(plan.metadata)
        else:
            gone = set(done.get(plan.metadata_kind, ()))
            ids = [i for i, p in sorted(plan.metadata.items()) if p in gone]
        (self.expired_changelogs if plan.changelogs else self.expired).extend(ids)

    def result(self, earliest: Optional[int], dry_run: bool,
               seconds: Dict[str, float]) -> "ExpireResult":
        files = [k for k in KINDS if k != "directory"]
        by_kind = {k: self.by_kind[k] for k in KINDS if k in self.by_kind}
        return ExpireResult(len(self.expired), self.expired,
                            sum(by_kind.get(k, {}).get("files", 0) for k in files),
                            sum(by_kind.get(k, {}).get("bytes", 0) for k in files), by_kind,
                            earliest, self.latest, dry_run, self.skipped,
                            self.paths, seconds,
                            self.expired_changelogs)
