"""A commit that comes long after its files were written (a compaction rewriting for hours, a
slow job) checks that its old files still exist before it publishes (audit issue25v v3):
orphan cleanup, whose only protection for uncommitted files is their age, may have deleted
them, and a snapshot naming them would not read."""
import os
import time

import pytest

from conftest import make_rows, write
from paimon_commit import Table
from paimon_commit.errors import CommitConflictError
from paimon_commit.operations import commit as commit_mod
from paimon_commit.operations.compact.job import AppendCompaction

TWO_HOURS_S = 2 * 3600


def _age(paths):
    old = time.time() - TWO_HOURS_S
    for p in paths:
        os.utime(p, (old, old))


def _later(monkeypatch):
    """The commit runs two hours after the files were written (their creation times)."""
    from paimon_commit.writer import local_millis_as_utc
    monkeypatch.setattr(commit_mod, "_local_millis_as_utc",
                        lambda: local_millis_as_utc() + TWO_HOURS_S * 1000, raising=False)


def _ids(path):
    return sorted(Table.open(str(path)).read_arrow().column("id").to_pylist())


def _snapshots(path):
    return sorted(os.listdir(os.path.join(str(path), "snapshot")))


def _data_files(path):
    return {os.path.join(d, f) for d, _, fs in os.walk(str(path)) for f in fs
            if f.startswith("data-")}


def test_a_commit_whose_old_files_orphan_cleanup_deleted_publishes_nothing(
        table, table_path, monkeypatch):
    write(table, make_rows([0]))
    before = _data_files(table_path)
    w = table.new_writer()
    w.write_arrow(make_rows([1]))
    msgs = w.prepare_commit()
    new = sorted(_data_files(table_path) - before)
    _age(new)
    r = table.remove_orphan_files(older_than_duration="61 min")
    assert sorted(os.path.join(str(table_path), p) for p in r.deleted_paths) == new
    snaps = _snapshots(table_path)
    _later(monkeypatch)
    with pytest.raises(CommitConflictError) as e:
        with table.new_commit() as c:
            c.commit(msgs)
    assert str(e.value) == (
        f"1 data file(s) this commit adds to {table_path} no longer exist (e.g. {new[0]}): "
        f"written more than 20 minutes ago and not committed since, they were deleted (by "
        f"orphan cleanup, whose cutoff they passed, or an abort); nothing was committed. "
        f"Write the rows again")
    assert _snapshots(table_path) == snaps
    assert _ids(table_path) == [0]


def test_a_compaction_whose_outputs_orphan_cleanup_deleted_publishes_nothing(
        tmp_path, monkeypatch):
    from conftest import SCHEMA
    t = Table.create(str(tmp_path / "t"), SCHEMA, partition_keys=["dt", "hr"],
                     options={"compaction.min.file-num": "2"})
    for i in range(4):
        write(t, make_rows([i]))
    job = AppendCompaction(t.store)
    plan = job.plan()
    rewritten = job.rewrite(plan, processes=False)
    outs = [p for r in rewritten for p in r.paths]
    assert outs
    _age(outs)
    assert t.remove_orphan_files(older_than_duration="61 min").deleted_files == len(outs)
    snaps = _snapshots(t.path)
    _later(monkeypatch)
    with pytest.raises(CommitConflictError, match="no longer exist"):
        job.commit(plan, rewritten)
    assert _snapshots(t.path) == snaps
    assert _ids(t.path) == [0, 1, 2, 3]


def test_a_commit_of_fresh_files_does_not_look_at_them(table, table_path, monkeypatch):
    """Only old files are looked at: an ordinary commit asks nothing more of the storage."""
    looked = []
    real = table.store.io.exists
    monkeypatch.setattr(table.store.io, "exists", lambda p: looked.append(p) or real(p))
    write(table, make_rows([0]))
    assert not [p for p in looked if "/data-" in p]
    assert _ids(table_path) == [0]


def test_a_compaction_that_conflicts_after_a_failed_publish_keeps_its_files(
        tmp_path, monkeypatch):
    """A compaction's publish fails with an I/O error (its PUT may still land on the store),
    then its next attempt finds a conflict: its new files are kept, not aborted, as the
    snapshot that may still land names them."""
    from conftest import SCHEMA
    from paimon_commit.snapshots import SnapshotManager
    t = Table.create(str(tmp_path / "t"), SCHEMA, partition_keys=["dt", "hr"],
                     options={"compaction.min.file-num": "2", "commit.max-retries": "3",
                              "commit.min-retry-wait": "1 ms",
                              "commit.max-retry-wait": "2 ms"})
    for i in range(4):
        write(t, make_rows([i]))
    job = AppendCompaction(t.store)
    plan = job.plan()
    rewritten = job.rewrite(plan, processes=False)
    outs = [p for r in rewritten for p in r.paths]
    real = SnapshotManager.try_commit
    failed = []

    def try_commit(self, snapshot, *a, **kw):
        if snapshot.commit_kind == "COMPACT" and not failed:
            failed.append(snapshot.id)
            # Before the reply: another writer drops the partition (the compaction's inputs).
            with t.new_commit("other") as c:
                c.drop_partitions([{"dt": make_rows([0]).column("dt")[0].as_py(), "hr": 1}])
            raise OSError("timed out (the PUT may still complete)")
        return real(self, snapshot, *a, **kw)
    monkeypatch.setattr(SnapshotManager, "try_commit", try_commit)
    with pytest.raises(CommitConflictError) as e:
        job.commit(plan, rewritten)
    assert "are kept, as an earlier publish of it failed with an I/O error and may still " \
           "land" in str(e.value)
    assert failed and all(os.path.exists(p) for p in outs)


def test_old_files_of_a_writer_in_a_time_zone_east_of_the_committer_are_looked_at(
        table, table_path, monkeypatch):
    """Creation times are the writer's wall clock read as UTC, with no zone: files written two
    hours before in a zone nine hours east look seven hours ahead to the committer (audit
    issue25w w3). They are looked at, and the commit refuses the one orphan cleanup deleted."""
    write(table, make_rows([0]))
    before = _data_files(table_path)
    w = table.new_writer()
    w.write_arrow(make_rows([1]))
    msgs = w.prepare_commit()
    new = sorted(_data_files(table_path) - before)
    _age(new)
    table.remove_orphan_files(older_than_duration="61 min")
    assert not any(os.path.exists(p) for p in new)
    from paimon_commit.writer import local_millis_as_utc
    # The committer's clock reads 9 h behind the writer's zone, 2 h after the write.
    monkeypatch.setattr(commit_mod, "_local_millis_as_utc",
                        lambda: local_millis_as_utc() + (2 - 9) * 3600 * 1000, raising=False)
    snaps = _snapshots(table_path)
    with pytest.raises(CommitConflictError, match="no longer exist"):
        with table.new_commit() as c:
            c.commit(msgs)
    assert _snapshots(table_path) == snaps
    assert _ids(table_path) == [0]
