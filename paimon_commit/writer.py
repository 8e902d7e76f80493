"""TableWriter: Arrow data -> parquet data files in `k=v/.../bucket-0/` -> CommitMessages."""
from __future__ import annotations

import logging
import shutil
import tempfile
import uuid
from typing import Any, Dict, List, Mapping, Tuple

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from .errors import PaimonCommitError
from .format import binary_row
from .format.commit_message import CommitMessage
from .format.entry import local_millis_as_utc
from .format.int96 import fix_int96_file, has_pre_epoch_timestamps, int96_compression
from .format.manifest import DataFileMeta, FileKind, ManifestEntry
from .store import FileStore

log = logging.getLogger(__name__)

__all__ = ["TableWriter", "SchemaMismatchError"]

_COMPRESSION = {"none": None, "uncompressed": None}


class SchemaMismatchError(PaimonCommitError, ValueError):
    """Data does not fit the table schema."""


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


def as_arrow_table(data: Any, target: pa.Schema) -> pa.Table:
    """`data` as a pyarrow Table; python values in a dict (or a DataFrame) are converted to the
    table's types directly when the column names match (a date list to date32, ints to int32)."""
    if isinstance(data, pa.Table):
        return data
    if isinstance(data, pa.RecordBatch):
        return pa.Table.from_batches([data])
    if isinstance(data, Mapping):
        data = dict(data)
        if sorted(map(str, data)) == sorted(target.names):
            try:
                return pa.table(data, schema=target)
            except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, TypeError):
                pass   # conform names the column that does not fit
        return pa.table(data)
    if type(data).__module__.split(".")[0] == "pandas" and hasattr(data, "columns"):
        if sorted(map(str, data.columns)) == sorted(target.names):
            try:
                return pa.Table.from_pandas(data, schema=target, preserve_index=False)
            except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, TypeError):
                pass
        return pa.Table.from_pandas(data, preserve_index=False)
    if hasattr(data, "__arrow_c_stream__") or hasattr(data, "__arrow_c_array__"):
        return pa.table(data)
    raise TypeError(f"write_arrow takes a pyarrow Table, RecordBatch or RecordBatchReader, a "
                    f"dict of columns or a pandas DataFrame, not {type(data).__name__}")


ROW_GROUP_ROWS = 1_000_000          # rows buffered per partition before a row group is written
BUFFER_BYTES = 256 << 20            # all partitions together; the largest is flushed beyond
DICTIONARY_MAX_RATIO = 0.1          # dictionary-encode a column only if it repeats a lot


def _dictionary_columns(sample: pa.Table) -> List[str]:
    """Columns worth dictionary encoding, judged on the first rows of a file: pyarrow encodes
    every column by default, which costs time and, for unique values, space."""
    n = sample.num_rows
    limit = max(1, n * DICTIONARY_MAX_RATIO)
    # A prefix of 2 x limit rows with more than `limit` distinct values already decides
    # "no", at a fifth of the hashing: columns of unique values (ids, names) are the common
    # case, and counting them was most of the cost of a small file (compaction writes many).
    prefix = min(n, int(2 * limit))
    out = []
    for name in sample.column_names:
        col = sample.column(name)
        if pa.types.is_nested(col.type):
            continue
        if prefix < n and pc.count_distinct(col.slice(0, prefix)).as_py() > limit:
            continue
        if pc.count_distinct(col).as_py() <= limit:
            out.append(name)
    return out


def _has_nanosecond_timestamps(t: pa.DataType) -> bool:
    if pa.types.is_timestamp(t):
        return t.unit == "ns"
    if pa.types.is_struct(t):
        return any(_has_nanosecond_timestamps(t.field(i).type) for i in range(t.num_fields))
    if pa.types.is_map(t):
        return _has_nanosecond_timestamps(t.key_type) or _has_nanosecond_timestamps(t.item_type)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return _has_nanosecond_timestamps(t.value_type)
    return False


class _RollingFile:
    """One open parquet file of one partition.

    Physical types follow Paimon Java's parquet writer, so that every Paimon reader (the
    1.0 one included) reads our files: DECIMAL of precision <= 9 / <= 18 as INT32 / INT64,
    wider ones as FIXED_LEN_BYTE_ARRAY; TIMESTAMP(0..3) as INT64 millis, (4..6) as INT64
    micros, (7..9) as INT96. pyarrow switches INT96 on for a whole file, not per column, and
    Java 1.0 fails on an INT96 TIMESTAMP(<= 6) column; so in a file that needs INT96, the
    other top-level timestamp columns are written as plain INT64 millis / micros, which every
    Paimon reader (and pypaimon) reads by the table's type. Nested ones stay INT96.

    Arrow encodes a pre-1970 INT96 value with negative nanos of the day, which makes Java
    fail on every read of the file (format/int96.py). A file given such values
    (``fix_int96``) is written to a local temporary file with its INT96 columns uncompressed,
    fixed in place when closed, then copied to `path`; other files go straight to `path`."""

    def __init__(self, io, path: str, schema: pa.Schema, compression, dictionary,
                 fix_int96: bool = False):
        self.io = io
        self.path = path
        int96 = any(_has_nanosecond_timestamps(f.type) for f in schema)
        # column index -> the timestamp unit its INT64 values are in
        self.as_int64: Dict[int, pa.DataType] = {}
        if int96:
            for i, f in enumerate(schema):
                if pa.types.is_timestamp(f.type) and f.type.unit != "ns":
                    unit = "us" if f.type.unit == "us" else "ms"
                    self.as_int64[i] = pa.timestamp(unit, tz=f.type.tz)
                    schema = schema.set(i, pa.field(f.name, pa.int64(), f.nullable))
        options = dict(use_dictionary=dictionary, store_decimal_as_integer=True,
                       use_deprecated_int96_timestamps=int96)
        self.fixes_int96 = int96 and fix_int96
        self.spool = None
        if self.fixes_int96:
            compression = int96_compression(schema, compression, **options)
            self.spool = self.sink = tempfile.TemporaryFile(prefix="paimon-commit-int96-")
        else:
            self.sink = io.open_output_stream(path)
        try:
            self.writer = pq.ParquetWriter(self.sink, schema, compression=compression,
                                           **options)
        except BaseException:
            _close_quietly(self.sink)   # the file itself is in the writer's list: abort
            raise
        self.rows = 0
        self.bytes = 0

    @staticmethod
    def needs_int96_fix(data: pa.Table) -> bool:
        """Whether `data` has pre-1970 values in columns written as INT96: the nanosecond
        ones and, in a file that has those, nested timestamps of any unit."""
        if not any(_has_nanosecond_timestamps(f.type) for f in data.schema):
            return False
        return any(has_pre_epoch_timestamps(data.column(i))
                   for i, f in enumerate(data.schema)
                   if not (pa.types.is_timestamp(f.type) and f.type.unit != "ns"))

    def write(self, data: pa.Table, nbytes: int) -> None:
        for i, ts in self.as_int64.items():
            col = data.column(i).cast(ts).cast(pa.int64())
            data = data.set_column(i, data.schema.field(i).with_type(pa.int64()), col)
        self.writer.write_table(data, row_group_size=max(1, data.num_rows))
        self.rows += data.num_rows
        self.bytes += nbytes

    def close(self) -> None:
        # The sink is closed even when the footer cannot be written: an open local file
        # handle leaks, and on an object store an open multipart upload is invisible to
        # listings (no orphan cleanup finds it) and billed until a lifecycle rule drops it.
        # Closed, it becomes an ordinary (broken) file that abort deletes.
        try:
            self.writer.close()
        except BaseException:
            _close_quietly(self.sink)
            raise
        if self.spool is None:
            self.sink.close()
            return
        try:
            n = fix_int96_file(self.spool)
            log.debug("%s: %d INT96 value(s) before 1970 rewritten with positive nanos of "
                      "the day", self.path, n)
            self.spool.seek(0)
            out = self.io.open_output_stream(self.path)
            try:
                shutil.copyfileobj(self.spool, out, 8 << 20)
            finally:
                out.close()
        finally:
            self.spool.close()


def _close_quietly(sink) -> None:
    try:
        sink.close()
    except Exception as e:  # noqa: BLE001 - the first error is the one that matters
        log.debug("closing a failed data file's stream failed too: %s", e)


class _Buffer:
    __slots__ = ("tables", "rows", "bytes")

    def __init__(self):
        self.tables: List[pa.Table] = []
        self.rows = 0
        self.bytes = 0


class TableWriter:
    """Writes data files: rows are buffered per partition and written as large row groups
    (Spark hands over 10k-row batches; one row group each would make files slow to write and
    read), one open parquet file per partition, rolled at `target-file-size` (measured on the
    uncompressed Arrow data, so files come out smaller). Not thread-safe; one per task."""

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
        store.check_writable()  # before any file is written
        self._uuid = str(uuid.uuid4())
        self._counter = 0
        self._open: Dict[Tuple[Any, ...], _RollingFile] = {}
        self._buffers: Dict[Tuple[Any, ...], _Buffer] = {}
        self._buffered_bytes = 0
        self._pending: Dict[Tuple[Any, ...], List[DataFileMeta]] = {}
        self._written: List[str] = []

    def write_arrow(self, data: Any) -> None:
        """Buffer rows for the table: what `pyarrow.table(...)` accepts — a pyarrow Table,
        RecordBatch or RecordBatchReader (read batch by batch), a dict of columns, a pandas
        DataFrame (index dropped), or any object with the Arrow C stream interface. Columns
        are matched by name and cast to the table's types; a mismatch is a
        SchemaMismatchError before anything is written."""
        if isinstance(data, pa.RecordBatchReader):
            for batch in data:
                self.write_arrow(batch)
            return
        data = as_arrow_table(data, self.arrow_schema)
        data = conform(data, self.arrow_schema, self.store.path)
        if data.num_rows == 0:
            return
        per_row = data.nbytes / data.num_rows
        for values, part in self._split(data):
            self._buffer(values, part, int(part.num_rows * per_row))

    def _split(self, data: pa.Table):
        if not self.partition_keys:
            yield (), data
            return
        columns = [data.column(k) for k in self.partition_keys]
        if all(c.null_count == 0 and pc.count_distinct(c).as_py() == 1 for c in columns):
            # The common case of a batch from one partition: no grouping needed.
            yield tuple(c[0].as_py() for c in columns), data
            return
        # One sort, then zero-copy slices: groups come out in the sort order of their keys.
        names = [f"k{i}" for i in range(len(columns))]
        keys = pa.Table.from_arrays(columns, names=names)
        order = [(n, "ascending") for n in names]
        counts = keys.group_by(names, use_threads=False).aggregate([([], "count_all")])
        counts = counts.take(pc.sort_indices(counts, sort_keys=order, null_placement="at_end"))
        ordered = data.take(pc.sort_indices(keys, sort_keys=order, null_placement="at_end"))
        group_keys = [counts.column(n).to_pylist() for n in names]
        offset = 0
        for g, n in enumerate(counts.column("count_all").to_pylist()):
            yield tuple(k[g] for k in group_keys), ordered.slice(offset, n)
            offset += n

    def _buffer(self, values: Tuple[Any, ...], data: pa.Table, nbytes: int) -> None:
        # A blank string stays itself in the partition row, as Java's writer keeps it; only
        # the directory is the default partition's, shared with NULL.
        b = self._buffers.get(values)
        if b is None:
            b = self._buffers[values] = _Buffer()
        b.tables.append(data)
        b.rows += data.num_rows
        b.bytes += nbytes
        self._buffered_bytes += nbytes
        if b.rows >= ROW_GROUP_ROWS:
            self._flush(values)
        while self._buffered_bytes > BUFFER_BYTES and self._buffers:
            self._flush(max(self._buffers, key=lambda v: self._buffers[v].bytes))

    def _flush(self, values: Tuple[Any, ...]) -> None:
        b = self._buffers.pop(values)
        self._buffered_bytes -= b.bytes
        data = pa.concat_tables(b.tables) if len(b.tables) > 1 else b.tables[0]
        f = self._open.get(values)
        fix_int96 = _RollingFile.needs_int96_fix(data)
        if f is not None and fix_int96 and not f.fixes_int96:
            # This file's INT96 columns are compressed and cannot be fixed: roll.
            self._close(values)
            f = None
        if f is None:
            directory = self.store.bucket_dir(values, 0)
            name = f"{self.prefix}{self._uuid}-{self._counter}.parquet"
            self._counter += 1
            path = self.store.io.join(directory, name)
            self._written.append(path)
            f = self._open[values] = _RollingFile(
                self.store.io, path, self.arrow_schema, self.compression,
                _dictionary_columns(data.slice(0, 10_000)), fix_int96)
        f.write(data, b.bytes)
        if f.bytes >= self.target_file_size:
            self._close(values)

    def _close(self, values: Tuple[Any, ...]) -> None:
        f = self._open.pop(values)
        f.close()
        meta = DataFileMeta(file_name=f.path.rsplit("/", 1)[-1],
                            file_size=self.store.io.file_size(f.path), row_count=f.rows,
                            schema_id=self.schema.id, creation_time=local_millis_as_utc())
        self._pending.setdefault(values, []).append(meta)

    def prepare_commit(self) -> List[CommitMessage]:
        for values in list(self._buffers):
            self._flush(values)
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
        """Delete every data file written since the last prepare_commit (none of them was
        ever in a CommitMessage). Returns the number of files deleted."""
        from .operations.abort import abort_files
        for f in self._open.values():
            try:
                f.close()
            except Exception:  # noqa: BLE001 - the file is deleted next anyway
                pass
        self._open = {}
        self._buffers = {}
        self._buffered_bytes = 0
        written, self._written, self._pending = self._written, [], {}
        return len(abort_files(self.store, written, handed_out=False).deleted)

    def close(self) -> None:
        """Discard what was not handed out by prepare_commit: buffered rows, open files and
        files already rolled (they could never be committed without their messages)."""
        if self._open or self._buffers or self._written or self._pending:
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
