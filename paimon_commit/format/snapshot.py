"""Snapshot (`snapshot/snapshot-N`), tag and consumer JSON records."""
from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Any, Dict, Mapping, Optional, Tuple

from ..errors import CorruptMetadataError

__all__ = ["Snapshot", "Tag", "CommitKind", "Consumer", "BATCH_COMMIT_IDENTIFIER",
           "parse_json_object"]

BATCH_COMMIT_IDENTIFIER = 9223372036854775807  # Long.MAX_VALUE, Paimon's one-shot batch id
SNAPSHOT_VERSION = 3


class CommitKind:
    APPEND = "APPEND"
    COMPACT = "COMPACT"
    OVERWRITE = "OVERWRITE"
    ANALYZE = "ANALYZE"
    ALL = (APPEND, COMPACT, OVERWRITE, ANALYZE)


def parse_json_object(data: bytes, path: str) -> Dict[str, Any]:
    try:
        obj = json.loads(data)
    except (ValueError, UnicodeDecodeError) as e:
        raise CorruptMetadataError(path, f"not valid JSON ({e})") from None
    if not isinstance(obj, dict):
        raise CorruptMetadataError(path, "expected a JSON object")
    return obj


def _int(obj: Mapping[str, Any], key: str, path: str, required: bool = True) -> Optional[int]:
    v = obj.get(key)
    if v is None:
        if required:
            raise CorruptMetadataError(path, f"missing required key '{key}'")
        return None
    if isinstance(v, bool) or not isinstance(v, int):
        raise CorruptMetadataError(path, f"key '{key}' must be an integer, got {v!r}")
    return v


def _str(obj: Mapping[str, Any], key: str, path: str, required: bool = True) -> Optional[str]:
    v = obj.get(key)
    if v is None:
        if required:
            raise CorruptMetadataError(path, f"missing required key '{key}'")
        return None
    if not isinstance(v, str):
        raise CorruptMetadataError(path, f"key '{key}' must be a string, got {v!r}")
    return v


# (attribute, JSON key) in the order Paimon Java writes them.
_KEYS: Tuple[Tuple[str, str], ...] = (
    ("version", "version"),
    ("id", "id"),
    ("schema_id", "schemaId"),
    ("base_manifest_list", "baseManifestList"),
    ("base_manifest_list_size", "baseManifestListSize"),
    ("delta_manifest_list", "deltaManifestList"),
    ("delta_manifest_list_size", "deltaManifestListSize"),
    ("changelog_manifest_list", "changelogManifestList"),
    ("changelog_manifest_list_size", "changelogManifestListSize"),
    ("index_manifest", "indexManifest"),
    ("commit_user", "commitUser"),
    ("commit_identifier", "commitIdentifier"),
    ("commit_kind", "commitKind"),
    ("time_millis", "timeMillis"),
    ("log_offsets", "logOffsets"),
    ("total_record_count", "totalRecordCount"),
    ("delta_record_count", "deltaRecordCount"),
    ("changelog_record_count", "changelogRecordCount"),
    ("watermark", "watermark"),
    ("statistics", "statistics"),
    ("properties", "properties"),
    ("next_row_id", "nextRowId"),
    ("uuid", "uuid"),
    ("writer_version", "writerVersion"),
    ("operation", "operation"),
)


@dataclass(frozen=True)
class Snapshot:
    id: int
    schema_id: int
    base_manifest_list: str
    delta_manifest_list: str
    commit_user: str
    commit_identifier: int
    commit_kind: str
    time_millis: int
    total_record_count: int
    delta_record_count: int
    version: int = SNAPSHOT_VERSION
    base_manifest_list_size: Optional[int] = None
    delta_manifest_list_size: Optional[int] = None
    changelog_manifest_list: Optional[str] = None
    changelog_manifest_list_size: Optional[int] = None
    index_manifest: Optional[str] = None
    log_offsets: Optional[Dict[str, int]] = None
    changelog_record_count: Optional[int] = None
    watermark: Optional[int] = None
    statistics: Optional[str] = None
    properties: Optional[Dict[str, str]] = None
    next_row_id: Optional[int] = None
    uuid: Optional[str] = None
    writer_version: Optional[str] = None
    operation: Optional[str] = None

    def to_dict(self) -> Dict[str, Any]:
        out: Dict[str, Any] = {}
        for attr, key in _KEYS:
            v = getattr(self, attr)
            if v is not None:
                out[key] = v
        return out

    def to_json(self) -> bytes:
        return json.dumps(self.to_dict(), indent=2).encode("utf-8")

    @classmethod
    def from_dict(cls, obj: Mapping[str, Any], path: str) -> "Snapshot":
        kind = _str(obj, "commitKind", path)
        if kind not in CommitKind.ALL:
            raise CorruptMetadataError(path, f"unknown commitKind {kind!r}")
        version = _int(obj, "version", path, required=False)
        if version is None:
            version = 1
        if version > SNAPSHOT_VERSION:
            raise CorruptMetadataError(path, f"snapshot version {version} is newer than the "
                                             f"supported version {SNAPSHOT_VERSION}")
        for key in ("properties", "logOffsets"):
            if obj.get(key) is not None and not isinstance(obj[key], dict):
                raise CorruptMetadataError(path, f"key '{key}' must be an object")
        return cls(
            version=version,
            id=_int(obj, "id", path),
            schema_id=_int(obj, "schemaId", path),
            base_manifest_list=_str(obj, "baseManifestList", path),
            base_manifest_list_size=_int(obj, "baseManifestListSize", path, False),
            delta_manifest_list=_str(obj, "deltaManifestList", path),
            delta_manifest_list_size=_int(obj, "deltaManifestListSize", path, False),
            changelog_manifest_list=_str(obj, "changelogManifestList", path, False),
            changelog_manifest_list_size=_int(obj, "changelogManifestListSize", path, False),
            index_manifest=_str(obj, "indexManifest", path, False),
            commit_user=_str(obj, "commitUser", path),
            commit_identifier=_int(obj, "commitIdentifier", path),
            commit_kind=kind,
            time_millis=_int(obj, "timeMillis", path),
            log_offsets=obj.get("logOffsets"),
            total_record_count=_int(obj, "totalRecordCount", path, False) or 0,
            delta_record_count=_int(obj, "deltaRecordCount", path, False) or 0,
            changelog_record_count=_int(obj, "changelogRecordCount", path, False),
            watermark=_int(obj, "watermark", path, False),
            statistics=_str(obj, "statistics", path, False),
            properties=obj.get("properties"),
            next_row_id=_int(obj, "nextRowId", path, False),
            uuid=_str(obj, "uuid", path, False),
            writer_version=_str(obj, "writerVersion", path, False),
            operation=_str(obj, "operation", path, False),
        )

    @classmethod
    def from_json(cls, data: bytes, path: str) -> "Snapshot":
        return cls.from_dict(parse_json_object(data, path), path)

    def manifest_lists(self) -> Tuple[str, ...]:
        names = [self.base_manifest_list, self.delta_manifest_list]
        if self.changelog_manifest_list:
            names.append(self.changelog_manifest_list)
        return tuple(names)

    def with_(self, **changes: Any) -> "Snapshot":
        return replace(self, **changes)


@dataclass(frozen=True)
class Consumer:
    """`consumer/consumer-<id>`: the next snapshot a streaming reader will read."""
    consumer_id: str
    next_snapshot: int
    mtime_ms: int = 0

    def to_json(self) -> bytes:
        return json.dumps({"nextSnapshot": self.next_snapshot}).encode("utf-8")

    @classmethod
    def from_json(cls, consumer_id: str, data: bytes, path: str, mtime_ms: int = 0) -> "Consumer":
        obj = parse_json_object(data, path)
        return cls(consumer_id, _int(obj, "nextSnapshot", path), mtime_ms)


def _local_datetime_array(dt) -> list:
    """Java LocalDateTime as Jackson writes it: [y, M, d, h, m, s, nanos], trailing zeros cut
    from seconds on (as Java does)."""
    parts = [dt.year, dt.month, dt.day, dt.hour, dt.minute, dt.second, dt.microsecond * 1000]
    while len(parts) > 5 and parts[-1] == 0:
        parts.pop()
    return parts


@dataclass(frozen=True)
class Tag:
    """`tag/tag-<name>`: the tagged snapshot's JSON plus optional retention fields."""
    name: str
    snapshot: Snapshot
    create_time: Optional[Any] = None        # datetime.datetime (local wall clock, naive)
    time_retained_ms: Optional[int] = None

    @property
    def id(self) -> int:
        return self.snapshot.id

    def to_json(self) -> bytes:
        d = self.snapshot.to_dict()
        if self.create_time is not None:
            d["tagCreateTime"] = _local_datetime_array(self.create_time)
        if self.time_retained_ms is not None:
            d["tagTimeRetained"] = round(self.time_retained_ms / 1000.0, 3)
        return json.dumps(d, indent=2).encode("utf-8")

    @classmethod
    def from_json(cls, name: str, data: bytes, path: str) -> "Tag":
        import datetime as _dt
        obj = parse_json_object(data, path)
        snapshot = Snapshot.from_dict(obj, path)
        create, retained = obj.get("tagCreateTime"), obj.get("tagTimeRetained")
        create_time = None
        if create is not None:
            try:
                y, mo, d, *rest = [int(x) for x in create]
                rest += [0] * (4 - len(rest))
                create_time = _dt.datetime(y, mo, d, rest[0], rest[1], rest[2],
                                           rest[3] // 1000)
            except (TypeError, ValueError):
                raise CorruptMetadataError(path, f"bad tagCreateTime {create!r}") from None
        retained_ms = None
        if retained is not None:
            try:
                retained_ms = int(round(float(retained) * 1000))
            except (TypeError, ValueError):
                raise CorruptMetadataError(path, f"bad tagTimeRetained {retained!r}") from None
        return cls(name, snapshot, create_time, retained_ms)
