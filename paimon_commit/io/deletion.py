"""How every operation deletes: in steps, through the FileIO gate, finishable.

An operation hands its plan over as ordered steps. Each step only removes what later steps no
longer need to find: data files before the manifests that name them, manifests before the
snapshot (or tag, changelog) file that names them, that file before the hint. A step whose
files could not all be deleted stops the run where later steps are still the record of what is
left, so that the next run (or a rerun of the same operation) retries instead of leaking.

Files go through `FileIO.delete_files` (checked by the gate, batched where the store batches)
and directories through `FileIO.delete_empty_dir` (never recursive; left alone on storage
without a non-recursive remove).
"""
from __future__ import annotations

import contextlib
import logging
import os
import signal
import threading
import time
from concurrent.futures import Executor, ThreadPoolExecutor
from typing import Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

from .metered import ContextExecutor

log = logging.getLogger(__name__)

__all__ = ["Deleter", "run_deletions", "still_there", "remove_empty_dirs", "StopDeleting",
           "checkpoint", "guarded", "request_stop", "clear_stop", "stop_requested",
           "interrupt_reason"]


# --- safe points -------------------------------------------------------------------------
# A destructive run stops only between two delete steps, where what is left is exactly what a
# crash there would leave (which every run already finishes). Two things can ask it to stop:
# the process (SIGINT / SIGTERM: `request_stop`, process-wide) and the operation's own guards
# (the maintenance lease it must still hold: `guarded`, on the thread running the operation).
# `checkpoint()` runs both; every delete step of `Deleter` and every batch of orphan cleanup
# calls it first.

class StopDeleting(Exception):
    """Raised at a safe point (before a delete step) when the run must stop there: nothing of
    the next step has been deleted. `reason` says why, in the user's words; `cause` is a
    short tag ("interrupt", "lease", ...)."""

    def __init__(self, reason: str, cause: str = "stop"):
        super().__init__(reason)
        self.reason, self.cause = reason, cause


_stop_lock = threading.Lock()
_stop: Optional[StopDeleting] = None
_guards = threading.local()


def _after_fork_in_child() -> None:
    # The forking thread's guards were copied into the child: they check leases its parent
    # holds (lease.py), not the child's, and would stop a forked worker's own deletes (or,
    # before lease.py's fork hook, let it pass on the parent's lease). A child starts with
    # none. Replaced, not emptied: a `guarded` block the child was forked inside still
    # removes its check from the list it added it to.
    global _guards, _stop_lock
    _guards, _stop_lock = threading.local(), threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def request_stop(reason: str, cause: str = "interrupt") -> None:
    """Ask every destructive run of this process to stop at its next safe point (a signal
    handler may call this: it only sets a value)."""
    global _stop
    _stop = StopDeleting(reason, cause)


_SIGNAL_NAMES = {signal.SIGINT: "SIGINT (Ctrl-C)", signal.SIGTERM: "SIGTERM"}


def interrupt_reason(signum: int) -> str:
    """The reason of a stop asked by a signal, as results report it ("interrupted by SIGINT
    (Ctrl-C)"): the command line's handlers and maintain's worker processes name it alike."""
    return f"interrupted by {_SIGNAL_NAMES.get(signum, f'signal {signum}')}"


def clear_stop() -> None:
    global _stop
    with _stop_lock:
        _stop = None


def stop_requested() -> Optional[StopDeleting]:
    return _stop


@contextlib.contextmanager
def guarded(check: Callable[[], None]) -> Iterator[None]:
    """Run `check` at every safe point of this thread while the block runs (it raises
    StopDeleting, or another error, to stop the run there)."""
    stack = getattr(_guards, "stack", None)
    if stack is None:
        stack = _guards.stack = []
    stack.append(check)
    try:
        yield
    finally:
        stack.remove(check)


def checkpoint(guards: bool = True) -> None:
    """A safe point: raises StopDeleting when the process was asked to stop, and runs this
    thread's guards (which raise when the run lost what it needs to go on deleting) unless
    `guards` is False (`Deleter.in_order` spacing them out)."""
    stop = _stop
    if stop is not None:
        raise StopDeleting(stop.reason, stop.cause)
    if guards:
        for check in list(getattr(_guards, "stack", ()) or ()):
            check()


def run_deletions(io, paths: Iterable[str], executor: Optional[Executor]) -> List[str]:
    """Delete through the gate, in parallel when an executor is given; returns what was
    deleted (a file already gone or failing to delete is not in it).

    Few paths go one by one (`delete_quietly`: each is in the storage's deletion log the
    moment it is gone, even if a later one fails). Many go in chunks through `delete_files`,
    one task per chunk: a local unlink is cheaper than handing a task to a thread, while
    object stores batch each chunk and still get several batches in flight. Where the
    storage's unlinks re-check their directory (local disk), one `delete_files` call with
    the executor: this thread checks every path, the pool only unlinks, in slices of one
    directory each (chunks cut across directories opened each one once per chunk, and an
    unlink waiting on the disk behind a thread checking paths under the GIL made orphan
    cleanup's real run ~1.3x the bare unlinks)."""
    paths = list(paths)
    if not paths:
        return []
    if executor is not None and io.unlinks_recheck_dirs:
        return io.delete_files(paths, executor)
    batch = io.delete_batch_size
    if batch:   # one request per batch: chunks of the store's size, several in flight
        chunks = [paths[i:i + batch] for i in range(0, len(paths), batch)]
        if executor is None or len(chunks) == 1:
            return [p for c in chunks for p in io.delete_files(c)]
        return [p for done in executor.map(io.delete_files, chunks) for p in done]
    if len(paths) < 64:
        return [p for p in paths if io.delete_quietly(p)]
    if executor is None:
        return io.delete_files(paths)
    workers = getattr(executor, "_max_workers", 4)
    size = max(32, -(-len(paths) // (workers * 4)))
    out: List[str] = []
    for done in executor.map(io.delete_files,
                             [paths[i:i + size] for i in range(0, len(paths), size)]):
        out.extend(done)
    return out


def still_there(io, planned: Iterable[str], deleted: Iterable[str]) -> List[str]:
    """What a deletion did not delete and still exists (a failed delete, not a vanished
    file): callers keep their records of these so that a rerun can retry."""
    gone = set(deleted)
    return [p for p in planned if p not in gone and io.exists(p)]


def remove_empty_dirs(io, root: str, dirs: Iterable[str]) -> List[str]:
    """Remove each directory that is empty, deepest first; each removal queues its parent.
    Never the root or anything outside it, never recursively. Returns what was removed."""
    root = root.rstrip("/")
    removed: List[str] = []
    pending = {d.rstrip("/") for d in dirs}
    while pending:
        depth = max(d.count("/") for d in pending)
        level = sorted(d for d in pending if d.count("/") == depth)
        pending -= set(level)
        for d in level:
            if d == root or not d.startswith(root + "/"):
                continue
            if io.delete_empty_dir(d):
                removed.append(d)
                pending.add(os.path.dirname(d))
    return removed


#: `Deleter.in_order(..., spaced=True)`: within a run of single deletes in order (expiration's
#: snapshot files, one at a time, ascending), the guards run before the first file and then
#: once GUARD_EVERY_FILES files or GUARD_EVERY_S seconds passed since they last ran, whichever
#: comes first; an interrupt is honoured before every file. The maintenance lease's check is
#: two requests (lease.py `HeldLease.check`): before every snapshot file it tripled what a
#: snapshot file costs on an object store (bench_s3: 1,425 requests to expire 190 snapshots,
#: 1,051 with the spacing; at 30-100 ms a request, a minute more per 1,000 snapshots), and
#: on local disk it was a read of the lease record per file. Those files name only lists this
#: run already deleted (the crash-safe order): whoever took the lease over meanwhile finds
#: them half expired and finishes them the same way, so the few deleted past a lost lease are
#: files a rerun deletes too.
GUARD_EVERY_FILES = 32
GUARD_EVERY_S = 0.5


class Deleter:
    """Runs the steps of one operation's plan and records what each deleted.

    Use as a context manager: a thread pool is created on the first parallel step (sized by
    `thread_num`, else the CPU count) unless an executor is given, and shut down at exit."""

    def __init__(self, io, executor: Optional[Executor] = None,
                 thread_num: Optional[int] = None):
        self.io = io
        self.deleted: Dict[str, List[str]] = {}
        self.left: List[str] = []
        # Paths handed to an unlink so far (deleted or not, a reply lost or not): 0 means
        # nothing of this plan can be gone (a stop at the first safe point).
        self.attempted = 0
        self._executor = executor
        self._own: Optional[ThreadPoolExecutor] = None
        self._threads = thread_num or os.cpu_count() or 1
        # When the guards last ran (monotonic seconds) and `attempted` then: in_order(spaced)
        self._guarded: Optional[Tuple[float, int]] = None

    def __enter__(self) -> "Deleter":
        # One operation: the gate resolves each directory once on this thread (and once per
        # delete_files call on the pool's), never with resolutions of an earlier operation.
        self._scope = self.io.resolution_scope()
        self._scope.__enter__()
        # Resolutions cached while planning (which can take minutes) are not what the deletes
        # are checked against: a directory may have become a symlink meanwhile.
        self.io.forget_resolved_dirs()
        return self

    def __exit__(self, *exc) -> None:
        try:
            if self._own is not None:
                self._own.shutdown(wait=True)
        finally:
            self._scope.__exit__(None, None, None)

    def _pool(self) -> Executor:
        if self._executor is None:
            self._own = self._executor = ContextExecutor(self._threads)
        return self._executor

    def files(self, kind: str, paths: Sequence[str], must_finish: bool = False) -> bool:
        """Delete `paths` in parallel. With `must_finish`, False if any of them is still
        there afterwards (added to `left`): the caller stops, keeping its records."""
        paths = list(paths)
        if paths:
            self.checkpoint()
            log.info("deleting %d %s file(s)", len(paths), kind)   # (-v: where a run is)
        self.attempted += len(paths)
        done = run_deletions(self.io, paths, self._pool() if len(paths) >= 64 else None)
        self.deleted.setdefault(kind, []).extend(done)
        left = still_there(self.io, paths, done) if must_finish else []
        self.left.extend(left)
        return not left

    def checkpoint(self) -> None:
        """A safe point now (io.deletion.checkpoint), counted as this Deleter's last check
        for `in_order(spaced=True)` (e.g. before a write that goes with the next delete)."""
        checkpoint()
        self._guarded = (time.monotonic(), self.attempted)

    def guard_next(self) -> None:
        """The next `in_order(spaced=True)` file runs the guards first, however recently an
        earlier step ran them (a spaced run of files starts with a check)."""
        self._guarded = None

    def in_order(self, kind: str, paths: Sequence[str], spaced: bool = False) -> int:
        """Delete one by one in the given order, stopping at the first file that could not
        be deleted and is still there (a crash or failure leaves a contiguous suffix).
        Returns how many of `paths` are gone. `spaced`: the guards run only every so many
        files or seconds of this Deleter's deletes (GUARD_EVERY_FILES, GUARD_EVERY_S), for
        files that no one can need once the steps before them ran."""
        done = self.deleted.setdefault(kind, [])
        for i, p in enumerate(paths):
            last = self._guarded
            if not spaced or last is None or self.attempted - last[1] >= GUARD_EVERY_FILES \
                    or time.monotonic() - last[0] >= GUARD_EVERY_S:
                self.checkpoint()
            else:
                checkpoint(guards=False)
            self.attempted += 1
            if self.io.delete_quietly(p):
                done.append(p)
            elif self.io.exists(p):
                self.left.append(p)
                return i
        return len(paths)

    def dirs(self, root: str, dirs: Iterable[str]) -> List[str]:
        self.checkpoint()
        removed = remove_empty_dirs(self.io, root, dirs)
        self.deleted.setdefault("directory", []).extend(removed)
        return removed
