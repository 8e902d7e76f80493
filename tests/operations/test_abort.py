"""Abort (paimon_commit/operations/abort.py), the one implementation behind TableCommit.abort,
TableWriter.abort and Spark's abort: it never deletes a file that a retained snapshot, tag or
long-lived changelog reads, nor any file of a write that was published; and a writer that
fails or is closed early leaves no file and no open stream behind."""
import errno
import os
import time

import pytest

from conftest import files_under, make_rows, write
from invariants import assert_intact
from oracle import pp_read, rows

from paimon_commit import Table
from paimon_commit.io.local import LocalFileIO
from paimon_commit.operations.abort import abort_files
from paimon_commit.operations.expire import ExpireConfig, ExpireSnapshots
from paimon_commit import writer as writer_module
from paimon_commit.writer import message_paths


def _data_files(table_path):
    return sorted(p for p in files_under(table_path) if p.endswith(".parquet"))


def _prepare(table, ids, **kw):
    w = table.new_writer()
    w.write_arrow(make_rows(ids, **kw))
    return w.prepare_commit()


def test_abort_keeps_files_of_retained_snapshots_and_tags(table, table_path):
    # Regression: abort protected only files live in the *latest* snapshot. Committed, tagged,
    # then replaced by an overwrite, the messages' files were deleted by abort: snapshot 1 and
    # the tag became unreadable (FileNotFoundError).
    committed = _prepare(table, [1, 2])
    with table.new_commit() as c:
        assert c.commit(committed) == 1
    table.create_tag("t1", 1)
    with table.new_commit() as c:
        assert c.overwrite(_prepare(table, [3])) == 2
    stray = _prepare(table, [4])                    # never committed
    with table.new_commit() as c:
        assert c.abort(committed + stray) == 1
        assert sorted(c.last_abort.kept) == sorted(message_paths(table.store, committed))
    assert all(os.path.exists(p) for p in message_paths(table.store, committed))
    assert not any(os.path.exists(p) for p in message_paths(table.store, stray))
    assert [r["id"] for r in rows(pp_read(table_path, snapshot_id=1))] == [1, 2]
    assert [r["id"] for r in rows(pp_read(table_path, tag="t1"))] == [1, 2]
    assert sorted(table.read_arrow(tag="t1").column("id").to_pylist()) == [1, 2]
    assert_intact(table_path, {1: [1, 2], 2: [3]}, {"t1": [1, 2]})


def test_abort_keeps_files_a_long_lived_changelog_reads(table_path):
    # The snapshot that added them expired and a later one dropped them, but with the
    # decoupled changelog lifecycle (producer none) its changelog still reads them.
    t = Table.create(str(table_path), make_rows([]).schema, partition_keys=["dt", "hr"],
                     options={"write-only": "true"})
    committed = _prepare(t, [1], hr=0)
    with t.new_commit() as c:
        c.commit(committed)
        c.drop_partitions([{"hr": 0}])
    for i in (3, 4, 5):
        write(t, make_rows([i], hr=1))
    cfg = ExpireConfig.from_options(t.store.options, time_retained_ms=0, retain_min=2,
                                    changelog_retain_min=10, max_deletes=1000)
    r = ExpireSnapshots(t.store, cfg, clock=lambda: time.time() + 86400 * 3650).expire()
    assert r.expired_ids == [1, 2, 3] and os.listdir(table_path / "changelog")
    with t.new_commit() as c:
        assert c.abort(committed) == 0
    assert all(os.path.exists(p) for p in message_paths(t.store, committed))


def test_abort_deletes_nothing_when_what_the_table_uses_cannot_be_read(table, table_path):
    # Nothing on a partial view: a list that snapshot 1 and its tag read (the latest snapshot
    # does not) is damaged, so what they name is unknown and no file is deleted.
    write(table, make_rows([1]))
    table.create_tag("t1", 1)
    write(table, make_rows([2]))
    stray = _prepare(table, [3])
    (table_path / "manifest" / table.snapshot(1).delta_manifest_list).write_bytes(b"not avro")
    with table.new_commit() as c:
        assert c.abort(stray) == 0
        assert "cannot be read" in c.last_abort.reason
    assert all(os.path.exists(p) for p in message_paths(table.store, stray))


def test_a_write_its_commit_user_published_is_never_aborted(table, table_path):
    # Spark's rule, now part of the one abort: after a publish by the same commit user since
    # the write started (a commit() that raised after publishing), nothing is deleted, not even
    # files the snapshot does not name.
    base = table.latest_snapshot().id if table.latest_snapshot() else 0
    published = _prepare(table, [1])
    other = _prepare(table, [2])
    with table.new_commit("job") as c:
        c.commit(published)
    paths = message_paths(table.store, published + other)
    r = abort_files(table.store, paths, commit_user="job", since_snapshot=base)
    assert r.deleted == () and "snapshot 1 of commit user job" in r.reason
    assert all(os.path.exists(p) for p in paths)
    r = abort_files(table.store, paths, commit_user="someone-else", since_snapshot=base)
    assert r.deleted == tuple(message_paths(table.store, other))


def test_an_identifier_already_committed_is_never_aborted(table, table_path):
    with table.new_commit("stream") as c:
        c.commit(_prepare(table, [1]), commit_identifier=5)
    replay = message_paths(table.store, _prepare(table, [1]))
    for identifier in (4, 5):
        r = abort_files(table.store, replay, commit_user="stream", commit_identifier=identifier)
        assert r.deleted == () and "already committed identifier 5" in r.reason
    assert all(os.path.exists(p) for p in replay)
    r = abort_files(table.store, replay, commit_user="stream", commit_identifier=6)
    assert r.deleted == tuple(replay)


def test_spark_abort_keeps_what_a_tag_reads(table, table_path):
    # Regression: Spark's _abort deleted every file unless its own commit user had published;
    # files committed under another user (a recovery job re-committing the messages) and
    # held by a tag were deleted.
    pytest.importorskip("pyspark")
    from paimon_commit.spark.datasource import PaimonWriterMessage, _abort
    msgs = _prepare(table, [1, 2])
    with table.new_commit("recovery") as c:
        c.commit(msgs)
    table.create_tag("t1", 1)
    with table.new_commit("recovery") as c:
        c.overwrite(_prepare(table, [3]))
    _abort(str(table_path), [PaimonWriterMessage(list(msgs)), None], "spark-job",
           since_snapshot=0)
    assert all(os.path.exists(p) for p in message_paths(table.store, msgs))
    assert_intact(table_path, {1: [1, 2], 2: [3]}, {"t1": [1, 2]})


# --- the writer ---------------------------------------------------------------------------

def test_close_without_prepare_commit_leaves_no_rolled_file(table_path, monkeypatch):
    # Regression: close() aborted only if a file was still open or rows were buffered; files
    # already rolled at target-file-size stayed on disk, referenced by nothing.
    monkeypatch.setattr(writer_module, "ROW_GROUP_ROWS", 1)   # every batch is a row group
    t = Table.create(str(table_path), make_rows([]).schema, partition_keys=["dt", "hr"],
                     options={"target-file-size": "1 b"})  # ... and rolls its file
    w = t.new_writer()
    for i in range(3):
        w.write_arrow(make_rows([i]))
    assert len(_data_files(table_path)) == 3
    w.close()
    assert _data_files(table_path) == []
    # After prepare_commit, close() leaves the handed-out files alone.
    w = t.new_writer()
    w.write_arrow(make_rows([7]))
    msgs = w.prepare_commit()
    w.close()
    assert all(os.path.exists(p) for p in message_paths(t.store, msgs))


class _FullDisk:
    """A local file that accepts `budget` bytes, then fails like a full disk."""

    def __init__(self, f, budget):
        self.f, self.budget, self.written = f, budget, 0

    def write(self, data):
        n = len(memoryview(data).cast("B"))
        if self.written + n > self.budget:
            raise OSError(errno.ENOSPC, "No space left on device")
        self.written += n
        return self.f.write(data)

    def __getattr__(self, name):
        return getattr(self.f, name)


class FullDiskIO(LocalFileIO):
    """Local storage (a real directory) whose data files run out of space after `budget`
    bytes; remembers every stream it opened."""

    def __init__(self, root, budget):
        super().__init__(root)
        self.budget = budget
        self.streams = []

    def open_output_stream(self, path):
        s = _FullDisk(super().open_output_stream(path), self.budget)
        self.streams.append(s)
        return s


def _file_size_of_one_row(table_path):
    t = Table.open(str(table_path))
    (m,) = _prepare(t, [1])
    with t.new_commit() as c:
        c.abort([m])
    return m.new_files[0].file_size


@pytest.mark.parametrize("fail", ["opening", "closing"])
def test_a_failing_parquet_writer_leaves_no_file_and_no_open_stream(table, table_path, fail):
    # Regression: a ParquetWriter failing on construction left its sink open, and one
    # failing in close() (the footer) never closed the sink: a leaked file handle locally, an
    # open multipart upload (invisible to orphan cleanup) on S3.
    budget = 0 if fail == "opening" else _file_size_of_one_row(table_path) - 1
    io = FullDiskIO(str(table_path), budget)
    t = Table.open(str(table_path), file_io=io)
    w = t.new_writer()
    w.write_arrow(make_rows([1]))
    with pytest.raises(OSError, match="No space left"):
        w.prepare_commit()
    assert len(io.streams) == 1 and io.streams[0].f.closed
    w.close()
    assert _data_files(table_path) == []
