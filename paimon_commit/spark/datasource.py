"""The `paimon` data source on Spark's Python Data Source API (pyspark >= 4.0).

Batch writes: executors write parquet data files through TableWriter and return picklable
CommitMessages; the driver hands them to one TableCommit, so post-commit maintenance runs after
every write with the table's options. A task that raises deletes its own files; `abort()`
deletes the files of the tasks that did finish and, found by the write's run marker in their
names (`data-file.prefix` + `spark-<run id>-`), those of tasks cancelled mid-write, which
return nothing. Before it lists them it writes the run's abort record
(`.maintenance/spark-aborted-<marker>`); a task that has closed its files checks for that
record and, if it is there, deletes its own files and fails, so a cancelled task that goes on
to finish its file after the abort's listings does not leave it behind (_write_task, _abort).

Streaming writes commit each micro-batch with its batch id as the commit identifier and a
commit user kept in the checkpoint, so a replayed batch is recognised and not committed twice.
Each file of a micro-batch is named with the stream's batch marker (`data-file.prefix` +
`spark-stream-<stream tag>-<batch id>-`; the tag is a hash of the commit user and the
checkpoint location, the batch id the one Spark gives the task as `streaming.sql.batchId`), so
the abort of a failed micro-batch also deletes the files of its tasks cancelled mid-write.
Spark builds the stream writer anew for the tasks and for every commit and every abort (never
one instance per query), so the marker is derived from what each of them knows: the options,
the checkpoint and the batch id.

Reads prune partitions with pushed filters.

Options:
  partition-keys       "dt,hr": partition keys when the write creates the table
  paimon.<key>         table option when the write creates the table (e.g. paimon.bucket)
  overwrite-partition  "dt=2024-01-01[,hr=1]": static overwrite of that spec
  commit-user          commit user (batch writes; streams keep theirs in the checkpoint)
  any table option     per-write override, e.g. snapshot.expire.execution-mode,
                       snapshot.num-retained.min
  snapshot-id / tag    time travel for reads
  streaming-read-overwrite  streaming reads also read OVERWRITE snapshots' new files
A near miss of a Paimon option name, with or without 'paimon.', is refused on the driver
before any I/O ("option 'paimon.snapshot.num-retained.mn' is not a Paimon option: did you mean
'paimon.snapshot.num-retained.min'?").

Streaming reads (`spark.readStream.format("paimon").load(PATH)`): stream_source.py.
"""
from __future__ import annotations

import logging
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource, DataSourceArrowWriter, DataSourceReader, DataSourceStreamArrowWriter,
    EqualTo, Filter, GreaterThan, GreaterThanOrEqual, In, InputPartition, IsNotNull, IsNull,
    LessThan, LessThanOrEqual, WriterCommitMessage,
)
from pyspark.sql.types import StructType

from ..lease import LEASE_DIR
from ..errors import OptionError, TableNotFoundError
from ..io import redact_uri
from ..io.object_store_config import storage_options
from ..format import types as ptypes
from ..format.commit_message import CommitMessage
from ..dynamic_options import check_branch_options, check_commit_options, is_storage_option
from ..option_names import CORE_OPTION_NAMES, OTHER_PAIMON_OPTION_NAMES, \
    check_table_option_names
from ..options import OPTIONS, validate_options
from ..table import Table
from ..writer import SchemaMismatchError, message_paths
from .arrow_schema import from_arrow_schema, to_arrow_schema

log = logging.getLogger(__name__)

__all__ = ["PaimonDataSource", "register"]

def register(spark) -> None:
    """Make `format("paimon")` available in this session. Also turns on Python data source
    filter pushdown (off by default in Spark 4.x), without which partition pruning cannot
    work and Spark refuses readers that implement it."""
    spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
    spark.dataSource.register(PaimonDataSource)


#: The data source's own option names (module docstring; stream_source.py), as Spark hands
#: them over: lower case.
_OWN_OPTIONS = frozenset({"path", "paths", "partition-keys", "overwrite-partition",
                          "commit-user", "snapshot-id", "tag", "checkpointlocation"})


def _paimon_name(key: str) -> str:
    """Paimon's spelling of an option name Spark lower-cased (its option keys are case
    insensitive; Paimon's are not: 'variant.shreddingSchema'); other keys unchanged."""
    return _MIXED_CASE_NAMES.get(key.lower(), key)


_MIXED_CASE_NAMES = {n.lower(): n for n in CORE_OPTION_NAMES | OTHER_PAIMON_OPTION_NAMES
                     | set(OPTIONS) if n != n.lower()}


def _table_options(options: Mapping[str, str]) -> Dict[str, str]:
    table = {_paimon_name(k[len("paimon."):]): v for k, v in options.items()
             if k.startswith("paimon.")}
    for key in table:
        if is_storage_option(key):
            # Table options are stored in the schema, readable by every reader of the table.
            raise OptionError(
                f"option 'paimon.{key}' is a storage option, not a table option: give it as "
                f".option({key!r}, ...) (storage options are never written into the table)")
    return table


def _check_options(options: Mapping[str, str]) -> None:
    """Before any I/O: no branch (this library acts on main only), no credential stored, no
    near miss of a Paimon option name (a typo such as 'paimon.snapshot.num-retained.mn' would
    be stored in the table it creates and never acted on; 'snapshot.num-retained.mn' as a
    per-write option would be ignored): an OptionError with the suggestion, named as typed."""
    check_table_option_names(_table_options(options), "option", strict=True, prefix="paimon.")
    check_table_option_names(
        {_paimon_name(k): v for k, v in options.items()
         if not k.startswith("paimon.") and k.lower() not in _OWN_OPTIONS
         and not is_storage_option(k)}, "option", strict=True)
    check_branch_options(options, "the paimon data source", prefix="paimon.")


def _write_options(options: Mapping[str, str]) -> Dict[str, str]:
    """Per-write overrides: options named like a table option."""
    named = {_paimon_name(k): v for k, v in options.items()}
    return {k: v for k, v in named.items() if k in OPTIONS}


def _parse_spec(text: str, table: Table) -> Dict[str, Any]:
    spec: Dict[str, Any] = {}
    types = dict(zip(table.partition_keys, table.schema.partition_types))
    for part in [p for p in text.split(",") if p.strip()]:
        if "=" not in part:
            raise OptionError(f"option 'overwrite-partition' = {text!r}: expected k=v[,k=v]")
        k, v = part.split("=", 1)
        k = k.strip()
        if k not in types:
            raise OptionError(f"option 'overwrite-partition' = {text!r}: unknown partition key "
                              f"{k!r} (partition keys: {table.partition_keys})")
        spec[k] = ptypes.parse_python_value(v, types[k])
    if not spec:
        raise OptionError(f"option 'overwrite-partition' = {text!r}: empty spec")
    return spec


def _open_or_create(options: Mapping[str, str], schema: StructType) -> Table:
    path = options.get("path")
    if not path:
        raise OptionError("the paimon data source needs a table path: .save(PATH)")
    _check_options(options)
    try:
        return Table.open(path, storage_options=storage_options(options, path))
    except TableNotFoundError:
        keys = [k.strip() for k in options.get("partition-keys", "").split(",") if k.strip()]
        log.info("creating Paimon table %s partitioned by %s", path, keys)
        return Table.create(path, to_arrow_schema(schema), keys, _table_options(options),
                            storage_options=storage_options(options, path))


def _check_schema(table: Table, schema: StructType) -> None:
    """Names and types of the DataFrame must fit the table: checked on the driver, before any
    task writes a file."""
    target = table.arrow_schema()
    incoming = to_arrow_schema(schema)
    if sorted(incoming.names) != sorted(target.names):
        missing = [n for n in target.names if n not in incoming.names]
        extra = [n for n in incoming.names if n not in target.names]
        raise SchemaMismatchError(
            f"DataFrame does not match the schema of table {table.path}: missing columns "
            f"{missing}, unexpected columns {extra} (table columns: {target.names})")
    for f in target:
        got = incoming.field(f.name).type
        if got.equals(f.type):
            continue
        try:
            pa.array([], type=got).cast(f.type)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            raise SchemaMismatchError(
                f"column {f.name!r} is {got} in the DataFrame but {f.type} in table "
                f"{table.path}") from None


@dataclass
class PaimonWriterMessage(WriterCommitMessage):
    messages: List[CommitMessage] = field(default_factory=list)


def _write_task(path: str, iterator: Iterator[pa.RecordBatch],
                storage: Optional[Dict[str, str]] = None,
                marker: Optional[str] = None,
                check_aborted: bool = False) -> PaimonWriterMessage:
    """One Spark task: its rows as data files, named with the write's run marker (as the
    data-file.prefix of this task's table handle) so that the driver's abort finds them even
    when this task never returns (cancelled because another task failed).

    With `check_aborted` (batch writes), once every file of the task is closed and visible,
    the task looks for the abort record of its run (`_abort_record`): if the driver's abort
    has begun, the task deletes its own files and fails instead of returning them. The abort
    writes that record before it lists the bucket directories, so either the abort's listing
    sees this task's file or this check sees the record."""
    table = Table.open(path, storage_options=storage,
                       options={"data-file.prefix": marker} if marker else None)
    writer = table.new_writer()
    try:
        for batch in iterator:
            writer.write_arrow(batch)
        msgs = writer.prepare_commit()
    except BaseException:
        writer.abort()  # a failed task leaves no file behind
        raise
    if check_aborted and marker and msgs:
        _unless_aborted(table.store, marker, msgs)
    return PaimonWriterMessage(msgs)


class RunAbortedError(RuntimeError):
    """A task of a batch write finished its files after the driver began aborting the write:
    it deleted them (see _write_task)."""


def _unless_aborted(store, marker: str, msgs: List[CommitMessage]) -> None:
    """The task side of the abort handshake: the task's files (`msgs`, all closed and
    visible) are deleted, through the gate and only these, if the abort record of the run
    exists, or if whether it exists cannot be told; then RunAbortedError (or the error)."""
    from ..operations.abort import abort_files
    try:
        # Absent only on FileNotFoundError: `exists` answers False for any error on local
        # disk (os.path.exists), which let a task whose check failed return its files
        # (audit issue25o a1). One HEAD on object stores (no LIST for a directory).
        try:
            store.io.file_size(_abort_record(store.io, marker))
            aborted = True
        except FileNotFoundError:
            aborted = False
    except BaseException:
        abort_files(store, message_paths(store, msgs), handed_out=False)
        raise
    if aborted:
        deleted = abort_files(store, message_paths(store, msgs), handed_out=False).deleted
        raise RunAbortedError(
            f"the write of run {marker!r} to {store.path} is being aborted: this task's "
            f"{len(deleted)} file(s) deleted")


#: The directory of the abort records of failed Spark batch writes (with the lease records
#: and expiration markers: outside every directory Paimon, pypaimon and orphan cleanup list).
ABORT_RECORD_DIR = LEASE_DIR


def _abort_record(io, marker: str) -> str:
    """Where the abort of the write with run `marker` records that it has begun: a path every
    task of the write computes from the table root and the marker alone."""
    return io.join(io.root, ABORT_RECORD_DIR, "spark-aborted-" + marker.replace("/", "%2F"))


def _record_abort(store, marker: str) -> bool:
    """Write the abort record of run `marker` (before the abort lists the run's files).
    False, logged, when it cannot be written: the abort then relies on its two listings."""
    io = store.io
    record = _abort_record(io, marker)
    try:
        if getattr(io, "_resolver", None) is not None:   # local disk: never through a link
            import os
            import stat
            d = io.join(io.root, ABORT_RECORD_DIR)
            try:
                mode = os.lstat(d).st_mode
            except FileNotFoundError:
                mode = None
            if mode is not None and not stat.S_ISDIR(mode):
                raise OSError(f"{d} is not a directory")
        io.write_new(record, f"aborted {int(time.time() * 1000)}\n".encode())
    except FileExistsError:
        pass
    except OSError as e:
        log.warning("abort of %s: cannot write the abort record %s of run %s (%s); a task "
                    "still running may leave its file to orphan cleanup", store.path, record,
                    marker, e)
        return False
    return True


def _messages(messages: Sequence[Optional[PaimonWriterMessage]]) -> List[CommitMessage]:
    return [m for wm in messages if wm is not None for m in wm.messages]


def _abort(path: str, messages, commit_user: str, storage: Optional[Dict[str, str]] = None,
           since_snapshot: Optional[int] = None, batch_id: Optional[int] = None,
           marker: Optional[str] = None, record: bool = False) -> None:
    """Spark aborts when commit() raised, even if the snapshot was already published (e.g.
    the process died right after): the one abort (operations/abort.py) deletes nothing then,
    nor any file a snapshot, tag or changelog names.

    Spark hands the abort the messages of the tasks that returned only; a task cancelled
    mid-write when another one failed returns nothing and may still be closing its file.
    With a run `marker`, every file named with it is aborted too (found by listing the
    table's bucket directories), and the listing is repeated after RUN_SWEEP_GRACE_S, when
    Spark has stopped the cancelled tasks' Python workers (spark.python.task.killTimeout,
    2 s by default): a file such a task finished after the first listing is found then.

    With `record` (batch writes, whose run marker is fresh per write), the abort first writes
    the run's abort record (`_abort_record`), then lists: a task that closes its file after
    a listing finds the record and deletes its file itself (`_write_task`), so no ordering of
    the two sides leaves the file of a task that runs to its end. The record stays (a few
    bytes per failed write): a task still running after the abort returned must still find
    it, and no later write has the same run marker."""
    from ..operations.abort import abort_files
    table = Table.open(path, storage_options=storage)
    st = table.store
    if marker and record:
        _record_abort(st, marker)
    paths = message_paths(st, _messages(messages))
    sweeps = 2 if marker else 0
    while True:
        if marker:
            paths += _run_files(st, marker)
        result = abort_files(st, paths, commit_user=commit_user, since_snapshot=since_snapshot,
                             commit_identifier=batch_id)
        sweeps -= 1
        if sweeps <= 0 or result.reason is not None:   # published (or unknown): keep all
            return
        log.info("abort of %s: deleted %d file(s) of run %s; listing again in %.0f s for "
                 "files of tasks still being cancelled", st.path, len(result.deleted), marker,
                 RUN_SWEEP_GRACE_S)
        time.sleep(RUN_SWEEP_GRACE_S)
        paths = []


#: Seconds between the abort's two listings of a failed write's files (see _abort): past
#: Spark's default spark.python.task.killTimeout (2 s), after which a cancelled task's
#: Python worker is killed and writes no more.
RUN_SWEEP_GRACE_S = 3.0


def _run_files(store, marker: str) -> List[str]:
    """Paths of the data files named with a write's run marker, in every bucket directory
    of the table (the run id is fresh per write: no other writer's file matches). A
    directory that cannot be listed is skipped: its files are left for orphan cleanup."""
    from ..operations.orphan import CleanContext, OrphanFilesCleaner
    io = store.io
    try:
        buckets, _ = OrphanFilesCleaner(CleanContext(store.path, file_io=io)
                                        ).list_bucket_dirs()
    except OSError as e:
        log.warning("abort of %s: cannot list the table to remove the files of run %s: %s",
                    store.path, marker, e)
        return []
    out = []
    for b in buckets:
        try:
            statuses = io.list_status(b.path)
        except OSError as e:
            log.warning("abort of %s: cannot list %s to remove the files of run %s: %s",
                        store.path, b.path, marker, e)
            continue
        out.extend(s.path for s in statuses if not s.is_dir and s.name.startswith(marker))
    return out


def _commit_then_maintain(commit_call, c) -> None:
    """Publish, then maintain. A maintenance failure after the snapshot is published must not
    fail the Spark job: Spark would abort (or retry, duplicating an append) a write that is
    already visible. It is logged instead."""
    try:
        commit_call()
    except Exception as e:  # noqa: BLE001
        published = c.last_result is not None and c.last_result.snapshot_id is not None
        if not published:
            raise
        log.error("snapshot %d of %s was published, but post-commit maintenance failed: %r",
                  c.last_result.snapshot_id, c.store.path, e)


class PaimonBatchWriter(DataSourceArrowWriter):
    def __init__(self, options: Mapping[str, str], schema: StructType, overwrite: bool):
        self.write_options = _write_options(options)
        table = _open_or_create(options, schema)
        table.store.check_writable()  # on the driver, before any task writes a file
        _check_schema(table, schema)
        check_commit_options(self.write_options, table.schema, f"write options of {table.path}")
        validate_options({**table.options, **self.write_options})
        self.path = table.path
        self.storage = storage_options(options, options.get("path"))  # s3.endpoint, ...
        self.overwrite = overwrite
        self.static = _parse_spec(options["overwrite-partition"], table) \
            if options.get("overwrite-partition") else None
        if self.static is not None and not overwrite:
            raise OptionError("option 'overwrite-partition' needs mode('overwrite')")
        self.commit_user = options.get("commit-user") or str(uuid.uuid4())
        # 0 for an empty table: any snapshot of this commit user from now on is this write's.
        self.base_snapshot_id = table.store.snapshots.latest_snapshot_id() or 0
        # Every file of this write is named with this marker (as Spark compaction names its
        # files): the abort finds those of tasks that never returned. Fresh per write.
        self.run_id = uuid.uuid4().hex[:16]
        self.marker = f"{table.store.options['data-file.prefix']}spark-{self.run_id}-"

    def write(self, iterator: Iterator[pa.RecordBatch]) -> PaimonWriterMessage:
        return _write_task(self.path, iterator, self.storage, self.marker,
                           check_aborted=True)

    def commit(self, messages) -> None:
        table = Table.open(self.path, storage_options=self.storage)
        msgs = _messages(messages)
        with table.new_commit(self.commit_user, self.write_options) as c:
            if self.overwrite:
                _commit_then_maintain(lambda: c.overwrite(msgs, partition=self.static), c)
            else:
                _commit_then_maintain(lambda: c.commit(msgs), c)

    def abort(self, messages) -> None:
        _abort(self.path, messages, self.commit_user, self.storage,
               since_snapshot=self.base_snapshot_id, marker=self.marker, record=True)


class PaimonStreamWriter(DataSourceStreamArrowWriter):
    def __init__(self, options: Mapping[str, str], schema: StructType, overwrite: bool):
        if overwrite:
            raise OptionError("the paimon sink supports append output mode only")
        self.write_options = _write_options(options)
        table = _open_or_create(options, schema)
        table.store.check_writable()  # on the driver, before any task writes a file
        _check_schema(table, schema)
        check_commit_options(self.write_options, table.schema, f"write options of {table.path}")
        validate_options({**table.options, **self.write_options})
        self.path = table.path
        self.storage = storage_options(options, options.get("path"))  # s3.endpoint, ...
        self.commit_user = options.get("commit-user") or \
            _checkpoint_commit_user(options.get("checkpointLocation"))
        # The start of every file name of this stream; a task adds its batch id (see
        # _batch_marker). The same in every instance: Spark builds this writer anew for the
        # tasks, for each commit and for each abort.
        tag = _stream_tag(self.commit_user, options.get("checkpointLocation"))
        self.stream_marker = f"{table.store.options['data-file.prefix']}spark-stream-{tag}-"

    def _batch_marker(self, batch_id: int) -> str:
        return f"{self.stream_marker}{int(batch_id)}-"

    def write(self, iterator: Iterator[pa.RecordBatch]) -> PaimonWriterMessage:
        batch_id = _task_batch_id()
        if batch_id is None:   # not run by a micro-batch as we know it: unmarked, as before
            log.warning("stream write to %s: the task has no %s; its files are not named by "
                        "batch, and a failed batch's cancelled tasks leave theirs to orphan "
                        "cleanup", self.path, BATCH_ID_KEY)
        return _write_task(self.path, iterator, self.storage,
                           self._batch_marker(batch_id) if batch_id is not None else None)

    def commit(self, messages, batchId: int) -> None:
        table = Table.open(self.path, storage_options=self.storage)
        msgs = _messages(messages)
        with table.new_commit(self.commit_user, self.write_options) as c:
            if not c.filter_committed([batchId]):
                # A replay of a batch that was published before the query died: its new files
                # are duplicates and never become visible.
                log.info("batch %d of %s is already committed; dropping the replay", batchId,
                         self.commit_user)
                c.abort(msgs)
                return
            _commit_then_maintain(lambda: c.commit(msgs, commit_identifier=batchId), c)

    def abort(self, messages, batchId: int) -> None:
        """Delete the failed micro-batch's files: those of the tasks that returned and, by
        the batch marker in their names, those of tasks cancelled mid-write. Only files of
        this batch id of this stream carry the marker: earlier batches' files (committed,
        maybe compacted and expired since) never match it. Nothing is deleted if this commit
        user already committed `batchId` (a replay of a published batch), nor any file a
        snapshot, tag or changelog names (the one abort). Not under the maintenance lease:
        docs/safety.md, finding 9.

        No abort record (the batch writes' handshake, _write_task): a batch marker repeats
        when a restarted stream replays the batch, and a record left by an abort that died
        before removing it would make every task of every replay delete its files and fail.
        A task of a failed micro-batch that finishes its file after both listings leaves it
        to orphan cleanup."""
        _abort(self.path, messages, self.commit_user, self.storage, batch_id=batchId,
               marker=self._batch_marker(batchId))


#: The local property Spark's micro-batch execution sets on the jobs of a batch
#: (MicroBatchExecution.BATCH_ID_KEY); tasks read it from their TaskContext.
BATCH_ID_KEY = "streaming.sql.batchId"


def _task_batch_id() -> Optional[int]:
    """The micro-batch id of the running Spark task, or None outside one."""
    from pyspark import TaskContext
    ctx = TaskContext.get()
    value = ctx.getLocalProperty(BATCH_ID_KEY) if ctx is not None else None
    return int(value) if value is not None and value.isdigit() else None


def _stream_tag(commit_user: str, checkpoint: Optional[str]) -> str:
    """16 hex digits naming one stream (its commit user and checkpoint): the files of two
    streams never share a batch marker, even with one explicit commit user, while a restart
    of a stream (same checkpoint) keeps its tag, so its abort of a replayed batch also finds
    what the crashed run wrote for that batch."""
    import hashlib
    return hashlib.sha256(f"{commit_user}\n{checkpoint or ''}".encode()).hexdigest()[:16]


def _checkpoint_commit_user(checkpoint: Optional[str]) -> str:
    """The commit user lives in the checkpoint, so a restarted query recognises its own
    snapshots."""
    if not checkpoint:
        raise OptionError("a streaming write to paimon needs option 'checkpointLocation' (or "
                          "an explicit 'commit-user')")
    from ..io import for_path as file_io_for_path
    io = file_io_for_path(checkpoint)
    path = io.join(io.root, "paimon-commit-user")
    try:
        return io.read_bytes(path).decode().strip()
    except FileNotFoundError:
        io.mkdirs(io.root)
        io.try_create_atomic(path, str(uuid.uuid4()).encode())
        return io.read_bytes(path).decode().strip()


# --- reading -------------------------------------------------------------------------------

@dataclass
class _FilePartition(InputPartition):
    paths: List[Tuple[str, Dict[str, Any]]]


class PaimonReader(DataSourceReader):
    def __init__(self, options: Mapping[str, str], schema: StructType):
        self.path = redact_uri(options["path"])
        self.storage = storage_options(options, options["path"])
        self.snapshot_id = int(options["snapshot-id"]) if options.get("snapshot-id") else None
        self.tag = options.get("tag")
        self.schema = schema
        self.filters: List[Filter] = []

    def pushFilters(self, filters: List[Filter]):
        keys = set(Table.open(self.path, storage_options=self.storage).partition_keys)
        for f in filters:
            if isinstance(f, (EqualTo, In, GreaterThan, GreaterThanOrEqual, LessThan,
                              LessThanOrEqual, IsNull, IsNotNull)) \
                    and len(f.attribute) == 1 and f.attribute[0] in keys:
                self.filters.append(f)  # used to prune files; Spark still re-checks rows
            yield f

    def _keep(self, partition: Dict[str, Any]) -> bool:
        for f in self.filters:
            v = partition[f.attribute[0]]
            try:
                if isinstance(f, IsNull):
                    ok = v is None
                elif isinstance(f, IsNotNull):
                    ok = v is not None
                elif v is None:
                    ok = False
                elif isinstance(f, EqualTo):
                    ok = v == f.value
                elif isinstance(f, In):
                    ok = v in f.value
                elif isinstance(f, GreaterThan):
                    ok = v > f.value
                elif isinstance(f, GreaterThanOrEqual):
                    ok = v >= f.value
                elif isinstance(f, LessThan):
                    ok = v < f.value
                else:
                    ok = v <= f.value
            except TypeError:
                ok = True  # incomparable literal: never prune on doubt
            if not ok:
                return False
        return True

    def partitions(self) -> Sequence[InputPartition]:
        table = Table.open(self.path, storage_options=self.storage)
        table.store.check_readable(table.resolve_snapshot(self.snapshot_id, self.tag))
        files = [f for f in table.live_files(self.snapshot_id, self.tag)
                 if self._keep(f.partition)]
        self.pruned_files = len(files)
        # About one Spark partition per file; tiny files grouped so tasks are not trivial.
        groups: List[List[Tuple[str, Dict[str, Any]]]] = []
        size = 0
        for f in sorted(files, key=lambda f: f.path):
            if not groups or size >= 64 << 20:
                groups.append([])
                size = 0
            groups[-1].append((f.path, f.partition))
            size += f.file_size
        return [_FilePartition(g) for g in groups]

    def read(self, partition: _FilePartition) -> Iterator[pa.RecordBatch]:
        from ..io import for_path as file_io_for_path
        from ..read import read_data_file
        table_schema = to_arrow_schema(self.schema)
        io = file_io_for_path(self.path, self.storage)
        for path, values in partition.paths:
            yield from read_data_file(io, path, values, table_schema).to_batches()


class PaimonDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return "paimon"

    def schema(self):
        path = self.options.get("path")
        if not path:
            raise OptionError("the paimon data source needs a table path: .load(PATH)")
        _check_options(self.options)
        return from_arrow_schema(
            Table.open(path, storage_options=storage_options(self.options, path)).arrow_schema())

    def reader(self, schema: StructType) -> PaimonReader:
        return PaimonReader(self.options, schema)

    def writer(self, schema: StructType, overwrite: bool) -> PaimonBatchWriter:
        return PaimonBatchWriter(self.options, schema, overwrite)

    def streamWriter(self, schema: StructType, overwrite: bool) -> PaimonStreamWriter:
        return PaimonStreamWriter(self.options, schema, overwrite)

    def streamReader(self, schema: StructType):
        # Paimon's streaming scan of an append table (skips COMPACT snapshots): stream_source.
        from .stream_source import PaimonStreamReader
        return PaimonStreamReader(self.options, schema)
