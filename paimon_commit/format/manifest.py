"""Manifest records (ManifestEntry / DataFileMeta, defined in entry.py; ManifestFileMeta) and
their Avro codec.

Writer schemas are pypaimon 2.1.0's (the Java 1.3 field set plus pypaimon's extras, with
null-first unions); readers match fields by name, so Java- and pypaimon-written files both load.
"""
from __future__ import annotations

import io
import json
from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, NamedTuple, Optional, Sequence, Tuple

import fastavro

from ..errors import CorruptMetadataError, OptionError
from .entry import EMPTY_STATS, MANIFEST_VERSION, DataFileMeta, FileKind, ManifestEntry, \
    SimpleStats
from .entry_codec import decode_entries, encode_entries
from .avro_container import iter_records, out_of_memory, read_records, schema_and_blocks
from .file_refs import compile_list_reader, compile_reader

__all__ = [
    "FileKind", "SimpleStats", "DataFileMeta", "ManifestEntry", "ManifestFileMeta",
    "encode_manifest", "decode_manifest", "encode_manifest_list", "decode_manifest_list",
    "EMPTY_STATS", "avro_codec", "decode_index_manifest_names", "FileRef",
    "decode_manifest_files", "IndexFileRef", "decode_index_manifest_files",
]


@dataclass(frozen=True)
class ManifestFileMeta:
    file_name: str
    file_size: int
    num_added_files: int
    num_deleted_files: int
    partition_stats: SimpleStats
    schema_id: int
    min_bucket: Optional[int] = None
    max_bucket: Optional[int] = None
    min_level: Optional[int] = None
    max_level: Optional[int] = None
    min_row_id: Optional[int] = None
    max_row_id: Optional[int] = None
    total_buckets: Optional[int] = None
    extra_files: Optional[Tuple[str, ...]] = None

    def to_record(self) -> Dict[str, Any]:
        return {
            "_VERSION": MANIFEST_VERSION,
            "_FILE_NAME": self.file_name,
            "_FILE_SIZE": self.file_size,
            "_NUM_ADDED_FILES": self.num_added_files,
            "_NUM_DELETED_FILES": self.num_deleted_files,
            "_PARTITION_STATS": self.partition_stats.to_record(),
            "_SCHEMA_ID": self.schema_id,
            "_MIN_BUCKET": self.min_bucket,
            "_MAX_BUCKET": self.max_bucket,
            "_MIN_LEVEL": self.min_level,
            "_MAX_LEVEL": self.max_level,
            "_MIN_ROW_ID": self.min_row_id,
            "_MAX_ROW_ID": self.max_row_id,
            "_TOTAL_BUCKETS": self.total_buckets,
            "_EXTRA_FILES": None if self.extra_files is None else list(self.extra_files),
        }

    @classmethod
    def from_record(cls, r: Dict[str, Any]) -> "ManifestFileMeta":
        g = r.get
        ef = g("_EXTRA_FILES")
        return cls(r["_FILE_NAME"], r["_FILE_SIZE"], r["_NUM_ADDED_FILES"],
                   r["_NUM_DELETED_FILES"], SimpleStats.from_record(r["_PARTITION_STATS"]),
                   r["_SCHEMA_ID"], g("_MIN_BUCKET"), g("_MAX_BUCKET"), g("_MIN_LEVEL"),
                   g("_MAX_LEVEL"), g("_MIN_ROW_ID"), g("_MAX_ROW_ID"), g("_TOTAL_BUCKETS"),
                   None if ef is None else tuple(ef))


# --- Avro schemas ------------------------------------------------------------------------

def _opt(name: str, t: Any) -> Dict[str, Any]:
    return {"name": name, "type": ["null", t], "default": None}


def _stats(name: str) -> Dict[str, Any]:
    return {"type": "record", "name": name, "fields": [
        {"name": "_MIN_VALUES", "type": "bytes"},
        {"name": "_MAX_VALUES", "type": "bytes"},
        _opt("_NULL_COUNTS", {"type": "array", "items": ["null", "long"]}),
    ]}


MANIFEST_FILE_META_SCHEMA = {"type": "record", "name": "ManifestFileMeta", "fields": [
    {"name": "_VERSION", "type": "int"},
    {"name": "_FILE_NAME", "type": "string"},
    {"name": "_FILE_SIZE", "type": "long"},
    {"name": "_NUM_ADDED_FILES", "type": "long"},
    {"name": "_NUM_DELETED_FILES", "type": "long"},
    {"name": "_PARTITION_STATS", "type": _stats("record_PARTITION_STATS")},
    {"name": "_SCHEMA_ID", "type": "long"},
    _opt("_MIN_BUCKET", "int"),
    _opt("_MAX_BUCKET", "int"),
    _opt("_MIN_LEVEL", "int"),
    _opt("_MAX_LEVEL", "int"),
    _opt("_MIN_ROW_ID", "long"),
    _opt("_MAX_ROW_ID", "long"),
    _opt("_TOTAL_BUCKETS", "int"),
    _opt("_EXTRA_FILES", {"type": "array", "items": "string"}),
]}

MANIFEST_ENTRY_SCHEMA = {"type": "record", "name": "ManifestEntry", "fields": [
    {"name": "_VERSION", "type": "int"},
    {"name": "_KIND", "type": "int"},
    {"name": "_PARTITION", "type": "bytes"},
    {"name": "_BUCKET", "type": "int"},
    {"name": "_TOTAL_BUCKETS", "type": "int"},
    {"name": "_FILE", "type": {"type": "record", "name": "DataFileMeta", "fields": [
        {"name": "_FILE_NAME", "type": "string"},
        {"name": "_FILE_SIZE", "type": "long"},
        {"name": "_ROW_COUNT", "type": "long"},
        {"name": "_MIN_KEY", "type": "bytes"},
        {"name": "_MAX_KEY", "type": "bytes"},
        {"name": "_KEY_STATS", "type": _stats("record_KEY_STATS")},
        {"name": "_VALUE_STATS", "type": _stats("record_VALUE_STATS")},
        {"name": "_MIN_SEQUENCE_NUMBER", "type": "long"},
        {"name": "_MAX_SEQUENCE_NUMBER", "type": "long"},
        {"name": "_SCHEMA_ID", "type": "long"},
        {"name": "_LEVEL", "type": "int"},
        {"name": "_EXTRA_FILES", "type": {"type": "array", "items": "string"}},
        _opt("_CREATION_TIME", {"type": "long", "logicalType": "timestamp-millis"}),
        _opt("_DELETE_ROW_COUNT", "long"),
        _opt("_EMBEDDED_FILE_INDEX", "bytes"),
        _opt("_FILE_SOURCE", "int"),
        _opt("_VALUE_STATS_COLS", {"type": "array", "items": "string"}),
        _opt("_EXTERNAL_PATH", "string"),
        _opt("_FIRST_ROW_ID", "long"),
        _opt("_WRITE_COLS", {"type": "array", "items": "string"}),
        _opt("_WRITE_COLS_SEQUENCES", {"type": "array", "items": "long"}),
    ]}},
]}

_PARSED_LIST = fastavro.parse_schema(MANIFEST_FILE_META_SCHEMA)
_PARSED_ENTRY = fastavro.parse_schema(MANIFEST_ENTRY_SCHEMA)

_CODECS = {"zstd": "zstandard", "zstandard": "zstandard", "null": "null", "none": "null",
           "deflate": "deflate", "snappy": "snappy", "bzip2": "bzip2", "xz": "xz"}


def avro_codec(manifest_compression: str) -> str:
    try:
        return _CODECS[manifest_compression.lower()]
    except KeyError:
        raise OptionError(f"option 'manifest.compression' = {manifest_compression!r} is not "
                          f"supported (use one of zstd, null, deflate, snappy, bzip2, xz)"
                          ) from None


def _encode(parsed: Any, records: Iterable[Dict[str, Any]], codec: str) -> bytes:
    buf = io.BytesIO()
    fastavro.writer(buf, parsed, records, codec=codec)
    return buf.getvalue()


def _decode(data: bytes, path: str) -> List[Dict[str, Any]]:
    try:
        records = read_records(data)
    except Exception as e:  # fastavro raises many types on garbage: normalise them
        oom = out_of_memory(e)   # (not garbage: the caller must stop, not skip the file)
        if oom is not None:
            raise oom from None
        raise CorruptMetadataError(path, f"not a readable Avro file ({type(e).__name__}: {e})"
                                   ) from None
    for r in records:
        if r.get("_VERSION") != MANIFEST_VERSION:
            _decode_version_error(r, path)
    return records


def _decode_version_error(record: Dict[str, Any], path: str) -> None:
    v = record.get("_VERSION")
    raise CorruptMetadataError(
        path, f"unsupported _VERSION {v!r} (expected {MANIFEST_VERSION}; version 1 "
              f"files come from Paimon < 0.9 and must be recreated)")


_entry_headers: Dict[str, bytes] = {}


def _entry_header(codec: str) -> bytes:
    """fastavro's header of a manifest in `codec`, without its (random) sync marker."""
    h = _entry_headers.get(codec)
    if h is None:
        h = _entry_headers[codec] = _encode(_PARSED_ENTRY, (), codec)[:-16]
    return h


def encode_manifest(entries: Sequence[ManifestEntry], codec: str) -> bytes:
    data = encode_entries(entries, codec, _entry_header(codec))
    if data is None:   # a codec entry_codec leaves to fastavro
        data = _encode(_PARSED_ENTRY, (e.to_record() for e in entries), codec)
    return data


_own_schema: Dict[bytes, bool] = {}


def _is_own_schema(text: bytes) -> bool:
    """Whether a writer schema is MANIFEST_ENTRY_SCHEMA (ours and pypaimon's), which
    entry_codec decodes; cached by its JSON text."""
    own = _own_schema.get(text)
    if own is None:
        try:
            own = json.loads(text) == MANIFEST_ENTRY_SCHEMA
        except ValueError:
            own = False
        if len(_own_schema) > 64:
            _own_schema.clear()
        _own_schema[text] = own
    return own


def _own_entries(data: bytes, keep_raw: bool = False) -> Optional[List[ManifestEntry]]:
    """The entries of a manifest written with MANIFEST_ENTRY_SCHEMA, through entry_codec
    (`keep_raw`: see decode_entries); None for any other schema or codec (fastavro reads
    those)."""
    raw = schema_and_blocks(data)
    if raw is None or not _is_own_schema(raw[0]):
        return None
    out: List[ManifestEntry] = []
    for count, block in raw[1]:
        out.extend(decode_entries(block, count, keep_raw))
    return out


def _fast_or_none(read: Any, *args: Any) -> Any:
    """A fast reader's result, or None when it cannot read the file exactly (the caller then
    reads it with fastavro, which reads it or says what is wrong)."""
    try:
        return read(*args)
    except Exception:  # noqa: BLE001 - see the docstring
        return None


def decode_manifest(data: bytes, path: str, keep_raw: bool = False) -> List[ManifestEntry]:
    """The entries of a manifest. `keep_raw`: entries read by entry_codec keep their
    record's bytes, so that writing them again copies them (entry_codec.decode_entries);
    those fastavro reads (another writer schema) have none and are encoded as usual."""
    fast = _fast_or_none(_own_entries, data, keep_raw)
    if fast is not None:
        return fast
    try:
        return [ManifestEntry.from_record(r) for r in _decode(data, path)]
    except (KeyError, TypeError) as e:
        raise CorruptMetadataError(path, f"manifest entry lacks a required field ({e})") from None


class FileRef(NamedTuple):
    """What deciding "is this file still needed?" reads of a manifest entry: its identity
    (Paimon's identifier fields), its size and source. A few hundred bytes less than a
    ManifestEntry (no stats, keys or sequence numbers), so that maintenance of a table with
    millions of files holds names, not decoded entries."""
    kind: int
    partition: bytes
    bucket: int
    level: int
    file_name: str
    file_size: int
    extra_files: Tuple[str, ...]
    embedded_file_index: Optional[bytes]
    external_path: Optional[str]
    file_source: Optional[int]

    @property
    def identifier(self) -> Tuple[Any, ...]:
        """The same identity as ManifestEntry.identifier."""
        return (self.partition, self.bucket, self.level, self.file_name, self.extra_files,
                self.embedded_file_index, self.external_path)

    @classmethod
    def of(cls, e: ManifestEntry) -> "FileRef":
        f = e.file
        return cls(e.kind, e.partition, e.bucket, f.level, f.file_name, f.file_size,
                   f.extra_files, f.embedded_file_index, f.external_path, f.file_source)


def decode_manifest_files(data: bytes, path: str) -> List[FileRef]:
    """The FileRef of every entry of a manifest, in order; each decoded record is dropped as
    soon as its FileRef is taken."""
    fast = _fast_or_none(_compiled_file_refs, data, path)
    if fast is not None:
        return fast
    try:
        return _file_refs(iter_records(data), path)
    except CorruptMetadataError:
        raise
    except Exception:  # noqa: BLE001 - read again, whole, for the error a damaged file gets
        return _file_refs(_decode(data, path), path)


def _check_version(v: Any) -> None:
    if v != MANIFEST_VERSION:
        raise ValueError(f"_VERSION {v!r}")


def _compiled_file_refs(data: bytes, path: str) -> Optional[List[FileRef]]:
    """FileRefs through the reader compiled for the file's schema (file_refs), or None."""
    raw = schema_and_blocks(data)
    if raw is None:
        return None
    read = compile_reader(raw[0])
    if read is None:
        return None
    out: List[FileRef] = []
    for count, block in raw[1]:
        out.extend(read(block, count, FileRef, _check_version, MANIFEST_VERSION))
    return out


def _file_refs(records: Iterable[Dict[str, Any]], path: str) -> List[FileRef]:
    out: List[FileRef] = []
    try:
        for r in records:
            if r.get("_VERSION") != MANIFEST_VERSION:
                _decode_version_error(r, path)
            f = r["_FILE"]
            g = f.get
            out.append(FileRef(r["_KIND"], r["_PARTITION"], r["_BUCKET"], f["_LEVEL"],
                               f["_FILE_NAME"], f["_FILE_SIZE"], tuple(f["_EXTRA_FILES"] or ()),
                               g("_EMBEDDED_FILE_INDEX"), g("_EXTERNAL_PATH"),
                               g("_FILE_SOURCE")))
    except (KeyError, TypeError) as e:
        raise CorruptMetadataError(path, f"manifest entry lacks a required field ({e})") from None
    return out


class ManifestRef(NamedTuple):
    """What a manifest list says about a manifest when its stats are not needed: name, size
    and entry counts (the same attribute names as ManifestFileMeta)."""
    file_name: str
    file_size: int
    num_added_files: int = 0
    num_deleted_files: int = 0


def decode_manifest_list_refs(data: bytes, path: str) -> List[ManifestRef]:
    """Like decode_manifest_list, without building stats objects (planners that only need
    names read thousands of lists): through the reader compiled for the list's schema
    (file_refs), else fastavro."""
    fast = _fast_or_none(_compiled_list_refs, data)
    if fast is not None:
        return fast
    try:
        # The counts only let planners skip work: a list without them (not a Paimon or
        # pypaimon writer) reads as before, with None (unknown: every manifest is read).
        return [ManifestRef(r["_FILE_NAME"], r["_FILE_SIZE"], r.get("_NUM_ADDED_FILES"),
                            r.get("_NUM_DELETED_FILES")) for r in _decode(data, path)]
    except (KeyError, TypeError) as e:
        raise CorruptMetadataError(path, f"manifest list record lacks a required field ({e})"
                                   ) from None


def _compiled_list_refs(data: bytes) -> Optional[List[ManifestRef]]:
    raw = schema_and_blocks(data)
    if raw is None:
        return None
    read = compile_list_reader(raw[0])
    if read is None:
        return None
    out: List[ManifestRef] = []
    for count, block in raw[1]:
        out.extend(read(block, count, ManifestRef, _check_version, MANIFEST_VERSION))
    return out


def decode_index_manifest_names(data: bytes, path: str) -> List[str]:
    """File names (under index/) an index manifest lists, each checked to be a bare name."""
    # One decoder for both uses: the reachability walk and check must agree on what an index
    # manifest holds (a record lacking a required field is corrupt for both).
    return [f.file_name for f in decode_index_manifest_files(data, path)]


class IndexFileRef(NamedTuple):
    """An index manifest entry as a check reads it: kind (0 ADD, 1 DELETE), the file's name
    under index/, its recorded size, and where it lives when outside the table root."""
    kind: int
    file_name: str
    file_size: int
    external_path: Optional[str]


def decode_index_manifest_files(data: bytes, path: str) -> List[IndexFileRef]:
    """Every entry of an index manifest with its recorded size (each name checked to be a
    bare name); CorruptMetadataError if unreadable."""
    from . import paths as P
    try:
        out = [IndexFileRef(r["_KIND"], r["_FILE_NAME"], r["_FILE_SIZE"],
                            r.get("_EXTERNAL_PATH")) for r in read_records(data)]
    except Exception as e:  # noqa: BLE001 - fastavro raises many types on garbage
        oom = out_of_memory(e)
        if oom is not None:
            raise oom from None
        raise CorruptMetadataError(path, f"unreadable index manifest ({e})") from None
    try:
        for f in out:
            P.validate_bare_file_name(f.file_name, "index file name")
    except ValueError as e:
        raise CorruptMetadataError(path, str(e)) from None
    return out


def encode_manifest_list(metas: Sequence[ManifestFileMeta], codec: str) -> bytes:
    return _encode(_PARSED_LIST, (m.to_record() for m in metas), codec)


def decode_manifest_list(data: bytes, path: str) -> List[ManifestFileMeta]:
    try:
        return [ManifestFileMeta.from_record(r) for r in _decode(data, path)]
    except (KeyError, TypeError) as e:
        raise CorruptMetadataError(path, f"manifest list record lacks a required field ({e})"
                                   ) from None
