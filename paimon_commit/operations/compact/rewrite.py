"""Rewriting one bin of a compaction: read its small files and write their rows as new files
of about `target-file-size` (file source COMPACT, the table's current schema, sequence numbers
counted on from the bin's first file, as Paimon's AppendCompactTask).

`job.py` plans and commits, `pool.py` spreads the bins over threads or worker
processes; this module only produces files. What it writes is never committed from here:
every new file is returned (`Rewritten`) to the caller, which hands them to the commit or
deletes them through the one abort."""
from __future__ import annotations

import logging
import sys
import threading
from collections import deque
from concurrent.futures import Executor, Future
from dataclasses import dataclass, replace
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

import pyarrow as pa
import pyarrow.parquet as pq

try:  # what pq.ParquetFile wraps; see _parse_parquet
    from pyarrow._parquet import ParquetReader as _ParquetReader
except ImportError:  # pragma: no cover - pyarrow moved it
    _ParquetReader = None

from ...format.manifest import DataFileMeta, ManifestEntry
from ...format.schema import TableSchema
from ...read import file_rows
from ...store import FileStore, SchemaManager
from ...writer import TableWriter, message_paths
from .plan import CompactTask
from .result import CompactionConflictError, CompactionError

log = logging.getLogger(__name__)

__all__ = ["BinRewriter", "Rewritten", "Ratio", "COMPACT_SOURCE", "read_ahead"]

COMPACT_SOURCE = 1  # DataFileMeta._FILE_SOURCE of files written by a compaction (FileSource)

#: Per bin, files read ahead of the one being written: at most this many, and no more bytes
#: (stored sizes) than READ_AHEAD_BYTES beyond the first.
READ_AHEAD = 64
READ_AHEAD_BYTES = 64 << 20
#: Files read by one task of the I/O pool (in order), at most READ_CHUNK_BYTES beyond the first.
READ_CHUNK = 8
READ_CHUNK_BYTES = 8 << 20
#: Input files up to this size are fetched whole and parsed from memory; larger ones are read
#: through the FileIO's parquet reader.
WHOLE_FILE_BYTES = 64 << 20
#: Rows read from files of one schema are converted and handed to the writer together, up to
#: files of this many stored bytes.
GROUP_BYTES = 8 << 20


@dataclass
class Rewritten:
    """The new files of one task (their paths, for deletion if the commit fails)."""
    task: CompactTask
    files: List[DataFileMeta]
    paths: List[str]


class Ratio:
    """Stored bytes written per input byte, learned from the files written so far (1.0
    before the first: many small files shrink when merged, so early estimates err on the
    side of more, smaller files)."""

    def __init__(self, inputs: int = 0, outputs: int = 0):
        self.inputs = inputs
        self.outputs = outputs
        self._lock = threading.Lock()   # bins are rewritten on several threads

    def learn(self, input_bytes: int, output_bytes: int) -> None:
        with self._lock:
            self.inputs += input_bytes
            self.outputs += output_bytes

    @property
    def value(self) -> float:
        if not self.inputs or not self.outputs:
            return 1.0
        return self.outputs / self.inputs

    def __getstate__(self):          # sent to worker processes: the numbers, not the lock
        return (self.inputs, self.outputs)

    def __setstate__(self, state) -> None:
        self.__init__(*state)


class BinRewriter:
    """Reads the input files of a bin and writes its rows as new files. Holds only the store
    (with the compaction's dynamic options), the target size and a schema cache; no state of
    a run, so that one instance serves every bin, on threads or in forked processes."""

    def __init__(self, store: FileStore, target_file_size: int,
                 schemas: Optional[Dict[int, TableSchema]] = None):
        self.store = store
        self.target_file_size = target_file_size
        self.schemas: Dict[int, TableSchema] = schemas if schemas is not None else \
            {store.schema.id: store.schema}
        self._schemas_lock = threading.Lock()
        #: called with 1 after each input file is read (progress), on the rewriting thread
        self.on_file: Optional[Callable[[int], None]] = None

    def schema(self, schema_id: int) -> TableSchema:
        s = self.schemas.get(schema_id)
        if s is None:
            with self._schemas_lock:
                s = self.schemas.get(schema_id)
                if s is None:
                    s = self.schemas[schema_id] = SchemaManager(
                        self.store.io, self.store.root).schema(schema_id)
        return s

    def __getstate__(self):
        state = dict(self.__dict__)
        del state["_schemas_lock"]
        state["on_file"] = None
        return state

    def __setstate__(self, state) -> None:
        self.__dict__.update(state)
        self._schemas_lock = threading.Lock()

    # --- one bin -------------------------------------------------------------------------
    def rewrite_task(self, task: CompactTask, ratio: Ratio, out: Rewritten,
                     io_pool: Optional[Executor] = None, name: Optional[str] = None) -> None:
        """Rewrite one bin into `out` (files and paths appended as they are written: a bin
        failing halfway leaves the files it finished in `out`, for the caller's abort; the
        file being written is deleted here). `name`: the unique part of the new files'
        names (`data-<name>-<n>.parquet`), so that the files of a worker that died can be
        found."""
        st = self.store
        target = self.target_file_size
        # Read in write order (sequence number, then creation time): the rows of the new
        # files keep the order in which they were committed.
        files = sorted(task.files, key=lambda e: (e.file.min_sequence_number,
                                                  e.file.creation_time or 0,
                                                  e.file.file_name))
        writer = TableWriter(st)
        if name is not None:
            writer._uuid = name
        # We roll files ourselves, on the estimated *stored* size; the writer would roll on
        # the uncompressed Arrow size, which makes files far below the target. The bin is
        # cut into equal parts of at least the target (estimated), so that its last file is
        # not a small remainder that the next compaction would pick up again.
        writer.target_file_size = sys.maxsize
        parts = max(1, int(task.input_bytes * ratio.value // target))
        per_file = task.input_bytes / parts
        fed = 0
        # Files read but not yet handed to the writer: consecutive files stored with the
        # same schema are converted and written together (per-file conversion and writer
        # calls cost more than reading a small file).
        group: List[pa.Table] = []
        group_schema_id: Optional[int] = None
        group_bytes = 0
        on_file = self.on_file

        def flush() -> None:
            nonlocal group, group_bytes
            if group:
                # One chunk per column: the writer's per-batch work then runs once.
                data = group[0] if len(group) == 1 else \
                    pa.concat_tables(group).combine_chunks()
                group, group_bytes = [], 0
                writer.write_arrow(self.rows(data, group_schema_id, task.values))

        first_schema: Optional[pa.Schema] = None
        try:
            for e, stored in read_ahead(files, self.load, io_pool):
                if group and (e.file.schema_id != group_schema_id
                              or not stored.schema.equals(first_schema)):
                    flush()
                if not group:
                    first_schema = stored.schema
                group.append(stored)
                group_schema_id = e.file.schema_id
                group_bytes += e.file.file_size
                fed += e.file.file_size
                if on_file is not None:
                    on_file(1)
                if fed >= per_file and len(out.files) < parts - 1:
                    flush()
                    self._roll(writer, task, out, fed, ratio)
                    fed = 0
                elif group_bytes >= GROUP_BYTES:
                    flush()
            flush()
            if fed:
                self._roll(writer, task, out, fed, ratio)
        except BaseException:
            writer.abort()
            raise
        # Paimon counts sequence numbers on from the first input file's.
        seq = files[0].file.min_sequence_number
        metas = []
        for m in out.files:
            metas.append(replace(m, file_source=COMPACT_SOURCE, min_sequence_number=seq,
                                 max_sequence_number=seq + max(m.row_count, 1) - 1))
            seq += m.row_count
        out.files = metas
        rows_in, rows_out = task.input_rows, sum(m.row_count for m in metas)
        if rows_in != rows_out:
            raise CompactionError(
                f"compaction of {st.path}: {len(files)} files with {rows_in} rows were "
                f"rewritten into {rows_out} rows; nothing is committed")

    def _roll(self, writer: TableWriter, task: CompactTask, out: Rewritten, fed: int,
              ratio: Ratio) -> None:
        msgs = writer.prepare_commit()
        out.paths.extend(message_paths(self.store, msgs))
        for m in msgs:
            if tuple(m.partition) != tuple(task.values):
                raise CompactionError(
                    f"compaction of {self.store.path}: rows of partition "
                    f"{self.store.partition_dict(task.values)} hold partition values "
                    f"{self.store.partition_dict(m.partition)}; nothing is committed")
            for f in m.new_files:
                out.files.append(f)
                ratio.learn(fed, f.file_size)

    def load(self, entry: ManifestEntry) -> pa.Table:
        """One input file as stored. A small file is fetched whole (one request) and parsed
        from memory on the calling thread: a third of the time pyarrow's dataset reader
        takes per small file; a large one goes through the FileIO's parquet reader.

        Paimon's readers (Java's and pypaimon's) take a partition column from the file's
        partition, never from the file, and so do the rows made here (`rows`, through
        read.file_rows, for every file and column name): a small file's partition columns
        are not even decoded (a third of parsing a small file); a large file's, or a
        dotted name's, are read and ignored."""
        st = self.store
        path = st.data_file_path(entry)
        try:
            if entry.file.file_size <= WHOLE_FILE_BYTES:
                return _parse_parquet(st.io.read_bytes(path),
                                      self.schema(entry.file.schema_id).partition_keys)
            return st.io.read_parquet(path)
        except FileNotFoundError:
            raise CompactionConflictError(
                f"compaction of {st.path}: input file {path} disappeared while being "
                f"rewritten (removed by a concurrent commit and expired, or lost); nothing "
                f"is committed", [path]) from None

    def rows(self, stored: pa.Table, schema_id: int, values: Tuple[Any, ...]) -> pa.Table:
        """Rows of files written with schema `schema_id` as rows of the current schema."""
        st = self.store
        current = st.schema
        target = current.arrow_schema()
        partition = st.partition_dict(values)
        old = self.schema(schema_id)
        if old.id == current.id:
            return file_rows(stored, partition, target)
        # Schema evolution, by field id: read the old names with the current types, then
        # put the columns in today's names and order (columns added later: null).
        by_id = {f.id: f for f in old.fields}
        current_ids = {f.name: f.id for f in current.fields}
        read_fields, names = [], {}
        for f, af in zip(current.fields, target):
            o = by_id.get(f.id)
            if o is not None:
                read_fields.append(pa.field(o.name, af.type, nullable=True))
                names[f.name] = o.name
        old_partition = {by_id[current_ids[k]].name: v for k, v in partition.items()
                         if current_ids[k] in by_id}
        t = file_rows(stored, old_partition, pa.schema(read_fields))
        cols = [t.column(names[af.name]) if af.name in names
                else pa.nulls(t.num_rows, type=af.type) for af in target]
        return pa.Table.from_arrays(cols, schema=target)


def _parse_parquet(data: bytes, skip: Sequence[str] = ()) -> pa.Table:
    """The rows of a parquet file held in memory, as stored. pre_buffer off: the bytes are
    in memory already, and pre-buffering hands every column chunk to Arrow's I/O threads
    and waits for them (on a busy machine, waiting for those threads to be scheduled took
    3x the decode). The reader pq.ParquetFile wraps is used directly: the wrapper's own
    work (path resolution, nested-path index) cost a third of decoding a 1.5 kB file
    (0.37 vs 0.25 ms), and compaction decodes thousands of them."""
    if _ParquetReader is not None:
        reader = _ParquetReader()
        reader.open(pa.BufferReader(data), pre_buffer=False)
        return reader.read_all(column_indices=_columns_without(reader, skip),
                               use_threads=False)
    return pq.ParquetFile(pa.BufferReader(data), pre_buffer=False).read(  # pragma: no cover
        use_threads=False)


def _columns_without(reader: Any, skip: Sequence[str]) -> Optional[List[int]]:
    """The file's column indices without the top-level columns named in `skip`, or None
    (every column: nothing to skip, or nothing else left to read, whose row count would be
    lost). Only names without a dot: the reader's name lookup joins nested names with
    dots, so "a.b" could name a field inside a struct "a". Skipping is only a saving: a
    partition column read anyway is replaced by the partition's value (read.file_rows)."""
    drop = set()
    for name in skip:
        if "." not in name:
            try:
                drop.add(reader.column_name_idx(name))
            except KeyError:
                pass
    if not drop:
        return None
    cols = [i for i in range(reader.metadata.num_columns) if i not in drop]
    return cols or None


def read_ahead(files: Sequence[ManifestEntry], load: Callable[[ManifestEntry], pa.Table],
               pool: Optional[Executor]) -> Iterator[Tuple[ManifestEntry, pa.Table]]:
    """(entry, stored rows) of each file, in order; with a pool, the next files are read
    while the caller writes: in chunks of up to READ_CHUNK files (a future per tiny file
    costs as much as reading it), at most READ_AHEAD files and READ_AHEAD_BYTES ahead."""
    if pool is None:
        for e in files:
            yield e, load(e)
        return

    def load_all(chunk: List[ManifestEntry]) -> List[pa.Table]:
        return [load(e) for e in chunk]

    pending: "deque[Tuple[List[ManifestEntry], int, Future]]" = deque()
    ahead_files = ahead_bytes = 0
    nxt = 0
    try:
        while nxt < len(files) or pending:
            while nxt < len(files) and ahead_files < READ_AHEAD and \
                    (not pending or ahead_bytes + files[nxt].file.file_size <= READ_AHEAD_BYTES):
                chunk: List[ManifestEntry] = []
                size = 0
                while nxt < len(files) and len(chunk) < READ_CHUNK and \
                        (not chunk or size + files[nxt].file.file_size <= READ_CHUNK_BYTES):
                    chunk.append(files[nxt])
                    size += files[nxt].file.file_size
                    nxt += 1
                pending.append((chunk, size, pool.submit(load_all, chunk)))
                ahead_files += len(chunk)
                ahead_bytes += size
            chunk, size, fut = pending.popleft()
            ahead_files -= len(chunk)
            ahead_bytes -= size
            yield from zip(chunk, fut.result())
    finally:
        for _, _, fut in pending:   # the caller failed: reads not started are not needed
            fut.cancel()
