"""Reading and writing manifests and manifest lists, and merging them.

Manifest files are immutable, so decoded files are cached by name. Merging keeps the number of
manifests in a base list bounded (Paimon's ManifestFileMerger rules), which is what keeps
commit cost independent of table history.
"""
from __future__ import annotations

import logging
import threading
import uuid
from collections import OrderedDict
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

from paimon_commit.errors import CommitConflictError
from paimon_commit.io import FileIO
from paimon_commit.format import binary_row
from paimon_commit.format import paths as P
from paimon_commit.format.manifest import (
    EMPTY_STATS, FileKind, FileRef, ManifestEntry, ManifestFileMeta, SimpleStats,
    decode_index_manifest_names, decode_manifest, decode_manifest_files, decode_manifest_list,
    decode_manifest_list_refs, encode_manifest, encode_manifest_list,
)

log = logging.getLogger(__name__)

__all__ = ["ManifestIO", "merge_entries", "live_entries", "ManifestWriteSession"]


class _LRU:
    def __init__(self, capacity: int):
        self.capacity = capacity
        self._d: "OrderedDict[str, Any]" = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: str) -> Any:
        with self._lock:
            v = self._d.get(key)
            if v is not None:
                self._d.move_to_end(key)
            return v

    def put(self, key: str, value: Any) -> None:
        with self._lock:
            self._d[key] = value
            self._d.move_to_end(key)
            while len(self._d) > self.capacity:
                self._d.popitem(last=False)


def merge_entries(entries: Iterable[ManifestEntry], strict: bool = True) -> List[ManifestEntry]:
    """Cancel each DELETE against the ADD it names. What remains, in order: ADDs still live and
    DELETEs whose ADD is not among `entries` (they cancel something older).

    A re-ADD after a DELETE of the same file is kept as [DELETE, ADD], so a file that was
    removed and later committed again stays live. Adding a live file twice, or deleting one
    twice, is a conflict (strict) or ignored with a warning.
    """
    out: Dict[Tuple[Any, int], ManifestEntry] = {}
    for e in entries:
        ident = e.identifier
        if e.kind == FileKind.ADD:
            key = (ident, FileKind.ADD)
            if key in out:
                if strict:
                    raise CommitConflictError(
                        f"file {e.file.file_name} is added twice (it is already live)")
                log.warning("file %s is added twice; keeping the first", e.file.file_name)
                continue
            out[key] = e
        else:
            add_key = (ident, FileKind.ADD)
            if add_key in out:
                del out[add_key]
                continue
            key = (ident, FileKind.DELETE)
            if key in out:
                if strict:
                    raise CommitConflictError(
                        f"file {e.file.file_name} is deleted twice")
                continue
            out[key] = e
    return list(out.values())


def live_entries(entries: Iterable[ManifestEntry]) -> List[ManifestEntry]:
    """Full-state merge: ADDs left after cancelling DELETEs (dangling DELETEs dropped)."""
    return [e for e in merge_entries(entries, strict=False) if e.kind == FileKind.ADD]


class ManifestIO:
    """Manifest and manifest-list files of one table."""

    def __init__(self, io: FileIO, root: str, partition_types: Sequence[Any], codec: str,
                 target_file_size: int, cache_size: int = 256):
        self.io = io
        self.manifest_dir = io.join(root, "manifest")
        self.partition_types = list(partition_types)
        self.codec = codec
        self.target_file_size = target_file_size
        self._lists = _LRU(cache_size)
        self._manifests = _LRU(cache_size)
        self._partition_cache: Dict[bytes, Tuple[Any, ...]] = {}
        self._paths: Dict[str, str] = {}

    def path(self, name: str) -> str:
        path = self._paths.get(name)
        if path is None:
            P.validate_bare_file_name(name, "manifest file name")
            path = self.io.join(self.manifest_dir, name)
            if len(self._paths) > 200_000:
                self._paths.clear()
            self._paths[name] = path
        return path

    # --- reading -------------------------------------------------------------------------
    def read_list(self, name: str) -> List[ManifestFileMeta]:
        cached = self._lists.get(name)
        if cached is not None:
            return cached
        path = self.path(name)
        metas = decode_manifest_list(self.io.read_bytes(path), path)
        self._lists.put(name, metas)
        return metas

    def read_list_refs(self, name: str) -> List[Any]:
        """(file_name, file_size) of each manifest in a list; uses the decoded list if it is
        cached, and does not cache what it decodes (callers keep their own per-run memo)."""
        cached = self._lists.get(name)
        if cached is not None:
            return cached
        path = self.path(name)
        return decode_manifest_list_refs(self.io.read_bytes(path), path)

    def read_manifest(self, name: str) -> List[ManifestEntry]:
        cached = self._manifests.get(name)
        if cached is not None:
            return cached
        path = self.path(name)
        entries = decode_manifest(self.io.read_bytes(path), path)
        self._manifests.put(name, entries)
        return entries

    def read_manifest_files(self, name: str) -> List[FileRef]:
        """The FileRef of each entry of a manifest (maintenance reads these, not decoded
        entries). Not cached: a large table's manifests would fill the cache with entries
        that are read once."""
        cached = self._manifests.get(name)
        if cached is not None:
            return [FileRef.of(e) for e in cached]
        path = self.path(name)
        return decode_manifest_files(self.io.read_bytes(path), path)

    def read_index_file_names(self, index_manifest: str) -> List[str]:
        """Names (under index/) an index manifest lists; CorruptMetadataError if unreadable."""
        path = self.path(index_manifest)
        return decode_index_manifest_names(self.io.read_bytes(path), path)

    def read_entries(self, metas: Iterable[ManifestFileMeta]) -> List[ManifestEntry]:
        out: List[ManifestEntry] = []
        for m in metas:
            out.extend(self.read_manifest(m.file_name))
        return out

    def decode_partition(self, partition: bytes) -> Tuple[Any, ...]:
        v = self._partition_cache.get(partition)
        if v is None:
            v = tuple(binary_row.deserialize_binary_row(partition, self.partition_types))
            if len(self._partition_cache) > 100_000:
                self._partition_cache.clear()
            self._partition_cache[partition] = v
        return v

    # --- writing -------------------------------------------------------------------------
    def partition_stats(self, entries: Sequence[ManifestEntry]) -> SimpleStats:
        n = len(self.partition_types)
        if n == 0:
            return EMPTY_STATS
        mins: List[Any] = [None] * n
        maxs: List[Any] = [None] * n
        nulls = [0] * n
        for part in {e.partition for e in entries}:
            values = self.decode_partition(part)
            for i, v in enumerate(values):
                if v is None:
                    nulls[i] += 1
                    continue
                if mins[i] is None or v < mins[i]:
                    mins[i] = v
                if maxs[i] is None or v > maxs[i]:
                    maxs[i] = v
        # Null counts are per entry, not per distinct partition.
        if any(nulls):
            nulls = [0] * n
            for e in entries:
                for i, v in enumerate(self.decode_partition(e.partition)):
                    if v is None:
                        nulls[i] += 1
        return SimpleStats(binary_row.serialize_binary_row(mins, self.partition_types),
                           binary_row.serialize_binary_row(maxs, self.partition_types),
                           tuple(nulls))

    def _meta_for(self, name: str, size: int, entries: Sequence[ManifestEntry]
                  ) -> ManifestFileMeta:
        added = sum(1 for e in entries if e.kind == FileKind.ADD)
        buckets = [e.bucket for e in entries]
        levels = [e.file.level for e in entries]
        totals = {e.total_buckets for e in entries}
        total = next(iter(totals)) if len(totals) == 1 else None
        return ManifestFileMeta(
            file_name=name, file_size=size, num_added_files=added,
            num_deleted_files=len(entries) - added,
            partition_stats=self.partition_stats(entries),
            schema_id=max(e.file.schema_id for e in entries),
            min_bucket=min(buckets), max_bucket=max(buckets),
            min_level=min(levels), max_level=max(levels),
            # pypaimon's convention: null unless every entry has the same positive count
            total_buckets=total if total is not None and total > 0 else None,
        )


class ManifestWriteSession:
    """Files written by one commit attempt: named `manifest-<U>-<n>` /
    `manifest-list-<U>-<n>` with one uuid per attempt, remembered so a lost attempt can delete
    exactly what it wrote."""

    def __init__(self, mio: ManifestIO):
        self.mio = mio
        self.uuid = str(uuid.uuid4())
        self._manifest_n = 0
        self._list_n = 0
        self.written: List[str] = []

    def _write(self, name: str, data: bytes) -> int:
        self.mio.io.write_new(self.mio.path(name), data)
        self.written.append(name)
        return len(data)

    def write_manifests(self, entries: Sequence[ManifestEntry]) -> List[ManifestFileMeta]:
        """Write entries into one or more manifests rolled at the target size."""
        if not entries:
            return []
        metas: List[ManifestFileMeta] = []
        chunk = len(entries)
        start = 0
        while start < len(entries):
            part = entries[start:start + chunk]
            data = encode_manifest(part, self.mio.codec)
            if len(data) > self.mio.target_file_size and len(part) > 1:
                # Re-split using the observed bytes per entry.
                chunk = max(1, int(len(part) * self.mio.target_file_size / len(data) * 0.9))
                continue
            name = P.new_manifest_name(self.uuid, self._manifest_n)
            self._manifest_n += 1
            self._write(name, data)
            meta = self.mio._meta_for(name, len(data), part)
            self.mio._manifests.put(name, list(part))
            metas.append(meta)
            start += len(part)
        return metas

    def write_list(self, metas: Sequence[ManifestFileMeta]) -> Tuple[str, int]:
        name = P.new_manifest_list_name(self.uuid, self._list_n)
        self._list_n += 1
        size = self._write(name, encode_manifest_list(metas, self.mio.codec))
        self.mio._lists.put(name, list(metas))
        return name, size

    def delete_written(self) -> None:
        for name in self.written:
            self.mio.io.delete_quietly(self.mio.path(name))
        self.written.clear()

    # --- merging -------------------------------------------------------------------------
    def merge(self, metas: List[ManifestFileMeta], merge_min_count: int,
              full_compaction_size: int, force_full: bool = False) -> List[ManifestFileMeta]:
        """Return a logically equal manifest set with few small manifests (with no DELETE
        entries at all after a full compaction)."""
        target = self.mio.target_file_size
        full = self._try_full_compaction(metas, target, 0 if force_full else
                                         full_compaction_size)
        if full is not None:
            return full
        result: List[ManifestFileMeta] = []
        candidates: List[ManifestFileMeta] = []
        total = 0
        for m in metas:
            total += m.file_size
            candidates.append(m)
            if total >= target:
                result.extend(self._merge_group(candidates))
                candidates, total = [], 0
        if len(candidates) >= merge_min_count:
            result.extend(self._merge_group(candidates))
        else:
            result.extend(candidates)
        return result

    def _merge_group(self, group: List[ManifestFileMeta]) -> List[ManifestFileMeta]:
        if len(group) <= 1:
            return list(group)
        merged = merge_entries(self.mio.read_entries(group), strict=False)
        return self.write_manifests(merged)

    def _try_full_compaction(self, metas: List[ManifestFileMeta], target: int,
                             threshold: int) -> Optional[List[ManifestFileMeta]]:
        # Leading large manifests without DELETEs are settled; only the rest is measured.
        i = 0
        while i < len(metas) and metas[i].num_deleted_files == 0 and metas[i].file_size >= target:
            i += 1
        rest = metas[i:]
        if sum(m.file_size for m in rest) < threshold or not any(
                m.num_deleted_files for m in rest):
            return None
        merged = merge_entries(self.mio.read_entries(rest), strict=False)
        dangling = {e.identifier for e in merged if e.kind == FileKind.DELETE}
        adds = [e for e in merged if e.kind == FileKind.ADD]
        result: List[ManifestFileMeta] = []
        for m in metas[:i]:
            if not dangling:
                result.append(m)
                continue
            entries = self.mio.read_manifest(m.file_name)
            kept = [e for e in entries if e.identifier not in dangling]
            if len(kept) == len(entries):
                result.append(m)
            else:
                dangling -= {e.identifier for e in entries if e.identifier in dangling}
                result.extend(self.write_manifests(kept))
        if dangling:
            # DELETEs whose ADD is nowhere: keep them rather than silently dropping history.
            adds = [e for e in merged if e.kind == FileKind.DELETE
                    and e.identifier in dangling] + adds
        result.extend(self.write_manifests(adds))
        return result
