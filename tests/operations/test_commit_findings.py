"""Regressions for the outside audit's findings on the commit/publish path (F2, F5, F7, F10,
F11, F12). Each test lets the rivals (other writers, a rollback, an expiration) move at the exact
storage call where they hurt, on a real directory; pypaimon and our reader check every row, and
every file a retained snapshot names must be on disk."""
import errno
import os

import pytest

from conftest import SCHEMA, make_rows, write
from invariants import assert_intact
from oracle import pp_read

from paimon_commit import ExpireConfig, ExpireSnapshots, Table
from paimon_commit.errors import CommitConflictError
from paimon_commit.io.local import LocalFileIO
from paimon_commit.store import FileStore


def snapshot_ids(table_path):
    d = table_path / "snapshot"
    return sorted(int(n.split("-")[1]) for n in os.listdir(d) if n.startswith("snapshot-")) \
        if d.exists() else []


def expire_keeping(table_path, keep):
    cfg = ExpireConfig(retain_min=keep, retain_max=keep, time_retained_ms=0, max_deletes=100)
    return ExpireSnapshots(Table.open(str(table_path)).store, cfg).expire()


def ids_read(table_path, snapshot_id=None):
    """Row ids as pypaimon and our reader see them (they must agree), sorted, duplicates kept."""
    ours = sorted(Table.open(str(table_path)).read_arrow(snapshot_id=snapshot_id)
                  .column("id").to_pylist())
    theirs = sorted(pp_read(table_path, snapshot_id=snapshot_id).column("id").to_pylist())
    assert ours == theirs
    return ours


# --- F12: local publish, EEXIST after our own link took effect --------------------------------

def test_local_publish_answered_eexist_after_its_link_took_effect_is_published_once(
        table, table_path, monkeypatch):
    # Regression (audit F12): on NFS a LINK whose reply is lost is retransmitted and answered
    # EEXIST although ours took effect. The commit took that for a lost race, deleted the base
    # manifest list its own snapshot 2 names and published row 2 again as snapshot 3.
    write(table, make_rows([1]))
    real_link = os.link
    armed = [True]

    def link_then_eexist(src, dst, *args, **kwargs):
        real_link(src, dst, *args, **kwargs)
        if armed[0] and str(dst).endswith("/snapshot/snapshot-2"):
            armed[0] = False
            raise FileExistsError(errno.EEXIST, "File exists (retransmitted LINK)", dst)
    monkeypatch.setattr(os, "link", link_then_eexist)
    assert write(Table.open(str(table_path)), make_rows([2])) == 2
    monkeypatch.setattr(os, "link", real_link)
    assert not armed[0]
    assert snapshot_ids(table_path) == [1, 2]
    assert ids_read(table_path) == [1, 2]
    assert_intact(table_path, {1: [1], 2: [1, 2]})


def test_local_publish_that_loses_the_race_to_another_writer_still_reports_it(table,
                                                                              table_path):
    # The read-back must not take a rival's snapshot for ours: different bytes are a lost race.
    io = LocalFileIO(str(table_path))
    target = str(table_path / "snapshot" / "snapshot-9")
    assert io.try_create_atomic(target, b"theirs") is True
    assert io.try_create_atomic(target, b"ours") is False
    assert io.try_create_atomic(target, b"theirs") is True   # our own earlier create
    assert open(target, "rb").read() == b"theirs"


# --- F2: an interrupt right after a successful publish ---------------------------------------

class _InterruptAtHint(LocalFileIO):
    """Its write of the LATEST hint for snapshot `n` raises KeyboardInterrupt (Ctrl-C arriving
    between the publish and the return)."""

    def __init__(self, root, n):
        super().__init__(root)
        self.n, self.armed = n, True

    def overwrite_atomic(self, path, data):
        if self.armed and path.endswith("/snapshot/LATEST") and data == str(self.n).encode():
            self.armed = False
            raise KeyboardInterrupt("injected: Ctrl-C while the LATEST hint is written")
        return super().overwrite_atomic(path, data)


def test_an_interrupt_after_a_successful_publish_keeps_the_published_delta(table, table_path):
    # Regression (audit F2): _run's `except BaseException` deleted the delta manifest list and
    # manifests the just-published snapshot 2 names: snapshot 2 was on disk, unreadable.
    write(table, make_rows([1]))
    io = _InterruptAtHint(str(table_path), 2)
    t = Table(FileStore.open(str(table_path), io=io))
    with pytest.raises(KeyboardInterrupt, match="Ctrl-C"):
        write(t, make_rows([2]))
    assert not io.armed
    assert snapshot_ids(table_path) == [1, 2]
    assert ids_read(table_path, 2) == [1, 2]
    assert_intact(table_path, {1: [1], 2: [1, 2]})


# --- F7 / F10: the base check is one of identity, also for the first commit ------------------

class _RivalsAtCreate(LocalFileIO):
    """The first create of snapshot-`n`: the rivals run right before it (`where="before"`), or
    between its precondition and the create itself (`where="in-window"`)."""

    def __init__(self, root, n, rivals, where="before"):
        super().__init__(root)
        self.n, self.rivals, self.where, self.armed = n, rivals, where, True

    def try_create_atomic(self, path, data, precondition=None, **kw):
        if not (self.armed and path.endswith(f"/snapshot/snapshot-{self.n}")):
            return super().try_create_atomic(path, data, precondition, **kw)
        self.armed = False
        if self.where == "before":
            self.rivals()
            return super().try_create_atomic(path, data, precondition, **kw)

        def then_rivals():
            ok = precondition is None or precondition()
            self.rivals()
            return ok
        return super().try_create_atomic(path, data, then_rivals, **kw)


@pytest.mark.parametrize("where", ["before", "in-window"])
def test_a_slow_first_commit_never_recreates_an_expired_snapshot_1(table, table_path, where):
    # Regression (audit F7): the first commit had no base, so neither the check before the
    # create nor the lineage check after it ran: after others published 1..3 and expired 1, it
    # re-created snapshot-1 and returned 1, its row in no later snapshot.
    def rivals():
        for i in (101, 102, 103):
            write(Table.open(str(table_path)), make_rows([i]))
        expire_keeping(table_path, 2)
    io = _RivalsAtCreate(str(table_path), 1, rivals, where)
    slow = Table(FileStore.open(str(table_path), io=io))
    assert write(slow, make_rows([1])) == 4
    assert not io.armed
    assert snapshot_ids(table_path) == [2, 3, 4]
    assert ids_read(table_path) == [1, 101, 102, 103]
    assert_intact(table_path, {2: [101, 102], 3: [101, 102, 103], 4: [1, 101, 102, 103]})


def test_a_first_commit_others_build_on_at_once_is_kept(table, table_path):
    # Guard: the lineage check after a first commit must keep a legitimate snapshot 1 that
    # others built on (and expired) right after its create.
    def rivals():
        write(Table.open(str(table_path)), make_rows([2]))
        write(Table.open(str(table_path)), make_rows([3]))
        expire_keeping(table_path, 2)

    class _After(LocalFileIO):
        armed = True

        def try_create_atomic(self, path, data, precondition=None, **kw):
            ok = super().try_create_atomic(path, data, precondition, **kw)
            if self.armed and path.endswith("/snapshot/snapshot-1"):
                self.armed = False
                rivals()
            return ok
    assert write(Table(FileStore.open(str(table_path), io=_After(str(table_path)))),
                 make_rows([1])) == 1
    assert snapshot_ids(table_path) == [2, 3]
    assert ids_read(table_path) == [1, 2, 3]
    assert_intact(table_path, {2: [1, 2], 3: [1, 2, 3]})


def test_a_commit_computed_before_a_rollback_is_not_published_on_the_new_base(table,
                                                                             table_path):
    # Regression (audit F10): the base check compared ids. After a rollback to 3 and two
    # commits (rows 40, 50 -> new snapshots 4 and 5), a slow commit computed from the old 5
    # found "snapshot-5" and published 6 on the old 5: rows 40 and 50 lost, 4 and 5 back.
    for i in (1, 2, 3, 4, 5):
        write(table, make_rows([i]))
    rival = {}

    def rivals():
        Table.open(str(table_path)).rollback_to(snapshot_id=3)
        rival[40] = write(Table.open(str(table_path)), make_rows([40]))
        rival[50] = write(Table.open(str(table_path)), make_rows([50]))
    io = _RivalsAtCreate(str(table_path), 6, rivals)
    slow = Table(FileStore.open(str(table_path), io=io))
    assert write(slow, make_rows([6])) == 6
    assert rival == {40: 4, 50: 5}
    assert snapshot_ids(table_path) == [1, 2, 3, 4, 5, 6]
    assert ids_read(table_path) == [1, 2, 3, 6, 40, 50]
    assert_intact(table_path, {3: [1, 2, 3], 5: [1, 2, 3, 40, 50], 6: [1, 2, 3, 6, 40, 50]})


# --- F11: a repeat after a rollback whose id was re-used and expired --------------------------

def _prepared(t, ids):
    w = t.new_writer()
    w.write_arrow(make_rows(ids))
    return w.prepare_commit()


def test_a_repeat_after_a_rollback_and_an_expiration_is_refused_not_a_silent_no_op(
        table, table_path):
    # Regression (audit F11): snapshot 2 of this commit was rolled back, its id re-used and
    # expired; the record took "below the earliest" for "expired, changes kept" and the repeat
    # returned 2 (already committed), publishing nothing: no snapshot held row 2. The table
    # cannot tell this from a compaction that replaced the files (audit2 F3: publishing them
    # again then reads their rows twice), so the repeat is a clear refusal.
    write(table, make_rows([1]))
    c = table.new_commit(commit_user="job")
    msgs = _prepared(table, [2])
    assert c.commit(msgs) == 2
    Table.open(str(table_path)).rollback_to(snapshot_id=1)
    for i in (30, 40, 50):
        write(Table.open(str(table_path)), make_rows([i]))      # 2', 3', 4'
    expire_keeping(table_path, 1)
    assert snapshot_ids(table_path) == [4]
    with pytest.raises(CommitConflictError) as e:
        c.commit(msgs)
    assert "committed these files (a batch commit)" in str(e.value)
    assert "as snapshot 2, which has expired since" in str(e.value)
    assert "refusing to commit them again" in str(e.value)
    assert snapshot_ids(table_path) == [4]
    assert ids_read(table_path) == [1, 30, 40, 50]
    assert_intact(table_path, {4: [1, 30, 40, 50]})


@pytest.mark.parametrize("tagged", [True, False])
def test_a_repeat_after_its_files_were_compacted_and_expired_is_never_a_second_copy(
        table, table_path, tagged):
    # Regression (audit2 F3): the repeat of a commit whose files a compaction replaced and
    # whose snapshot expired was published again: its rows read twice (files kept by a tag),
    # or a snapshot naming files expiration had deleted (unreadable).
    c = table.new_commit(commit_user="job")
    msgs = _prepared(table, [1, 2, 3])
    assert c.commit(msgs) == 1
    assert c.commit(_prepared(table, [4])) == 2
    if tagged:
        table.create_tag("keep", 1)
    assert table.compact(options={"compaction.min.file-num": "2"}).snapshot_id == 3
    expire_keeping(table_path, 1)
    assert snapshot_ids(table_path) == [3]
    with pytest.raises(CommitConflictError, match="refusing to commit them again"):
        c.commit(msgs)
    assert snapshot_ids(table_path) == [3]
    assert ids_read(table_path) == [1, 2, 3, 4]
    assert sorted(pp_read(table_path).column("id").to_pylist()) == [1, 2, 3, 4]


def test_a_repeat_after_its_snapshot_was_expired_is_still_a_no_op(table, table_path):
    # Guard: expired (not rolled back), its files are live in the latest snapshot: a repeat.
    write(table, make_rows([1]))
    c = table.new_commit(commit_user="job")
    msgs = _prepared(table, [2])
    assert c.commit(msgs) == 2
    for i in (3, 4):
        write(Table.open(str(table_path)), make_rows([i]))
    expire_keeping(table_path, 1)
    assert snapshot_ids(table_path) == [4]
    assert c.commit(msgs) == 2
    assert c.last_result.already_committed
    assert snapshot_ids(table_path) == [4]
    assert ids_read(table_path) == [1, 2, 3, 4]
    assert_intact(table_path, {4: [1, 2, 3, 4]})


# --- F5: the bounded commit record forgets --------------------------------------------------

def _snapshots_adding(t, file_name):
    from paimon_commit.format.manifest import FileKind
    return [s.id for s in t.store.snapshots.snapshots()
            if any(e.kind == FileKind.ADD and e.file.file_name == file_name
                   for e in t.store.delta_entries(s))]


def test_a_repeat_the_record_forgot_is_still_published_once(table, table_path, monkeypatch):
    # Regression (audit F5): once the process committed more files than the record holds,
    # a repeat of an earlier commit was not recognised and ADDed the same file again.
    from paimon_commit.operations import commit_record
    monkeypatch.setattr(commit_record, "RECORD", commit_record.CommitRecord(capacity=3))
    c = table.new_commit(commit_user="job")
    first = _prepared(table, [1])
    assert c.commit(first) == 1
    for i in (2, 3, 4):
        assert c.commit(_prepared(table, [i])) == i      # the first file is evicted
    assert c.commit(first) == 1                           # a repeat: nothing published
    assert c.last_result.already_committed
    with pytest.raises(CommitConflictError, match=r"data-.*parquet"):   # refused, not added
        c.commit(first, 99)
    assert snapshot_ids(table_path) == [1, 2, 3, 4]
    name = first[0].new_files[0].file_name
    assert _snapshots_adding(table, name) == [1]
    assert ids_read(table_path) == [1, 2, 3, 4]
    assert_intact(table_path, {1: [1], 4: [1, 2, 3, 4]})


def test_a_repeat_after_the_default_capacity_of_files_is_published_once(table, table_path):
    # The audit's scenario at the real capacity (the middle commit's files are metadata only,
    # so only snapshot 1 is read back).
    import dataclasses
    from paimon_commit.operations import commit_record
    c = table.new_commit(commit_user="job")
    first = _prepared(table, [1])
    assert c.commit(first) == 1
    m, f = first[0], first[0].new_files[0]
    fakes = tuple(dataclasses.replace(f, file_name=f"data-fake-{i}.parquet")
                  for i in range(commit_record.CAPACITY))
    assert c.commit([dataclasses.replace(m, new_files=fakes)]) == 2
    assert c.commit(first) == 1
    assert c.last_result.already_committed
    assert snapshot_ids(table_path) == [1, 2]
    assert _snapshots_adding(table, f.file_name) == [1]
    assert ids_read(table_path, 1) == [1]
