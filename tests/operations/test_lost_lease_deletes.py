"""A holder that lost the maintenance lease performs at most the one delete step it had already
checked for (docs/safety.md §5b, issue 25 a6). Every delete step that does not go through the
Deleter passes a safe point (`io/deletion.py: checkpoint()`) too: a tag file (and its deletion
marker) of a tag whose snapshot is still retained, the one delete of an abort, and orphan
cleanup's empty directories. The lease is lost for real: another handle breaks it
(`paimon-commit lease TABLE --break`) while the run deletes; the checks are the files on disk
and what the result says."""
import os
import time

from conftest import files_under, make_rows, write

from paimon_commit import Table
from paimon_commit.lease import lease_manager, maintenance_lease
from paimon_commit.operations.orphan import OrphanFilesCleaner
from paimon_commit.tags import TagManager

OLD = 3 * 24 * 3600   # seconds: older than orphan cleanup's default age


def tag_files(path):
    return sorted(os.listdir(os.path.join(str(path), "tag")))


def break_lease_of(path):
    """Another process takes the lease over: `lease --break` through its own handle."""
    lease_manager(Table.open(str(path)).store).break_lease()


def test_tag_expiration_stops_at_the_next_tag_file_once_the_lease_is_lost(
        table, table_path, monkeypatch):
    for i in range(1, 7):
        write(table, make_rows([i]))
    for sid in range(1, 7):   # every tag's snapshot is retained: no Deleter step at all
        table.create_tag(f"tag{sid}", sid)
    time.sleep(0.01)
    cutoff = int(time.time() * 1000)
    delete = TagManager.delete_tag_file
    deleted = []

    def lose_then_delete(self, name):
        if not deleted:   # the first tag's step was checked for: it still runs
            break_lease_of(table_path)
        deleted.append(name)
        return delete(self, name)
    monkeypatch.setattr(TagManager, "delete_tag_file", lose_then_delete)
    r = table.expire_tags(older_than_ms=cutoff)
    assert deleted == ["tag1"]
    assert tag_files(table_path) == [f"tag-tag{i}" for i in range(2, 7)]
    assert r.expired_tags == ["tag1"]
    assert not r.complete and r.stopped_by == "lease"
    assert "lost the maintenance lease" in r.message and "a rerun continues" in r.message
    monkeypatch.setattr(TagManager, "delete_tag_file", delete)
    r = table.expire_tags(older_than_ms=cutoff)             # the rerun finishes it
    assert r.complete and r.expired_tags == [f"tag{i}" for i in range(2, 7)]
    assert tag_files(table_path) == [] and [s.id for s in table.snapshots()] == list(range(1, 7))


def test_delete_tag_after_the_lease_was_lost_keeps_the_tag(table, table_path):
    write(table, make_rows([1]))
    table.create_tag("t1", 1)
    with maintenance_lease(table.store, "maintain"):
        break_lease_of(table_path)
        r = table.delete_tag("t1")
    assert not r.complete and r.stopped_by == "lease" and not r.deleted
    assert r.message.startswith("deleting tag 't1' stopped before a delete step: lost the "
                                "maintenance lease")
    assert tag_files(table_path) == ["tag-t1"]
    assert [(t.name, t.id) for t in table.tags()] == [("t1", 1)]


def test_an_abort_under_a_lost_lease_deletes_nothing(table, table_path):
    write(table, make_rows([1]))
    w = table.new_writer()
    w.write_arrow(make_rows([2, 3]))
    msgs = w.prepare_commit()
    before = files_under(table_path)
    with maintenance_lease(table.store, "compaction abort"):
        break_lease_of(table_path)
        with table.new_commit() as c:
            assert c.abort(msgs) == 0
            r = c.last_abort
    assert r.deleted == () and len(r.kept) == 1
    assert r.reason.startswith("stopped before deleting (lost the maintenance lease")
    assert files_under(table_path) == before                  # the written file is still there
    with table.new_commit() as c:                             # not leased: the abort deletes
        assert c.abort(msgs) == 1
    assert len(files_under(table_path)) == len(before) - 1


def test_orphan_cleanup_removes_no_directory_once_the_lease_is_lost(table, table_path,
                                                                    monkeypatch):
    write(table, make_rows([1]))
    # An old orphan data file alone in an old bucket directory of an old partition.
    bucket = os.path.join(str(table_path), "dt=2020-01-01", "hr=0", "bucket-0")
    os.makedirs(bucket)
    orphan = os.path.join(bucket, "data-orphan-0.parquet")
    with open(orphan, "wb") as f:
        f.write(b"x")
    old = time.time() - OLD
    for p in (orphan, bucket, os.path.dirname(bucket),
              os.path.dirname(os.path.dirname(bucket))):
        os.utime(p, (old, old))
    delete = OrphanFilesCleaner.delete

    def delete_then_lose(self, orphans, executor):
        out = delete(self, orphans, executor)   # its one batch was checked for: it ran
        break_lease_of(table_path)
        return out
    monkeypatch.setattr(OrphanFilesCleaner, "delete", delete_then_lose)
    r = table.remove_orphan_files()
    assert not os.path.exists(orphan)
    assert os.path.isdir(bucket)                                # no directory removed
    assert r.deleted_files == 1 and r.deleted_dirs == []
    assert not r.complete and r.stopped_by == "lease"
    monkeypatch.setattr(OrphanFilesCleaner, "delete", delete)
    for p in (bucket, os.path.dirname(bucket)):   # (the unlink made it young again)
        os.utime(p, (old, old))
    r = table.remove_orphan_files()                             # a later run removes them
    assert r.complete and not os.path.exists(os.path.join(str(table_path), "dt=2020-01-01"))


def test_expiration_stops_within_a_guard_interval_of_snapshot_files_once_the_lease_is_lost(
        table, table_path, monkeypatch):
    # Expiration's last step deletes its snapshot files one by one, in ascending order, with
    # the lease checked every GUARD_EVERY_FILES files (io/deletion.py): lost after the first,
    # the run deletes at most that many more, stops with the lease named, leaves a readable
    # table whose EARLIEST hint is right, and a rerun finishes the range.
    from paimon_commit.io.deletion import GUARD_EVERY_FILES
    from paimon_commit.io.local import LocalFileIO
    n = GUARD_EVERY_FILES * 3
    for i in range(n):
        write(table, make_rows([i]))
    unlink = LocalFileIO._unlink
    snapshot_files = []

    def lose_then_unlink(self, norm):
        if "/snapshot/snapshot-" in norm:
            if not snapshot_files:
                break_lease_of(table_path)
            snapshot_files.append(norm)
        return unlink(self, norm)
    monkeypatch.setattr(LocalFileIO, "_unlink", lose_then_unlink)
    from paimon_commit.operations.expire import ExpireConfig, ExpireSnapshots
    store = Table.open(str(table_path)).store
    r = ExpireSnapshots(store, ExpireConfig(retain_min=1, retain_max=1, time_retained_ms=0,
                                            max_deletes=10 * n)).expire()
    assert not r.complete and r.stopped_by == "lease", r.message
    assert 1 <= len(snapshot_files) <= GUARD_EVERY_FILES
    left = [s.id for s in table.snapshots()]
    assert left[0] == len(snapshot_files) + 1 and left[-1] == n
    assert sorted(table.read_arrow().column("id").to_pylist()) == list(range(n))
    monkeypatch.setattr(LocalFileIO, "_unlink", unlink)
    r = ExpireSnapshots(Table.open(str(table_path)).store, ExpireConfig(
        retain_min=1, retain_max=1, time_retained_ms=0, max_deletes=10 * n)).expire()
    assert r.complete and [s.id for s in table.snapshots()] == [n]
    assert sorted(table.read_arrow().column("id").to_pylist()) == list(range(n))


def _expire_config(**kw):
    from paimon_commit.operations.expire import ExpireConfig
    return ExpireConfig(time_retained_ms=0, max_deletes=1000, **kw)


def test_the_first_snapshot_file_is_checked_for_however_recent_the_last_check(
        table, table_path, monkeypatch):
    # Audit issue26a F3: the list step's check counted for the snapshot files after it; with
    # the lease broken between the two steps every snapshot file went, result complete.
    import paimon_commit.io.deletion as deletion
    from paimon_commit.operations.expire import ExpireSnapshots
    for i in range(6):
        write(table, make_rows([i]))
    in_order = deletion.Deleter.in_order

    def break_first(self, kind, paths, spaced=False):
        if kind == "snapshot" and not getattr(break_first, "done", False):
            break_first.done = True
            break_lease_of(table_path)
        return in_order(self, kind, paths, spaced)
    monkeypatch.setattr(deletion.Deleter, "in_order", break_first)
    r = ExpireSnapshots(Table.open(str(table_path)).store,
                        _expire_config(retain_min=1, retain_max=1)).expire()
    assert not r.complete and r.stopped_by == "lease"
    assert [s.id for s in table.snapshots()] == list(range(1, 7))
    assert sorted(table.read_arrow().column("id").to_pylist()) == list(range(6))
    monkeypatch.undo()
    r = ExpireSnapshots(Table.open(str(table_path)).store,
                        _expire_config(retain_min=1, retain_max=1)).expire()
    assert r.complete and [s.id for s in table.snapshots()] == [6]


def test_a_lost_lease_stops_decoupled_expiration_before_the_next_changelog_is_written(
        table, table_path, monkeypatch):
    # Audit issue26a F1: with changelogs kept longer than snapshots, each snapshot is first
    # written as a changelog (which still reads its lists), then its file deleted. Broken
    # after the first, while the new holder expires snapshots and changelogs, the old holder
    # went on writing changelogs the new one had expired, naming lists it had deleted
    # (14 with the lease checked every 32 files, one when it was checked only before each
    # delete). Now the check comes before each changelog is written.
    import threading
    from paimon_commit.io.local import LocalFileIO
    from paimon_commit.operations.expire import ExpireSnapshots
    from paimon_commit.snapshots import SnapshotManager
    n = 20
    for i in range(n):
        write(table, make_rows([i]))
    cfg = _expire_config(retain_min=3, retain_max=3, changelog_retain_min=5,
                         changelog_retain_max=5, changelog_time_retained_ms=0)
    assert cfg.changelog_decoupled
    unlink = LocalFileIO._unlink
    state = {"b": None, "in_b": False, "a": 0}

    def run_b():
        state["in_b"] = True
        try:
            state["b"] = ExpireSnapshots(Table.open(str(table_path)).store, cfg).expire()
        finally:
            state["in_b"] = False

    def hooked(self, norm):
        if "/snapshot/snapshot-" in norm and not state["in_b"]:
            state["a"] += 1
            if state["b"] is None:
                done = unlink(self, norm)
                break_lease_of(table_path)
                other = threading.Thread(target=run_b)   # another holder, another thread
                other.start()
                other.join()
                return done
        return unlink(self, norm)
    monkeypatch.setattr(LocalFileIO, "_unlink", hooked)
    r = ExpireSnapshots(Table.open(str(table_path)).store, cfg).expire()
    monkeypatch.undo()
    assert state["b"] is not None and state["b"].complete
    assert not r.complete and r.stopped_by == "lease" and state["a"] == 1
    changelog_dir, manifest_dir = table_path / "changelog", table_path / "manifest"
    for name in sorted(os.listdir(changelog_dir)):
        if name.startswith("changelog-"):
            p = str(changelog_dir / name)
            s = SnapshotManager.parse(open(p, "rb").read(), p, int(name.split("-")[1]))
            assert os.path.exists(manifest_dir / s.delta_manifest_list), name
    assert Table.open(str(table_path)).remove_orphan_files(dry_run=True).complete
    assert sorted(table.read_arrow().column("id").to_pylist()) == list(range(n))
