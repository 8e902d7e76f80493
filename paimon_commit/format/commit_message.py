"""CommitMessage: what a writer hands to a committer (picklable: it travels from Spark
executors to the driver)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Tuple

from .manifest import DataFileMeta

__all__ = ["CommitMessage"]


@dataclass(frozen=True)
class CommitMessage:
    partition: Tuple[Any, ...]   # partition values, in partition-key order
    partition_bytes: bytes       # the same values as a serialized BinaryRow
    bucket: int
    total_buckets: int
    new_files: Tuple[DataFileMeta, ...] = ()
    deleted_files: Tuple[DataFileMeta, ...] = ()  # files this commit removes (e.g. rewrites)

    @property
    def is_empty(self) -> bool:
        return not self.new_files and not self.deleted_files
