"""Compaction's bins in spawned worker processes (a process that must not fork: another thread
runs): the same rows, every file a COMPACT file; a bin failing in a worker, or a worker dying,
leaves nothing behind; a worker that cannot start costs nothing but its start.

The calling thread rewrites bins itself while the workers start, so on a small table it can
finish before any worker is up. The tests that need a worker to take a bin hold the calling
thread's first bin until a worker has taken one."""
import os
import threading

import pyarrow as pa
import pytest

from conftest import D1, SCHEMA, files_under
from invariants import assert_intact
from oracle import pp_read, rows

from paimon_commit import Table
from paimon_commit.operations.compact import AppendCompaction, CompactionError
from paimon_commit.operations.compact import pool as compact_pool
from paimon_commit.operations.compact import spawn
from paimon_commit.operations.compact.rewrite import BinRewriter

OPTS = {"target-file-size": "32 kb", "source.split.open-file-cost": "1 b"}
WAIT = 120   # seconds a worker may take to start on a loaded machine


def _table(table_path):
    return Table.create(str(table_path), SCHEMA, partition_keys=["dt", "hr"], options=OPTS)


def _fill(t, n=20, hrs=(1, 2, 3)):
    from conftest import write
    for i in range(n):
        for hr in hrs:
            ids = range(hr * 10_000 + i * 100, hr * 10_000 + i * 100 + 100)
            # Random names do not compress: stored sizes follow the row count.
            write(t, pa.Table.from_pylist(
                [{"id": j, "name": os.urandom(48).hex(), "dt": D1, "hr": hr} for j in ids],
                schema=SCHEMA))


@pytest.fixture
def another_thread():
    """A thread alive beside the compaction, as in a service: forking is not safe."""
    stop = threading.Event()
    t = threading.Thread(target=stop.wait, daemon=True)
    t.start()
    yield t
    stop.set()
    t.join()


class _Taken(list):
    """The indexes of the bins the workers took."""
    learn_first = False   # the first bin runs alone: hold the calling thread's second one


@pytest.fixture
def workers_take_bins(monkeypatch):
    """The calling thread holds its first bin (its second one when the first bin runs alone)
    until a spawned worker has taken one."""
    taken = _Taken()
    took = threading.Event()
    calls = []
    real_submit = spawn.SpawnedWorker.submit
    real_task = BinRewriter.rewrite_task

    def submit(self, index, *args, **kwargs):
        taken.append(index)
        took.set()
        return real_submit(self, index, *args, **kwargs)

    def rewrite_task(self, *args, **kwargs):
        calls.append(1)
        if len(calls) > 1 or not taken.learn_first:
            assert took.wait(WAIT), "no worker process took a bin"
        return real_task(self, *args, **kwargs)

    monkeypatch.setattr(spawn.SpawnedWorker, "submit", submit)
    monkeypatch.setattr(BinRewriter, "rewrite_task", rewrite_task)
    return taken


def _job(t, target="32 kb"):
    return AppendCompaction(t.store, options={"file-operation.thread-num": "2",
                                             "target-file-size": target,
                                             "compaction.min.file-num": "2"})


@pytest.mark.parametrize("target", ["32 kb", "2 mb"])
def test_spawned_workers_rewrite_every_row_once(tmp_path, another_thread,
                                                        workers_take_bins, target):
    # 32 kb: bins are cut into several files, the first bin runs alone to learn the stored
    # size per input byte; 2 mb: every bin is one file, all bins start at once.
    t = _table(tmp_path / "wh" / "db.db" / "t")
    _fill(t)
    before = rows(pp_read(tmp_path / "wh" / "db.db" / "t"))
    job = _job(t, target)
    assert not compact_pool._can_fork(t.store)
    plan = job.plan()
    assert len(plan.tasks) >= 3
    workers_take_bins.learn_first = compact_pool._learn_first(job._rewriter, plan.tasks)
    assert workers_take_bins.learn_first is (target == "32 kb")
    done = job.rewrite(plan, processes=True)
    assert workers_take_bins, "every bin ran in this process"
    assert [r.task for r in done] == list(plan.tasks)
    job.commit(plan, done)
    live = Table.open(str(tmp_path / "wh" / "db.db" / "t")).live_files()
    assert len(live) < 60 and all(f.file.file_source == 1 for f in live)
    assert rows(pp_read(tmp_path / "wh" / "db.db" / "t")) == before
    assert_intact(tmp_path / "wh" / "db.db" / "t")


def test_a_bin_failing_in_a_spawned_worker_deletes_the_files_of_every_bin(
        tmp_path, another_thread, workers_take_bins):
    t = _table(tmp_path / "wh" / "db.db" / "t")
    _fill(t, hrs=(1, 2))
    job = _job(t, "2 mb")
    plan = job.plan()
    assert len(plan.tasks) == 2
    # Bin 0 is this thread's (held until a worker took one), bin 1 the worker's: its last
    # file is unreadable, after the worker wrote its first file.
    victim = t.store.data_file_path(sorted(
        plan.tasks[1].files, key=lambda e: e.file.min_sequence_number)[-1])
    with open(victim, "wb") as f:
        f.write(b"not parquet")
    before = files_under(tmp_path / "wh" / "db.db" / "t")
    job.store.io.deletion_log = []
    with pytest.raises(Exception, match="arquet"):
        job.rewrite(plan, processes=True)
    assert workers_take_bins == [1]
    assert files_under(tmp_path / "wh" / "db.db" / "t") == before
    # This thread's bin finished and was deleted by the abort.
    deleted = job.store.io.deletion_log
    assert deleted and not any(os.path.exists(p) for p in deleted)
    assert t.latest_snapshot().id == 40


class _Exit:
    """Unpickled in a worker, exits it at once (killed, out of memory)."""

    def __reduce__(self):
        return os._exit, (3,)


def test_a_spawned_worker_that_dies_leaves_nothing_behind(tmp_path, another_thread,
                                                          workers_take_bins, monkeypatch):
    t = _table(tmp_path / "wh" / "db.db" / "t")
    _fill(t, hrs=(1, 2, 3))
    job = _job(t, "2 mb")
    plan = job.plan()
    assert len(plan.tasks) == 3
    real = spawn.task_message

    def second_kills(index, name, ratio, task):
        msg = real(index, name, ratio, task)
        # The worker's first bin is rewritten (its files must go too); its second kills it.
        return msg if index == 1 else (_Exit(),) + msg[1:]

    monkeypatch.setattr(spawn, "task_message", second_kills)
    monkeypatch.setattr(compact_pool, "_learn_first", lambda *a: False)
    # This thread takes only bin 0: the worker gets bins 1 and 2.
    real_take_wait = BinRewriter.rewrite_task
    second_taken = threading.Event()
    real_submit = spawn.SpawnedWorker.submit

    def submit(self, index, *args, **kwargs):
        if index == 2:
            second_taken.set()
        return real_submit(self, index, *args, **kwargs)

    def rewrite_task(self, *args, **kwargs):
        assert second_taken.wait(WAIT)
        return real_take_wait(self, *args, **kwargs)

    monkeypatch.setattr(spawn.SpawnedWorker, "submit", submit)
    monkeypatch.setattr(BinRewriter, "rewrite_task", rewrite_task)
    before = files_under(tmp_path / "wh" / "db.db" / "t")
    with pytest.raises(CompactionError, match=r"worker process rewriting .* died \(exit code 3"):
        job.rewrite(plan, processes=True)
    assert files_under(tmp_path / "wh" / "db.db" / "t") == before
    assert t.latest_snapshot().id == 60
    assert_intact(tmp_path / "wh" / "db.db" / "t")


def test_a_worker_that_cannot_start_leaves_every_bin_to_this_thread(tmp_path, another_thread,
                                                                    monkeypatch):
    t = _table(tmp_path / "wh" / "db.db" / "t")
    _fill(t, n=10)
    before = rows(pp_read(tmp_path / "wh" / "db.db" / "t"))
    monkeypatch.setattr(spawn, "_BOOT", "import sys; sys.exit(3)")
    job = _job(t, "2 mb")
    plan = job.plan()
    job.commit(plan, job.rewrite(plan, processes=True))
    assert len(Table.open(str(tmp_path / "wh" / "db.db" / "t")).live_files()) == len(plan.tasks)
    assert rows(pp_read(tmp_path / "wh" / "db.db" / "t")) == before


def test_small_work_is_not_worth_a_worker(tmp_path, another_thread, monkeypatch):
    # Starting an interpreter costs more than rewriting a few files: threads do them.
    def refuse(*args, **kwargs):
        raise AssertionError("a worker was spawned for a small compaction")

    monkeypatch.setattr(spawn.SpawnedWorker, "__init__", refuse)
    t = _table(tmp_path / "wh" / "db.db" / "t")
    _fill(t, n=5)
    job = _job(t, "2 mb")
    plan = job.plan()
    assert not compact_pool._worth_spawning(plan.tasks)
    job.commit(plan, job.rewrite(plan))
    assert len(Table.open(str(tmp_path / "wh" / "db.db" / "t")).live_files()) == len(plan.tasks)


def test_a_worker_still_starting_when_the_bins_are_done_is_not_waited_for(
        tmp_path, another_thread, monkeypatch):
    import time
    started = []
    real_init = spawn.SpawnedWorker.__init__

    def init(self, blob):
        real_init(self, blob)
        started.append(self)

    monkeypatch.setattr(spawn, "_BOOT", "import time; time.sleep(120)")
    monkeypatch.setattr(spawn.SpawnedWorker, "__init__", init)
    t = _table(tmp_path / "wh" / "db.db" / "t")
    _fill(t, n=5)
    job = _job(t, "2 mb")
    plan = job.plan()
    t0 = time.monotonic()
    job.commit(plan, job.rewrite(plan, processes=True))
    assert time.monotonic() - t0 < 100
    assert started and all(w.proc.poll() is not None for w in started)   # stopped
    assert len(Table.open(str(tmp_path / "wh" / "db.db" / "t")).live_files()) == \
        len(plan.tasks)


@pytest.fixture
def spawned(monkeypatch):
    """Every worker process started, in order."""
    out = []
    real_init = spawn.SpawnedWorker.__init__

    def init(self, blob):
        real_init(self, blob)
        out.append(self)

    monkeypatch.setattr(spawn.SpawnedWorker, "__init__", init)
    return out


def test_workers_start_before_planning_a_whole_table_compaction(tmp_path, another_thread,
                                                                spawned, monkeypatch):
    # They import while this thread plans; then they take bins like any worker.
    path = tmp_path / "wh" / "db.db" / "t"
    t = _table(path)
    _fill(t)
    before = rows(pp_read(path))
    monkeypatch.setattr(compact_pool, "SPAWN_MIN_SECONDS", 0)
    at_plan = []
    real_plan = AppendCompaction.plan

    def plan(self):
        at_plan.append(len(spawned))
        return real_plan(self)

    monkeypatch.setattr(AppendCompaction, "plan", plan)
    result = _job(t, "2 mb").run()
    assert at_plan == [1] and len(spawned) == 1
    assert spawned[0].proc.poll() is not None    # gone once the compaction is done
    assert result.snapshot_id == 61
    assert rows(pp_read(path)) == before
    assert_intact(path)


@pytest.mark.parametrize("how", ["nothing to compact", "partitions", "dry run"])
def test_workers_started_early_never_outlive_a_compaction_without_bins(
        tmp_path, another_thread, spawned, monkeypatch, how):
    path = tmp_path / "wh" / "db.db" / "t"
    t = _table(path)
    _fill(t, n=3)
    monkeypatch.setattr(compact_pool, "SPAWN_MIN_SECONDS", 0)
    at_plan = []
    real_plan = AppendCompaction.plan

    def plan(self):
        at_plan.append(len(spawned))
        return real_plan(self)

    monkeypatch.setattr(AppendCompaction, "plan", plan)
    options = {"file-operation.thread-num": "2"}
    if how == "nothing to compact":
        options["compaction.min.file-num"] = "100"
    job = AppendCompaction(t.store, [{"hr": 1}] if how == "partitions" else None, options)
    result = job.run(dry_run=how == "dry run")
    if how == "nothing to compact":
        assert result.nothing_to_compact and at_plan == [1]
    else:   # only a whole-table compaction starts them before planning
        assert at_plan == [0]
    assert all(w.proc.poll() is not None for w in spawned)
