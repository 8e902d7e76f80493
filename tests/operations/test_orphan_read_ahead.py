"""Orphan cleanup's delete phase on storage with a read-ahead (object stores, commit 788846d),
on real local directories: the local FileIO is given a read-ahead of 8
(conftest.py, `orphan_read_ahead`), each test runs that way ("concurrent") and as local disk
is ("sequential") unless it is about the concurrent order alone.

On such storage a real run takes the maintenance lease on its thread while the used set is
read on the listing pool (where find_orphans is not overridden: test_orphan_recheck.py's
`_AfterPlan` overrides it, so its commits between the plan and the delete never meet this
path), and re-checks what was committed since the plan beside the lease check before each
batch. Here: a commit landing while the lease is taken (after the used set was read, or
before) keeps the old file it publishes; the lease is held, named remove-orphan-files, when
the first file is deleted; a lease held by someone else refuses the run as on local disk,
deleting nothing; a lease lost before the first batch stops the run before any delete; and
the re-check's concurrent reads meeting an expiration in the order local disk never makes.
"""
import os
import re
import threading
import time

import pytest

from conftest import files_under, make_rows, write
from invariants import assert_intact
from tests.operations.test_orphan_recheck import _AfterPlan, _cutoff, _ExpiresWhileProbing, \
    age_everything, commit_in_another_process, data_file, ids_read

from paimon_commit import Table
from paimon_commit.errors import LeaseHeldError
from paimon_commit.io.local import LocalFileIO
from paimon_commit.lease import LeaseManager, lease_manager, lease_settings, maintenance_lease
from paimon_commit.operations.orphan import CleanContext, OrphanFilesCleaner

WAIT_S = 10   # how long a hook waits for the other thread before the test fails


@pytest.fixture
def job_file(table, table_path):
    """Snapshot 1 (row 1); the job's file F of row 2 written and not committed; a stray
    orphan; everything aged. Returns (the job's messages, F, the stray)."""
    write(table, make_rows([1]))
    w = table.new_writer()
    w.write_arrow(make_rows([2]))
    msgs = w.prepare_commit()
    stray = table_path / "dt=19723" / "hr=1" / "bucket-0" / "data-stray.parquet"
    stray.write_bytes(b"x")
    age_everything(table_path)
    return msgs, data_file(table_path, msgs), str(stray)


class _AtTheLease(LocalFileIO):
    """Calls `hook` once, on the thread taking the lease, right after this run's lease
    record `.maintenance/lease-N` was created; records what the lease looks like at the
    first delete."""

    def __init__(self, root, hook=None):
        super().__init__(root)
        self.hook, self.record, self.at_delete = hook, None, None

    def try_create_atomic(self, path, data, **kw):
        created = super().try_create_atomic(path, data, **kw)
        if created and self.record is None and re.search(r"/\.maintenance/lease-\d+$", path):
            self.record = int(path.rpartition("-")[2])
            if self.hook is not None:
                self.hook()
        return created

    def delete_files(self, paths, executor=None):
        if self.at_delete is None:
            self.at_delete = LeaseManager(self, self.root).latest()
        return super().delete_files(paths, executor)


def _spy_plan(monkeypatch, used_waits_for=None):
    """Records what the plan selected, and when the used set was read: `read` is set once
    used_files returned. With `used_waits_for` (an Event), used_files starts reading only
    once it is set."""
    read, planned = threading.Event(), []
    used, select = OrphanFilesCleaner.used_files, OrphanFilesCleaner._select

    def used_files(self):
        if used_waits_for is not None:
            assert used_waits_for.wait(WAIT_S), "used_files waited in vain"
        try:
            return used(self)
        finally:
            read.set()

    def _select(self, *a, **kw):
        found = select(self, *a, **kw)
        planned.extend(found.paths())
        return found
    # (class attributes other than find_orphans: the early lease stays on)
    monkeypatch.setattr(OrphanFilesCleaner, "used_files", used_files)
    monkeypatch.setattr(OrphanFilesCleaner, "_select", _select)
    return read, planned


def test_a_commit_while_the_lease_is_taken_keeps_the_old_file_it_publishes(
        table, table_path, tmp_path, job_file, orphan_read_ahead, monkeypatch):
    # The job, restarted in another process, commits F as snapshot 2 right after this run
    # created its lease record and after the used set was read: F is an orphan of the plan,
    # and the re-check before the batch keeps it. Concurrently the lease record is created
    # while the used set is read (used_files is held until it exists: on local disk as it
    # is, the lease is taken after the plan, and used_files does not wait).
    msgs, f, stray = job_file
    taken = threading.Event()
    read, planned = _spy_plan(monkeypatch, taken if orphan_read_ahead.concurrent else None)
    published = []

    def commit():
        taken.set()
        assert read.wait(WAIT_S), "the used set was not read"
        published.append(commit_in_another_process(tmp_path, table_path, msgs, "job", 7))
    io = _AtTheLease(str(table_path), commit)
    r = OrphanFilesCleaner(CleanContext(str(table_path), older_than_ms=_cutoff(),
                                        file_io=io)).clean()
    assert published == [2]
    assert f in planned and stray in planned             # both orphans when planned
    assert r.complete, r.message
    assert os.path.exists(f)
    assert os.path.relpath(f, str(table_path)) not in r.deleted_paths
    assert not os.path.exists(stray)                     # the plan's other orphans go
    assert "dt=19723/hr=1/bucket-0/data-stray.parquet" in r.deleted_paths
    assert ids_read(table_path) == [1, 2]
    assert_intact(table_path, {2: [1, 2]})
    assert orphan_read_ahead.recheck_pools               # the re-check ran


@pytest.mark.parametrize("orphan_read_ahead", ["concurrent"], indirect=True)
def test_a_commit_before_the_used_set_is_read_is_kept_by_the_plan(
        table, table_path, tmp_path, job_file, orphan_read_ahead, monkeypatch):
    # Concurrently only (on local disk the used set is read before the lease is taken): the
    # commit lands at the lease's take, before used_files reads anything. The plan sees
    # snapshot 2 and F is not an orphan; snapshot 2, committed after the mark, is re-checked
    # before the batch all the same.
    msgs, f, stray = job_file
    committed = threading.Event()
    _, planned = _spy_plan(monkeypatch, committed)
    published = []

    def commit():
        try:
            published.append(commit_in_another_process(tmp_path, table_path, msgs, "job", 7))
        finally:
            committed.set()
    io = _AtTheLease(str(table_path), commit)
    r = OrphanFilesCleaner(CleanContext(str(table_path), older_than_ms=_cutoff(),
                                        file_io=io)).clean()
    assert published == [2]
    assert f not in planned and stray in planned
    assert r.complete, r.message
    assert os.path.exists(f) and not os.path.exists(stray)
    assert ids_read(table_path) == [1, 2]
    assert_intact(table_path, {2: [1, 2]})


def test_the_lease_is_held_when_the_first_file_is_deleted(table, table_path, job_file,
                                                          orphan_read_ahead, monkeypatch):
    # Concurrently it is taken while the used set is read (used_files waits for its record),
    # and it is still this run's, not released, when the first orphan is deleted; released
    # at the end.
    _, f, stray = job_file
    taken = threading.Event()
    _spy_plan(monkeypatch, taken if orphan_read_ahead.concurrent else None)
    io = _AtTheLease(str(table_path), taken.set)
    r = OrphanFilesCleaner(CleanContext(str(table_path), older_than_ms=_cutoff(),
                                        file_io=io)).clean()
    assert r.complete and not os.path.exists(f) and not os.path.exists(stray)
    held = io.at_delete
    assert held is not None and held.number == io.record
    assert (held.operation, held.released, held.pid) == ("remove-orphan-files", False,
                                                          os.getpid())
    after = LeaseManager(io, str(table_path)).latest()
    assert after.number == io.record + 1 and after.released and after.token == held.token
    assert_intact(table_path, {1: [1]})


class _Holder:
    """Holds the table's lease on another thread until `release()`."""

    def __init__(self, table):
        self.taken, self.done = threading.Event(), threading.Event()

        def run():
            with maintenance_lease(table.store, "hold"):
                self.taken.set()
                self.done.wait(60)
        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()
        assert self.taken.wait(WAIT_S)

    def release(self):
        self.done.set()
        self.thread.join(WAIT_S)


def test_a_lease_held_by_another_refuses_the_real_run_and_deletes_nothing(
        table, table_path, job_file, orphan_read_ahead):
    # The same LeaseHeldError either way (concurrently it is raised on this thread while the
    # used set is read, which is waited for, not left running); nothing deleted.
    _, f, stray = job_file
    before = files_under(table_path)
    holder = _Holder(table)
    try:
        with lease_settings(wait_s=0.2):
            t0 = time.monotonic()
            with pytest.raises(LeaseHeldError) as e:
                Table.open(str(table_path)).remove_orphan_files()
            assert time.monotonic() - t0 >= 0.2               # it waited, then gave up
    finally:
        holder.release()
    assert re.fullmatch(rf"table \S+ is being maintained by \S+ pid {os.getpid()} \(hold "
                        rf"since .*\); rerun later or raise --lease-wait", str(e.value)), \
        str(e.value)
    assert files_under(table_path) == before
    assert orphan_read_ahead.marks_here and not orphan_read_ahead.recheck_pools
    # Free again: the run deletes both orphans (the job never committed F).
    r = Table.open(str(table_path)).remove_orphan_files()
    assert r.complete and not os.path.exists(f) and not os.path.exists(stray)
    assert_intact(table_path, {1: [1]})


def test_a_lease_lost_before_the_first_batch_deletes_nothing(table, table_path, job_file,
                                                             orphan_read_ahead, monkeypatch):
    # Another handle breaks the lease once the delete phase has begun, before its first
    # batch: the lease check (concurrently beside the re-check) stops the run there.
    _, f, stray = job_file
    before = files_under(table_path)
    delete = OrphanFilesCleaner.delete

    def break_then_delete(self, orphans, executor):
        lease_manager(Table.open(str(table_path)).store).break_lease()
        return delete(self, orphans, executor)
    monkeypatch.setattr(OrphanFilesCleaner, "delete", break_then_delete)
    r = Table.open(str(table_path)).remove_orphan_files()
    assert not r.complete and r.stopped_by == "lease", r.message
    assert "lost the maintenance lease" in r.message
    assert r.deleted_paths == [] and r.remaining == 2
    assert files_under(table_path) == before
    assert_intact(table_path, {1: [1]})


class _MarkReadLast(_ExpiresWhileProbing):
    """_ExpiresWhileProbing, with the re-check's read of the marked snapshot 1 made only
    after the read of snapshot 2 that removes 1-3 (concurrently both are in flight)."""

    def __init__(self, root, table_path):
        super().__init__(root, table_path)
        self.expired = threading.Event()

    def read_bytes(self, path):
        if self.armed and path.endswith("/snapshot/snapshot-1"):
            assert self.expired.wait(WAIT_S), "snapshot 2 was not read beside snapshot 1"
        data = super().read_bytes(path)
        if self.fired:
            self.expired.set()
        return data


@pytest.mark.parametrize("orphan_read_ahead", ["concurrent"], indirect=True)
def test_an_expiration_read_before_the_marked_snapshot_stops_the_run(table, table_path,
                                                                     orphan_read_ahead):
    # Concurrent order only (test_orphan_recheck.py's test of this expiration meets it
    # there by chance; on local disk the marked snapshot is read first, on this thread):
    # the mark itself is gone when read. Stopped: a mark that changed or went away means
    # what was committed since cannot be told (a rollback or an expiration); nothing is
    # deleted and F, live in snapshot 4, stays.
    write(table, make_rows([1]))
    w = table.new_writer()
    w.write_arrow(make_rows([2]))
    msgs = w.prepare_commit()
    age_everything(table_path)
    f = data_file(table_path, msgs)
    io = _MarkReadLast(str(table_path), table_path)

    def commits():
        write(table, make_rows([10]))                                    # 2
        with Table.open(str(table_path)).new_commit(commit_user="job") as c:
            assert c.commit(msgs, 1) == 3
        write(table, make_rows([11]))                                    # 4
        io.armed = True

    cleaner = _AfterPlan(CleanContext(str(table_path), older_than_ms=_cutoff(), file_io=io),
                         commits)
    r = cleaner.clean()
    assert f in cleaner.planned and io.fired
    assert not r.complete and r.stopped_by == "recheck" and r.deleted_paths == []
    assert r.message.startswith(
        f"stopped before a batch of deletions: snapshot 1 of {table.path} changed or went "
        f"away since the orphan files were planned (a rollback or an expiration ran "
        f"meanwhile), so what commits published since cannot be told; nothing of this batch "
        f"was deleted, a rerun plans again; deleted 0 orphan file(s)"), r.message
    assert os.path.exists(f)
    assert ids_read(table_path) == [1, 2, 10, 11]
    assert orphan_read_ahead.recheck_pools == [True]


def test_a_scoped_real_run_holds_the_lease_when_the_first_file_is_deleted(
        table, table_path, job_file, orphan_read_ahead):
    # A partition-scoped run lists first and reads after (its reads depend on what was
    # listed): on storage with a read-ahead it takes the lease after the plan, as on local
    # disk. (Regression: for a while such a run was left out of the early take and out of
    # the take after the plan, and deleted without the lease.)
    _, f, stray = job_file
    io = _AtTheLease(str(table_path))
    r = OrphanFilesCleaner(CleanContext(str(table_path), older_than_ms=_cutoff(),
                                        file_io=io, partitions=["dt=19723"])).clean()
    assert r.complete and not os.path.exists(f) and not os.path.exists(stray)
    held = io.at_delete
    assert held is not None and held.number == io.record
    assert (held.operation, held.released, held.pid) == ("remove-orphan-files", False,
                                                          os.getpid())
    assert LeaseManager(io, str(table_path)).latest().released
    assert_intact(table_path, {1: [1]})


class _RollbackBetweenReads(LocalFileIO):
    """Lists in key order (as an object store does); once the used set's reads of the
    snapshots began, right after snapshot 2 was read, runs `inject` (a rollback and new
    commits re-creating ids 2-4). The main thread's lease take waits until then (its own
    rollback needs the lease: the run does not hold it yet)."""

    def __init__(self, root, inject):
        super().__init__(root)
        self.inject, self.fired = inject, threading.Event()
        self.reads = []

    def list_names(self, path):
        return sorted(super().list_names(path))

    def list_status(self, path, *a, **kw):
        if "/.maintenance" in path and threading.current_thread() is threading.main_thread() \
                and not self.fired.is_set() and self.reads:
            self.fired.wait(WAIT_S)
        return super().list_status(path, *a, **kw)

    def read_bytes(self, path):
        data = super().read_bytes(path)
        name = path.rpartition("/")[2]
        if "/snapshot/snapshot-" in path and not self.fired.is_set():
            self.reads.append(name)
            if name == "snapshot-2":
                try:
                    self.inject()
                finally:
                    self.fired.set()
        return data


def test_a_rollback_between_the_used_sets_reads_stops_the_run(tmp_path, orphan_read_ahead):
    # Audit issue26e F1. The used set reads 1..4 (listed in that order); after it read 2,
    # this library's rollback_to(1) and new commits re-create 2-4: the job's old file F
    # in 2', dropped by an overwrite in 3', whose manifests 4' merges (no F in 4'). The
    # mark was the newest snapshot read: read last, it was 4', which the re-check found
    # unchanged, and F, live in 2', was deleted. Read first, it is the old 4, gone at the
    # re-check: the run stops before deleting, and F stays.
    from conftest import SCHEMA
    path = tmp_path / "wh" / "db.db" / "t"
    path.parent.mkdir(parents=True)
    t = Table.create(str(path), SCHEMA, partition_keys=["dt", "hr"],
                     options={"manifest.full-compaction-threshold-size": "1b",
                              "manifest.merge-min-count": "1"})
    for i in (1, 2, 3, 4):
        write(t, make_rows([i]))
    w = t.new_writer()
    w.write_arrow(make_rows([9]))
    msgs = w.prepare_commit()
    age_everything(path)
    f = data_file(path, msgs)

    def inject():
        Table.open(str(path)).rollback_to(snapshot_id=1)
        with Table.open(str(path)).new_commit(commit_user="job") as c:
            assert c.commit(msgs, 7) == 2                                # 2': F
        tt = Table.open(str(path))
        ww = tt.new_writer()
        ww.write_arrow(make_rows([5]))
        with tt.new_commit() as c:
            assert c.overwrite(ww.prepare_commit()) == 3                 # 3': F dropped
        assert write(Table.open(str(path)), make_rows([6])) == 4        # 4'

    io = _RollbackBetweenReads(str(path), inject)
    r = OrphanFilesCleaner(CleanContext(str(path), older_than_ms=_cutoff(), file_io=io)).clean()
    assert io.fired.is_set() and io.reads[0] == "snapshot-4"   # the mark, read first
    assert not r.complete and r.stopped_by == "recheck" and r.deleted_paths == []
    assert r.message.startswith(f"stopped before a batch of deletions: snapshot 4 of {path} "
                                f"changed or went away since the orphan files were planned")
    assert os.path.exists(f)
    assert sorted(Table.open(str(path)).read_arrow(snapshot_id=2).column("id").to_pylist()) \
        == [1, 9]
    assert Table.open(str(path)).check().healthy


class _RestoreBeforeTheMark(LocalFileIO):
    """Lists in key order; right before the used set's first read of snapshot-6 (after it
    listed snapshot/), runs `inject` once. The main thread's lease take waits until then."""

    def __init__(self, root, inject):
        super().__init__(root)
        self.inject, self.fired = inject, threading.Event()
        self.listed = False

    def list_names(self, path):
        out = sorted(super().list_names(path))
        if path.rstrip("/").endswith("/snapshot"):
            self.listed = True
        return out

    def list_status(self, path, *a, **kw):
        if "/.maintenance" in path and threading.current_thread() is threading.main_thread() \
                and self.listed and not self.fired.is_set():
            self.fired.wait(WAIT_S)
        return super().list_status(path, *a, **kw)

    def read_bytes(self, path):
        if self.listed and path.endswith("/snapshot/snapshot-6") and not self.fired.is_set():
            try:
                self.inject()
            finally:
                self.fired.set()
        return super().read_bytes(path)


def test_a_restore_below_the_listed_ids_before_the_mark_is_read_stops_the_run(
        tmp_path, orphan_read_ahead):
    # Audit issue26f F1. Snapshots 1-6, tag T on 1, 1-3 expired: snapshot/ lists 4-6. Before
    # the newest (the mark) is read, rollback_to(tag T) restores 1 and deletes 4-6; the job
    # commits its old file F as 2, an overwrite drops it in 3, commits re-create 4'-6'. Every
    # read succeeds (4'-6'), 2 and 3 were never listed, the mark 6' looks unchanged: F was
    # deleted. The re-check's listing shows ids at or below the mark the plan never read.
    from conftest import SCHEMA
    from paimon_commit import ExpireConfig, ExpireSnapshots
    path = tmp_path / "wh" / "db.db" / "t"
    path.parent.mkdir(parents=True)
    t = Table.create(str(path), SCHEMA, partition_keys=["dt", "hr"],
                     options={"manifest.full-compaction-threshold-size": "1b",
                              "manifest.merge-min-count": "1"})
    for i in range(1, 7):
        write(t, make_rows([i]))
    Table.open(str(path)).create_tag("T", 1)
    ExpireSnapshots(Table.open(str(path)).store,
                    ExpireConfig(retain_min=3, retain_max=3, time_retained_ms=0,
                                 max_deletes=1000)).expire()
    w = t.new_writer()
    w.write_arrow(make_rows([99]))
    msgs = w.prepare_commit()
    age_everything(path)
    f = data_file(path, msgs)

    def inject():
        assert Table.open(str(path)).rollback_to(tag="T").snapshot_id == 1
        with Table.open(str(path)).new_commit(commit_user="job") as c:
            assert c.commit(msgs, 77) == 2                               # F
        tt = Table.open(str(path))
        ww = tt.new_writer()
        ww.write_arrow(make_rows([50]))
        with tt.new_commit() as c:
            assert c.overwrite(ww.prepare_commit()) == 3                 # F dropped
        for want in (4, 5, 6):
            assert write(Table.open(str(path)), make_rows([want * 10])) == want

    io = _RestoreBeforeTheMark(str(path), inject)
    r = OrphanFilesCleaner(CleanContext(str(path), older_than_ms=_cutoff(), file_io=io)).clean()
    assert io.fired.is_set()
    assert not r.complete and r.stopped_by == "recheck" and r.deleted_paths == []
    assert r.message.startswith(
        f"stopped before a batch of deletions: snapshot 1 of {path} exists but was not there "
        f"when the orphan files were planned (3 such id(s) at or below snapshot 6, the "
        f"newest then): a rollback or a restore ran meanwhile"), r.message
    assert os.path.exists(f)
    assert 99 in Table.open(str(path)).read_arrow(snapshot_id=2).column("id").to_pylist()
    assert Table.open(str(path)).check().healthy
