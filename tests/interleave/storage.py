"""Storages whose every call is a scheduling point of the Scheduler, with injected faults.

Three levels of points:
- `io`:  every public FileIO method (ControlledIO wraps any FileIO: local, pyarrow, obstore);
- `fs`:  every pyarrow.fs primitive under PyArrowFileIO (ControlledFS), so that a call such as
         try_create_atomic = exists + write temp + move can be split by other actors;
- `obj`: every obstore request (put / get / head / delete / list) under ObjectStoreFileIO,
         patched on the obstore module while a simulation runs (`patched_obstore`).

Each actor gets its own FileIO object, as separate processes would; they share the storage
(one directory, or one obstore MemoryStore). Files written through a ControlledIO get a
logical modification time (the scheduler's tick), so an orphan cleaner's `older_than` can be
set exactly before the oldest write still in flight, as a real threshold is in real time.
"""
from __future__ import annotations

import contextlib
import errno
import posixpath
import threading
from typing import Dict, Iterable, List, Optional

from paimon_commit.io.base import FileIO, FileStatus

from .scheduler import Call, Fault, Scheduler, _tls

#: The logical clock's epoch (ms): ticks are milliseconds after it, far in the past, so that
#: thresholds derived from ticks are plausible epoch milliseconds and before "now".
EPOCH_MS = 1_600_000_000_000


class InjectedIOError(OSError):
    """The injected storage failure."""


class InjectedInterrupt(KeyboardInterrupt):
    """The injected Ctrl-C (a BaseException: `except Exception` does not stop it)."""


def _injected(call: Call, fault: str) -> InjectedIOError:
    return InjectedIOError(errno.EIO, f"injected {fault} fault at {call.level}.{call.method}",
                           call.path)


class Clock:
    """Logical write times shared by the ControlledIOs of one simulation."""

    def __init__(self, sched: Scheduler):
        self.sched = sched
        self.written: Dict[str, int] = {}
        self._lock = threading.Lock()

    def wrote(self, path: str) -> None:
        with self._lock:
            self.written[posixpath.normpath(path)] = self.sched.tick

    def mtime(self, st: FileStatus) -> FileStatus:
        t = self.written.get(posixpath.normpath(st.path))
        if t is None or st.is_dir:
            return st   # written by no actor (temp files, directories): real time = young
        return st._replace(mtime_ms=EPOCH_MS + t)


class ControlledIO(FileIO):
    """A FileIO whose every call waits for the scheduler and may be failed by it. The
    deletion gate stays the wrapped FileIO's (its delete_* methods are called)."""

    def __init__(self, inner: FileIO, sched: Scheduler, clock: Clock,
                 written: Optional[List[str]] = None):
        self.inner = inner
        self.root = inner.root
        self.delete_batch_size = inner.delete_batch_size
        self.sched = sched
        self.clock = clock
        self.written = written   # when given: every file this FileIO created (checker)

    def __getattr__(self, name):   # uri(), description, ... of the wrapped storage
        return getattr(self.inner, name)

    def join(self, *parts: str) -> str:
        return self.inner.join(*parts)

    def _do(self, method: str, path: str, fn, on_fault_before=None):
        call = Call("io", method, str(path))
        fault = self.sched.point(call)
        if fault == Fault.INTERRUPT and "/" in (getattr(_tls, "actor", None) or ""):
            # Ctrl-C reaches a process's main thread, not a pool thread: a pool task's actor
            # (`<op>/tN`, the read-ahead variants) gets a failed call instead.
            fault = Fault.BEFORE
        if fault == Fault.INTERRUPT:
            raise InjectedInterrupt(f"injected Ctrl-C before {call}")
        if fault == Fault.BEFORE:
            if on_fault_before is not None:
                return on_fault_before()
            raise _injected(call, fault)
        result = fn()
        if fault == Fault.AFTER:
            raise _injected(call, fault)
        if fault == Fault.LOST_DELETE:   # done, reply lost: "not deleted" (the contract)
            return on_fault_before() if on_fault_before is not None else result
        return result

    # reading
    def read_bytes(self, path):
        return self._do("read_bytes", path, lambda: self.inner.read_bytes(path))

    def read_bytes_at_most(self, path, limit):
        # One storage call, as on the storages it stands for (an object store's GET), so a
        # capped read of a record is one scheduling point like any read of it.
        return self._do("read_bytes", path, lambda: self.inner.read_bytes_at_most(path, limit))

    def exists(self, path):
        return self._do("exists", path, lambda: self.inner.exists(path))

    def file_size(self, path):
        return self._do("file_size", path, lambda: self.inner.file_size(path))

    def list_status(self, directory):
        return self._do("list_status", directory, lambda: [
            self.clock.mtime(st) for st in self.inner.list_status(directory)])

    def list_names(self, directory):
        return self._do("list_names", directory, lambda: self.inner.list_names(directory))

    def file_versions(self, directory):
        return self._do("file_versions", directory,
                        lambda: self.inner.file_versions(directory))

    def link_time_ns(self, path):
        return self._do("link_time_ns", path, lambda: self.inner.link_time_ns(path))

    def open_input_file(self, path):
        return self._do("open_input_file", path, lambda: self.inner.open_input_file(path))

    def read_parquet(self, path):
        return self._do("read_parquet", path, lambda: self.inner.read_parquet(path))

    # writing
    def _wrote(self, path):
        self.clock.wrote(path)
        if self.written is not None:
            self.written.append(path)

    def mkdirs(self, directory):
        return self._do("mkdirs", directory, lambda: self.inner.mkdirs(directory))

    def write_new(self, path, data):
        def fn():
            self.inner.write_new(path, data)
            self._wrote(path)
        return self._do("write_new", path, fn)

    def overwrite_atomic(self, path, data):
        def fn():
            self.inner.overwrite_atomic(path, data)
            self._wrote(path)
        return self._do("overwrite_atomic", path, fn)

    #: Whether `try_create_atomic`'s `single_writer` reaches the wrapped FileIO (Sim sets it
    #: for every variant). Otherwise a call that passes it raises TypeError before its
    #: scheduling point, as the wrapper without the parameter did: until 2026-11-28 every
    #: lease of the arrow-single-writer variant (lease.py passes single_writer=True on a
    #: table declaring commit.single-writer) raised so, and its expirations, orphan cleanups
    #: and tag operations never ran (6 seeds: 0 of 23 expirations ok; since, 10 of 23).
    forward_single_writer = False

    def try_create_atomic(self, path, data, precondition=None, **kw):
        if kw and (not self.forward_single_writer or set(kw) != {"single_writer"}):
            raise TypeError(f"ControlledIO.try_create_atomic() got an unexpected keyword "
                            f"argument {next(iter(kw))!r}")

        def fn():
            created = self.inner.try_create_atomic(path, data, precondition, **kw)
            if created:
                self._wrote(path)
            return created
        return self._do("try_create_atomic", path, fn)

    def check_atomic_create(self):
        return self._do("check_atomic_create", self.root, self.inner.check_atomic_create)

    def open_output_stream(self, path):
        def fn():
            stream = self.inner.open_output_stream(path)
            self._wrote(path)
            return stream
        return self._do("open_output_stream", path, fn)

    # deleting: through the wrapped FileIO's gate; an injected failure is a delete that did
    # not happen (the contract: no exception for I/O errors)
    def delete_quietly(self, path):
        return self._do("delete_quietly", path, lambda: self.inner.delete_quietly(path),
                        on_fault_before=lambda: False)

    def delete_files(self, paths: Iterable[str]) -> List[str]:
        paths = list(paths)
        return self._do("delete_files", paths[0] if paths else "",
                        lambda: self.inner.delete_files(paths), on_fault_before=lambda: [])

    def delete_empty_dir(self, path):
        return self._do("delete_empty_dir", path, lambda: self.inner.delete_empty_dir(path),
                        on_fault_before=lambda: False)

    def deletion_refused(self, path):
        return self.inner.deletion_refused(path)

    def forget_resolved_dirs(self):
        self.inner.forget_resolved_dirs()

    def _check_inside(self, path):
        return self.inner._check_inside(path)

    def _unlink(self, norm):   # never reached: every delete goes to the wrapped gate
        raise AssertionError("ControlledIO deletes through the wrapped FileIO only")


# --- pyarrow.fs ------------------------------------------------------------------------------

class ControlledFS:
    """The pyarrow.fs methods PyArrowFileIO calls, each a scheduling point."""

    def __init__(self, real, sched: Scheduler):
        self.real = real
        self.sched = sched

    def _do(self, method: str, path: str, fn):
        call = Call("fs", method, str(path))
        fault = self.sched.point(call)
        if fault == Fault.BEFORE:
            raise _injected(call, fault)
        result = fn()
        if fault in (Fault.AFTER, Fault.LOST_DELETE):
            raise _injected(call, fault)
        return result

    def get_file_info(self, what):
        path = getattr(what, "base_dir", what)
        return self._do("get_file_info", path, lambda: self.real.get_file_info(what))

    def open_input_stream(self, path):
        return self._do("open_input_stream", path, lambda: self.real.open_input_stream(path))

    def open_input_file(self, path):
        return self._do("open_input_file", path, lambda: self.real.open_input_file(path))

    def open_output_stream(self, path):
        return self._do("open_output_stream", path,
                        lambda: self.real.open_output_stream(path))

    def move(self, src, dest):
        return self._do("move", dest, lambda: self.real.move(src, dest))

    def delete_file(self, path):
        return self._do("delete_file", path, lambda: self.real.delete_file(path))

    def create_dir(self, path, recursive=True):
        return self._do("create_dir", path, lambda: self.real.create_dir(path,
                                                                          recursive=recursive))


def arrow_io(root: str, sched: Scheduler):
    """PyArrowFileIO over a local directory through a ControlledFS."""
    import pyarrow.parquet as pq
    from pyarrow import fs as pafs

    from paimon_commit.io.arrow import PyArrowFileIO

    class _ArrowIO(PyArrowFileIO):
        # pq.read_table needs a real pyarrow FileSystem: parquet reads go around the proxy
        # (one point for the whole read).
        def read_parquet(self, path):
            return self.fs._do("read_parquet", path, lambda: pq.read_table(
                path, filesystem=self.fs.real, partitioning=None))

        def open_input_file(self, path):
            return self.fs.open_input_file(path)

    return _ArrowIO(ControlledFS(pafs.LocalFileSystem(), sched), root)


# --- obstore ---------------------------------------------------------------------------------

_OBSTORE_CALLS = ("put", "get", "head", "delete", "list_with_delimiter", "list")
_patch_lock = threading.Lock()
_active: Optional[Scheduler] = None


@contextlib.contextmanager
def patched_obstore(sched: Scheduler):
    """Make every obstore request of an actor thread a scheduling point (module attributes:
    ObjectStoreFileIO imports obstore and calls obstore.put(...) at call time)."""
    import obstore
    from obstore.exceptions import GenericError, NotSupportedError

    global _active
    with _patch_lock:
        if _active is not None:
            raise RuntimeError("one simulation with an object store at a time")
        _active = sched
    originals = {name: getattr(obstore, name) for name in _OBSTORE_CALLS}

    def wrap(name, real):
        def call(store, key=None, *args, **kwargs):
            path = key if isinstance(key, str) else (",".join(key) if key else "")
            if ".atomic-create-probe-" in path:
                # The probe runs under a process-wide lock: parking there would stop every
                # other actor's probe outside a storage call. It is one atomic step.
                return real(store, key, *args, **kwargs)
            c = Call("obj", name, path, create=kwargs.get("mode") == "create")
            fault = sched.point(c)
            if fault == Fault.UNSUPPORTED:
                raise NotSupportedError("injected: 501 Not Implemented (conditional write)")
            if fault == Fault.BEFORE:
                raise GenericError(f"injected {fault} fault at obj.{name} {path}")
            result = real(store, key, *args, **kwargs)
            if fault in (Fault.AFTER, Fault.LOST_DELETE):
                raise GenericError(f"injected {fault} fault (lost reply) at obj.{name} {path}")
            return result
        return call

    try:
        for name, real in originals.items():
            setattr(obstore, name, wrap(name, real))
        yield
    finally:
        for name, real in originals.items():
            setattr(obstore, name, real)
        with _patch_lock:
            _active = None


@contextlib.contextmanager
def controlled_lease(sim):
    """The maintenance lease (paimon_commit/lease.py, where the code has one) under the
    simulation: its clock is logical (EPOCH_MS + tick + `sim.lease_skew_ms`, the time base of
    the files ControlledIO writes), so that a scheduler action can make the leases of paused
    holders expire (`Sim.expire_leases`); a holder renews from its own checks only (no renewer
    thread: its calls would be no actor's); a maintainer that finds the lease held waits
    LEASE_WAIT_S on a logical clock (its sleeps take no time; it reads the records again at
    each try, a scheduling point), then gives up (LeaseHeldError, a refusal)."""
    try:
        import paimon_commit.lease as lease
    except ImportError:   # code before the lease
        yield None
        return
    waited = [0.0]

    class _Clock:
        @staticmethod
        def monotonic() -> float:
            return waited[0]

        @staticmethod
        def sleep(seconds: float) -> None:
            waited[0] += seconds

        @staticmethod
        def time() -> float:
            return (EPOCH_MS + sim.sched.tick + sim.lease_skew_ms) / 1000.0

    saved_time, saved_renewer = lease.time, lease.HeldLease.start_renewer
    saved_random = getattr(lease, "random", None)
    lease.time = _Clock
    lease.HeldLease.start_renewer = lambda self: None
    if getattr(sim, "seeded_backoff", False) and saved_random is not None:
        # The waiter's pause is jittered with the process-wide `random` (lease.py): how many
        # times it reads the records again in its logical 2 s differs from run to run. The
        # read-ahead variants draw it from the seed; the others keep the process-wide one,
        # so that they run as before.
        import random as _random
        lease.random = _random.Random(sim.seed ^ 0xBAC0FF)
    try:
        with lease.lease_settings(wait_s=LEASE_WAIT_S, duration_ms=LEASE_MS):
            yield lease
    finally:
        lease.time, lease.HeldLease.start_renewer = saved_time, saved_renewer
        if saved_random is not None:
            lease.random = saved_random


@contextlib.contextmanager
def controlled_commit_waits(sim):
    """A commit call of this process that waits for another one committing the same files
    (paimon_commit/operations/commit_record.py: InFlight, where the code has it) waits at
    scheduling points (`sim.wait`, no fault): parked like any actor, granted by the policy,
    it looks again each time, so the call it waits for runs meanwhile."""
    try:
        from paimon_commit.operations import commit_record
        saved = commit_record.wait_for_call
    except (ImportError, AttributeError):   # code before the wait
        yield
        return
    from .scheduler import Call, _tls

    def wait(done):
        if getattr(_tls, "sched", None) is not sim.sched:   # not an actor: a plain wait
            return saved(done)
        while not done.is_set():
            sim.sched.point(Call("sim", "wait", "commit of the same files in flight"))

    commit_record.wait_for_call = wait
    try:
        yield
    finally:
        commit_record.wait_for_call = saved


#: The lease duration in simulations (logical ms: a tick is one): longer than any round, so
#: that only `Sim.expire_leases` makes a lease expire.
LEASE_MS = 60_000
LEASE_WAIT_S = 2.0


class InlineExecutor:
    """A concurrent.futures executor that runs each task in the calling thread, so that an
    operation's parallel listing and deleting stays inside its actor (and deterministic)."""

    def __init__(self, max_workers=None, *args, **kwargs):
        self._max_workers = 1

    def submit(self, fn, *args, **kwargs):
        from concurrent.futures import Future
        f: Future = Future()
        try:
            f.set_result(fn(*args, **kwargs))
        except BaseException as e:  # noqa: BLE001
            f.set_exception(e)
        return f

    def map(self, fn, *iterables, timeout=None, chunksize=1):
        return [fn(*args) for args in zip(*iterables)]

    def shutdown(self, wait=True, cancel_futures=False):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.shutdown()


@contextlib.contextmanager
def inline_pools(read_ahead_too: bool = False):
    """Operations create thread pools for listing and deleting; in a simulation they run
    inline (a pool thread is no actor: its calls could not be scheduled). `read_ahead_too`
    (the read-ahead variants): also the pools only a storage reading ahead makes, the
    commit's check of old files and the reachability's list reads."""
    import paimon_commit.io.deletion as deletion
    import paimon_commit.io.read_ahead as read_ahead
    import paimon_commit.operations.commit as commit
    import paimon_commit.operations.compact.pool as compact
    import paimon_commit.operations.expire as expire
    import paimon_commit.operations.orphan as orphan
    import paimon_commit.reachability as reachability
    # Every pool an operation makes is a ContextExecutor (io/metered.py: its threads count
    # for the operation's request bill); each module's own name for it is replaced.
    modules = (deletion, orphan, compact, expire, read_ahead) + (
        (commit, reachability) if read_ahead_too else ())
    patched = [(m, name) for m in modules
               for name in ("ThreadPoolExecutor", "ContextExecutor") if hasattr(m, name)]
    saved = [getattr(m, name) for m, name in patched]
    for m, name in patched:
        setattr(m, name, InlineExecutor)
    try:
        yield
    finally:
        for (m, name), real in zip(patched, saved):
            setattr(m, name, real)


# --- pools whose threads are actors (the read-ahead variants) --------------------------------

class _ActorFuture:
    """The Future of a task run by an actor of its own: waiting for it (`result`,
    `exception`) is a series of scheduling points (`sim.wait`, no fault) of the waiting actor,
    so the task, and every other actor, moves meanwhile."""

    def __init__(self, sched: Scheduler, name: str):
        from concurrent.futures import Future
        self.sched, self.name = sched, name
        self.future = Future()

    def _wait(self) -> None:
        from .scheduler import _tls
        while not self.future.done():
            if getattr(_tls, "sched", None) is not self.sched:
                self.future.exception()   # (not an actor: a plain wait)
                return
            self.sched.point(Call("sim", "wait", f"pool task {self.name}"))

    def result(self, timeout=None):
        self._wait()
        return self.future.result()

    def exception(self, timeout=None):
        self._wait()
        return self.future.exception()

    def done(self) -> bool:
        return self.future.done()

    def cancel(self) -> bool:   # a task not started yet (its actor not granted) is cancelled
        return self.future.cancel()

    def cancelled(self) -> bool:
        return self.future.cancelled()

    def running(self) -> bool:
        return self.future.running()

    def add_done_callback(self, fn) -> None:
        self.future.add_done_callback(lambda _f: fn(self))


class ActorExecutor:
    """A concurrent.futures executor whose every task is an actor of its own, spawned by the
    submitting actor (Scheduler.spawn_child): an operation's pool threads interleave with each
    other, with their operation's own thread and with every other actor at each storage call,
    and faults hit their calls too. As in a ContextExecutor, a task runs in a copy of the
    submitter's context (thread-locals, e.g. the deletion guards, are the task thread's own,
    as in a real pool). No bound on threads: `max_workers` is only reported. Submitted from
    a thread that is no actor, a task runs inline."""

    def __init__(self, max_workers=None, *args, **kwargs):
        self._max_workers = max_workers or 4
        self._futures: List[_ActorFuture] = []

    def submit(self, fn, *args, **kwargs):
        import contextvars
        from concurrent.futures import Future

        from .scheduler import _tls
        sched = getattr(_tls, "sched", None)
        parent = getattr(_tls, "actor", None)
        if sched is None or parent is None:
            f: Future = Future()
            try:
                f.set_result(fn(*args, **kwargs))
            except BaseException as e:  # noqa: BLE001
                f.set_exception(e)
            return f
        n = getattr(sched, "_pool_tasks", 0) + 1
        sched._pool_tasks = n
        name = f"{parent.split('/')[0]}/t{n}"
        af = _ActorFuture(sched, name)
        ctx = contextvars.copy_context()

        def task():
            if not af.future.set_running_or_notify_cancel():
                return
            try:
                af.future.set_result(ctx.run(fn, *args, **kwargs))
            except BaseException as e:  # noqa: BLE001 - the caller's, at its result()
                af.future.set_exception(e)
        sched.spawn_child(name, task)
        self._futures.append(af)
        return af

    def map(self, fn, *iterables, timeout=None, chunksize=1):
        futures = [self.submit(fn, *args) for args in zip(*iterables)]

        def results():
            for f in futures:
                yield f.result()
        return results()

    def shutdown(self, wait=True, cancel_futures=False):
        if cancel_futures:
            for f in self._futures:
                f.cancel()
        if wait:
            for f in self._futures:
                f.exception() if not f.cancelled() else None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.shutdown()


@contextlib.contextmanager
def actor_pools():
    """The pools of orphan cleanup, deletions, expiration, the read-ahead and the commit's
    file checks made of actors (ActorExecutor); compaction's pool (which waits with
    concurrent.futures.wait) stays inline. Used instead of `inline_pools` by the read-ahead
    variants (Sim(pools="actors"))."""
    import paimon_commit.io.deletion as deletion
    import paimon_commit.io.read_ahead as read_ahead
    import paimon_commit.operations.commit as commit
    import paimon_commit.operations.compact.pool as compact
    import paimon_commit.operations.expire as expire
    import paimon_commit.operations.orphan as orphan
    import paimon_commit.reachability as reachability
    patched = [(m, name, ex) for ms, ex in (((deletion, orphan, expire, read_ahead, commit,
                                             reachability), ActorExecutor),
                                            ((compact,), InlineExecutor))
               for m in ms for name in ("ThreadPoolExecutor", "ContextExecutor")
               if hasattr(m, name)]
    saved = [getattr(m, name) for m, name, _ in patched]
    for m, name, ex in patched:
        setattr(m, name, ex)
    try:
        yield
    finally:
        for (m, name, _), real in zip(patched, saved):
            setattr(m, name, real)
