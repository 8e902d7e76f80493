"""An abort after a commit whose publish failed with an I/O error (audit issue25u u8).

Every publish of the commit fails on the client (the conditional PUT of the snapshot raised
OSError: its reply timed out), and the store completes the PUT later. The commit raises and
keeps its metadata; the caller aborts the messages (TableCommit.abort; Spark calls the
writer's abort whenever the driver's commit raised). No snapshot names the file yet and the
commit user published nothing since, so only the process's commit record, which holds the
file as handed to a call that may have published, can tell the abort to keep it: deleted,
the late PUT made the latest snapshot name a missing file (the table unreadable)."""
import datetime
import logging
import os

import pyarrow as pa
import pytest

from conftest import make_rows, write
from invariants import assert_intact
from oracle import pp_read

from paimon_commit import Table
from paimon_commit.errors import CommitFailedError
from paimon_commit.operations import commit_record
from paimon_commit.snapshots import SnapshotManager
from paimon_commit.writer import message_paths

OPTS = {"commit.max-retries": "3", "commit.min-retry-wait": "1 ms",
        "commit.max-retry-wait": "2 ms"}
WHY = ("a commit call of this process may have published it: its publish failed with an "
       "I/O error and may still land; orphan cleanup removes it once nothing can need it")


@pytest.fixture(autouse=True)
def fresh_record(monkeypatch):
    monkeypatch.setattr(commit_record, "RECORD", commit_record.CommitRecord())


class LatePut:
    """Every publish of `user` raises OSError without creating its snapshot, which the store
    completes later: `land()` creates the first one held (create-if-absent, no base
    precondition), as the store would."""

    def __init__(self, monkeypatch, user):
        self.held = []
        real = SnapshotManager.try_commit

        def try_commit(sm, snapshot, *a, **k):
            if snapshot.commit_user != user:
                return real(sm, snapshot, *a, **k)
            self.held.append((sm, snapshot))
            raise OSError("read timeout: the conditional PUT may still land")
        monkeypatch.setattr(SnapshotManager, "try_commit", try_commit)

    def land(self):
        sm, s = self.held[0]
        return sm.io.try_create_atomic(sm.snapshot_path(s.id), s.to_json())


def _ids(path):
    return sorted(Table.open(str(path)).read_arrow().column("id").to_pylist())


def _pp_ids(path):
    return sorted(pp_read(path).column("id").to_pylist())


def _assert_kept_then_landed(path, late, files, caplog, expected):
    assert files and all(os.path.exists(p) for p in files)
    assert WHY in caplog.text
    assert late.land()                       # the store completes the PUT after the abort
    assert _ids(path) == expected and _pp_ids(path) == expected
    assert_intact(path)


def test_table_commit_abort_keeps_files_a_failed_publish_may_still_land(
        table_path, monkeypatch, caplog):
    t = Table.create(str(table_path), make_rows([]).schema, partition_keys=["dt", "hr"],
                     options=OPTS)
    write(t, make_rows([10]))
    w = t.new_writer()
    w.write_arrow(make_rows([11]))
    msgs = w.prepare_commit()
    files = message_paths(t.store, msgs)
    late = LatePut(monkeypatch, "job")
    caplog.set_level(logging.WARNING, logger="paimon_commit.operations.abort")
    with t.new_commit(commit_user="job") as c:
        with pytest.raises(CommitFailedError):
            c.commit(msgs)
        assert c.abort(msgs) == 0
        assert sorted(c.last_abort.kept) == sorted(files) and c.last_abort.deleted == ()
    assert [s.id for s in Table.open(str(table_path)).snapshots()] == [1]
    _assert_kept_then_landed(table_path, late, files, caplog, [10, 11])


def test_abort_still_deletes_files_never_handed_to_a_commit(table_path, monkeypatch, caplog):
    # No regression: beside the kept files of the failed call, the files of messages never
    # handed to any commit call are deleted (and so are all of them without such a call).
    t = Table.create(str(table_path), make_rows([]).schema, partition_keys=["dt", "hr"],
                     options=OPTS)
    write(t, make_rows([10]))
    w = t.new_writer()
    w.write_arrow(make_rows([11]))
    failed = w.prepare_commit()
    w.write_arrow(make_rows([12]))
    stray = w.prepare_commit()
    late = LatePut(monkeypatch, "job")
    with t.new_commit(commit_user="job") as c:
        with pytest.raises(CommitFailedError):
            c.commit(failed)
        assert c.abort(failed + stray) == 1
        assert c.last_abort.deleted == tuple(message_paths(t.store, stray))
        assert c.last_abort.kept == tuple(message_paths(t.store, failed))
    assert not any(os.path.exists(p) for p in message_paths(t.store, stray))
    _assert_kept_then_landed(table_path, late, message_paths(t.store, failed), caplog,
                             [10, 11])
    other = t.new_writer()
    other.write_arrow(make_rows([13]))
    never = other.prepare_commit()
    with t.new_commit() as c:
        assert c.abort(never) == 1
    assert not any(os.path.exists(p) for p in message_paths(t.store, never))


def test_abort_keeps_a_file_this_process_published(table, table_path):
    # An abort is for files never committed: one this process published is kept even when no
    # snapshot names it any more (a rollback removed its snapshot and left it to orphan
    # cleanup; the record says so before the table is read).
    write(table, make_rows([1]))
    w = table.new_writer()
    w.write_arrow(make_rows([2]))
    msgs = w.prepare_commit()
    with table.new_commit() as c:
        assert c.commit(msgs) == 2
    table.rollback_to(1)
    with table.new_commit() as c:
        assert c.abort(msgs) == 0
        assert c.last_abort.kept == tuple(message_paths(table.store, msgs))
    assert all(os.path.exists(p) for p in message_paths(table.store, msgs))


def test_record_names_follow_forget_and_eviction():
    r = commit_record.CommitRecord(capacity=2)
    c = commit_record.Committed("u", 0, "APPEND", None, 1)

    def key(name):
        return (b"p", 0, 0, name, (), None, None)
    r.record("root", [key("a"), key("b")], c)
    assert set(r.handed_names("root", ["a", "b", "x"])) == {"a", "b"}
    assert r.handed_names("other", ["a"]) == {}
    r.forget("root", [key("a")])
    r.record("root", [key("c"), key("d")], c)   # evicts b
    assert set(r.handed_names("root", ["a", "b", "c", "d"])) == {"c", "d"}
    ext = (b"p", 0, 0, "e", (), None, "s3://bucket/ext/p/bucket-0/e")
    r.record("root", [ext], c)
    assert set(r.handed_names("root", ["e"])) == {"e"}


# --- the Spark data source, driver side (no Spark job: the writers are driven directly) ---

D = datetime.date(2024, 1, 1)


def _spark_schema():
    pytest.importorskip("pyspark")
    from pyspark.sql.types import (DateType, IntegerType, LongType, StringType, StructField,
                                   StructType)
    return StructType([StructField("id", LongType()), StructField("name", StringType()),
                       StructField("dt", DateType()), StructField("hr", IntegerType())])


def _batches(ids):
    return iter(pa.Table.from_pylist(
        [{"id": i, "name": f"n{i}", "dt": D, "hr": 1} for i in ids],
        schema=pa.schema([("id", pa.int64()), ("name", pa.string()), ("dt", pa.date32()),
                          ("hr", pa.int32())])).to_batches())


def _files(path, msgs):
    return message_paths(Table.open(str(path)).store, [m for wm in msgs for m in wm.messages])


def test_spark_batch_abort_keeps_files_a_failed_publish_may_still_land(
        table_path, monkeypatch, caplog):
    schema = _spark_schema()
    from paimon_commit.spark import datasource
    monkeypatch.setattr(datasource, "RUN_SWEEP_GRACE_S", 0.0)
    opts = {"path": str(table_path), "partition-keys": "dt,hr", **OPTS}
    first = datasource.PaimonBatchWriter(opts, schema, overwrite=False)
    first.commit([first.write(_batches([10]))])
    w = datasource.PaimonBatchWriter(opts, schema, overwrite=False)   # one per write
    msgs = [w.write(_batches([11]))]
    late = LatePut(monkeypatch, w.commit_user)
    caplog.set_level(logging.WARNING, logger="paimon_commit.operations.abort")
    with pytest.raises(CommitFailedError):
        w.commit(msgs)
    w.abort(msgs)   # what Spark does when the driver's commit raised
    _assert_kept_then_landed(table_path, late, _files(table_path, msgs), caplog, [10, 11])


def test_spark_stream_abort_keeps_files_a_failed_publish_may_still_land(
        table_path, tmp_path, monkeypatch, caplog):
    schema = _spark_schema()
    from paimon_commit.spark import datasource
    monkeypatch.setattr(datasource, "RUN_SWEEP_GRACE_S", 0.0)
    opts = {"path": str(table_path), "partition-keys": "dt,hr",
            "checkpointLocation": str(tmp_path / "ckpt"), **OPTS}

    def writer():   # Spark builds one for the tasks and one for each commit and abort
        return datasource.PaimonStreamWriter(opts, schema, overwrite=False)

    def task(batch_id, ids):
        monkeypatch.setattr(datasource, "_task_batch_id", lambda: batch_id)
        return writer().write(_batches(ids))

    writer().commit([task(4, [10])], 4)
    msgs = [task(5, [11])]
    late = LatePut(monkeypatch, writer().commit_user)
    caplog.set_level(logging.WARNING, logger="paimon_commit.operations.abort")
    with pytest.raises(CommitFailedError):
        writer().commit(msgs, 5)
    writer().abort(msgs, 5)
    _assert_kept_then_landed(table_path, late, _files(table_path, msgs), caplog, [10, 11])
