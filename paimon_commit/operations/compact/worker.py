"""One bin in a worker process, forked (pool.py) or started as a fresh interpreter (spawn.py),
and what the worker sends back.

A worker never raises for its bin's own failure: it deletes the files it finished (they were
never handed to a commit) and returns the error with the paths it deleted, so that the
parent's deletion log and abort know what went. A worker that dies mid-bin is found by the
parent, which deletes the bin's files by their unique name (`sweep`).

A spawned worker (`serve`) reads its messages on stdin and answers on stdout, each a pickle
after its length: first the parent's sys.path (so that it imports this very package), then
what it makes its BinRewriter of (rewriter_message); it answers "ready", then one BinOutcome per bin it is sent, until
stdin closes."""
from __future__ import annotations

import logging
import os
import pickle
import struct
import sys
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, BinaryIO, List, Optional, Sequence, Tuple

from ...format.manifest import DataFileMeta, FileKind, ManifestEntry
from ...store import FileStore
from .plan import CompactTask
from .result import CompactionError
from .rewrite import BinRewriter, Ratio, Rewritten

log = logging.getLogger(__name__)

__all__ = ["BinOutcome", "rewrite_in_worker", "sweep", "serve", "send", "receive",
           "task_message", "rewriter_message"]


@dataclass
class BinOutcome:
    """What a worker process returns for one bin: its new files (or the error it raised,
    after deleting what it wrote) and the files it deleted (for the parent's deletion log)."""
    files: List[DataFileMeta] = field(default_factory=list)
    paths: List[str] = field(default_factory=list)
    deleted: List[str] = field(default_factory=list)
    inputs: int = 0
    outputs: int = 0
    error: Optional[BaseException] = None


def rewrite_in_worker(rewriter: BinRewriter, task: CompactTask, ratio: Ratio, name: str,
                      io_pool: Executor) -> BinOutcome:
    """In a worker process: rewrite `task` (new files named after `name`); never raises for
    the bin's own failure (see the module docstring)."""
    io = rewriter.store.io
    io.deletion_log = []
    out = Rewritten(task, [], [])
    result = BinOutcome()
    learned = Ratio()
    try:
        rewriter.rewrite_task(task, _Combined(ratio, learned), out, io_pool, name)
        result.files, result.paths = out.files, out.paths
    except BaseException as e:  # noqa: BLE001 - returned to the parent, which raises it
        if out.paths:
            from ..abort import abort_files
            abort_files(rewriter.store, out.paths, handed_out=False)
        result.error = picklable(e)
    result.deleted = list(io.deletion_log)
    result.inputs, result.outputs = learned.inputs, learned.outputs
    return result


class _Combined(Ratio):
    """The parent's ratio (read) and this bin's own learning (written), in a worker."""

    def __init__(self, known: Ratio, learned: Ratio):
        super().__init__(known.inputs, known.outputs)
        self.learned = learned

    def learn(self, input_bytes: int, output_bytes: int) -> None:
        super().learn(input_bytes, output_bytes)
        self.learned.learn(input_bytes, output_bytes)


def picklable(e: BaseException) -> BaseException:
    try:
        pickle.loads(pickle.dumps(e))
        return e
    except Exception:  # noqa: BLE001 - an error that cannot cross processes: its text can
        return CompactionError(f"{type(e).__name__}: {e}")


def sweep(store: FileStore, task: CompactTask, name: str) -> int:
    """Delete the files a dead worker wrote for `task` (named `<prefix><name>-<n>.parquet`
    in the partition's bucket directory); their number."""
    from ..abort import abort_files
    prefix = f"{store.options['data-file.prefix']}{name}-"
    directory = store.bucket_dir(task.values, 0)
    try:
        paths = [store.io.join(directory, n) for n in store.io.list_names(directory)
                 if n.startswith(prefix)]
    except Exception as e:  # noqa: BLE001 - left to orphan cleanup
        log.warning("compaction of %s: cannot list %s to remove a dead worker's files: %s",
                    store.path, directory, e)
        return 0
    return len(abort_files(store, paths, handed_out=False).deleted)


# --- the spawned worker's messages ------------------------------------------------------
_LENGTH = struct.Struct(">Q")


def send(stream: BinaryIO, obj: Any) -> None:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_LENGTH.pack(len(data)))
    stream.write(data)
    stream.flush()


def receive(stream: BinaryIO) -> Any:
    """The next message; EOFError when the other side has gone (closed or died)."""
    head = _read_exactly(stream, _LENGTH.size)
    return pickle.loads(_read_exactly(stream, _LENGTH.unpack(head)[0]))


def _read_exactly(stream: BinaryIO, n: int) -> bytes:
    parts, left = [], n
    while left:
        part = stream.read(left)
        if not part:
            raise EOFError("the other side of a compaction worker's pipe has gone")
        parts.append(part)
        left -= len(part)
    return parts[0] if len(parts) == 1 else b"".join(parts)


def rewriter_message(rewriter: BinRewriter) -> Tuple[Any, ...]:
    """What a spawned worker builds its BinRewriter from: the store's parts that pickle
    (its manifest reader holds a lock and is made again there, as on a Spark executor), with
    the compaction's options (the table's and the dynamic ones)."""
    import copy
    st = rewriter.store
    io = copy.copy(st.io)
    io.deletion_log = None    # the worker keeps one per bin and reports it
    return (st.path, io, st.schema, st.options, rewriter.target_file_size,
            dict(rewriter.schemas))


def _rewriter(path: str, io: Any, schema: Any, options: Any, target_file_size: int,
              schemas: Any) -> BinRewriter:
    from dataclasses import replace
    store = replace(FileStore.from_schema(path, io, schema), options=options)
    return BinRewriter(store, target_file_size, schemas)


# A bin for a spawned worker: of each input file only what rewrite_task reads. Pickling the
# whole manifest entries cost the parent (which pays it holding the interpreter lock its own
# bins need) 2.5 times as much, 5.9 vs 2.4 us a file, for three times the bytes.
def task_message(index: int, name: str, ratio: Ratio, task: CompactTask) -> Tuple[Any, ...]:
    """One bin for a spawned worker."""
    files = [(e.partition, e.bucket, e.total_buckets, f.file_name, f.file_size, f.row_count,
              f.schema_id, f.min_sequence_number, f.creation_time, f.external_path)
             for e in task.files for f in (e.file,)]
    return index, name, (ratio.inputs, ratio.outputs), task.partition, task.values, files


def _task(partition: bytes, values: Tuple[Any, ...], files: Sequence[Tuple[Any, ...]]
          ) -> CompactTask:
    entries = tuple(ManifestEntry(FileKind.ADD, p, bucket, total, DataFileMeta(
        file_name=name, file_size=size, row_count=rows, schema_id=schema_id,
        min_sequence_number=seq, max_sequence_number=seq, creation_time=created,
        external_path=external))
        for p, bucket, total, name, size, rows, schema_id, seq, created, external in files)
    return CompactTask(partition, values, entries)


def serve() -> None:
    """The main loop of a spawned worker (see the module docstring)."""
    # Our answers keep the real stdout to themselves: anything printed in this process
    # (a library's stray print) goes to stderr instead of corrupting a message.
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    inp = sys.stdin.buffer
    rewriter = _rewriter(*receive(inp))
    send(out, ("ready", os.getpid()))
    # One thread reads and parses the next files while this one writes, as a forked worker.
    io_pool = ThreadPoolExecutor(1)
    while True:
        try:
            index, name, (inputs, outputs), partition, values, files = receive(inp)
        except (EOFError, KeyboardInterrupt):
            # The parent is done with us (or gone); or Ctrl-C reached the whole process
            # group between two bins: the parent sees it too, nothing here to clean up.
            return
        task = _task(partition, values, files)
        send(out, rewrite_in_worker(rewriter, task, Ratio(inputs, outputs), name, io_pool))
