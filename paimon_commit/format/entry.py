"""The records of a manifest file: ManifestEntry, with its DataFileMeta and SimpleStats.

Their Avro codecs build on them: manifest.py (fastavro, and the whole file) and
entry_codec.py (the fast path for our own schema); both import them from here."""
from __future__ import annotations

import calendar
import datetime as _dt
import time
from dataclasses import dataclass, fields
from typing import Any, Callable, Dict, Optional, Tuple

from .binary_row import EMPTY_ROW

__all__ = ["local_millis_as_utc", "MANIFEST_VERSION", "FileKind", "SimpleStats", "EMPTY_STATS", "DataFileMeta",
           "ManifestEntry"]

MANIFEST_VERSION = 2


class FileKind:
    ADD = 0
    DELETE = 1


def local_millis_as_utc() -> int:
    """Now as DataFileMeta.creation_time says it (Paimon's _CREATION_TIME): the local wall
    clock expressed as if it were UTC."""
    now = time.time()
    return calendar.timegm(time.localtime(now)) * 1000 + int((now % 1) * 1000)


@dataclass(frozen=True)
class SimpleStats:
    min_values: bytes
    max_values: bytes
    null_counts: Optional[Tuple[Optional[int], ...]]

    def to_record(self) -> Dict[str, Any]:
        return {"_MIN_VALUES": self.min_values, "_MAX_VALUES": self.max_values,
                "_NULL_COUNTS": None if self.null_counts is None else list(self.null_counts)}

    @classmethod
    def from_record(cls, r: Dict[str, Any]) -> "SimpleStats":
        nc = r.get("_NULL_COUNTS")
        return cls(r["_MIN_VALUES"], r["_MAX_VALUES"], None if nc is None else tuple(nc))


EMPTY_STATS = SimpleStats(EMPTY_ROW, EMPTY_ROW, ())


def _ms(v: Any) -> Optional[int]:
    if v is None or isinstance(v, int):
        return v
    if isinstance(v, _dt.datetime):  # fastavro decodes timestamp-millis to aware datetimes
        if v.tzinfo is None:
            v = v.replace(tzinfo=_dt.timezone.utc)
        return int(v.timestamp() * 1000 + (0.5 if v.timestamp() >= 0 else -0.5))
    raise TypeError(f"not a timestamp: {v!r}")


@dataclass(frozen=True)
class DataFileMeta:
    file_name: str
    file_size: int
    row_count: int
    schema_id: int
    min_key: bytes = EMPTY_ROW
    max_key: bytes = EMPTY_ROW
    key_stats: SimpleStats = EMPTY_STATS
    value_stats: SimpleStats = EMPTY_STATS
    min_sequence_number: int = 0
    max_sequence_number: int = 0
    level: int = 0
    extra_files: Tuple[str, ...] = ()
    creation_time: Optional[int] = None  # epoch ms of the writer's local wall clock "as UTC"
    delete_row_count: Optional[int] = 0
    embedded_file_index: Optional[bytes] = None
    file_source: Optional[int] = 0
    value_stats_cols: Optional[Tuple[str, ...]] = ()
    external_path: Optional[str] = None
    first_row_id: Optional[int] = None
    write_cols: Optional[Tuple[str, ...]] = None
    write_cols_sequences: Optional[Tuple[int, ...]] = None

    def to_record(self) -> Dict[str, Any]:
        return {
            "_FILE_NAME": self.file_name,
            "_FILE_SIZE": self.file_size,
            "_ROW_COUNT": self.row_count,
            "_MIN_KEY": self.min_key,
            "_MAX_KEY": self.max_key,
            "_KEY_STATS": self.key_stats.to_record(),
            "_VALUE_STATS": self.value_stats.to_record(),
            "_MIN_SEQUENCE_NUMBER": self.min_sequence_number,
            "_MAX_SEQUENCE_NUMBER": self.max_sequence_number,
            "_SCHEMA_ID": self.schema_id,
            "_LEVEL": self.level,
            "_EXTRA_FILES": list(self.extra_files),
            "_CREATION_TIME": self.creation_time,
            "_DELETE_ROW_COUNT": self.delete_row_count,
            "_EMBEDDED_FILE_INDEX": self.embedded_file_index,
            "_FILE_SOURCE": self.file_source,
            "_VALUE_STATS_COLS": None if self.value_stats_cols is None
            else list(self.value_stats_cols),
            "_EXTERNAL_PATH": self.external_path,
            "_FIRST_ROW_ID": self.first_row_id,
            "_WRITE_COLS": None if self.write_cols is None else list(self.write_cols),
            "_WRITE_COLS_SEQUENCES": None if self.write_cols_sequences is None
            else list(self.write_cols_sequences),
        }

    @classmethod
    def from_record(cls, r: Dict[str, Any]) -> "DataFileMeta":
        g = r.get
        vsc, wc, wcs = g("_VALUE_STATS_COLS"), g("_WRITE_COLS"), g("_WRITE_COLS_SEQUENCES")
        return cls(
            file_name=r["_FILE_NAME"],
            file_size=r["_FILE_SIZE"],
            row_count=r["_ROW_COUNT"],
            schema_id=r["_SCHEMA_ID"],
            min_key=r["_MIN_KEY"],
            max_key=r["_MAX_KEY"],
            key_stats=SimpleStats.from_record(r["_KEY_STATS"]),
            value_stats=SimpleStats.from_record(r["_VALUE_STATS"]),
            min_sequence_number=r["_MIN_SEQUENCE_NUMBER"],
            max_sequence_number=r["_MAX_SEQUENCE_NUMBER"],
            level=r["_LEVEL"],
            extra_files=tuple(r["_EXTRA_FILES"] or ()),
            creation_time=_ms(g("_CREATION_TIME")),
            delete_row_count=g("_DELETE_ROW_COUNT"),
            embedded_file_index=g("_EMBEDDED_FILE_INDEX"),
            file_source=g("_FILE_SOURCE"),
            value_stats_cols=None if vsc is None else tuple(vsc),
            external_path=g("_EXTERNAL_PATH"),
            first_row_id=g("_FIRST_ROW_ID"),
            write_cols=None if wc is None else tuple(wc),
            write_cols_sequences=None if wcs is None else tuple(wcs),
        )


@dataclass(frozen=True)
class ManifestEntry:
    kind: int
    partition: bytes  # serialized BinaryRow; copied verbatim, never re-encoded, for DELETEs
    bucket: int
    total_buckets: int
    file: DataFileMeta

    @property
    def identifier(self) -> Tuple[Any, ...]:
        """Paimon's file identity: what an ADD and its DELETE share."""
        f = self.file
        return (self.partition, self.bucket, f.level, f.file_name, f.extra_files,
                f.embedded_file_index, f.external_path)

    def as_delete(self) -> "ManifestEntry":
        # not dataclasses.replace: a compaction makes one per input file, and replace
        # costs ten times the constructor. The raw record (see _raw below) is the same:
        # only _KIND, which it does not hold, differs.
        return new_entry(FileKind.DELETE, self.partition, self.bucket, self.total_buckets,
                         self.file, self._raw)

    def to_record(self) -> Dict[str, Any]:
        return {"_VERSION": MANIFEST_VERSION, "_KIND": self.kind, "_PARTITION": self.partition,
                "_BUCKET": self.bucket, "_TOTAL_BUCKETS": self.total_buckets,
                "_FILE": self.file.to_record()}

    @classmethod
    def from_record(cls, r: Dict[str, Any]) -> "ManifestEntry":
        return cls(r["_KIND"], r["_PARTITION"], r["_BUCKET"], r["_TOTAL_BUCKETS"],
                   DataFileMeta.from_record(r["_FILE"]))

    def __getstate__(self) -> Dict[str, Any]:
        # _raw stays behind: a pickle is what cls(...)'s pickles (the receiver encodes)
        d = self.__dict__
        if "_raw" in d:
            d = {k: v for k, v in d.items() if k != "_raw"}
        return d


# The entry's record as read, from _PARTITION to the end (every field after _KIND), when
# the decoder was asked to keep it and the bytes are exactly what entry_codec writes for
# these fields: a DELETE of the entry (a compaction's, per input file) is then written as
# _VERSION, _KIND and these bytes, not encoded again field by field. Not a field (no
# annotation): outside equality, hash, repr and replace(); left out of pickles. None on
# every entry built otherwise (the class default).
ManifestEntry._raw = None  # type: ignore[attr-defined]


def _builder(cls: type, extra: str = "") -> Callable[..., Any]:
    """A constructor of frozen dataclass `cls` taking every field positionally: the same
    object as `cls(...)` (equal, same hash, repr, pickle), in a third of the time. A frozen
    __init__ sets each field through object.__setattr__ (~100 ns a field); this one stores
    them in the instance's __dict__. That materializes the dict (64 bytes an object more
    than __init__'s inline values); entry_codec shares the stats and key objects that
    repeat, which saves more than that. `extra`: one more keyword parameter stored under
    its name when not None (ManifestEntry's _raw)."""
    names = [f.name for f in fields(cls)]
    params = ", ".join(names + ([f"{extra}=None"] if extra else []))
    body = "".join(f"    d[{n!r}] = {n}\n" for n in names)
    if extra:
        body += f"    if {extra} is not None:\n        d[{extra!r}] = {extra}\n"
    src = f"def build({params}):\n    o = new(cls)\n    d = o.__dict__\n{body}    return o\n"
    ns: Dict[str, Any] = {"new": object.__new__, "cls": cls}
    exec(src, ns)  # noqa: S102 - generated from the dataclass's own field names
    build = ns["build"]
    build.__qualname__ = build.__name__ = f"build_{cls.__name__}"
    return build


#: Fast constructors for the decoders (entry_codec) and as_delete: see _builder.
new_stats = _builder(SimpleStats)
new_file_meta = _builder(DataFileMeta)
new_entry = _builder(ManifestEntry, "_raw")
