"""A repeat is recognised by the files it adds and the table it adds them to (issue 25 item 3,
findings 3, 6 and 7): after a rollback, a compaction or an expiration, and through any
spelling of the table's path, the same messages committed again publish their rows exactly
once or are refused with a clear CommitConflictError; never a silent no-op, never a second
copy. Real tables in tmp dirs; pypaimon and our reader read every row back."""
import logging
import os
import threading

import pytest

from conftest import D1, make_rows, write
from invariants import assert_intact
from oracle import pp_read

from paimon_commit import ExpireConfig, ExpireSnapshots, Table
from paimon_commit.errors import CommitConflictError
from paimon_commit.format.manifest import FileKind
from paimon_commit.io.local import LocalFileIO
from paimon_commit.store import FileStore


def snapshot_ids(table_path):
    d = table_path / "snapshot"
    return sorted(int(n.split("-")[1]) for n in os.listdir(d) if n.startswith("snapshot-")) \
        if d.exists() else []


def ids_read(table_path, snapshot_id=None):
    """Row ids as pypaimon and our reader see them (they must agree), sorted, duplicates kept."""
    ours = sorted(Table.open(str(table_path)).read_arrow(snapshot_id=snapshot_id)
                  .column("id").to_pylist())
    theirs = sorted(pp_read(table_path, snapshot_id=snapshot_id).column("id").to_pylist())
    assert ours == theirs
    return ours


def expire_keeping(table_path, keep):
    cfg = ExpireConfig(retain_min=keep, retain_max=keep, time_retained_ms=0, max_deletes=100)
    return ExpireSnapshots(Table.open(str(table_path)).store, cfg).expire()


def prepared(t, ids):
    w = t.new_writer()
    w.write_arrow(make_rows(ids))
    return w.prepare_commit()


def data_path(table_path, msgs):
    m = msgs[0]
    return os.path.join(str(table_path), f"dt=19723/hr=1/bucket-{m.bucket}",
                        m.new_files[0].file_name)


def snapshots_adding(table_path, msgs):
    t = Table.open(str(table_path))
    name = msgs[0].new_files[0].file_name
    return [s.id for s in t.store.snapshots.snapshots()
            if any(e.kind == FileKind.ADD and e.file.file_name == name
                   for e in t.store.delta_entries(s))]


# --- finding 3: a repeat after a rollback whose id another commit of the user re-used ---------
# A repeat whose snapshot a rollback removed is refused (audit a5): the rollback left its
# files to orphan cleanup, which selects them by age and may have planned them already; a
# repeat publishing them again could be followed by their deletion. (Before audit a5 these
# repeats published the rolled-back files again; the tests below were changed deliberately.)

def _rolled_back_message(table, user, what, snapshot_id):
    return (f"commit user {user!r} committed these files ({what}) to {table.path} as snapshot "
            f"{snapshot_id}, which a rollback removed since; refusing to commit them again: a "
            f"rollback leaves its files to orphan cleanup, which may be deleting them now, and "
            f"a snapshot publishing them again would then name missing files. Write the rows "
            f"again with a new writer if they should be in the table")


def test_a_repeat_after_a_rollback_and_a_reused_id_is_refused_not_a_no_op(table, table_path):
    # Regression (issue 25, finding 3): A was published as snapshot 2 and rolled back; B of the
    # same commit user (one-shot, the same batch identifier) got id 2 again. The record compared
    # user, identifier and kind, took snapshot 2 for A's and returned 2: A's rows were gone while
    # the call reported success. Now: refused, every time, naming the snapshot it was.
    write(table, make_rows([1]))
    c = table.new_commit(commit_user="etl")
    a = prepared(table, [2])
    assert c.commit(a) == 2
    Table.open(str(table_path)).rollback_to(snapshot_id=1)
    assert c.commit(prepared(table, [3])) == 2
    for _ in range(2):   # a second repeat is refused the same way, not published
        with pytest.raises(CommitConflictError) as e:
            c.commit(a)
        assert str(e.value) == _rolled_back_message(table, "etl", "a batch commit", 2)
    c.close()
    assert snapshot_ids(table_path) == [1, 2]
    assert snapshots_adding(table_path, a) == []
    assert os.path.exists(data_path(table_path, a))   # left for orphan cleanup
    assert ids_read(table_path) == [1, 3]
    assert_intact(table_path, {2: [1, 3]})


def test_a_repeat_after_a_rollback_is_refused_and_the_rows_written_again_commit(table,
                                                                                table_path):
    # Regression (audit a5): a job's commit (identifier 7) was rolled back; its retry
    # published the rolled-back file again, which an orphan cleanup that had planned it (it is
    # as old as the commit) then deleted: the latest snapshot named a missing file. Now the
    # retry is refused; what the error says to do (write the rows again) commits them once.
    write(table, make_rows([1]))
    job = table.new_commit(commit_user="job")
    a = prepared(table, [2])
    assert job.commit(a, 7) == 2
    Table.open(str(table_path)).rollback_to(snapshot_id=1)
    with pytest.raises(CommitConflictError) as e:
        job.commit(a, 7)
    assert str(e.value) == _rolled_back_message(table, "job", "identifier 7", 2)
    assert snapshot_ids(table_path) == [1]
    assert job.commit(prepared(table, [2]), 8) == 2
    job.close()
    assert ids_read(table_path) == [1, 2]
    assert_intact(table_path, {2: [1, 2]})


def test_a_repeat_after_a_rollback_whose_files_are_gone_is_refused(table, table_path):
    # The rolled-back files were deleted since (orphan cleanup): the same refusal.
    write(table, make_rows([1]))
    c = table.new_commit(commit_user="etl")
    a = prepared(table, [2])
    assert c.commit(a) == 2
    Table.open(str(table_path)).rollback_to(snapshot_id=1)
    assert c.commit(prepared(table, [3])) == 2
    os.remove(data_path(table_path, a))
    with pytest.raises(CommitConflictError) as e:
        c.commit(a)
    assert str(e.value) == _rolled_back_message(table, "etl", "a batch commit", 2)
    c.close()
    assert snapshot_ids(table_path) == [1, 2]
    assert ids_read(table_path) == [1, 3]


# --- finding 6: a commit that raised after its publish, then a compaction -------------------

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


def _interrupted_after_publishing(table_path, ids, identifier=None):
    """Commit `ids` as commit user 'nb'; Ctrl-C lands right after snapshot 2 is published."""
    io = _InterruptAtHint(str(table_path), 2)
    t = Table(FileStore.open(str(table_path), io=io))
    msgs = prepared(t, ids)
    with pytest.raises(KeyboardInterrupt, match="Ctrl-C"):
        t.new_commit(commit_user="nb").commit(msgs, identifier)
    assert not io.armed
    return msgs


@pytest.mark.parametrize("identifier", [None, 7])
def test_a_repeat_of_an_interrupted_commit_whose_files_were_compacted_is_a_no_op(
        table, table_path, identifier):
    # Regression (issue 25, finding 6): the repeat found the files no longer all live (the
    # compaction replaced them) and published them again as snapshot 4 while snapshot 2 still
    # held them: every row read twice.
    write(table, make_rows([1]))
    msgs = _interrupted_after_publishing(table_path, [2, 3], identifier)
    assert snapshot_ids(table_path) == [1, 2]
    assert table.compact(options={"compaction.min.file-num": "2"}).snapshot_id == 3
    with table.new_commit(commit_user="nb") as c:
        assert c.commit(msgs, identifier) == 2
        assert c.last_result.already_committed
        assert c.commit(msgs, identifier) == 2
    assert snapshot_ids(table_path) == [1, 2, 3]
    assert ids_read(table_path) == [1, 2, 3]
    assert_intact(table_path, {2: [1, 2, 3], 3: [1, 2, 3]})


def test_a_repeat_by_another_commit_user_after_a_compaction_is_refused(table, table_path):
    # Regression (audit issue25p p5): a file another commit user of this process published
    # was checked against the live files only; once a compaction replaced it, committing
    # the same messages as another user published its rows a second time.
    msgs = [prepared(table, [i]) for i in range(3)]
    for m in msgs:
        with table.new_commit(commit_user="job-a") as c:
            c.commit(m)
    assert table.compact(options={"compaction.min.file-num": "2"}).snapshot_id == 4
    with table.new_commit(commit_user="job-b") as c:
        with pytest.raises(CommitConflictError) as e:
            c.commit(msgs[0])
    assert str(e.value) == (
        f"data file {data_path(table_path, msgs[0])} was already committed to {table_path} by "
        f"commit user 'job-a' (a batch commit, APPEND snapshot 1) and is no longer live: a "
        f"compaction or an overwrite replaced it (its rows are still in the table) or a "
        f"rollback removed it, which the table cannot tell apart; refusing to commit it again "
        f"as commit user 'job-b', as its rows could be read twice. Write the rows again with a "
        f"new writer if they are missing")
    assert snapshot_ids(table_path) == [1, 2, 3, 4]
    assert ids_read(table_path) == [0, 1, 2]


def test_a_retried_cell_after_its_own_post_commit_compaction_is_refused(table_path):
    # The default commit user is a new random one per commit object, so a notebook cell run
    # again is another user; its first run's post-commit compaction had replaced the file.
    t = Table.create(str(table_path), make_rows([]).schema, partition_keys=["dt", "hr"],
                     options={"compaction.post-commit.enabled": "true",
                              "compaction.min.file-num": "2"})
    write(t, make_rows([10]))
    cell = prepared(t, [11])
    with t.new_commit() as c:
        assert c.commit(cell) == 2
    assert snapshot_ids(table_path) == [1, 2, 3]   # 3: the post-commit compaction
    with t.new_commit() as c:   # the cell run again
        with pytest.raises(CommitConflictError, match=r"was already committed to .* and is no "
                                                      r"longer live"):
            c.commit(cell)
    assert snapshot_ids(table_path) == [1, 2, 3]
    assert ids_read(table_path) == [10, 11]


def test_a_repeat_by_another_user_the_record_forgot_after_a_compaction_is_refused(
        table, table_path, monkeypatch):
    # Regression (audit issue25q e1): once the bounded record had forgotten another user's
    # commit of the file, the walk of the table looked at this user's snapshots only; the
    # compaction had replaced the file, so it was published again (rows read twice).
    from paimon_commit.operations import commit_record
    monkeypatch.setattr(commit_record, "RECORD", commit_record.CommitRecord(capacity=3))
    msgs = [prepared(table, [i]) for i in range(3)]
    for m in msgs:
        with table.new_commit(commit_user="job-a") as c:
            c.commit(m)
    assert table.compact(options={"compaction.min.file-num": "2"}).snapshot_id == 4
    for i in range(4):   # more files than the record holds: the first commit is forgotten
        write(table, make_rows([10 + i]))
    with table.new_commit(commit_user="job-b") as c:
        with pytest.raises(CommitConflictError, match=r"was added by snapshot 1 \(commit user "
                                                      r"'job-a'\) and is no longer live"):
            c.commit(msgs[0])
        # With a new file beside it (only some files forgotten): the same refusal.
        with pytest.raises(CommitConflictError, match=r"was added by snapshot 1"):
            c.commit(msgs[0] + prepared(table, [99]))
    assert snapshot_ids(table_path) == list(range(1, 9))
    assert ids_read(table_path) == [0, 1, 2, 10, 11, 12, 13]


@pytest.mark.parametrize("how", ["another-identifier", "with-one-more-file"])
def test_an_interrupted_commit_changed_and_repeated_after_a_compaction_is_refused(
        table, table_path, how):
    # Regression (audit issue25r r1): a call that raised after it may have published left
    # its files recorded without a snapshot; a repeat that was not its exact repeat (another
    # identifier, or more files) was only checked against the live files, which the
    # compaction had replaced: published again, rows read twice.
    write(table, make_rows([1]))
    msgs = _interrupted_after_publishing(table_path, [2])
    assert table.compact(options={"compaction.min.file-num": "2"}).snapshot_id == 3
    with table.new_commit(commit_user="nb") as c:
        with pytest.raises(CommitConflictError, match=r"was handed to a commit to .* by commit "
                                                      r"user 'nb' \(a batch commit, APPEND\) that "
                                                      r"raised after it may have published it, "
                                                      r"and it is not live"):
            if how == "another-identifier":
                c.commit(msgs, 99)
            else:
                c.commit(msgs + prepared(table, [3]))
    assert snapshot_ids(table_path) == [1, 2, 3]
    assert ids_read(table_path) == [1, 2]


def test_a_compaction_between_the_screen_and_the_attempt_lets_no_repeat_through(
        table, table_path, monkeypatch):
    # Regression (audit issue25r r2): another user's file, live when the call was screened,
    # was left to the attempt's table check; a compaction in between replaced it and the
    # check passed it: rows read twice. Such a file is refused at the screen, live or not.
    from paimon_commit.operations import commit_record
    write(table, make_rows([10]))
    msgs = prepared(table, [11])
    with table.new_commit(commit_user="A") as c:
        assert c.commit(msgs) == 2
    real = commit_record.RepeatScreen.screen

    def screen_then_compact(self, adds, identifier, kind):
        out = real(self, adds, identifier, kind)   # (raises here now)
        table.compact(options={"compaction.min.file-num": "2"})
        return out
    monkeypatch.setattr(commit_record.RepeatScreen, "screen", screen_then_compact)
    with table.new_commit(commit_user="B") as c:
        with pytest.raises(CommitConflictError, match="is already live in snapshot 2"):
            c.commit(msgs)
    assert ids_read(table_path) == [10, 11]


def test_an_exact_repeat_some_of_whose_files_the_record_forgot_is_a_no_op(
        table, table_path, monkeypatch):
    # Audit issue25r r4: refused ("already committed ... refusing to commit it again") where
    # the snapshot of that very call ADDs every file.
    from paimon_commit.operations import commit_record
    write(table, make_rows([1]))
    monkeypatch.setattr(commit_record, "RECORD", commit_record.CommitRecord(capacity=2))
    msgs = prepared(table, [2]) + prepared(table, [3])
    with table.new_commit(commit_user="job") as c:
        assert c.commit(msgs) == 2
        assert c.commit(prepared(table, [4])) == 3   # 3 files for 2 places: one is forgotten
        assert c.commit(msgs) == 2
        assert c.last_result.already_committed
    assert snapshot_ids(table_path) == [1, 2, 3]
    assert ids_read(table_path) == [1, 2, 3, 4]


def test_filter_and_commit_under_a_new_commit_user_refuses_files_the_table_names(
        table, table_path, monkeypatch):
    # Regression (audit issue25r r5): a job restarted in a new process under a new commit
    # user (the default one is random) has no snapshot; with the whole history retained,
    # every identifier was pending and only the live files were checked, which a compaction
    # had replaced: rows read twice. Files the table names are refused, as after an
    # expiration.
    from paimon_commit.operations import commit_record
    write(table, make_rows([10]))
    msgs = {1: prepared(table, [11]), 2: prepared(table, [12])}
    with table.new_commit(commit_user="S") as c:
        c.commit(msgs[1], 1)
        c.commit(msgs[2], 2)
    table.compact(options={"compaction.min.file-num": "2"})
    msgs[3] = prepared(table, [13])
    monkeypatch.setattr(commit_record, "RECORD", commit_record.CommitRecord())   # a restart
    with table.new_commit() as c:
        with pytest.raises(CommitConflictError, match=r"cannot re-commit identifier 1: commit "
                                                      r"user '.*' has no snapshot in .* is "
                                                      r"named by a retained snapshot"):
            c.filter_and_commit(msgs)
    assert ids_read(table_path) == [10, 11, 12]
    with table.new_commit(commit_user="S") as c:   # resumed as the job's own user
        assert c.filter_and_commit(msgs) == [5]
    assert ids_read(table_path) == [10, 11, 12, 13]


@pytest.mark.parametrize("retry", ["same-call", "new-commit-object", "another-identifier"])
def test_a_call_whose_every_publish_failed_is_refused_on_retry_saying_it_may_not_have_published(
        table_path, monkeypatch, retry):
    # Each attempt settled the previous one's failed publish as not landed now, but a create
    # that failed on the client can still land later (audit issue25t t1: forgetting such a
    # call, as issue25s s1 asked, let its retry publish the rows twice once it landed). So
    # the retry is refused -- with a message that does not claim the rows are in the table
    # (audit issue25s M1: it said a compaction had replaced the file).
    from paimon_commit.errors import CommitFailedError
    from paimon_commit.snapshots import SnapshotManager
    t = Table.create(str(table_path), make_rows([]).schema, partition_keys=["dt", "hr"],
                     options={"commit.max-retries": "1", "commit.min-retry-wait": "1 ms",
                              "commit.max-retry-wait": "2 ms"})
    write(t, make_rows([10]))
    msgs = prepared(t, [11])

    def outage(self, *a, **k):
        raise OSError("injected: connection reset during the publish")
    with monkeypatch.context() as m:
        m.setattr(SnapshotManager, "try_commit", outage)
        with pytest.raises(CommitFailedError):
            with t.new_commit(commit_user="job") as c:
                c.commit(msgs)
    assert snapshot_ids(table_path) == [1]
    with pytest.raises(CommitConflictError) as e:
        if retry == "same-call":
            with t.new_commit(commit_user="job") as c:
                c.commit(msgs)
        elif retry == "new-commit-object":
            with t.new_commit() as c:
                c.commit(msgs)
        else:
            with t.new_commit(commit_user="job") as c:
                c.commit(msgs, 5)
    said = str(e.value)
    assert "never published" in said and "its rows are still in the table" not in said, said
    assert snapshot_ids(table_path) == [1]
    assert ids_read(table_path) == [10]


def test_a_publish_that_lands_after_it_failed_is_not_published_again_by_the_same_call(
        table_path, monkeypatch):
    # Regression (audit issue25t t2): attempt 1's create failed on the client and landed
    # later, just before attempt 2's create, which then "lost the race" to our own snapshot;
    # attempt 3 (a plain append checks no live files) published the file a second time.
    from paimon_commit.snapshots import SnapshotManager
    t = Table.create(str(table_path), make_rows([]).schema, partition_keys=["dt", "hr"],
                     options={"commit.min-retry-wait": "1 ms", "commit.max-retry-wait": "2 ms"})
    write(t, make_rows([10]))
    msgs = prepared(t, [11])
    real, held, calls = SnapshotManager.try_commit, [], [0]

    def late(self, *a, **k):
        calls[0] += 1
        if calls[0] == 1:   # the request times out on the client; the store still has it
            held.append((self, a, k))
            raise OSError("injected: read timeout, the conditional PUT may still land")
        if calls[0] == 2:   # ... and completes it now, before attempt 2's create
            s, ha, hk = held[0]
            assert real(s, *ha, **hk)
        return real(self, *a, **k)
    monkeypatch.setattr(SnapshotManager, "try_commit", late)
    with t.new_commit(commit_user="job") as c:
        assert c.commit(msgs) == 2
    assert snapshot_ids(table_path) == [1, 2]
    assert ids_read(table_path) == [10, 11]


def test_a_repeat_of_an_interrupted_commit_compacted_and_expired_is_refused(table, table_path):
    # The same, once snapshot 2 has expired: the table cannot tell whether the call published
    # (its rows are in the compacted file) or not, so the repeat is refused, not a second copy.
    write(table, make_rows([1]))
    msgs = _interrupted_after_publishing(table_path, [2, 3])
    assert table.compact(options={"compaction.min.file-num": "2"}).snapshot_id == 3
    expire_keeping(table_path, 1)
    assert snapshot_ids(table_path) == [3]
    with table.new_commit(commit_user="nb") as c:
        with pytest.raises(CommitConflictError) as e:
            c.commit(msgs)
    assert str(e.value) == (
        f"an earlier call of commit user 'nb' with these files (a batch commit) raised after "
        f"it may have published them to {table.path}, and the table no longer tells: snapshot 2 "
        f"has expired and the files are not all live (e.g. "
        f"{data_path(table_path, msgs)}), as after a compaction or an overwrite that replaced "
        f"them (their rows are still in the table) or a publish that never happened; refusing "
        f"to commit them again, as their rows could be read twice. Check whether the rows are "
        f"in the table, and write them again with a new writer if they are missing")
    assert snapshot_ids(table_path) == [3]
    assert ids_read(table_path) == [1, 2, 3]


def _raised_rolled_back_message(table):
    return (f"an earlier call of commit user 'nb' with these files (a batch commit) raised after "
            f"it may have published them to {table.path}; no snapshot of the table holds them "
            f"now (it never published, or a rollback removed it); refusing to commit them again: "
            f"a rollback leaves its files to orphan cleanup, which may be deleting them now, and "
            f"a snapshot publishing them again would then name missing files. Write the rows "
            f"again with a new writer if they should be in the table")


def test_a_repeat_of_an_interrupted_commit_after_a_rollback_is_refused(table, table_path):
    # The call raised after publishing snapshot 2, which a rollback removed and another commit
    # of the same user re-used: no snapshot holds its files, and the table cannot tell "never
    # published" from "rolled back" - after a rollback its files are orphan cleanup's, so the
    # repeat is refused (audit a5; it published them again before).
    write(table, make_rows([1]))
    msgs = _interrupted_after_publishing(table_path, [2])
    Table.open(str(table_path)).rollback_to(snapshot_id=1)
    with table.new_commit(commit_user="nb") as c:
        assert c.commit(prepared(table, [3])) == 2
        with pytest.raises(CommitConflictError) as e:
            c.commit(msgs)
        assert str(e.value) == _raised_rolled_back_message(table)
    assert snapshots_adding(table_path, msgs) == []
    assert snapshot_ids(table_path) == [1, 2]
    assert ids_read(table_path) == [1, 3]


def test_a_repeat_of_an_interrupted_commit_rolled_back_whose_files_are_gone_is_refused(
        table, table_path):
    # The same, once orphan cleanup deleted the rolled-back file.
    write(table, make_rows([1]))
    msgs = _interrupted_after_publishing(table_path, [2])
    Table.open(str(table_path)).rollback_to(snapshot_id=1)
    os.remove(data_path(table_path, msgs))
    with table.new_commit(commit_user="nb") as c:
        with pytest.raises(CommitConflictError) as e:
            c.commit(msgs)
    assert str(e.value) == _raised_rolled_back_message(table)
    assert snapshot_ids(table_path) == [1]
    assert ids_read(table_path) == [1]


def test_a_call_that_failed_before_publishing_commits_after_an_expiration(table_path):
    # Guard: a call that never reached the publish left nothing to recognise; its retry after
    # other commits and an expiration publishes the rows (once), it is not refused.
    t = Table.create(str(table_path), make_rows([]).schema, ["dt", "hr"])
    write(t, make_rows([1]))
    msgs = prepared(t, [2])

    class _NoManifests(LocalFileIO):
        def write_new(self, path, data):
            if "/manifest/" in path:
                raise OSError("injected: disk full")
            return super().write_new(path, data)
    broken = Table(FileStore.open(str(table_path), io=_NoManifests(str(table_path))))
    with pytest.raises(OSError, match="injected: disk full"):
        broken.new_commit(commit_user="nb").commit(msgs)
    for i in (3, 4):
        write(Table.open(str(table_path)), make_rows([i]))
    expire_keeping(table_path, 1)
    assert snapshot_ids(table_path) == [3]
    with t.new_commit(commit_user="nb") as c:
        assert c.commit(msgs) == 4
    assert ids_read(table_path) == [1, 2, 3, 4]


# --- finding 7: the same table through another spelling of its path ---------------------------

def _spelled(table_path, tmp_path, spelling):
    p = str(table_path)
    if spelling == "symlink":
        os.symlink(p, tmp_path / "link")
        return str(tmp_path / "link")
    if spelling == "symlinked parent":
        os.symlink(str(table_path.parent), tmp_path / "db-link")
        return str(tmp_path / "db-link" / table_path.name)
    if spelling == "dot-dot":
        return os.path.join(p, "..", table_path.name)
    if spelling == "trailing slash":
        return p + "/"
    if spelling == "file uri":
        return "file://" + p
    if spelling == "relative":
        return os.path.relpath(p)
    raise AssertionError(spelling)


@pytest.mark.parametrize("spelling", ["symlink", "symlinked parent", "dot-dot",
                                      "trailing slash", "file uri", "relative"])
@pytest.mark.parametrize("identifier", [None, 5])
def test_a_repeat_through_another_spelling_of_the_table_is_a_no_op(table, table_path, tmp_path,
                                                                  spelling, identifier):
    # Regression (issue 25, finding 7): the record was keyed by the root as spelled (abspath
    # does not resolve links): the same messages of the same commit user committed again
    # through a symlink to the table were published twice.
    msgs = prepared(table, [1, 2])
    with table.new_commit(commit_user="job") as c:
        assert c.commit(msgs, identifier) == 1
    other = Table.open(_spelled(table_path, tmp_path, spelling))
    with other.new_commit(commit_user="job") as c:
        assert c.commit(msgs, identifier) == 1
        assert c.last_result.already_committed
        with pytest.raises(CommitConflictError, match=r"already committed by commit user 'job'"):
            c.commit(msgs, 9)
    assert snapshot_ids(table_path) == [1]
    assert snapshots_adding(table_path, msgs) == [1]
    assert ids_read(table_path) == [1, 2]


def test_a_forgotten_repeat_whose_files_were_compacted_and_expired_is_refused(
        table, table_path, monkeypatch):
    # The bounded record forgot the commit (more files since than it holds), a compaction
    # replaced its file and its snapshot expired: the table cannot tell it was published, and
    # publishing it again would read its row twice. Before: published again as snapshot 6.
    from paimon_commit.operations import commit_record
    monkeypatch.setattr(commit_record, "RECORD", commit_record.CommitRecord(capacity=3))
    c = table.new_commit(commit_user="job")
    first = prepared(table, [1])
    assert c.commit(first) == 1
    for i in (2, 3, 4):
        assert c.commit(prepared(table, [i])) == i      # the first file is evicted
    assert table.compact(options={"compaction.min.file-num": "2"}).snapshot_id == 5
    expire_keeping(table_path, 1)
    assert snapshot_ids(table_path) == [5]
    with pytest.raises(CommitConflictError) as e:
        c.commit(first)
    assert str(e.value).startswith(
        f"commit user 'job' may have committed these files (a batch commit) to {table.path} "
        f"earlier in this process (more files since than it remembers), and the table no "
        f"longer tells: snapshots 1 to 4 have expired and the files are not all live (e.g. "
        f"{data_path(table_path, first)})")
    c.close()
    assert snapshot_ids(table_path) == [5]
    assert ids_read(table_path) == [1, 2, 3, 4]


# --- a repeat racing the call it repeats (issue 25, open finding of the interleaving mix) ------

class _HeldAtPublish(LocalFileIO):
    """Its create of snapshot-`n` waits until `release` is set: a first call still in flight
    (e.g. a slow store), right before its publish."""

    def __init__(self, root, n):
        super().__init__(root)
        self.n, self.reached, self.release = n, threading.Event(), threading.Event()

    def try_create_atomic(self, path, data, precondition=None, single_writer=False):
        if path.endswith(f"/snapshot/snapshot-{self.n}"):
            self.reached.set()
            assert self.release.wait(60)
        return super().try_create_atomic(path, data, precondition, single_writer)


class _Waiting(logging.Handler):
    def __init__(self):
        super().__init__()
        self.seen = threading.Event()

    def emit(self, record):
        if "waiting for a call of this process committing the same files" in \
                record.getMessage():
            self.seen.set()


@pytest.mark.parametrize("identifier", [None, 7])
def test_a_repeat_racing_its_first_call_in_another_thread_waits_and_publishes_nothing(
        table, table_path, identifier):
    # Regression: the repeat (a retry after a client-side timeout, on a new commit object) was
    # screened before the first call had recorded its files and published them as snapshot 2;
    # the first call then lost the race for 2 and published them again as 3: every row twice.
    write(table, make_rows([1]))
    msgs = prepared(table, [2, 3])
    io = _HeldAtPublish(str(table_path), 2)
    results, errors = {}, []

    def first():
        try:
            c = Table(FileStore.open(str(table_path), io=io)).new_commit(commit_user="job")
            results["first"] = (c.commit(msgs, identifier), c.last_result.already_committed)
        except BaseException as e:  # noqa: BLE001 - reported by the test
            errors.append(e)

    def repeat():
        try:
            c = Table.open(str(table_path)).new_commit(commit_user="job")
            results["repeat"] = (c.commit(msgs, identifier), c.last_result.already_committed)
        except BaseException as e:  # noqa: BLE001
            errors.append(e)
        finally:
            waiting.seen.set()   # (done without waiting: the code before the fix)

    waiting = _Waiting()
    logger = logging.getLogger("paimon_commit.operations.commit_record")
    logger.addHandler(waiting)
    old_level = logger.level
    logger.setLevel(logging.INFO)
    try:
        a = threading.Thread(target=first)
        a.start()
        assert io.reached.wait(60)
        b = threading.Thread(target=repeat)
        b.start()
        assert waiting.seen.wait(60)
        io.release.set()
        a.join(60)
        b.join(60)
    finally:
        io.release.set()
        logger.removeHandler(waiting)
        logger.setLevel(old_level)
    assert not errors
    assert results == {"first": (2, False), "repeat": (2, True)}
    assert snapshot_ids(table_path) == [1, 2]
    assert snapshots_adding(table_path, msgs) == [2]
    assert ids_read(table_path) == [1, 2, 3]
    assert_intact(table_path, {2: [1, 2, 3]})


# --- audit issue25b b2: one call handed the same message twice --------------------------------
# A plain append checks nothing against the table, so `commit(msgs + msgs)` published one
# snapshot whose delta ADDed the file twice: pypaimon read its rows twice (Paimon Java refuses
# such a delta when reading). A file listed twice in one call is refused before the table is
# read or written.

def _listed_twice(table, msgs):
    return (f"data file {data_path(table.path, msgs)} is listed twice in the messages of one "
            f"call (the same CommitMessage handed twice?); refusing to commit it, as its rows "
            f"would be read twice. Nothing was committed: commit each message once")


@pytest.mark.parametrize("how", ["commit", "commit_identifier", "overwrite",
                                 "overwrite_partition"])
def test_a_message_listed_twice_in_one_call_is_refused_before_anything_is_written(
        table, table_path, how):
    write(table, make_rows([1, 2]))
    before = sorted(os.listdir(table_path / "snapshot")), sorted(os.listdir(table_path /
                                                                           "manifest"))
    msgs = prepared(table, [10, 11, 12])
    with table.new_commit(commit_user="job") as c:
        with pytest.raises(CommitConflictError) as e:
            if how == "commit":
                c.commit(list(msgs) + list(msgs))
            elif how == "commit_identifier":
                c.commit(list(msgs) + list(msgs), commit_identifier=1)
            elif how == "overwrite":
                c.overwrite(list(msgs) + list(msgs))
            else:
                c.overwrite(list(msgs) + list(msgs), partition={"dt": D1, "hr": 1})
    assert str(e.value) == _listed_twice(table, msgs)
    # nothing written: no snapshot, no manifest; the table reads as before (ours and pypaimon)
    assert (sorted(os.listdir(table_path / "snapshot")),
            sorted(os.listdir(table_path / "manifest"))) == before
    assert ids_read(table_path) == [1, 2]
    # the messages, committed once, publish their rows once
    with table.new_commit(commit_user="job") as c:
        c.commit(msgs, commit_identifier=1)
    assert ids_read(table_path) == [1, 2, 10, 11, 12]
    assert_intact(table_path)


def test_filter_and_commit_refuses_a_file_listed_twice_before_reading_the_table(
        table, table_path):
    a, b = prepared(table, [1, 2]), prepared(table, [3])
    with table.new_commit(commit_user="job") as c:
        # within one identifier, and the same message under two identifiers (each identifier
        # is its own commit: the first would publish it before the second was refused)
        for by in ({1: list(a) + list(a)}, {1: a, 2: list(b) + list(a)}):
            with pytest.raises(CommitConflictError) as e:
                c.filter_and_commit(by)
            assert str(e.value) == _listed_twice(table, a)
            assert snapshot_ids(table_path) == []
        assert c.filter_and_commit({1: a, 2: b}) == [1, 2]
    assert ids_read(table_path) == [1, 2, 3]


# --- audit issue25b b3: filter_and_commit after the commit user's snapshots expired ----------
# filter_committed decides from the user's latest retained snapshot (as Paimon's
# filterCommitted). Once all of them expired, every identifier counts as not committed; a
# compaction had replaced the job's file A (its rows are in A' now), a tag kept A on disk, so
# the append conflict check (live files only) passed and A's rows were published again next
# to A'. Now, when the table cannot tell, a pending file that a retained snapshot, tag or
# changelog names is refused.

def _restarted(monkeypatch):
    """This process's commit record as a restarted job's: empty."""
    from paimon_commit.operations import commit_record
    monkeypatch.setattr(commit_record, "RECORD", commit_record.CommitRecord())


def _expired_history(table_path, tag=True):
    """The job commits rows 100, 101 (identifier 1) as snapshot 1, a tag keeps it; others
    write, a compaction rewrites the job's file, expiration keeps the last 2 snapshots."""
    t = Table.create(str(table_path), make_rows([]).schema, partition_keys=["dt", "hr"],
                     options={"compaction.min.file-num": "2"})
    msgs = prepared(t, [100, 101])
    with t.new_commit(commit_user="job") as c:
        assert c.commit(msgs, 1) == 1
    if tag:
        t.create_tag("daily", 1)
    for i in (0, 10, 20):
        write(t, make_rows([i]))
    t.compact()
    for i in (50, 60, 70):
        write(t, make_rows([i]))
    expire_keeping(table_path, 2)
    return t, msgs


def test_filter_and_commit_after_the_users_snapshots_expired_refuses_a_file_a_tag_keeps(
        table_path, monkeypatch):
    t, msgs = _expired_history(table_path)
    assert os.path.exists(data_path(table_path, msgs))          # the tag keeps A
    assert data_path(table_path, msgs).rpartition("/")[2] not in \
        [n for s in t.snapshots() for n in [e.file.file_name for e in t.store.live_entries(s)]]
    rows = [0, 10, 20, 50, 60, 70, 100, 101]
    assert ids_read(table_path) == rows
    before = snapshot_ids(table_path)
    earliest = before[0]
    _restarted(monkeypatch)
    with Table.open(str(table_path)).new_commit(commit_user="job") as c:
        assert c.filter_committed([1]) == [1]     # the limit: the table cannot tell
        with pytest.raises(CommitConflictError) as e:
            c.filter_and_commit({1: msgs})
    assert str(e.value) == (
        f"cannot re-commit identifier 1: commit user 'job' has no snapshot left in "
        f"{table_path} and snapshots 1 to {earliest - 1} have expired, so whether it committed "
        f"identifier 1 cannot be told from the table, and data file "
        f"{data_path(table_path, msgs)} is named by a retained snapshot, tag or changelog of "
        f"the table: it was committed (its rows may be in other files since, after a "
        f"compaction or an overwrite); refusing to commit it again, as its rows could be read "
        f"twice. Check whether the rows are in the table, and write them again with a new "
        f"writer if they are missing")
    assert snapshot_ids(table_path) == before
    assert ids_read(table_path) == rows
    assert sorted(pp_read(table_path, tag="daily").column("id").to_pylist()) == [100, 101]


def test_filter_and_commit_after_expiry_publishes_files_nothing_names(table_path, monkeypatch):
    # The other side: a job that wrote its messages and died before committing them, its
    # user without any snapshot in a table whose early snapshots expired: nothing names its
    # files, so the restart publishes them, once.
    t, _ = _expired_history(table_path, tag=False)
    pending = prepared(t, [200, 201])
    latest = snapshot_ids(table_path)[-1]
    _restarted(monkeypatch)
    with Table.open(str(table_path)).new_commit(commit_user="late-job") as c:
        assert c.filter_and_commit({1: pending}) == [latest + 1]
        assert c.filter_and_commit({1: pending}) == []
    assert ids_read(table_path) == [0, 10, 20, 50, 60, 70, 100, 101, 200, 201]
    assert_intact(table_path)
