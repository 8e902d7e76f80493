"""Compaction's bins rewritten in forked worker processes (local storage): the same files and
rows as on threads; a bin failing in a worker, or a worker dying, leaves nothing behind.

Compaction forks only when no other thread runs, and the suite's process has some by the
time this file runs (the Spark session's, the store servers'): the tests run in a fresh
pytest process of their own (test_in_a_fresh_process), as a script or the CLI would."""
import os
import subprocess
import sys

import pyarrow as pa
import pytest

from conftest import D1, SCHEMA, files_under, make_rows, write
from invariants import assert_intact
from oracle import pp_read, rows

from paimon_commit import Table
from paimon_commit.operations.compact import pool as compact_pool
from paimon_commit.operations.compact import AppendCompaction, CompactionError
from paimon_commit.operations.compact.rewrite import BinRewriter

OPTS = {"target-file-size": "32 kb", "source.split.open-file-cost": "1 b"}


def _table(table_path):
    return Table.create(str(table_path), SCHEMA, partition_keys=["dt", "hr"], options=OPTS)


def _random_rows(ids, hr=1):
    # Random names do not compress: stored sizes follow the row count, bins roll files.
    return pa.Table.from_pylist(
        [{"id": i, "name": os.urandom(48).hex(), "dt": D1, "hr": hr} for i in ids],
        schema=SCHEMA)


def _fill(t, n=20, hrs=(1, 2)):
    for i in range(n):
        for hr in hrs:
            write(t, _random_rows(range(hr * 10_000 + i * 100, hr * 10_000 + i * 100 + 100),
                                  hr=hr))


IN_CHILD = os.environ.get("PAIMON_COMMIT_COMPACT_WORKERS_CHILD") == "1"
in_child = pytest.mark.skipif(not IN_CHILD, reason="run by test_in_a_fresh_process")


def test_in_a_fresh_process(tmp_path):
    if IN_CHILD:
        pytest.skip("this is the fresh process")
    p = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--basetemp",
         str(tmp_path / "child"), os.path.abspath(__file__)],
        env={**os.environ, "PAIMON_COMMIT_COMPACT_WORKERS_CHILD": "1"},
        cwd=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
        capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, p.stdout[-4000:] + p.stderr[-2000:]
    assert "8 passed" in p.stdout, p.stdout[-2000:]


@pytest.fixture(autouse=True)
def fresh_process(monkeypatch):
    """Earlier tests of this pytest process started Arrow's thread pools; a compaction run
    by a program that has not (the CLI, a script) forks its workers. Pretend the latter."""
    monkeypatch.setattr(compact_pool, "_os_threads", lambda: 1)


def _note_pid(monkeypatch, tmp_path):
    """Every bin leaves a file named after the process that rewrote it."""
    real = BinRewriter.rewrite_task

    def noting(self, task, *args, **kwargs):
        (tmp_path / f"pid-{os.getpid()}").touch()
        return real(self, task, *args, **kwargs)

    monkeypatch.setattr(BinRewriter, "rewrite_task", noting)


@in_child
@pytest.mark.parametrize("processes", [None, False])
@pytest.mark.parametrize("target", ["32 kb", "2 mb"])
def test_worker_processes_and_threads_write_the_same_rows(table_path, tmp_path, monkeypatch,
                                                          processes, target):
    # 32 kb: bins are cut into several files, the first bin runs alone to learn the stored
    # size per input byte; 2 mb: every bin is one file, all bins start at once.
    marks = tmp_path / "marks"
    marks.mkdir()
    t = _table(table_path)
    _fill(t)
    before = rows(pp_read(table_path))
    _note_pid(monkeypatch, marks)
    job = AppendCompaction(t.store, options={"file-operation.thread-num": "2",
                                             "target-file-size": target,
                                             "compaction.min.file-num": "2"})
    plan = job.plan()
    assert len(plan.tasks) >= 2
    assert compact_pool._learn_first(job._rewriter, plan.tasks) is (target == "32 kb")
    job.commit(plan, job.rewrite(plan, processes=processes))
    pids = {int(p.name[4:]) for p in marks.iterdir()}
    if processes is None:   # forked workers, not this process
        assert pids and os.getpid() not in pids
    else:
        assert pids == {os.getpid()}
    t = Table.open(str(table_path))
    live = t.live_files()
    assert len(live) < 40 and all(f.file.file_source == 1 for f in live)
    assert rows(pp_read(table_path)) == before
    assert_intact(table_path)


@in_child
def test_a_bin_failing_in_a_worker_deletes_the_files_of_every_bin(table_path):
    t = _table(table_path)
    _fill(t)
    job = AppendCompaction(t.store, options={"file-operation.thread-num": "2"})
    plan = job.plan()
    # The last file of the second bin is unreadable: that bin has rolled files by then,
    # which its worker deletes; the first bin's files are deleted by the parent.
    victim = t.store.data_file_path(sorted(
        plan.tasks[1].files, key=lambda e: e.file.min_sequence_number)[-1])
    with open(victim, "wb") as f:
        f.write(b"not parquet")
    before = files_under(table_path)
    job.store.io.deletion_log = []
    with pytest.raises(Exception, match="arquet"):
        job.rewrite(plan)
    assert files_under(table_path) == before
    deleted = job.store.io.deletion_log
    # Both the worker's deletions (reported back) and the parent's are in the log.
    dirs = {os.path.dirname(p) for p in deleted}
    assert len(deleted) >= 3 and len(dirs) == 2, deleted
    assert not any(os.path.exists(p) for p in deleted)
    assert t.latest_snapshot().id == 40


@in_child
def test_a_worker_process_that_dies_leaves_nothing_behind(table_path, monkeypatch):
    t = _table(table_path)
    _fill(t, hrs=(1,))
    parent = os.getpid()
    real = BinRewriter._roll

    def roll_then_die(self, *args, **kwargs):
        real(self, *args, **kwargs)
        if os.getpid() != parent:
            os._exit(3)   # killed after writing a file (out of memory, a signal)

    monkeypatch.setattr(BinRewriter, "_roll", roll_then_die)
    before = files_under(table_path)
    with pytest.raises(CompactionError, match="worker process rewriting .* died.*deleted the 1 "
                                              "file"):
        AppendCompaction(t.store, options={"file-operation.thread-num": "2"}).run()
    assert files_under(table_path) == before
    assert t.latest_snapshot().id == 20
    assert_intact(table_path)


@in_child
def test_a_pool_broken_between_submits_leaves_nothing_behind(table_path, monkeypatch):
    # All bins start at once (no first bin alone); bin 0's worker dies after writing a file
    # before the parent submits bin 1, whose submit then raises: bin 0's files are still
    # found and deleted, and the error names the compaction.
    from concurrent.futures import wait
    t = _table(table_path)
    _fill(t)
    parent = os.getpid()
    real = BinRewriter._roll

    def roll_then_die(self, writer, task, out, fed, ratio):
        real(self, writer, task, out, fed, ratio)
        if os.getpid() != parent and task is compact_pool._WORKER_TASKS[0]:
            os._exit(3)

    class Pool(compact_pool.ProcessPoolExecutor):
        first = None

        def submit(self, fn, *args, **kwargs):
            if self.first is None:
                self.first = super().submit(fn, *args, **kwargs)
                return self.first
            wait([self.first])      # bin 0's worker is dead before bin 1 is submitted
            return super().submit(fn, *args, **kwargs)

    monkeypatch.setattr(BinRewriter, "_roll", roll_then_die)
    monkeypatch.setattr(compact_pool, "ProcessPoolExecutor", Pool)
    job = AppendCompaction(t.store, options={"file-operation.thread-num": "2",
                                             "target-file-size": "2 mb",
                                             "compaction.min.file-num": "2"})
    plan = job.plan()
    assert len(plan.tasks) >= 2 and not compact_pool._learn_first(job._rewriter, plan.tasks)
    before = files_under(table_path)
    with pytest.raises(CompactionError, match="worker process"):
        job.rewrite(plan)
    assert files_under(table_path) == before
    assert t.latest_snapshot().id == 40
    assert_intact(table_path)


@in_child
def test_threads_are_used_when_another_thread_runs(tmp_path, monkeypatch):
    # A fork copies only the forking thread: with another thread running, Python's or a
    # native one (counted by the OS), bins run on threads (a lock that thread held would
    # stay locked in a child forever).
    import threading
    t = _table(tmp_path / "t")
    write(t, make_rows([1]))
    assert compact_pool._can_fork(t.store)
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        assert not compact_pool._can_fork(t.store)
    finally:
        stop.set()
        other.join()
    monkeypatch.setattr(compact_pool, "_os_threads", lambda: compact_pool._BASE_THREADS + 1)
    assert not compact_pool._can_fork(t.store)
