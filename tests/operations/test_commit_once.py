"""Each data file is committed once: repeated commit calls (a retried notebook cell, a retry
after an error, a second commit object) publish nothing or are refused, never a second ADD.

Every table is read back by our reader and by pypaimon; tests/java/test_java_commit_once.py
has Paimon Java read the retried-cell table."""
import os

import pytest

from conftest import D1, D2, SCHEMA, make_rows
from faults.fault_io import Crash, FaultIO
from invariants import assert_intact
from oracle import pp_live_file_names, pp_read, rows

from paimon_commit import CommitConflictError, CommitFailedError, CorruptMetadataError, \
    PaimonCommitError, Table
from paimon_commit.store import FileStore
from paimon_commit.table_commit import MaintenanceError


def messages(table, ids, dt=D1, hr=1):
    w = table.new_writer()
    w.write_arrow(make_rows(ids, dt=dt, hr=hr))
    return w.prepare_commit()


def snapshot_ids(table_path):
    return sorted(int(n.split("-")[1]) for n in os.listdir(table_path / "snapshot")
                  if n.startswith("snapshot-"))


def read_ids(table_path):
    """The ids our reader and pypaimon read (they must agree), sorted."""
    ours = sorted(r["id"] for r in rows(Table.open(str(table_path)).read_arrow()))
    theirs = sorted(r["id"] for r in rows(pp_read(table_path)))
    assert ours == theirs
    return ours


def data_file(table, msgs):
    m = msgs[0]
    return os.path.join(table.path, f"dt=19723/hr=1/bucket-{m.bucket}", m.new_files[0].file_name)


def test_retried_cell_commits_the_files_once(table, table_path):
    c = table.new_commit(commit_user="notebook")
    msgs = messages(table, [1, 2])
    assert c.commit(msgs, commit_identifier=7) == 1
    assert c.commit(msgs, commit_identifier=7) == 1        # the cell run again: a no-op
    assert c.last_result.already_committed and c.last_result.attempts == 0
    with pytest.raises(CommitConflictError) as e:
        c.commit(msgs, commit_identifier=8)
    assert str(e.value) == (
        f"data file {data_file(table, msgs)} was already committed by commit user 'notebook' "
        f"(identifier 7, APPEND snapshot 1); refusing to commit it again (identifier 8, "
        f"APPEND): its rows would be read twice")
    c.close()
    assert snapshot_ids(table_path) == [1]
    assert read_ids(table_path) == [1, 2]
    assert len(pp_live_file_names(table_path)) == 1
    # The commit object still works for new data.
    with table.new_commit(commit_user="notebook") as c:
        assert c.commit(messages(table, [3]), commit_identifier=8) == 2
    assert_intact(table_path, {1: [1, 2], 2: [1, 2, 3]})


def test_repeated_batch_commit_is_a_no_op(table, table_path):
    msgs = messages(table, [1])
    with table.new_commit() as c:
        assert c.commit(msgs) == 1
        assert c.commit(msgs) == 1
        assert c.commit(messages(table, [2])) == 2     # new files: a new batch commit
    assert snapshot_ids(table_path) == [1, 2]
    assert read_ids(table_path) == [1, 2]


def test_same_messages_from_a_second_commit_object(table, table_path):
    msgs = messages(table, [1, 2])
    with table.new_commit(commit_user="job") as c:
        assert c.commit(msgs, commit_identifier=3) == 1
    # The cell creates its commit object: same commit user, same identifier -> no-op.
    with table.new_commit(commit_user="job") as c:
        assert c.commit(msgs, commit_identifier=3) == 1
    # Another commit user: the table is checked, and the live file is refused.
    with table.new_commit(commit_user="other") as c:
        with pytest.raises(CommitConflictError,
                           match=r"is already live in snapshot 1; refusing to add it twice"):
            c.commit(msgs)
    with table.new_commit() as c:                        # a fresh (random) commit user
        with pytest.raises(CommitConflictError, match="already live in snapshot 1"):
            c.commit(msgs, commit_identifier=1)
    assert snapshot_ids(table_path) == [1]
    assert read_ids(table_path) == [1, 2]


def test_streaming_identifiers_must_increase(table, table_path):
    with table.new_commit(commit_user="stream") as c:
        assert c.commit(messages(table, [1]), commit_identifier=7) == 1
        for ident in (7, 6):
            with pytest.raises(CommitConflictError) as e:
                c.commit(messages(table, [2]), commit_identifier=ident)
            assert str(e.value) == (
                f"commit identifier {ident} of commit user 'stream' is not above 7, which it "
                f"committed to {table.path} as snapshot 1: identifiers must increase "
                f"(filter_committed treats every identifier up to 7 as committed)")
            assert c.filter_committed([ident]) == []
        assert c.commit(messages(table, [3]), commit_identifier=8) == 2
        assert c.commit(messages(table, [4])) == 3       # a batch commit is not a stream id
    assert read_ids(table_path) == [1, 3, 4]


def test_rolled_back_commit_is_refused_and_its_identifier_is_free_for_new_rows(table,
                                                                              table_path):
    # Changed deliberately (audit a5): the rolled-back messages were published again before;
    # their files are orphan cleanup's after the rollback, so the repeat is refused and the
    # rows, written again, commit under the same identifier.
    msgs = messages(table, [2])
    with table.new_commit(commit_user="job") as c:
        c.commit(messages(table, [1]), commit_identifier=1)
        assert c.commit(msgs, commit_identifier=2) == 2
        table.rollback_to(1)
        # Snapshot 2 is gone: the files are not committed any more, identifier 2 is free.
        assert c.filter_committed([2]) == [2]
        with pytest.raises(CommitConflictError, match=r"as snapshot 2, which a rollback "
                           r"removed since; refusing to commit them again"):
            c.commit(msgs, commit_identifier=2)
        assert c.commit(messages(table, [2]), commit_identifier=2) == 2
        assert not c.last_result.already_committed
    assert read_ids(table_path) == [1, 2]


def test_repeated_overwrite_is_a_no_op_and_overwrite_refuses_committed_files(table, table_path):
    with table.new_commit(commit_user="job") as c:
        c.commit(messages(table, [1]), commit_identifier=1)
        msgs = messages(table, [10, 11])
        assert c.overwrite(msgs, partition={"dt": D1}, commit_identifier=2) == 2
        assert c.overwrite(msgs, partition={"dt": D1}, commit_identifier=2) == 2
        assert snapshot_ids(table_path) == [1, 2]
        with pytest.raises(CommitConflictError, match=r"already committed by commit user 'job' "
                           r"\(identifier 2, OVERWRITE snapshot 2\); refusing to commit it "
                           r"again \(identifier 3, OVERWRITE\)"):
            c.overwrite(msgs, partition={"dt": D1}, commit_identifier=3)
        appended = messages(table, [20], dt=D2)
        assert c.commit(appended, commit_identifier=3) == 3
        with pytest.raises(CommitConflictError, match=r"\(identifier 3, APPEND snapshot 3\); "
                           r"refusing to commit it again \(identifier 4, OVERWRITE\)"):
            c.overwrite(appended, commit_identifier=4)
    assert snapshot_ids(table_path) == [1, 2, 3]
    assert read_ids(table_path) == [10, 11, 20]


def test_filter_and_commit_with_already_committed_files(table, table_path):
    msgs = messages(table, [1])
    with table.new_commit(commit_user="job") as c:
        assert c.commit(msgs, commit_identifier=5) == 1
    with table.new_commit(commit_user="job") as c:       # after a restart
        assert c.filter_and_commit({5: msgs}) == []
        with pytest.raises(CommitConflictError, match=r"already committed by commit user 'job' "
                           r"\(identifier 5, APPEND snapshot 1\)"):
            c.filter_and_commit({6: msgs})
    with table.new_commit(commit_user="recovery") as c:
        with pytest.raises(CommitConflictError, match="is named by a retained snapshot"):
            c.filter_and_commit({5: msgs})
        with pytest.raises(CommitConflictError, match="already live in snapshot 1"):
            c.commit(msgs, 5)
    assert snapshot_ids(table_path) == [1]
    assert read_ids(table_path) == [1]


@pytest.mark.parametrize("identifier", [None, 7])
def test_commit_interrupted_after_publishing_is_a_no_op_on_retry(table, table_path,
                                                                   identifier):
    with table.new_commit(commit_user="nb") as c:
        c.commit(messages(table, [0]), None if identifier is None else identifier - 1)
    msgs = messages(table, [1, 2])
    io = FaultIO(str(table_path), kind="publish", at=1, mode="crash_after")
    faulty = Table(FileStore.open(str(table_path), io=io))
    with pytest.raises(Crash):                  # e.g. Ctrl-C right after the snapshot landed
        faulty.new_commit(commit_user="nb").commit(msgs, identifier)
    assert snapshot_ids(table_path) == [1, 2]
    with table.new_commit(commit_user="nb") as c:
        assert c.commit(msgs, identifier) == 2      # found: published by the call that raised
        assert c.last_result.already_committed
        assert c.commit(msgs, identifier) == 2
        # Under another identifier (or by another user) the live files are refused.
        with pytest.raises(CommitConflictError, match="already committed by commit user 'nb'"):
            c.commit(msgs, 8)
    with table.new_commit(commit_user="other") as c:
        with pytest.raises(CommitConflictError, match="already live in snapshot 2"):
            c.commit(msgs, identifier)
    assert snapshot_ids(table_path) == [1, 2]
    assert read_ids(table_path) == [0, 1, 2]


def test_batch_commit_that_failed_before_publishing_commits_on_retry(table_path):
    t = Table.create(str(table_path), SCHEMA, ["dt", "hr"], {"commit.max-retries": "0"})
    msgs = messages(t, [1, 2])
    io = FaultIO(str(table_path), kind="publish", at=1, mode="error")
    faulty = Table(FileStore.open(str(table_path), io=io))
    with pytest.raises(CommitFailedError):
        faulty.new_commit(commit_user="nb").commit(msgs)
    assert not (table_path / "snapshot").exists() or snapshot_ids(table_path) == []
    with t.new_commit(commit_user="nb") as c:
        assert c.commit(msgs) == 1
        assert c.commit(msgs) == 1
    assert snapshot_ids(table_path) == [1]
    assert read_ids(table_path) == [1, 2]


def test_batch_commit_retried_after_its_maintenance_raised(table_path):
    t = Table.create(str(table_path), SCHEMA, ["dt", "hr"],
                     {"snapshot.num-retained.min": "1", "snapshot.time-retained": "0 ms"})
    with t.new_commit() as c:
        c.commit(messages(t, [0]))
    t.create_tag("bad")
    (table_path / "tag" / "tag-bad").write_text("{ not json")
    msgs = messages(t, [1, 2])
    with t.new_commit() as c:
        with pytest.raises(CorruptMetadataError, match="tag-bad"):   # inline, after publishing
            c.commit(msgs)
        assert c.commit(msgs) == 2               # the retry: nothing published, no maintenance
    assert snapshot_ids(table_path) == [1, 2]
    assert read_ids(table_path) == [0, 1, 2]


def test_caller_retrying_on_maintenance_error_commits_once(table_path):
    t = Table.create(str(table_path), SCHEMA, ["dt", "hr"],
                     {"snapshot.num-retained.min": "1", "snapshot.time-retained": "0 ms"})
    c = t.new_commit(commit_user="job")
    c.commit(messages(t, [1]), commit_identifier=1)
    t.create_tag("bad")
    (table_path / "tag" / "tag-bad").write_text("{ not json")
    c.commit(messages(t, [2]), commit_identifier=2)      # its maintenance fails and is parked
    assert isinstance(c.maintenance_error, CorruptMetadataError)
    msgs = messages(t, [3])
    for attempt in range(3):                             # retry on any PaimonCommitError
        try:
            sid = c.commit(msgs, commit_identifier=3)
            break
        except PaimonCommitError as e:
            assert isinstance(e, MaintenanceError)
            assert "nothing was committed by this call" in str(e)
            assert t.latest_snapshot().id == 2
            c.close()
            (table_path / "tag" / "tag-bad").unlink()
            c = t.new_commit(commit_user="job")
    c.close()
    assert (attempt, sid) == (1, 3)
    assert t.latest_snapshot().id == 3
    assert read_ids(table_path) == [1, 2, 3]
