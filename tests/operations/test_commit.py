"""FileStoreCommit / TableCommit on real directories, checked with pypaimon."""
import datetime
import os
import time

import pyarrow as pa
import pytest

from conftest import D1, D2, SCHEMA, files_under, make_rows, write
from invariants import referenced_files
from oracle import pp_live_file_names, pp_read, rows

from paimon_commit import (
    CommitConflictError, CommitFailedError, CommitMessage, Table,
)
from paimon_commit.io.local import LocalFileIO
from paimon_commit.operations.publish import built_on_check
from paimon_commit.store import FileStore


def snapshot_ids(table_path):
    return sorted(int(n.split("-")[1]) for n in os.listdir(table_path / "snapshot")
                  if n.startswith("snapshot-"))


def test_appends_publish_dense_snapshots_readable_by_pypaimon(table, table_path):
    assert write(table, make_rows([1, 2])) == 1
    assert write(table, make_rows([3], dt=D2, hr=5)) == 2
    assert write(table, make_rows([4], hr=2)) == 3
    assert snapshot_ids(table_path) == [1, 2, 3]
    assert (table_path / "snapshot" / "LATEST").read_text() == "3"
    s3 = table.snapshot(3)
    assert (s3.commit_kind, s3.total_record_count, s3.delta_record_count) == ("APPEND", 4, 1)
    assert [r["id"] for r in rows(pp_read(table_path))] == [1, 2, 3, 4]
    assert [r["id"] for r in rows(pp_read(table_path, snapshot_id=2))] == [1, 2, 3]
    assert rows(table.read_arrow()) == rows(pp_read(table_path))
    # Files land in k=v/bucket-0 with DATE as a day number.
    assert any(p.startswith("dt=19723/hr=1/bucket-0/data-") and p.endswith(".parquet")
               for p in files_under(table_path))


def test_empty_commit_is_skipped_unless_configured(table, table_path):
    with table.new_commit() as c:
        assert c.commit([]) is None
    assert not (table_path / "snapshot").exists() or snapshot_ids(table_path) == []
    with table.new_commit(options={"snapshot.ignore-empty-commit": "false"}) as c:
        assert c.commit([]) == 1
    assert table.snapshot(1).total_record_count == 0
    assert pp_read(table_path).num_rows == 0


def test_dynamic_overwrite_replaces_only_partitions_in_the_data(table, table_path):
    write(table, make_rows([1, 2], hr=1))
    write(table, make_rows([3], hr=2))
    write(table, make_rows([4], dt=D2, hr=1))
    w = table.new_writer()
    w.write_arrow(make_rows([10, 11], hr=1))
    with table.new_commit() as c:
        sid = c.overwrite(w.prepare_commit(), partition={"dt": D1})  # static spec given
    # A static spec replaces the whole spec: dt=D1/hr=2 goes too.
    assert [r["id"] for r in rows(pp_read(table_path))] == [4, 10, 11]
    assert table.snapshot(sid).commit_kind == "OVERWRITE"

    w = table.new_writer()
    w.write_arrow(make_rows([20], dt=D2, hr=1))
    with table.new_commit() as c:
        c.overwrite(w.prepare_commit())  # dynamic: only dt=D2/hr=1
    assert [r["id"] for r in rows(pp_read(table_path))] == [10, 11, 20]


def test_dynamic_overwrite_with_no_data_commits_nothing(table, table_path):
    write(table, make_rows([1]))
    with table.new_commit() as c:
        assert c.overwrite([]) is None
    assert snapshot_ids(table_path) == [1]


def test_static_overwrite_option_false_replaces_whole_table(table_path):
    t = Table.create(str(table_path), SCHEMA, ["dt", "hr"],
                     {"dynamic-partition-overwrite": "false"})
    write(t, make_rows([1], hr=1))
    write(t, make_rows([2], dt=D2, hr=3))
    w = t.new_writer()
    w.write_arrow(make_rows([9], hr=1))
    with t.new_commit() as c:
        c.overwrite(w.prepare_commit())
    assert [r["id"] for r in rows(pp_read(table_path))] == [9]


def test_static_overwrite_rejects_files_outside_the_spec(table, table_path):
    write(table, make_rows([1]))
    w = table.new_writer()
    w.write_arrow(make_rows([9], dt=D2))
    with table.new_commit() as c, pytest.raises(ValueError, match="outside it"):
        c.overwrite(w.prepare_commit(), partition={"dt": D1})
    assert snapshot_ids(table_path) == [1]


def test_drop_partitions_marks_files_deleted_and_keeps_them_on_disk(table, table_path):
    write(table, make_rows([1, 2], hr=1))
    write(table, make_rows([3], hr=2))
    write(table, make_rows([4], dt=D2, hr=1))
    before = files_under(table_path)
    with table.new_commit() as c:
        sid = c.drop_partitions([{"dt": D1, "hr": 2}])
    s = table.snapshot(sid)
    assert (s.commit_kind, s.delta_record_count, s.total_record_count) == ("OVERWRITE", -1, 3)
    assert [r["id"] for r in rows(pp_read(table_path))] == [1, 2, 4]
    data_before = [p for p in before if p.endswith(".parquet")]
    assert all((table_path / p).exists() for p in data_before)
    # DELETE entries copy the ADD's partition bytes verbatim.
    deletes = [e for e in table.store.delta_entries(s) if e.kind == 1]
    adds = {e.file.file_name: e for e in table.store.delta_entries(table.snapshot(2))}
    assert [d.partition for d in deletes] == [adds[d.file.file_name].partition for d in deletes]
    # Partial spec: every hr of dt=D1.
    with table.new_commit() as c:
        c.drop_partitions([{"dt": D1}])
    assert [r["id"] for r in rows(pp_read(table_path))] == [4]
    assert pp_live_file_names(table_path) == sorted(f.file_name for f in table.live_files())


def test_drop_partitions_default_partition(table_path):
    t = Table.create(str(table_path), SCHEMA, ["name"])
    data = pa.Table.from_pylist([
        {"id": 1, "name": None, "dt": D1, "hr": 1},
        {"id": 2, "name": "", "dt": D1, "hr": 1},
        {"id": 3, "name": "x", "dt": D1, "hr": 1}], schema=SCHEMA)
    write(t, data)
    # NULL and '' share the default partition's directory, but not the partition row.
    assert (table_path / "name=__DEFAULT_PARTITION__" / "bucket-0").is_dir()
    assert sorted(repr(f.partition["name"]) for f in t.live_files()) == ["''", "'x'", "None"]
    assert {r["id"]: r["name"] for r in rows(pp_read(table_path))} == {1: None, 2: "", 3: "x"}
    assert {r["id"]: r["name"] for r in t.read_arrow().to_pylist()} == \
        {1: None, 2: "", 3: "x"}
    with t.new_commit() as c:
        c.drop_partitions([{"name": None}])          # NULL only, as in Paimon Java
    assert [r["id"] for r in rows(pp_read(table_path))] == [2, 3]
    with t.new_commit() as c:
        c.drop_partitions([{"name": ""}])            # '' only
    assert [r["id"] for r in rows(pp_read(table_path))] == [3]


@pytest.mark.parametrize("specs, error, message", [
    ([], ValueError, "at least one partition spec"),
    ([{"nope": 1}], ValueError, "unknown partition key 'nope'"),
    ([{"hr": "2"}], TypeError, "partition key 'hr'"),
    ([{}], ValueError, "empty partition spec"),
    ({"hr": 2}, TypeError, "list of partition specs"),
])
def test_drop_partitions_bad_input_is_a_clear_error(table, table_path, specs, error, message):
    write(table, make_rows([1]))
    before = files_under(table_path)
    with table.new_commit() as c, pytest.raises(error, match=message):
        c.drop_partitions(specs)
    assert files_under(table_path) == before


def test_drop_of_nothing_writes_no_snapshot(table, table_path):
    write(table, make_rows([1]))
    with table.new_commit() as c:
        assert c.drop_partitions([{"hr": 7}]) is None
    assert snapshot_ids(table_path) == [1]


def test_delete_of_a_file_no_longer_live_is_a_conflict(table, table_path):
    write(table, make_rows([1]))
    live = table.live_entries()[0]
    with table.new_commit() as c:
        c.drop_partitions([{"hr": 1}])
    before = files_under(table_path)
    stale = CommitMessage((D1, 1), live.partition, 0, -1, (), (live.file,))
    with table.new_commit() as c, pytest.raises(CommitConflictError, match=live.file.file_name):
        c.commit([stale])
    assert files_under(table_path) == before  # nothing written, nothing deleted


class _PublishThenFail(LocalFileIO):
    """Storage whose snapshot publish succeeds but reports an error (outcome unknown)."""
    failures = 1

    def try_create_atomic(self, path, data, precondition=None):
        ok = super().try_create_atomic(path, data, precondition)
        if "/snapshot/snapshot-" in path and self.failures:
            self.failures -= 1
            raise OSError("connection reset after rename")
        return ok


def test_unknown_publish_outcome_is_resolved_without_duplicating(table, table_path):
    write(table, make_rows([1]))
    store = FileStore.open(str(table_path), io=_PublishThenFail(str(table_path)))
    t = Table(store)
    w = t.new_writer()
    w.write_arrow(make_rows([2]))
    with t.new_commit(commit_user="u1") as c:
        sid = c.commit(w.prepare_commit(), 7)
        assert c.last_result.attempts == 2
    assert sid == 2
    assert snapshot_ids(table_path) == [1, 2]
    assert [r["id"] for r in rows(pp_read(table_path))] == [1, 2]


class _AlwaysLoses(LocalFileIO):
    def try_create_atomic(self, path, data, precondition=None):
        if "/snapshot/snapshot-" in path:
            return False
        return super().try_create_atomic(path, data, precondition)


def test_retries_are_limited_and_lost_attempts_clean_up(table, table_path):
    write(table, make_rows([1]))
    t = Table(FileStore.open(str(table_path), io=_AlwaysLoses(str(table_path))))
    w = t.new_writer()
    w.write_arrow(make_rows([2]))
    msgs = w.prepare_commit()
    manifests_before = sorted(os.listdir(table_path / "manifest"))
    with t.new_commit(options={"commit.max-retries": "3", "commit.min-retry-wait": "1 ms",
                               "commit.max-retry-wait": "2 ms"}) as c:
        with pytest.raises(CommitFailedError, match="after 4 attempt"):
            c.commit(msgs)
    assert sorted(os.listdir(table_path / "manifest")) == manifests_before
    assert snapshot_ids(table_path) == [1]


class _RivalWinsFirst(LocalFileIO):
    """Another writer publishes its snapshot just before each of our first `rival_wins`
    snapshot creates: every one of those attempts loses a race while the table moves."""

    def __init__(self, root, rival_wins):
        super().__init__(root)
        self.rival_wins = rival_wins

    def try_create_atomic(self, path, data, precondition=None):
        if "/snapshot/snapshot-" in path and self.rival_wins > 0:
            self.rival_wins -= 1
            write(Table.open(self.root), make_rows([100 + self.rival_wins]))
        return super().try_create_atomic(path, data, precondition)


def _losing_to_rival(table, table_path, rival_wins):
    """Row 1 committed; then a table whose first `rival_wins` snapshot creates each lose to
    another writer, and the pending commit messages of row 2."""
    write(table, make_rows([1]))
    t = Table(FileStore.open(str(table_path), io=_RivalWinsFirst(str(table_path), rival_wins)))
    w = t.new_writer()
    w.write_arrow(make_rows([2]))
    return t, w.prepare_commit()


def test_races_lost_to_other_writers_do_not_use_up_max_retries(table, table_path):
    # commit.max-retries bounds attempts after which the table did not move; a race lost to
    # another writer's snapshot is progress, so 5 lost races with max-retries = 2 still land.
    t, msgs = _losing_to_rival(table, table_path, 5)
    with t.new_commit(options={"commit.max-retries": "2", "commit.min-retry-wait": "1 ms",
                               "commit.max-retry-wait": "2 ms"}) as c:
        sid = c.commit(msgs)
        assert c.last_result.attempts == 6
    assert sid == 7 and snapshot_ids(table_path) == list(range(1, 8))
    assert sorted(r["id"] for r in rows(pp_read(table_path))) == [1, 2, 100, 101, 102, 103,
                                                                  104]


class _PublishFailsWhileRivalsCommit(_RivalWinsFirst):
    """Before each of our snapshot creates another writer commits, and then our create fails
    with an I/O error without writing anything."""

    def try_create_atomic(self, path, data, precondition=None):
        if "/snapshot/snapshot-" in path:
            write(Table.open(self.root), make_rows([100 + self.rival_wins]))
            self.rival_wins += 1
            raise OSError("injected: the store refused the request")
        return super().try_create_atomic(path, data, precondition)


def test_failing_publishes_count_even_while_other_writers_move_the_table(table, table_path):
    # Only races are free: a publish that keeps failing with I/O errors uses up max-retries
    # even though the table moves (otherwise a writer without permission on a busy table
    # would retry forever).
    write(table, make_rows([1]))
    t = Table(FileStore.open(str(table_path),
                             io=_PublishFailsWhileRivalsCommit(str(table_path), 0)))
    w = t.new_writer()
    w.write_arrow(make_rows([2]))
    with t.new_commit(options={"commit.max-retries": "2", "commit.min-retry-wait": "1 ms",
                               "commit.max-retry-wait": "2 ms", "commit.timeout": "20 s"}) as c:
        with pytest.raises(CommitFailedError, match=r"failed after 3 attempt\(s\).*injected"):
            c.commit(w.prepare_commit())
    assert 2 not in [r["id"] for r in rows(pp_read(table_path))]
    assert len(snapshot_ids(table_path)) == 4   # ours never published; 3 rivals did


def test_a_lost_race_rewrites_only_the_base_list(table, table_path):
    # The delta manifests and list depend only on the commit's entries: the attempt that
    # lands publishes the ones its first attempt wrote, and nothing is left behind.
    t, msgs = _losing_to_rival(table, table_path, 3)
    with t.new_commit(options={"commit.min-retry-wait": "1 ms",
                               "commit.max-retry-wait": "2 ms"}) as c:
        sid = c.commit(msgs)
        assert c.last_result.attempts == 4
    ours = t.snapshot(sid)
    attempt = lambda name: name.rsplit("-", 1)[0]  # manifest-list-<attempt uuid>-<n>
    assert attempt(ours.delta_manifest_list) != attempt(ours.base_manifest_list)
    delta_manifests = [m.file_name for m in t.store.manifests.read_list(ours.delta_manifest_list)]
    assert [attempt(m)[len("manifest-"):] for m in delta_manifests] == \
        [attempt(ours.delta_manifest_list)[len("manifest-list-"):]]
    on_disk = {str(table_path / "manifest" / n) for n in os.listdir(table_path / "manifest")}
    assert on_disk == {p for p in referenced_files(t) if "/manifest/" in p}
    assert sorted(r["id"] for r in rows(pp_read(table_path))) == [1, 2, 100, 101, 102]


def test_timeout_bounds_races_lost_to_other_writers(table, table_path):
    t, msgs = _losing_to_rival(table, table_path, 1000)
    with t.new_commit(options={"commit.timeout": "300 ms", "commit.min-retry-wait": "1 ms",
                               "commit.max-retry-wait": "5 ms"}) as c:
        with pytest.raises(CommitFailedError, match=r"commit.timeout = 300 ms\): snapshot \d+ "
                                                    r"was published by another writer first"):
            c.commit(msgs)
    assert 2 not in [r["id"] for r in rows(pp_read(table_path))]


def test_filter_and_commit_recommits_only_what_is_missing(table, table_path):
    batches = {i: None for i in (1, 2, 3)}
    for i in batches:
        w = table.new_writer()
        w.write_arrow(make_rows([i]))
        batches[i] = w.prepare_commit()
    with table.new_commit(commit_user="job-1") as c:
        c.commit(batches[1], 1)
        c.commit(batches[2], 2)
    # A restarted writer with the same commit user:
    with table.new_commit(commit_user="job-1") as c:
        assert c.filter_committed([1, 2, 3]) == [3]
        assert c.filter_and_commit(batches) == [3]
        assert c.filter_and_commit(batches) == []
    assert [r["id"] for r in rows(pp_read(table_path))] == [1, 2, 3]


def test_filter_and_commit_refuses_vanished_files(table, table_path):
    w = table.new_writer()
    w.write_arrow(make_rows([1]))
    msgs = w.prepare_commit()
    gone = [p for p in files_under(table_path) if p.endswith(".parquet")][0]
    os.unlink(table_path / gone)
    with table.new_commit(commit_user="job-1") as c, pytest.raises(
            CommitConflictError, match=os.path.basename(gone)):
        c.filter_and_commit({5: msgs})
    assert not (table_path / "snapshot").exists() or snapshot_ids(table_path) == []


def test_recommit_of_a_live_file_is_refused(table, table_path):
    w = table.new_writer()
    w.write_arrow(make_rows([1]))
    msgs = w.prepare_commit()
    with table.new_commit(commit_user="a") as c:
        c.commit(msgs, 1)
    # (User b has no snapshot: whatever the table names is refused before any attempt.)
    with table.new_commit(commit_user="b") as c, pytest.raises(
            CommitConflictError, match=r"commit user 'b' has no snapshot in .* and data file "
                                       r".* is named by a retained snapshot"):
        c.filter_and_commit({1: msgs})


def test_manifest_merging_keeps_base_lists_small(table_path):
    t = Table.create(str(table_path), SCHEMA, ["dt", "hr"], {"manifest.merge-min-count": "5"})
    for i in range(40):
        write(t, make_rows([i], hr=i % 4))
    latest = t.latest_snapshot()
    base = t.store.manifests.read_list(latest.base_manifest_list)
    assert len(base) <= 5
    assert [r["id"] for r in rows(pp_read(table_path))] == list(range(40))
    assert pp_live_file_names(table_path, 17) == sorted(f.file_name for f in t.live_files(17))
    # Every lost-race-free commit wrote exactly 2 lists; nothing else stays behind.
    lists = [n for n in os.listdir(table_path / "manifest") if n.startswith("manifest-list-")]
    assert len(lists) == 80


def test_full_manifest_compaction_drops_cancelled_entries(table_path):
    t = Table.create(str(table_path), SCHEMA, ["dt", "hr"], {
        "manifest.full-compaction-threshold-size": "1 b", "manifest.target-file-size": "1 kb"})
    for i in range(6):
        write(t, make_rows([i], hr=i % 2))
    with t.new_commit() as c:
        c.drop_partitions([{"hr": 0}])
    write(t, make_rows([100], hr=3))
    latest = t.latest_snapshot()
    base = t.store.manifests.read_list(latest.base_manifest_list)
    assert sum(m.num_deleted_files for m in base) == 0
    assert [r["id"] for r in rows(pp_read(table_path))] == [1, 3, 5, 100]


class _ExpiresBaseRightAfterTheCheck(LocalFileIO):
    """Storage on which a concurrent expiration removes the commit's base snapshot between
    try_commit's base check and the link (the narrowest window left)."""

    def try_create_atomic(self, path, data, precondition=None):
        def check_then_expire():
            ok = precondition()
            base = os.path.join(os.path.dirname(path), "snapshot-3")
            if ok and "/snapshot/snapshot-4" in path and os.path.exists(base):
                os.unlink(base)
            return ok
        return super().try_create_atomic(path, data,
                                         check_then_expire if precondition else None)


def _stale_commit_of_snapshot_4(table_path):
    store = FileStore.open(str(table_path), io=_ExpiresBaseRightAfterTheCheck(str(table_path)))
    stale = store.snapshots.snapshot(3).with_(id=4)
    return store.snapshots, stale, built_on_check(store, stale)


def test_a_snapshot_id_published_and_expired_meanwhile_is_not_created_again(table, table_path):
    for i in range(1, 4):
        write(table, make_rows([i]))
    sm, stale, built_on = _stale_commit_of_snapshot_4(table_path)
    # While that commit was descheduled: others published 4, 5, 6 and expired up to 4.
    for i in range(4, 7):
        write(table, make_rows([i]))
    for sid in (1, 2, 4):
        os.unlink(table_path / "snapshot" / f"snapshot-{sid}")
    assert sm.try_commit(stale, base_id=3, built_on=built_on) is False
    assert snapshot_ids(table_path) == [5, 6]     # the copy of 4 was removed again
    assert sorted(Table.open(str(table_path)).read_arrow().column("id").to_pylist()) == \
        list(range(1, 7))
    assert sorted(pp_read(table_path).column("id").to_pylist()) == list(range(1, 7))


def test_a_base_expired_right_after_a_legitimate_publish_keeps_it(table, table_path):
    for i in range(1, 4):
        write(table, make_rows([i]))
    sm, snap, built_on = _stale_commit_of_snapshot_4(table_path)
    assert sm.try_commit(snap, base_id=3, built_on=built_on) is True
    assert snapshot_ids(table_path) == [1, 2, 4]
    assert sorted(pp_read(table_path).column("id").to_pylist()) == [1, 2, 3]


class _RecreatedIdThatCannotBeRemoved(LocalFileIO):
    """While snapshot 4 is being published on top of 3, others publish 4 and 5 and expire up
    to 4 (so our 4 is a re-created id), and removing our copy fails."""

    def try_create_atomic(self, path, data, precondition=None):
        if not path.endswith("/snapshot/snapshot-4") or precondition is None:
            return super().try_create_atomic(path, data, precondition)

        def check_then_others_move_on():
            ok = precondition()
            snapshots = FileStore.open(self.root).snapshots
            newer = snapshots.snapshot(3).with_(id=5)
            LocalFileIO.try_create_atomic(self, snapshots.snapshot_path(5), newer.to_json())
            os.unlink(snapshots.snapshot_path(3))
            time.sleep(0.05)                      # file times tick coarsely
            return ok
        return super().try_create_atomic(path, data, check_then_others_move_on)

    def _unlink(self, norm):
        if norm.endswith("/snapshot/snapshot-4"):
            return False
        return super()._unlink(norm)


def test_a_publish_verdict_is_not_mistaken_for_an_unknown_outcome(table, table_path):
    # Regression: every exception of the publish step counted as "outcome unknown"; the
    # retry then found the re-created snapshot 4 by user and identifier and reported success.
    for i in range(1, 4):
        write(table, make_rows([i]))
    t = Table(FileStore.open(str(table_path), io=_RecreatedIdThatCannotBeRemoved(
        str(table_path))))
    w = t.new_writer()
    w.write_arrow(make_rows([4]))
    with t.new_commit(commit_user="job") as c:
        with pytest.raises(CommitFailedError, match="re-creates a snapshot id"):
            c.commit(w.prepare_commit(), 7)
        assert c.last_result is None or c.last_result.snapshot_id != 4


def test_abort_never_deletes_files_of_a_published_snapshot(table, table_path):
    # Regression: abort(messages) deleted the files of messages that had been committed.
    w = table.new_writer()
    w.write_arrow(make_rows([1, 2]))
    committed = w.prepare_commit()
    w.write_arrow(make_rows([3]))
    uncommitted = w.prepare_commit()
    with table.new_commit() as c:
        c.commit(committed)
        assert c.abort(committed + uncommitted) == 1
    assert sorted(table.read_arrow().column("id").to_pylist()) == [1, 2]
    assert sorted(pp_read(table_path).column("id").to_pylist()) == [1, 2]
    assert not any(os.path.exists(p) for p in
                   [table.store.io.join(table.store.bucket_dir(m.partition, 0), f.file_name)
                    for m in uncommitted for f in m.new_files])
