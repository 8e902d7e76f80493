"""Spreading the bins of a compaction over worker processes or threads.

Bins are independent. Decoding thousands of tiny parquet files is CPU work that holds the GIL
for part of every file, so on local storage the bins run in worker processes:

* forked (one per CPU by default, each reading its next files on a second thread while it
  writes) when the process is safe to fork: no other thread runs (a fork copies only the
  forking thread, and a lock another thread held would stay locked in the child forever).
  Each worker writes its bins' files itself and returns only their metadata; the tasks are
  inherited, not sent.
* otherwise, when the work is worth a fresh interpreter's start-up (SPAWN_MIN_SECONDS),
  spawned (spawn.py): this thread rewrites bins from the start and fresh interpreters join
  as they come up, safe whatever threads run here.

Else (an object store, whose client runs threads and connection pools a fork does not carry
over and whose reads wait on requests; one CPU or one bin; little work) the bins run on
threads, and a shared I/O pool fetches their input files ahead (on an object store every
small file is a request)."""
from __future__ import annotations

import logging
import multiprocessing
import os
import threading
import uuid
import warnings
from concurrent.futures import FIRST_EXCEPTION, Future, ProcessPoolExecutor, \
    ThreadPoolExecutor, as_completed, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Callable, Dict, List, Optional, Sequence

from ...io.metered import ContextExecutor
from ...store import FileStore
from .plan import CompactTask
from .result import CompactionError
from .rewrite import BinRewriter, Ratio, Rewritten
from .spawn import SpawnedWorker, rewrite_spawned, start_workers, stop_workers
from .worker import BinOutcome, rewrite_in_worker, sweep

log = logging.getLogger(__name__)

__all__ = ["rewrite_bins", "start_workers_early"]

#: Input files fetched at once by all bins together on a remote storage (requests in flight).
READ_THREADS = 16


def rewrite_bins(rewriter: BinRewriter, tasks: Sequence[CompactTask], workers: int,
                 done: List[Rewritten], on_files: Callable[[int], None],
                 processes: Optional[bool] = None,
                 started: Sequence[SpawnedWorker] = ()) -> None:
    """Rewrite every task, appending a Rewritten per task to `done` (also the ones of tasks
    that failed halfway: the caller's abort deletes what they wrote). Raises the first
    failure, after the bins already running have finished.

    `workers`: bins at once. `processes`: None decides (worker processes on local storage
    with at least two bins and two workers: forked when the process can be forked safely,
    spawned when the work is worth their start-up), False always uses threads (e.g. inside
    a Spark executor), True asks for processes wherever they are safe, whatever the work.
    `started`: spawned workers started before planning (start_workers_early); used when the
    bins are spawned, stopped otherwise."""
    workers = max(1, min(workers, len(tasks)))
    if tasks and processes is not False and workers > 1 and _local(rewriter.store):
        if _can_fork(rewriter.store):
            stop_workers(started)
            if _rewrite_in_processes(rewriter, tasks, workers, done, on_files):
                return
        elif processes or started or _worth_spawning(tasks):
            rewrite_spawned(rewriter, tasks, workers, done, on_files,
                            _learn_first(rewriter, tasks), started)
            return
    stop_workers(started)
    if tasks:
        _rewrite_in_threads(rewriter, tasks, workers, done, on_files)


def start_workers_early(rewriter: BinRewriter, workers: int) -> List[SpawnedWorker]:
    """Before planning a compaction of the whole table: the spawned workers its bins would
    get (see rewrite_bins), started now, so that they import while this thread plans (on 2
    loaded cores, a worker's start-up took 0.35 s of CPU and planning 10,000 files 0.15 to
    0.5 s). Only where they would be
    spawned (local storage, a process that cannot fork, two workers or more) and the table
    has enough live files for spawning to be worth it (its manifest lists say how many;
    planning reads them next anyway, from the cache). Empty otherwise."""
    st = rewriter.store
    if workers < 2 or not _local(st) or _can_fork(st):
        return []
    latest = st.snapshots.latest_snapshot()
    if latest is None:
        return []
    metas = st.manifests.read_list(latest.base_manifest_list) + \
        st.manifests.read_list(latest.delta_manifest_list)
    live = sum(m.num_added_files - m.num_deleted_files for m in metas)
    if live * SECONDS_PER_FILE < SPAWN_MIN_SECONDS:
        return []
    return start_workers(rewriter, workers - 1)


def _local(store: FileStore) -> bool:
    from ...io.local import LocalFileIO
    return isinstance(store.io, LocalFileIO)


#: Spawned workers are started only for work of at least this many seconds on one core (as
#: estimated by _work_seconds): a worker takes a few tenths of a second of a core to start
#: (a fresh interpreter importing pyarrow and this package) before it rewrites anything.
SPAWN_MIN_SECONDS = 1.0
#: The estimate's costs, rounded (it only needs the order of magnitude): a small file's
#: open, decode and share of the write, measured at 0.2 to 0.27 ms of CPU on 2 loaded cores
#: (bench_compact's small files, 128 to a bin) and ~0.15 ms idle; and the stored bytes
#: rewritten per second of a core beyond that: bench_compact's large case (10,000 files,
#: 60 MB, 10M rows) took 3.66 s on 2 cores, about 5 s of CPU beyond its files' 1.5 s.
SECONDS_PER_FILE = 150e-6
BYTES_PER_SECOND = 12e6


def _work_seconds(tasks: Sequence[CompactTask]) -> float:
    files = sum(len(t.files) for t in tasks)
    return files * SECONDS_PER_FILE + sum(t.input_bytes for t in tasks) / BYTES_PER_SECOND


def _worth_spawning(tasks: Sequence[CompactTask]) -> bool:
    """Whether the bins are enough work to pay for starting worker interpreters (this thread
    works meanwhile, so little is lost when they come too late; but a start-up costs a core
    that a busy machine may not have spare)."""
    return _work_seconds(tasks) >= SPAWN_MIN_SECONDS


def _read_threads(store: FileStore) -> int:
    """Reading a local file is parsing it (CPU: more threads than CPUs only contend for
    the GIL, measured 1.4x slower with 16 on 2 CPUs); on other storages each read waits
    on a request, and many in flight pay off."""
    from ...io.local import LocalFileIO
    if isinstance(store.io, LocalFileIO):
        return os.cpu_count() or 1
    return READ_THREADS


def _rewrite_in_threads(rewriter: BinRewriter, tasks: Sequence[CompactTask], workers: int,
                        done: List[Rewritten], on_files: Callable[[int], None]) -> None:
    ratio = Ratio()
    rewriter.on_file = on_files
    io_pool = ContextExecutor(_read_threads(rewriter.store))
    bin_pool = ContextExecutor(workers) if workers > 1 else None

    def one(task: CompactTask) -> None:
        out = Rewritten(task, [], [])
        done.append(out)  # first: the caller's abort finds the files of a task failing halfway
        rewriter.rewrite_task(task, ratio, out, io_pool)

    try:
        rest = tasks
        if _learn_first(rewriter, tasks):
            one(tasks[0])
            rest = tasks[1:]
        if bin_pool is None:
            for task in rest:
                one(task)
        else:
            futures = [bin_pool.submit(one, task) for task in rest]
            # The first failure stops the bins not started; the running ones finish
            # (or fail) before the caller's abort looks for their files.
            wait(futures, return_when=FIRST_EXCEPTION)
            for f in futures:
                f.cancel()
            wait(futures)
            for f in futures:
                if not f.cancelled() and f.exception() is not None:
                    raise f.exception()
    finally:
        rewriter.on_file = None
        if bin_pool is not None:
            bin_pool.shutdown(wait=True, cancel_futures=True)
        io_pool.shutdown(wait=True, cancel_futures=True)


#: A bin is cut into several files only when its inputs hold at least the target size once
#: converted by the learned stored-bytes ratio (see rewrite.Ratio); below
#: 1 / RATIO_BOUND of the target, a bin is one file for any ratio up to RATIO_BOUND.
RATIO_BOUND = 4


def _learn_first(rewriter: BinRewriter, tasks: Sequence[CompactTask]) -> bool:
    """Whether the first bin runs alone, so that the stored size per input byte it learns
    sizes the files of the others: only when some bin is large enough to be cut. Otherwise
    (many small files: every bin becomes one file) all bins start at once, and no core
    waits for the first."""
    return any(t.input_bytes * RATIO_BOUND >= rewriter.target_file_size for t in tasks)


# The rewriter and the tasks of the forked workers: set in the parent just before the fork,
# inherited by the children's memory (nothing of them is pickled: pickling the 10,000
# manifest entries of a compaction's tasks there and back cost 0.25 CPU seconds).
_WORKER_REWRITER: Optional[BinRewriter] = None
_WORKER_TASKS: Sequence[CompactTask] = ()
_FORK_LOCK = threading.Lock()
_WORKER_IO: Optional[ThreadPoolExecutor] = None


def _can_fork(store: FileStore) -> bool:
    """Local storage (an object store's client runs its own threads and connection pools,
    which a fork does not carry over), a platform with fork, and no thread beyond those
    pyarrow starts at import (Python's or native, e.g. an S3 client's, counted as the OS
    sees them): a fork copies only the forking thread, so a lock another thread holds at
    that moment (a logging handler's, this library's, a client's) would stay locked in the
    child forever. The same rule as the warehouse's worker processes."""
    return (_local(store)
            and "fork" in multiprocessing.get_all_start_methods()
            and threading.active_count() == 1
            and 0 < _os_threads() <= _BASE_THREADS)


def _os_threads() -> int:
    """Threads of this process as the OS sees them (native ones included); 0 if unknown."""
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return 0


# pyarrow (imported above) starts its allocator's background thread at import; those are
# fork-aware. More threads than at this module's import (and than pyarrow's 3 with the main
# one, if this module is imported late) means someone else started some.
_BASE_THREADS = min(max(_os_threads(), 1), 3)


def _worker_rewrite(index: int, ratio: Ratio, name: str) -> BinOutcome:
    """In a forked worker process: bin `index` of _WORKER_TASKS (worker.rewrite_in_worker:
    never raises for the bin's own failure)."""
    rewriter = _WORKER_REWRITER
    assert rewriter is not None, "compaction worker started without its rewriter"
    global _WORKER_IO
    if _WORKER_IO is None:
        # One thread reads and parses the next files while this one writes.
        _WORKER_IO = ContextExecutor(1)
    return rewrite_in_worker(rewriter, _WORKER_TASKS[index], ratio, name, _WORKER_IO)


def _rewrite_in_processes(rewriter: BinRewriter, tasks: Sequence[CompactTask], workers: int,
                          done: List[Rewritten], on_files: Callable[[int], None]) -> bool:
    """The bins in forked worker processes. False (nothing done) when the pool cannot be
    started: the caller then uses threads."""
    global _WORKER_REWRITER, _WORKER_TASKS
    st = rewriter.store
    names = [f"{uuid.uuid4()}" for _ in tasks]
    pool: Optional[ProcessPoolExecutor] = None
    with _FORK_LOCK:
        _WORKER_REWRITER, _WORKER_TASKS = rewriter, tasks
        try:
            with warnings.catch_warnings():
                # Python >= 3.12 warns about forking a process with OS threads; Arrow's own
                # (its memory allocator's) are fork-safe, and no other Python thread runs.
                warnings.simplefilter("ignore", DeprecationWarning)
                pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context(
                    "fork"))
                first = pool.submit(_worker_rewrite, 0, Ratio(), names[0])
        except Exception as e:  # noqa: BLE001 - e.g. no processes allowed: threads then
            log.info("compaction of %s: worker processes unavailable (%s); using threads",
                     st.path, e)
            if pool is not None:
                pool.shutdown(wait=True, cancel_futures=True)
            _WORKER_REWRITER, _WORKER_TASKS = None, ()
            return False
    ratio = Ratio()
    futures: Dict[Future, int] = {}
    error: Optional[BaseException] = None
    learn_first = _learn_first(rewriter, tasks)
    # Every submitted bin is in `futures` from its submit on: the cleanup below collects
    # (and so sweeps or aborts) the files of any bin not collected when something fails,
    # the first bin's included, even if a later submit raises.
    futures[first] = 0
    try:
        pending: Dict[Future, int] = {}
        if learn_first:
            error = _collect(first, 0, tasks, names, done, ratio, on_files, rewriter)
        else:
            pending[first] = 0
        if error is None:
            for i in range(1, len(tasks)):
                f = pool.submit(_worker_rewrite, i, ratio, names[i])
                futures[f] = pending[f] = i
            for f in as_completed(pending):
                error = _collect(f, pending[f], tasks, names, done, ratio, on_files, rewriter)
                if error is not None:
                    break
    except BaseException as e:   # interrupted while waiting: stop, then raise
        error = e
    finally:
        if error is not None:
            # The bins not started are dropped; the running ones finish, and their files
            # go to `done` for the caller's abort.
            for f in futures:
                f.cancel()
            for f, i in futures.items():
                if not f.cancelled():
                    try:
                        wait([f])
                    except BaseException:  # noqa: BLE001 - a second interrupt: stop waiting
                        break
                    if f.done() and not _collected(done, tasks[i]):
                        _collect(f, i, tasks, names, done, ratio, on_files, rewriter)
        pool.shutdown(wait=True, cancel_futures=True)
        with _FORK_LOCK:
            _WORKER_REWRITER, _WORKER_TASKS = None, ()
    if isinstance(error, BrokenProcessPool):   # raised by a submit, not by one bin
        raise CompactionError(
            f"compaction of {st.path}: a worker process died ({error}); the files its bins "
            f"wrote were deleted; nothing is committed") from error
    if error is not None:
        raise error
    return True


def _collected(done: List[Rewritten], task: CompactTask) -> bool:
    return any(r.task is task for r in done)


def _collect(f: Future, i: int, tasks: Sequence[CompactTask], names: List[str],
             done: List[Rewritten], ratio: Ratio, on_files: Callable[[int], None],
             rewriter: BinRewriter) -> Optional[BaseException]:
    """Record one bin's outcome; its error (None if it succeeded)."""
    task = tasks[i]
    st = rewriter.store
    try:
        r: BinOutcome = f.result()
    except BrokenProcessPool as e:
        # The worker died (killed, out of memory): the files it was writing are found by
        # their names and deleted (never handed to a commit).
        gone = sweep(st, task, names[i])
        return CompactionError(
            f"compaction of {st.path}: the worker process rewriting "
            f"{len(task.files)} files of partition {st.partition_dict(task.values)} "
            f"died ({e}); deleted the {gone} file(s) it had written; nothing is committed")
    if st.io.deletion_log is not None:
        st.io.deletion_log.extend(r.deleted)
    done.append(Rewritten(task, r.files, r.paths))
    if r.error is not None:
        return r.error
    ratio.learn(r.inputs, r.outputs)
    on_files(len(task.files))
    return None
