"""FileStore: everything the operations need to know about one table (storage, schema,
options, snapshot and manifest managers, file paths), and the live-file view of a snapshot."""
from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from .errors import CorruptMetadataError, TableNotFoundError, UnsupportedTableError
from .io import FileIO
from .io import for_path as file_io_for_path
from .format import paths as P
from .format import types as ptypes
from .format.atomic_types import as_atomic
from .format.manifest import ManifestEntry, avro_codec
from .format.schema import TableSchema
from .format.snapshot import Snapshot
from .manifests import ManifestIO, live_entries
from .dynamic_options import PATH_OPTION_DEFAULTS, PATH_OPTION_NAMES
from .options import validate_options
from .snapshots import SnapshotManager

log = logging.getLogger(__name__)

__all__ = ["FileStore", "SchemaManager", "PartitionSpec"]


class SchemaManager:
    def __init__(self, io: FileIO, root: str):
        self.io = io
        self.schema_dir = io.join(root, "schema")

    def list_ids(self) -> List[int]:
        ids = [P.parse_schema_id(n) for n in self.io.list_names(self.schema_dir)]
        return sorted(i for i in ids if i is not None)

    def schema(self, schema_id: int) -> TableSchema:
        path = self.io.join(self.schema_dir, P.schema_file_name(schema_id))
        s = TableSchema.from_json(self.io.read_bytes(path), path)
        if s.id != schema_id:
            raise CorruptMetadataError(path, f"holds id {s.id}, but its name says {schema_id}")
        return s

    def latest(self) -> Optional[TableSchema]:
        ids = self.list_ids()
        return self.schema(ids[-1]) if ids else None


class PartitionSpec:
    """A validated (possibly partial) partition spec: key index -> typed value.

    As in Paimon Java, None and the default partition name mean NULL; every other value,
    the empty string included, means itself. NULL and blank strings share the default
    partition's directory but stay apart in the partition row."""

    def __init__(self, schema: TableSchema, spec: Mapping[str, Any], default_name: str):
        if not isinstance(spec, Mapping):
            raise TypeError(f"partition spec must be a dict, got {spec!r}")
        keys = list(schema.partition_keys)
        if not keys:
            raise ValueError("the table is not partitioned; partition specs do not apply")
        if not spec:
            raise ValueError("empty partition spec: name at least one partition key "
                             f"(partition keys: {keys})")
        types = schema.partition_types
        self.items: List[Tuple[int, Any]] = []
        for k, v in spec.items():
            if k not in keys:
                raise ValueError(f"unknown partition key {k!r} in {dict(spec)!r} "
                                 f"(partition keys: {keys})")
            i = keys.index(k)
            if v is None or v == default_name:
                v = None
            else:
                ptypes.check_python_value(v, types[i], f"partition key {k!r}")
            self.items.append((i, v))
        self.spec = dict(spec)

    def matches(self, values: Sequence[Any]) -> bool:
        for i, v in self.items:
            if values[i] != v:
                return False
        return True

    def __repr__(self) -> str:
        return repr(self.spec)


def table_kind(schema: TableSchema, options: Mapping[str, Any]) -> str:
    """Describe a table the way Paimon's documentation names its kinds."""
    bucket = options["bucket"]
    if schema.primary_keys:
        if bucket == -2:
            mode = "postpone bucket"
        elif bucket > 0:
            mode = f"fixed bucket, bucket = {bucket}"
        elif not set(schema.partition_keys) <= set(schema.primary_keys):
            mode = "cross-partition dynamic bucket"
        else:
            mode = "dynamic bucket"
        return f"primary-key table ({mode})"
    if bucket > 0:
        return f"append table (fixed bucket, bucket = {bucket})"
    return "append table (bucket-unaware)"


# Options that change where or how data files must be written; this library writes none of
# them. (A value that only matters to readers or to Paimon's own compaction is not listed.)
_LAYOUT_OPTIONS = ("data-file.path-directory", "data-file.external-paths",
                   "data-file.external-paths.strategy")
_UNSUPPORTED_FLAGS = ("row-tracking.enabled", "data-evolution.enabled")


# A `data-file.path-directory` value this library joins to the table root as Java and pypaimon
# do: relative, '/'-separated names of letters, digits, '_', '-', '.' (none '.' or '..', none
# starting with '.'). Anything else (absolute, a URI, '..', spaces, characters a path escapes)
# is refused rather than guessed.
# (Nor one whose first name is a metadata directory or looks like a bucket directory: orphan
# cleanup would list files there as something else.)
_RESERVED_TOP_DIRS = frozenset({P.SCHEMA_DIR, P.SNAPSHOT_DIR, P.MANIFEST_DIR, P.TAG_DIR,
                                P.CONSUMER_DIR, P.CHANGELOG_DIR, P.BRANCH_DIR, P.INDEX_DIR,
                                P.STATISTICS_DIR})
_PATH_DIRECTORY_RE = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]*(/[A-Za-z0-9_-][A-Za-z0-9._-]*)*")


def legacy_partition_name(schema: TableSchema) -> bool:
    """The table's `partition.legacy-name` (default true)."""
    return str(schema.options.get("partition.legacy-name", "true")).strip().lower() != "false"


def layout_refusal(schema: TableSchema) -> Optional[str]:
    """Why this library cannot compute where the table's data files are, or None.

    Honoured: `partition.legacy-name = false` for STRING/CHAR/VARCHAR, integer, BOOLEAN and
    DATE (`2024-01-01`) partition keys, and a plain relative `data-file.path-directory`
    (paths.py, FileStore.data_root). Any other type or value is refused, never guessed: a
    wrong path makes check report every file missing, repair give them up, expiration and
    orphan cleanup miss or delete the wrong files."""
    raw = schema.options
    value = raw.get("partition.legacy-name", "true")
    if str(value).strip().lower() not in ("true", "false"):
        return f"option 'partition.legacy-name' = {value!r} is neither 'true' nor 'false'"
    if not legacy_partition_name(schema):
        for key, t in zip(schema.partition_keys, schema.partition_types):
            if not P.non_legacy_name_supported(t):
                return (f"option 'partition.legacy-name' = 'false' with partition key {key!r} "
                        f"of type {as_atomic(t).type_string()}: this library cannot "
                        f"spell that directory name with certainty (only STRING, integer, "
                        f"BOOLEAN and DATE keys)")
    if "data-file.path-directory" in raw:
        d = str(raw["data-file.path-directory"])
        first = d.split("/")[0]
        if not _PATH_DIRECTORY_RE.fullmatch(d) or first in _RESERVED_TOP_DIRS or \
                first.startswith(P.BUCKET_PREFIX):
            return (f"option 'data-file.path-directory' = {d!r}: this library places data "
                    f"files only under a plain relative directory name (e.g. 'data') that "
                    f"is not a metadata or bucket directory's")
    return None


# What decides the directory of a data file whose path is computed (not an external one):
# `data-file.path-directory` (where partition directories start) and every option that names
# a partition directory (dynamic_options.PATH_OPTION_NAMES: `partition.legacy-name` spells the
# values, `partition.default-name` is the value of null and blank ones). Compared across the
# schema history by FileStore.check_layout_history.
_LAYOUT_KEYS = ("partition.legacy-name", "data-file.path-directory") + tuple(
    sorted(PATH_OPTION_NAMES - {"partition.legacy-name"}))


def _layout_of(schema: TableSchema) -> Tuple[str, ...]:
    """What decides a data file's directory (_LAYOUT_KEYS), normalised: an unset partition
    option is its default (legacy-name compared case-blind, as it is parsed), an unset
    path directory is ''. The partition options name no directory of an unpartitioned
    table: '' there."""
    out = []
    for key in _LAYOUT_KEYS:
        if key == "data-file.path-directory":
            out.append(str(schema.options.get(key, "") or ""))
        elif not schema.partition_keys:
            out.append("")
        else:
            value = str(schema.options.get(key, PATH_OPTION_DEFAULTS[key]))
            out.append(value.strip().lower() if key == "partition.legacy-name" else value)
    return tuple(out)


def _shown(value: str) -> str:
    return repr(value) if value else "unset"


def write_refusal(schema: TableSchema, options: Mapping[str, Any]) -> Optional[str]:
    """Why data files written by this library must not go into this table, or None."""
    raw = schema.options
    kind = table_kind(schema, options)
    if schema.primary_keys:
        return (f"it is a {kind} (primary keys: {', '.join(schema.primary_keys)}); this "
                f"library writes only bucket-unaware append tables. Write with Paimon "
                f"(Flink, Spark, Java); maintenance works on every kind")
    if options["bucket"] != -1:
        return (f"it is an {kind}; this library writes only bucket-unaware append tables "
                f"(bucket = -1). Maintenance works on every kind")
    if options["file.format"] != "parquet":
        return f"option 'file.format' = {options['file.format']!r}: this library writes parquet"
    for key in _LAYOUT_OPTIONS:
        if str(raw.get(key, "")).strip():
            return f"option {key!r} = {raw[key]!r} is not supported by this library's writer"
    for key in _UNSUPPORTED_FLAGS:
        if str(raw.get(key, "false")).strip().lower() == "true":
            return f"option {key!r} = 'true' is not supported by this library's writer"
    if schema.partition_keys and \
            str(raw.get("partition.legacy-name", "true")).strip().lower() == "false":
        return ("option 'partition.legacy-name' = 'false': this library names partition "
                "directories the legacy way only")
    return None


@dataclass
class FileStore:
    path: str                 # the table path as the user gave it
    io: FileIO
    root: str                 # the table root in `io`'s namespace
    schema: TableSchema
    options: Dict[str, Any]   # parsed values of every declared option
    snapshots: SnapshotManager
    manifests: ManifestIO
    _dirs: Dict[Tuple[bytes, int], str] = field(default_factory=dict, repr=False)

    @classmethod
    def open(cls, path: str, io: Optional[FileIO] = None) -> "FileStore":
        io = io or file_io_for_path(path)
        root = io.root
        schemas = SchemaManager(io, root)
        schema = schemas.latest()
        if schema is None:
            raise TableNotFoundError(f"{path} is not a Paimon table: no schema/schema-N file")
        return cls.from_schema(path, io, schema)

    @classmethod
    def from_schema(cls, path: str, io: FileIO, schema: TableSchema) -> "FileStore":
        options = validate_options(schema.options)
        mio = ManifestIO(io, io.root, schema.partition_types,
                         avro_codec(options["manifest.compression"]),
                         options["manifest.target-file-size"])
        return cls(path, io, io.root, schema, options, SnapshotManager(io, io.root), mio)

    # --- what kind of table --------------------------------------------------------------
    @property
    def table_kind(self) -> str:
        """Paimon's name for this table's kind, e.g. 'primary-key table (dynamic bucket)'."""
        return table_kind(self.schema, self.options)

    def check_writable(self) -> None:
        """Raise UnsupportedTableError unless data files written by this library fit the
        table. Called before any file is written: a plain parquet file committed into a
        primary-key table breaks every Java reader and compaction of that table."""
        problem = write_refusal(self.schema, self.options)
        if problem:
            raise UnsupportedTableError(f"cannot write to {self.path}: {problem}")

    def check_readable(self, snapshot: Optional[Snapshot]) -> None:
        """Raise UnsupportedTableError when reading the live files of `snapshot` as plain
        rows would be wrong: primary-key tables need a merge, deletion vectors hide rows,
        data file paths this library cannot compute (layout_refusal)."""
        self.check_layout("read")
        if self.schema.primary_keys:
            raise UnsupportedTableError(
                f"cannot read {self.path}: it is a {self.table_kind}, whose rows need a "
                f"merge by key; read it with Paimon (Java, Flink, Spark) or pypaimon")
        if snapshot is not None and snapshot.index_manifest:
            raise UnsupportedTableError(
                f"snapshot {snapshot.id} of {self.path} has an index manifest "
                f"({snapshot.index_manifest}): deletion vectors may hide rows, and this "
                f"library does not apply them")

    # --- layout --------------------------------------------------------------------------
    def layout_refusal(self) -> Optional[str]:
        """Why the paths of this table's data files cannot be computed (store.layout_refusal)."""
        return layout_refusal(self.schema)

    def check_layout(self, action: str) -> None:
        """Raise UnsupportedTableError, one line naming the option, unless data file paths
        can be computed. Called up front by every operation that computes them (check,
        repair, expiration, orphan cleanup, compaction, reads) and again by bucket_dir."""
        problem = self.layout_refusal()
        if problem:
            raise UnsupportedTableError(f"cannot {action} {self.path}: {problem}")

    def check_layout_history(self, action: str, ids: Optional[Sequence[int]] = None,
                             done: str = "nothing was read or written") -> None:
        """check_layout, and also refused when another schema of the table places data files
        elsewhere (`partition.legacy-name`, `partition.default-name` or
        `data-file.path-directory` changed by an ALTER, _LAYOUT_KEYS): files written under
        it live at paths this schema does not name, so check would call them missing and
        repair give up rows of files that exist (audit/final f5, issue25d d1). Reads every
        schema file: only `repair`, which gives up files it finds missing, pays it (check
        only reports them; expiration deletes by the path computed, so a file elsewhere is
        left, never another deleted; orphan cleanup keeps what is used by name). `ids`: the
        schema ids, when the caller just listed them; `done`: what the message says of the
        table (nothing was read or written, when called up front)."""
        self.check_layout(action)
        now = _layout_of(self.schema)
        sm = SchemaManager(self.io, self.root)
        for sid in (sm.list_ids() if ids is None else ids):
            if sid == self.schema.id:
                continue
            before = _layout_of(sm.schema(sid))
            if before != now:
                key = next(k for k, a, b in zip(_LAYOUT_KEYS, before, now) if a != b)
                raise UnsupportedTableError(
                    f"cannot {action} {self.path}: option {key!r} was "
                    f"{_shown(before[_LAYOUT_KEYS.index(key)])} in schema {sid} and is "
                    f"{_shown(now[_LAYOUT_KEYS.index(key)])} now: files written under each "
                    f"schema live under different directory names, and this library computes "
                    f"one spelling per table ({done})")

    @property
    def data_root(self) -> str:
        """Where partition directories start: the table root, or below it the table's
        `data-file.path-directory` (Java `new Path(root, dir)`, pypaimon `resolve_path`)."""
        d = self.schema.options.get("data-file.path-directory")
        return self.io.join(self.root, str(d)) if d else self.root

    @property
    def data_root_names(self) -> Tuple[str, ...]:
        """The names from the root down to data_root (none: data_root is the root)."""
        d = self.schema.options.get("data-file.path-directory")
        return tuple(str(d).split("/")) if d else ()

    @property
    def partition_keys(self) -> Tuple[str, ...]:
        return self.schema.partition_keys

    @property
    def default_partition_name(self) -> str:
        return self.options["partition.default-name"]

    def partition_spec(self, spec: Mapping[str, Any]) -> PartitionSpec:
        return PartitionSpec(self.schema, spec, self.default_partition_name)

    def partition_dict(self, values: Sequence[Any]) -> Dict[str, Any]:
        return dict(zip(self.partition_keys, values))

    def bucket_dir(self, partition_values: Sequence[Any], bucket: int) -> str:
        self.check_layout("compute data file paths of")
        rel = P.data_dir(P.partition_path(self.partition_keys, partition_values,
                                          self.schema.partition_types,
                                          self.default_partition_name,
                                          legacy_partition_name(self.schema)), bucket)
        return self.io.join(self.data_root, rel)

    def data_file_path(self, entry: ManifestEntry) -> str:
        if entry.file.external_path:
            return entry.file.external_path
        P.validate_bare_file_name(entry.file.file_name, "data file name")
        key = (entry.partition, entry.bucket)
        directory = self._dirs.get(key)
        if directory is None:
            values = self.manifests.decode_partition(entry.partition)
            directory = self.bucket_dir(values, entry.bucket)
            if len(self._dirs) > 100_000:
                self._dirs.clear()
            self._dirs[key] = directory
        return self.io.join(directory, entry.file.file_name)

    # --- state of a snapshot -------------------------------------------------------------
    def live_entries(self, snapshot: Snapshot, keep_raw: bool = False) -> List[ManifestEntry]:
        """`keep_raw`: see ManifestIO.read_manifest (for callers that write DELETEs of them)."""
        metas = self.manifests.read_list(snapshot.base_manifest_list) + \
            self.manifests.read_list(snapshot.delta_manifest_list)
        return live_entries(self.manifests.read_entries(metas, keep_raw))

    def delta_entries(self, snapshot: Snapshot) -> List[ManifestEntry]:
        return self.manifests.read_entries(
            self.manifests.read_list(snapshot.delta_manifest_list))
