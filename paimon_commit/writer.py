"""TableWriter: Arrow data -> parquet data files in `k=v/.../bucket-0/` -> CommitMessages."""
from __future__ import annotations

import calendar
import logging
import time
import uuid
from typing import Any, Dict, List, Optional, Tuple

import pyarrow as pa
import pyarrow.parquet as pq

from .errors import PaimonCommitError
from .format import binary_row
from .format.commit_message import CommitMessage
from .format.manifest import DataFileMeta, FileKind, ManifestEntry
from .store import FileStore

log = logging.getLogger(__name__)

__all__ = ["TableWriter", "SchemaMismatchError"]

_COMPRESSION = {"none": None, "uncompressed": None}


class SchemaMismatchError(PaimonCommitError, ValueError):
    """Data does not fit the table schema."""


def local_millis_as_utc() -> int:
    """Paimon's _CREATION_TIME: the local wall clock expressed as if it were UTC."""
    now = time.time()
    return calendar.timegm(time.localtime(now)) * 1000 + int((now % 1) * 1000)


def conform(data: pa.Table, target: pa.Schema, table_path: str) -> pa.Table:
    """Check names and types against the table schema and cast; error before any write."""
    names = data.schema.names
    if sorted(names) != sorted(target.names) or len(names) != len(target.names):
        missing = [n for n in target.names if n not in names]
        extra = [n for n in names if n not in target.names]
        raise SchemaMismatchError(
            f"data does not match the schema of table {table_path}: missing columns "
            f"{missing}, unexpected columns {extra} (table columns: {target.names})")
    columns = []
    for f in target:
        col = data.column(f.name)
        if not col.type.equals(f.type):
            try:
                col = col.cast(f.type, safe=True)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
                raise SchemaMismatchError(
                    f"column {f.name!r} has type {data.schema.field(f.name).type}, which cannot "
                    f"be stored as {f.type} in table {table_path}: {e}") from None
        if not f.nullable and col.null_count:
            raise SchemaMismatchError(
                f"column {f.name!r} is NOT NULL in table {table_path} but has "
                f"{col.null_count} null value(s)")
        columns.append(col)
    return pa.Table.from_arrays(columns, schema=target)


class _RollingFile:
    """One open parquet file of one partition."""

    def __init__(self, io, path: str, schema: pa.Schema, compression):
        self.path = path
        self.sink = io.open_output_stream(path)
        self.writer = pq.ParquetWriter(self.sink, schema, compression=compression)
        self.rows = 0
        self.buffered = 0

    def write(self, data: pa.Table) -> None:
        self.writer.write_table(data)
        self.rows += data.num_rows
        self.buffered += data.nbytes

    def close(self) -> None:
        self.writer.close()
        self.sink.close()


class TableWriter:
    """Writes data files: one open parquet file per partition, rolled at `target-file-size`
    (measured on the uncompressed Arrow data, so files come out smaller). Not thread-safe;
    one per task."""

    def __init__(self, store: FileStore):
        self.store = store
        self.schema = store.schema
        self.arrow_schema = store.schema.arrow_schema()
        self.partition_keys = list(store.partition_keys)
        self.partition_types = store.schema.partition_types
        o = store.options
        self.prefix = o["data-file.prefix"]
        self.compression = _COMPRESSION.get(o["file.compression"], o["file.compression"])
        self.target_file_size = o["target-file-size"]
        if o["file.format"] != "parquet":
            raise PaimonCommitError(
                f"table {store.path} has file.format = {o['file.format']}; this library writes "
                f"parquet only")
        self._uuid = str(uuid.uuid4())
        self._counter = 0
        self._open: Dict[Tuple[Any, ...], _RollingFile] = {}
        self._pending: Dict[Tuple[Any, ...], List[DataFileMeta]] = {}
        self._written: List[str] = []

    def write_arrow(self, data: pa.Table) -> None:
        if isinstance(data, pa.RecordBatch):
            data = pa.Table.from_batches([data])
        data = conform(data, self.arrow_schema, self.store.path)
        if data.num_rows == 0:
            return
        for values, part in self._split(data):
            self._write_partition(values, part)

    def _split(self, data: pa.Table):
        if not self.partition_keys:
            yield (), data
            return
        names = [f"k{i}" for i in range(len(self.partition_keys))]
        columns = [data.column(k) for k in self.partition_keys]
        if all(c.null_count == 0 and len(c.unique()) == 1 for c in columns):
            # The common case of a batch from one partition: no grouping needed.
            yield tuple(c[0].as_py() for c in columns), data
            return
        # One vectorised pass: row indices grouped by partition values.
        idx = pa.array(range(data.num_rows), type=pa.int64())
        keyed = pa.Table.from_arrays(columns + [idx], names=names + ["__row"])
        groups = keyed.group_by(names, use_threads=False).aggregate([("__row", "list")])
        rows = groups.column("__row_list")
        keys = [groups.column(n).to_pylist() for n in names]
        for g in range(groups.num_rows):
            yield tuple(k[g] for k in keys), data.take(rows[g].values)

    def _write_partition(self, values: Tuple[Any, ...], data: pa.Table) -> None:
        # "" / whitespace-only strings land in the default partition: the BinaryRow must say
        # null so that readers and drop_partitions agree.
        values = tuple(None if isinstance(v, str) and not v.strip() else v for v in values)
        f = self._open.get(values)
        if f is None:
            directory = self.store.bucket_dir(values, 0)
            name = f"{self.prefix}{self._uuid}-{self._counter}.parquet"
            self._counter += 1
            path = self.store.io.join(directory, name)
            self._written.append(path)
            f = self._open[values] = _RollingFile(self.store.io, path, self.arrow_schema,
                                                  self.compression)
        f.write(data)
        if f.buffered >= self.target_file_size:
            self._close(values)

    def _close(self, values: Tuple[Any, ...]) -> None:
        f = self._open.pop(values)
        f.close()
        meta = DataFileMeta(file_name=f.path.rsplit("/", 1)[-1],
                            file_size=self.store.io.file_size(f.path), row_count=f.rows,
                            schema_id=self.schema.id, creation_time=local_millis_as_utc())
        self._pending.setdefault(values, []).append(meta)

    def prepare_commit(self) -> List[CommitMessage]:
        for values in list(self._open):
            self._close(values)
        msgs = []
        for values, files in self._pending.items():
            msgs.append(CommitMessage(
                partition=values,
                partition_bytes=binary_row.serialize_binary_row(list(values),
                                                                self.partition_types),
                bucket=0, total_buckets=-1, new_files=tuple(files)))
        self._pending = {}
        self._written = []
        return msgs

    def abort(self) -> int:
        """Delete every data file written since the last prepare_commit."""
        for f in self._open.values():
            try:
                f.close()
            except Exception:  # noqa: BLE001 - the file is deleted next anyway
                pass
        self._open = {}
        n = sum(self.store.io.delete_quietly(p) for p in self._written)
        self._written = []
        self._pending = {}
        return n

    def close(self) -> None:
        if self._open:
            self.abort()

    def __enter__(self) -> "TableWriter":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is not None:
            self.abort()
        self.close()


def message_paths(store: FileStore, messages) -> List[str]:
    """Absolute paths of the new files in commit messages (for abort on the driver)."""
    out = []
    for m in messages:
        for f in m.new_files:
            out.append(store.data_file_path(
                ManifestEntry(FileKind.ADD, m.partition_bytes, m.bucket, m.total_buckets, f)))
    return out
