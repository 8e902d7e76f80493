"""rollback_to(tag=...) whose snapshot expired (issue 25 a11). The rollback restores the
snapshot file from the tag and moves EARLIEST to it; a refusal because the tag changed (another
engine deleted or re-created it) says "nothing was deleted", so it must also leave the table
exactly as it was: the tag is read again before anything is written, and a refusal after the
restore takes back what the restore wrote, and only that.

The other engine's change runs for real (another handle) at the moment named; the checks are
the files on disk, the EARLIEST hint's bytes, what pypaimon reads and the exact error."""
import json
import os

import pytest

from conftest import files_under, make_rows, write
from tablefiles import tag_as_another_engine
from invariants import assert_intact

from paimon_commit import Table
from paimon_commit.snapshots import SnapshotManager
from paimon_commit.tags import TagManager

REFUSED = ("cannot roll back to tag 't2': the tag changed while the rollback was prepared; "
           "nothing was deleted")


def tagged_then_expired(table, table_path):
    """Snapshots 1..6, tag t2 on snapshot 2, then snapshots 1..4 expired: t2's snapshot file
    is gone, the tag keeps it. Returns {snapshot id: ids} of what is left."""
    for i in range(1, 7):
        write(table, make_rows([i]))
    table.create_tag("t2", 2)
    table.expire_snapshots(retain_max=2, retain_min=2)
    assert sorted(os.listdir(table_path / "snapshot")) == \
        ["EARLIEST", "LATEST", "snapshot-5", "snapshot-6"]
    return {5: [1, 2, 3, 4, 5], 6: [1, 2, 3, 4, 5, 6]}


def earliest(table_path):
    return (table_path / "snapshot" / "EARLIEST").read_bytes()


def other_engine_deletes_the_tag(table_path, name="t2"):
    other = Table.open(str(table_path))
    other.store.io.delete_quietly(str(table_path / "tag" / f"tag-{name}"))


def test_a_tag_deleted_before_the_restore_leaves_the_table_as_it_was(
        table, table_path, monkeypatch):
    expected = tagged_then_expired(table, table_path)
    before, hint = files_under(table_path), earliest(table_path)
    read, calls = TagManager.try_tag, []

    def second_read_after_the_tag_is_gone(self, name):
        calls.append(name)
        if len(calls) == 2:   # the rollback read it once; meanwhile another engine deletes it
            other_engine_deletes_the_tag(table_path)
        return read(self, name)
    monkeypatch.setattr(TagManager, "try_tag", second_read_after_the_tag_is_gone)
    with pytest.raises(ValueError) as e:
        table.rollback_to(tag="t2")
    assert str(e.value) == REFUSED
    assert files_under(table_path) == [f for f in before if f != "tag/tag-t2"]
    assert earliest(table_path) == hint == b"5"
    assert_intact(table_path, expected)


def test_a_tag_replaced_after_the_restore_takes_the_restore_back(
        table, table_path, monkeypatch):
    expected = tagged_then_expired(table, table_path)
    before, hint = files_under(table_path), earliest(table_path)
    write_hint, seen = SnapshotManager.commit_earliest_hint, []

    def restored_then_the_tag_moves(self, snapshot_id):
        write_hint(self, snapshot_id)
        if not seen:   # snapshot-2 restored, EARLIEST says 2: another engine re-tags t2 on 6
            seen.append(sorted(os.listdir(table_path / "snapshot")))
            other_engine_deletes_the_tag(table_path)
            tag_as_another_engine(Table.open(str(table_path)), "t2", 6)
    monkeypatch.setattr(SnapshotManager, "commit_earliest_hint", restored_then_the_tag_moves)
    with pytest.raises(ValueError) as e:
        table.rollback_to(tag="t2")
    assert str(e.value) == REFUSED
    assert seen == [["EARLIEST", "LATEST", "snapshot-2", "snapshot-5", "snapshot-6"]]
    assert files_under(table_path) == before                  # snapshot-2 removed again
    assert earliest(table_path) == hint == b"5"
    assert [(t.name, t.id) for t in table.tags()] == [("t2", 6)]
    assert [s.id for s in table.snapshots()] == [5, 6]
    assert_intact(table_path, expected, {"t2": expected[6]})


def test_an_undo_never_removes_a_snapshot_file_it_did_not_create(
        table, table_path, monkeypatch):
    """Another engine (its own JSON layout) restored snapshot 2 from the tag first: our
    create finds the name taken by other bytes, and the refusal leaves that file alone."""
    tagged_then_expired(table, table_path)
    snapshot_2 = table_path / "snapshot" / "snapshot-2"
    try_commit, theirs = SnapshotManager.try_commit, []

    def another_engine_restores_it_first(self, snapshot, *a, **k):
        if snapshot.id == 2 and not theirs:
            theirs.append(json.dumps(json.loads(snapshot.to_json())).encode())   # one line
            snapshot_2.write_bytes(theirs[0])
        return try_commit(self, snapshot, *a, **k)
    write_hint = SnapshotManager.commit_earliest_hint

    def then_the_tag_goes(self, snapshot_id):
        write_hint(self, snapshot_id)
        other_engine_deletes_the_tag(table_path)
    monkeypatch.setattr(SnapshotManager, "try_commit", another_engine_restores_it_first)
    monkeypatch.setattr(SnapshotManager, "commit_earliest_hint", then_the_tag_goes)
    with pytest.raises(ValueError) as e:
        table.rollback_to(tag="t2")
    assert str(e.value) == REFUSED
    assert snapshot_2.read_bytes() == theirs[0]                 # not ours to remove
    assert earliest(table_path) == b"5"                         # ours taken back


def test_rollback_keeps_a_newer_tag_re_created_on_a_kept_snapshot_meanwhile(
        table, table_path, monkeypatch):
    """rollback_to(3) listed tag t5 (snapshot 5) to delete; while it deleted the newer
    snapshots, another engine re-created t5 on snapshot 2: that tag is nobody's to delete."""
    from paimon_commit.io.deletion import Deleter
    for i in range(1, 7):
        write(table, make_rows([i]))
    table.create_tag("t5", 5)
    in_order, done = Deleter.in_order, []

    def then_t5_moves_to_2(self, kind, paths):
        n = in_order(self, kind, paths)
        if kind == "snapshot" and not done:
            done.append(True)
            other_engine_deletes_the_tag(table_path, "t5")
            tag_as_another_engine(Table.open(str(table_path)), "t5", 2)
        return n
    monkeypatch.setattr(Deleter, "in_order", then_t5_moves_to_2)
    r = table.rollback_to(3)
    assert done and r.deleted_snapshots == [4, 5, 6] and r.deleted_tags == []
    assert [(t.name, t.id) for t in table.tags()] == [("t5", 2)]
    assert_intact(table_path, {3: [1, 2, 3]}, {"t5": [1, 2]})


# --- audit issue25k: every way out of the checks after a restore leaves the table as it was --

def _unchanged(table_path, before, hint):
    assert files_under(table_path) == before
    assert earliest(table_path) == hint


def test_an_interrupt_during_the_data_check_takes_the_restore_back(table, table_path,
                                                                   monkeypatch):
    """Ctrl-C in a Python caller (KeyboardInterrupt) while the data check lists a bucket
    directory (k2: `except Exception` let it through, the restored snapshot and the moved
    EARLIEST stayed)."""
    tagged_then_expired(table, table_path)
    before, hint = files_under(table_path), earliest(table_path)
    t = Table.open(str(table_path))
    real = t.store.io.list_status

    def ls(d):
        if "bucket-" in d:
            raise KeyboardInterrupt()
        return real(d)
    monkeypatch.setattr(t.store.io, "list_status", ls)
    with pytest.raises(KeyboardInterrupt):
        t.rollback_to(tag="t2")
    monkeypatch.undo()
    _unchanged(table_path, before, hint)


def test_a_restore_whose_create_outcome_is_unknown_is_taken_back(table, table_path,
                                                                 monkeypatch):
    """The create of the restored snapshot lands and its answer is lost (k3: the restore was
    outside the undo, its snapshot file stayed)."""
    tagged_then_expired(table, table_path)
    before, hint = files_under(table_path), earliest(table_path)
    real = SnapshotManager.try_commit

    def lost_reply(self, *a, **kw):
        real(self, *a, **kw)
        raise OSError("connection reset: the outcome of the create is unknown")
    monkeypatch.setattr(SnapshotManager, "try_commit", lost_reply)
    with pytest.raises(OSError, match="the outcome of the create is unknown"):
        table.rollback_to(tag="t2")
    monkeypatch.undo()
    _unchanged(table_path, before, hint)


def test_a_stop_asked_for_during_the_checks_changes_nothing(table, table_path, monkeypatch):
    """The CLI's Ctrl-C (a stop at the next safe point) during the data check (k8: the first
    safe point came after LATEST was moved: a half-applied rollback that said "the same
    rollback again finishes it")."""
    import signal
    from paimon_commit.io.deletion import clear_stop, interrupt_reason, request_stop
    tagged_then_expired(table, table_path)
    before, hint = files_under(table_path), earliest(table_path)
    latest = (table_path / "snapshot" / "LATEST").read_bytes()
    t = Table.open(str(table_path))
    real = t.store.io.list_status

    def ls(d):
        if "bucket-" in d:
            request_stop(interrupt_reason(signal.SIGINT))
        return real(d)
    monkeypatch.setattr(t.store.io, "list_status", ls)
    try:
        r = t.rollback_to(tag="t2")
    finally:
        clear_stop()
    monkeypatch.undo()
    assert (r.complete, r.stopped_by, r.deleted_snapshots) == (False, "interrupt", [])
    assert r.message.startswith("rollback to snapshot 2 stopped before any change: ")
    assert r.message.endswith("; nothing was changed")
    _unchanged(table_path, before, hint)
    assert (table_path / "snapshot" / "LATEST").read_bytes() == latest
    assert Table.open(str(table_path)).latest_snapshot().id == 6


def test_an_undo_retries_a_storage_that_fails_for_a_moment(table, table_path, monkeypatch):
    """The data check refuses on a storage error, and the undo's own listing of snapshot/
    fails once (k7: the undo's OSError escaped, the restored file and EARLIEST stayed)."""
    tagged_then_expired(table, table_path)
    before, hint = files_under(table_path), earliest(table_path)
    t = Table.open(str(table_path))
    io = t.store.io
    real_ls, real_exists, real_names = io.list_status, io.exists, io.list_names
    failing = []

    def ls(d):
        if "bucket-" in d:
            failing.append(d)
            raise OSError("503 SlowDown")
        if d.endswith("snapshot") and len(failing) == 1:
            failing.append(d)
            raise OSError("503 SlowDown")
        return real_ls(d)

    def names(d):
        if d.endswith("snapshot") and len(failing) == 1:
            failing.append(d)
            raise OSError("503 SlowDown")
        return real_names(d)

    def exists(p):
        if failing and "bucket-" in p:
            raise OSError("503 SlowDown")
        return real_exists(p)
    monkeypatch.setattr(io, "list_status", ls)
    monkeypatch.setattr(io, "list_names", names)
    monkeypatch.setattr(io, "exists", exists)
    with pytest.raises(ValueError) as e:
        t.rollback_to(tag="t2")
    monkeypatch.undo()
    assert str(e.value).startswith("cannot roll back to tag 't2': cannot tell whether its "
                                   "data file ")
    assert str(e.value).endswith(" exists (503 SlowDown); nothing was changed")
    assert len(failing) == 2   # (the undo's listing failed once)
    _unchanged(table_path, before, hint)
