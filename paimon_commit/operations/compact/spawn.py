"""The bins of a compaction on this thread and in spawned worker processes at once: compaction
that uses every core in a process that cannot fork.

A fork copies only the forking thread, so pool.py forks only while no other thread runs.
Otherwise threads share one interpreter lock, and decoding small files holds it for part of
every file: the bins on threads use little more than one core. Here the calling thread
rewrites bins itself from the start, while `workers - 1` fresh interpreters start (a new
process started by subprocess: safe whatever threads run here, as it copies none of them
and never imports the caller's __main__, which multiprocessing's spawn and forkserver
re-run in every child). Each worker, once it has imported this package (a few tenths of a
second), takes the next bin not taken, until none is left; nothing waits for a worker, so a
compaction smaller than a worker's start-up is simply done by this thread.

A bin fails in a worker as in a forked one (worker.py): its files are deleted there, the
error comes back. A worker that dies mid-bin is found by its closed pipe; the bin's files
are deleted by their unique name. The first failure stops the taking of bins; the bins
running finish, and their files are in `done` for the caller's abort."""
from __future__ import annotations

import logging
import os
import pickle
import subprocess
import sys
import threading
import uuid
from collections import deque
from typing import Callable, Deque, List, Optional, Sequence, Tuple

from ...io.metered import ContextExecutor
from .plan import CompactTask
from .result import CompactionError
from .rewrite import BinRewriter, Ratio, Rewritten
from .worker import BinOutcome, receive, rewriter_message, send, sweep, task_message

log = logging.getLogger(__name__)

__all__ = ["rewrite_spawned", "SpawnedWorker", "start_workers", "stop_workers"]

# The worker's first message is the parent's sys.path and the directories of this package
# (read before anything is imported), so that it runs the parent's very files (not another
# copy on its path, a checkout vs. an installed one) with the parent's dependencies. The
# packages on the way to worker.py are made without running their __init__ (which imports
# the whole library, the table and every operation: a third of the start-up's CPU).
_BOOT = """
import importlib.util, pickle, struct, sys
r = sys.stdin.buffer
n = struct.unpack(">Q", r.read(8))[0]
path, packages = pickle.loads(r.read(n))
sys.path[:] = path
for name, directory in packages:
    spec = importlib.util.spec_from_file_location(
        name, directory + "/__init__.py", submodule_search_locations=[directory])
    sys.modules[name] = importlib.util.module_from_spec(spec)
from paimon_commit.operations.compact.worker import serve
serve()
"""


def _packages() -> List[Tuple[str, str]]:
    """(name, directory) of paimon_commit, its operations and this package."""
    here = os.path.dirname(os.path.abspath(__file__))
    ops = os.path.dirname(here)
    return [("paimon_commit", os.path.dirname(ops)), ("paimon_commit.operations", ops),
            ("paimon_commit.operations.compact", here)]


class SpawnedWorker:
    """One worker process and its pipes, driven by one dispatching thread."""

    def __init__(self, rewriter_blob: bytes):
        self._lock = threading.Lock()
        self.started = False      # answered "ready": it may be running a bin from now on
        self.abandoned = False    # stopped before it started: no bin was left for it
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _BOOT], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            close_fds=True)
        try:
            send(self.proc.stdin, (list(sys.path), _packages()))
            self.proc.stdin.write(len(rewriter_blob).to_bytes(8, "big") + rewriter_blob)
            self.proc.stdin.flush()
        except OSError:   # died at once (e.g. cannot import): ready() finds out
            pass

    def ready(self) -> bool:
        """Waits until the worker has started; False if it could not, or was abandoned."""
        try:
            ok = receive(self.proc.stdout)[0] == "ready"
        except (EOFError, OSError, pickle.UnpicklingError, IndexError, TypeError):
            ok = False
        with self._lock:
            if self.abandoned:
                return False
            self.started = ok
        return ok

    def abandon(self) -> None:
        """Stop the worker if it has not started yet (not waited for); else nothing."""
        with self._lock:
            if self.started:
                return
            self.abandoned = True
        self._kill()

    def submit(self, index: int, name: str, ratio: Ratio, task: CompactTask) -> None:
        """Queue one bin (the worker reads it when done with the one before); EOFError if
        the worker has died."""
        try:
            send(self.proc.stdin, task_message(index, name, ratio, task))
        except OSError as e:   # a broken pipe: the worker is gone
            raise EOFError(str(e)) from None

    def outcome(self) -> BinOutcome:
        """The outcome of the oldest bin submitted; EOFError if the worker died first."""
        try:
            return receive(self.proc.stdout)
        except (OSError, pickle.UnpicklingError) as e:
            raise EOFError(str(e)) from None

    def exit_code(self) -> Optional[int]:
        try:
            return self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:   # pragma: no cover - hung with its pipe closed
            self._kill()
            return self.proc.wait()

    def close(self) -> None:
        """No more bins: the worker exits when its stdin closes."""
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        self.exit_code()
        self.proc.stdout.close()

    def _kill(self) -> None:
        try:
            self.proc.kill()
        except OSError:   # pragma: no cover - already gone
            pass


def start_workers(rewriter: BinRewriter, n: int) -> List[SpawnedWorker]:
    """`n` workers started now (they import while the caller plans); fewer if processes
    cannot be started. Hand them to rewrite_spawned, or stop them with `stop_workers`."""
    blob = _rewriter_blob(rewriter)
    out: List[SpawnedWorker] = []
    for _ in range(n):
        try:
            out.append(SpawnedWorker(blob))
        except OSError as e:   # e.g. no processes allowed
            log.info("compaction of %s: cannot start a worker process (%s)",
                     rewriter.store.path, e)
            break
    return out


def stop_workers(workers: Sequence[SpawnedWorker]) -> None:
    """Workers started early that get no bin: stopped, not waited for if still starting."""
    for w in workers:
        w.abandon()
        w.close()


def _rewriter_blob(rewriter: BinRewriter) -> bytes:
    return pickle.dumps(rewriter_message(rewriter), protocol=pickle.HIGHEST_PROTOCOL)


def rewrite_spawned(rewriter: BinRewriter, tasks: Sequence[CompactTask], workers: int,
                    done: List[Rewritten], on_files: Callable[[int], None],
                    learn_first: bool, started: Sequence[SpawnedWorker] = ()) -> None:
    """Rewrite every task on this thread and in up to `workers - 1` spawned workers (see
    the module docstring); appends a Rewritten per task to `done`, raises the first
    failure once the running bins have finished. `learn_first`: the first bin runs alone
    (its stored size per input byte sizes the files of the others). `started`: workers
    started early (start_workers), used first; those beyond `workers - 1` are stopped."""
    st = rewriter.store
    names = [str(uuid.uuid4()) for _ in tasks]
    ratio = Ratio()
    lock = threading.Lock()
    first_done = threading.Event()
    state = {"next": 0, "stop": False, "finished": False}
    errors: List[BaseException] = []

    def take() -> Optional[int]:
        with lock:
            if state["stop"] or state["next"] >= len(tasks):
                return None
            i = state["next"]
            state["next"] += 1
            return i

    def fail(e: BaseException) -> None:
        with lock:
            state["stop"] = True
            errors.append(e)

    def dispatch(w: Optional[SpawnedWorker]) -> None:
        """A thread per worker: starts it unless started early (here: a process start
        takes milliseconds the calling thread spends on its first bin), hands it bins
        until none is left, records their outcome."""
        if w is None:
            try:
                w = SpawnedWorker(blob)
            except OSError as e:   # e.g. no processes allowed: the calling thread does it
                log.info("compaction of %s: cannot start a worker process (%s)", st.path, e)
                return
        with lock:
            spawned.append(w)
            if state["finished"]:
                w.abandon()
        try:
            if not w.ready():
                if not w.abandoned:
                    log.info("compaction of %s: a worker process did not start (exit code "
                             "%s); its bins run in this process", st.path, w.proc.poll())
                return
            if learn_first:
                first_done.wait()
            # Two bins in flight: the next one waits in the worker's pipe, so the worker
            # never idles while this thread (which needs the interpreter lock the calling
            # thread is rewriting with) records an outcome and sends the next bin.
            inflight: Deque[int] = deque()

            def submit_next() -> None:
                i = take()
                if i is not None:
                    inflight.append(i)   # first: a worker dying on it is swept for it
                    w.submit(i, names[i], ratio, tasks[i])

            try:
                submit_next()
                submit_next()
                while inflight:
                    r = w.outcome()
                    i = inflight.popleft()
                    task = tasks[i]
                    if st.io.deletion_log is not None:
                        st.io.deletion_log.extend(r.deleted)
                    done.append(Rewritten(task, r.files, r.paths))
                    if r.error is not None:
                        fail(r.error)     # the bin queued behind it still reports
                    else:
                        ratio.learn(r.inputs, r.outputs)
                        on_files(len(task.files))
                    submit_next()
            except EOFError as e:
                # Killed, out of memory: the files of its bins not reported are found by
                # their names and deleted (never handed to a commit).
                code = w.exit_code()
                for i in inflight:
                    task = tasks[i]
                    done.append(Rewritten(task, [], []))
                    gone = sweep(st, task, names[i])
                    fail(CompactionError(
                        f"compaction of {st.path}: the worker process rewriting "
                        f"{len(task.files)} files of partition "
                        f"{st.partition_dict(task.values)} died (exit code {code}: {e}); "
                        f"deleted the {gone} file(s) it had written; nothing is committed"))
        except BaseException as e:  # noqa: BLE001 - raised on the caller's thread
            fail(e)
        finally:
            w.close()

    spawned: List[SpawnedWorker] = []
    threads: List[threading.Thread] = []
    stop_workers(started[workers - 1:])
    early: List[Optional[SpawnedWorker]] = list(started[:workers - 1])
    blob = _rewriter_blob(rewriter) if len(early) < workers - 1 else b""
    early += [None] * (workers - 1 - len(early))
    rewriter.on_file = on_files
    io_pool = ContextExecutor(1)
    try:
        for n, w in enumerate(early):
            t = threading.Thread(target=dispatch, args=(w,), daemon=True,
                                 name=f"paimon-compact-worker-{n}")
            t.start()
            threads.append(t)
        while True:
            i = take()
            if i is None:
                break
            out = Rewritten(tasks[i], [], [])
            done.append(out)   # first: the caller's abort finds the files of a failing bin
            try:
                # One thread reads and parses the next files while this one writes, as in
                # every worker (more would only take turns at the interpreter lock).
                rewriter.rewrite_task(tasks[i], ratio, out, io_pool, names[i])
            except BaseException as e:  # noqa: BLE001 - raised below, after the workers
                fail(e)
                break
            finally:
                first_done.set()
    finally:
        first_done.set()
        rewriter.on_file = None
        with lock:
            state["finished"] = True
            starting = list(spawned)
        for w in starting:    # no bin is left for a worker still starting: not waited for
            w.abandon()
        for t in threads:     # the running bins finish; their files are in `done`
            t.join()
        io_pool.shutdown(wait=True, cancel_futures=True)
    if errors:
        raise errors[0]
