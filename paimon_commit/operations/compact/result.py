"""What a compaction did: per partition files and bytes before and after, the snapshot, the
timings; and the errors a compaction raises."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, Mapping, Optional, Sequence, Tuple

from ...io.metered import RequestBill
from ...errors import CommitConflictError, PaimonCommitError

__all__ = ["CompactResult", "PartitionCompaction", "CompactionConflictError",
           "CompactionError"]


class CompactionError(PaimonCommitError):
    """A compaction could not rewrite its files (nothing was committed)."""


class CompactionConflictError(CommitConflictError):
    """Input files of a compaction are no longer live in the latest snapshot: another commit
    removed them. Nothing was committed; the files the compaction wrote were deleted."""

    def __init__(self, message: str, moved_files: Sequence[str] = ()):
        super().__init__(message)
        self.moved_files = list(moved_files)


@dataclass(frozen=True)
class PartitionCompaction:
    """One partition's data files and bytes before and after (after: estimated by a dry
    run), and what was rewritten into what."""
    partition: Dict[str, Any]
    tasks: int
    files_before: int
    bytes_before: int
    rewritten_files: int
    rewritten_bytes: int
    written_files: int
    written_bytes: int

    @property
    def files_after(self) -> int:
        return self.files_before - self.rewritten_files + self.written_files

    @property
    def bytes_after(self) -> int:
        return self.bytes_before - self.rewritten_bytes + self.written_bytes

    def to_dict(self) -> Dict[str, Any]:
        return {"partition": {k: _jsonable(v) for k, v in self.partition.items()},
                "tasks": self.tasks,
                "files_before": self.files_before, "files_after": self.files_after,
                "bytes_before": self.bytes_before, "bytes_after": self.bytes_after,
                "rewritten_files": self.rewritten_files,
                "rewritten_bytes": self.rewritten_bytes,
                "written_files": self.written_files, "written_bytes": self.written_bytes}


@dataclass(frozen=True)
class CompactResult:
    """What a compaction did (or, with dry_run, would do)."""
    table: str
    dry_run: bool
    base_snapshot_id: Optional[int]      # the snapshot whose files were planned
    snapshot_id: Optional[int]           # the COMPACT snapshot (None: nothing committed)
    partitions: Tuple[PartitionCompaction, ...]
    remaining: bool = False              # small files beyond compaction.file-num-limit
    skipped: Tuple[Tuple[str, str], ...] = ()  # (file name, why it was left alone)
    seconds: Mapping[str, float] = field(default_factory=dict)
    attempts: int = 0                    # commit attempts
    # What the operation asked of the storage (io/metered.py).
    requests: RequestBill = field(default_factory=RequestBill)

    @property
    def nothing_to_compact(self) -> bool:
        return not self.partitions

    @property
    def rewritten_files(self) -> int:
        return sum(p.rewritten_files for p in self.partitions)

    @property
    def written_files(self) -> int:
        return sum(p.written_files for p in self.partitions)

    @property
    def message(self) -> str:
        if self.nothing_to_compact:
            more = " (some were left alone, see 'skipped')" if self.skipped else ""
            return f"nothing to compact in {self.table}{more}"
        verb = "would rewrite" if self.dry_run else "rewrote"
        into = "about " if self.dry_run else ""
        done = "" if self.dry_run else f" in snapshot {self.snapshot_id}"
        return (f"{verb} {self.rewritten_files} small files of {len(self.partitions)} "
                f"partition(s) into {into}{self.written_files}{done}")

    def to_dict(self) -> Dict[str, Any]:
        """JSON-ready (what the CLI will print with --json)."""
        return {"requests": self.requests.to_dict(),
                "table": self.table, "dry_run": self.dry_run,
                "estimated": self.dry_run,
                "base_snapshot_id": self.base_snapshot_id, "snapshot_id": self.snapshot_id,
                "nothing_to_compact": self.nothing_to_compact, "message": self.message,
                "rewritten_files": self.rewritten_files, "written_files": self.written_files,
                "partitions": [p.to_dict() for p in self.partitions],
                "remaining": self.remaining,
                "skipped": [{"file": f, "reason": r} for f, r in self.skipped],
                "attempts": self.attempts,
                "seconds": {k: round(v, 6) for k, v in self.seconds.items()}}


def _jsonable(v: Any) -> Any:
    return v if v is None or isinstance(v, (bool, int, float, str)) else str(v)
