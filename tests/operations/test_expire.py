"""Snapshot expiration, step by step, on real tables read back by pypaimon."""
import dataclasses
import os
import threading
import time

import pytest

from conftest import D1, D2, SCHEMA, files_under, make_rows, write
from tablefiles import tag_as_another_engine
from invariants import assert_intact, referenced_files

from paimon_commit import CommitMessage, OptionError, Table
from paimon_commit.operations.expire import ExpireConfig, ExpireSnapshots
from paimon_commit.store import FileStore
from paimon_commit.tags import ConsumerManager

from faults.fault_io import Crash, FaultIO

FAR_FUTURE = lambda: time.time() + 10 * 365 * 86400  # noqa: E731  everything is "old"


def history(table, n, drop_every=0):
    """n commits: one row each into hr = i % 2, except that every `drop_every`-th commit
    drops hr=0 instead. Returns {snapshot id: live ids}; snapshot i is commit i."""
    live, expected = {}, {}
    for i in range(1, n + 1):
        if drop_every and i % drop_every == 0:
            with table.new_commit() as c:
                sid = c.drop_partitions([{"hr": 0}])
            live = {k: v for k, v in live.items() if v != 0}
        else:
            sid = write(table, make_rows([i], hr=i % 2))
            live[i] = i % 2
        assert sid == i
        expected[sid] = list(live)
    return expected


def expire(table, clock=FAR_FUTURE, dry_run=False, **cfg):
    cfg.setdefault("time_retained_ms", 0)
    cfg.setdefault("max_deletes", 1000)
    return ExpireSnapshots(table.store, ExpireConfig(**cfg), clock=clock).expire(dry_run=dry_run)


def test_retain_min_keeps_the_newest(table, table_path):
    expected = history(table, 20, drop_every=4)
    r = expire(table, retain_min=5)
    assert r.expired_snapshots == 15 and r.expired_ids == list(range(1, 16))
    assert [s.id for s in table.snapshots()] == [16, 17, 18, 19, 20]
    assert (table_path / "snapshot" / "EARLIEST").read_text() == "16"
    assert r.by_kind["data"]["files"] > 0   # files dropped before snapshot 16 are gone
    assert_intact(table_path, expected)


def test_limit_caps_each_run(table, table_path):
    history(table, 12)
    assert expire(table, retain_min=1, max_deletes=4).expired_ids == [1, 2, 3, 4]
    assert expire(table, retain_min=1, max_deletes=4).expired_ids == [5, 6, 7, 8]
    assert expire(table, retain_min=1, max_deletes=0).expired_snapshots == 0
    assert_intact(table_path)


def test_retain_max_expires_regardless_of_age(table, table_path):
    history(table, 10)
    r = expire(table, clock=time.time, retain_min=1, retain_max=3, time_retained_ms=3_600_000)
    assert r.expired_ids == list(range(1, 8))
    assert_intact(table_path)


def test_time_retained_is_measured_on_the_successor(table, table_path):
    for i in range(1, 11):
        write(table, make_rows([i]))
        time.sleep(0.003)
    t8 = table.snapshot(8).time_millis
    # Snapshot i may go once snapshot i+1 was committed before the cutoff.
    r = expire(table, clock=time.time, retain_min=1, older_than_ms=t8)
    assert r.expired_ids == [1, 2, 3, 4, 5, 6]
    assert_intact(table_path)


def test_time_retained_zero_ignores_successor_timestamps(table, table_path):
    import json
    expected = history(table, 4)
    # A writer whose clock runs an hour ahead stamped snapshot 4.
    p = table_path / "snapshot" / "snapshot-4"
    snap = json.loads(p.read_text())
    snap["timeMillis"] = int(time.time() * 1000) + 3_600_000
    p.write_text(json.dumps(snap))
    fresh = Table.open(str(table_path))
    a_minute_on = lambda: time.time() + 60  # noqa: E731
    assert expire(fresh, clock=a_minute_on, retain_min=1, time_retained_ms=1).expired_ids == [1, 2]
    assert expire(fresh, clock=a_minute_on, retain_min=1, time_retained_ms=0).expired_ids == [3]
    assert_intact(table_path, {4: expected[4]})


def test_young_table_expires_nothing_by_default(table, table_path):
    history(table, 15)
    r = ExpireSnapshots(table.store).expire()    # defaults: min 10, 1 h
    assert r.expired_snapshots == 0
    assert len(table.snapshots()) == 15


def test_delete_then_add_in_one_delta_keeps_the_file(table, table_path):
    write(table, make_rows([1]))
    live = table.live_entries()[0]
    same = CommitMessage((D1, 1), live.partition, 0, -1, (live.file,), (live.file,))
    # (Refused by the repeat screen first now: this process committed the file as another
    # commit user, and it is live.)
    with table.new_commit() as c, pytest.raises(
            Exception, match="deleted and added again|already live in snapshot 1"):
        c.commit([same])
    # An "upgrade": the same file deleted and re-added at another level by one commit.
    upgraded = dataclasses.replace(live.file, level=1)
    msg = CommitMessage((D1, 1), live.partition, 0, -1, (upgraded,), (live.file,))
    with table.new_commit() as c:
        c.commit([msg])
    write(table, make_rows([2]))
    expire(table, retain_min=1)
    assert os.path.exists(table.store.data_file_path(live))
    assert_intact(table_path, {3: [1, 2]})


def test_re_added_file_survives_expiration_of_its_delete(table, table_path):
    w = table.new_writer()
    w.write_arrow(make_rows([1]))
    msgs = w.prepare_commit()
    with table.new_commit() as c:
        c.commit(msgs)                       # 1: ADD f
        c.drop_partitions([{"hr": 1}])       # 2: DELETE f
    # 3: ADD f again, by another process (this one refuses a file it committed as another
    # commit user and that is no longer live: it cannot tell a drop from a compaction).
    from paimon_commit.operations import commit_record
    commit_record.RECORD, record = commit_record.CommitRecord(), commit_record.RECORD
    try:
        with table.new_commit(commit_user="recovery") as c:
            # (With the conflict check, as a re-commit does: it compacts the old ADD/DELETE
            # pair away so that pypaimon sees the file too.)
            c._commit.commit(msgs, 1, check_append_conflicts=True)
    finally:
        commit_record.RECORD = record
    # The re-commit compacted the old ADD/DELETE pair away, so pypaimon sees f too.
    assert_intact(table_path, {1: [1], 2: [], 3: [1]})
    write(table, make_rows([2], hr=2))       # 4
    r = expire(table, retain_min=1)
    assert r.expired_ids == [1, 2, 3]
    assert r.by_kind.get("data") is None
    assert_intact(table_path, {4: [1, 2]})


def test_tag_in_the_middle_protects_its_files_until_deleted(table, table_path):
    expected = history(table, 12, drop_every=3)
    table.create_tag("t5", 5)
    tag_rows = expected[5]
    r = expire(table, retain_min=2)
    assert r.expired_ids == list(range(1, 11))
    assert_intact(table_path, expected, {"t5": tag_rows})
    before = set(files_under(table_path))
    d = table.delete_tag("t5")
    assert d.deleted_files > 0
    gone = before - set(files_under(table_path))
    assert any(p.endswith(".parquet") for p in gone)
    assert_intact(table_path, expected)
    assert not any(os.path.join(str(table_path), p) in referenced_files(table) for p in gone)


def test_interrupted_tag_deletion_is_finished_by_running_it_again(table, table_path):
    expected = history(table, 12, drop_every=3)
    table.create_tag("t5", 5)
    expire(table, retain_min=2)
    only_tag = {f.path for f in table.live_files(tag="t5")} - {
        f.path for sid in (11, 12) for f in table.live_files(sid)}
    assert only_tag   # history() dropped hr=0 at 6 and 9: files only the tag still keeps
    # Stop the process at the second delete: the tag file is gone, one of its files is not.
    io = FaultIO(str(table_path), kind="delete", at=2, mode="crash")
    with pytest.raises(Crash):
        Table(FileStore.open(str(table_path), io=io)).delete_tag("t5")
    table = Table.open(str(table_path))
    assert any(os.path.exists(p) for p in only_tag)
    assert table.tags() == [] and os.listdir(table_path / "tag") == []
    assert table.unfinished_tag_deletions() == ["t5"]
    with pytest.raises(ValueError, match="deletion of a tag with this name is unfinished"):
        table.create_tag("t5")
    r = table.delete_tag("t5")                      # the rerun finishes from the marker
    assert r.snapshot_id == 5 and r.skipped == []
    assert not any(os.path.exists(p) for p in only_tag)
    assert table.unfinished_tag_deletions() == []
    assert_intact(table_path, {k: v for k, v in expected.items() if k >= 11})
    with pytest.raises(ValueError, match="does not exist"):
        table.delete_tag("t5")
    table.create_tag("t5")


def test_a_run_stops_where_it_planned_to_while_writers_go_on(table, table_path, monkeypatch):
    # A run expires what was expirable when it started; snapshots committed meanwhile are
    # the next run's. Chasing a busy stream chunk after chunk, a run held the maintenance
    # lease for as long as the writers wrote (the object-store soak: over 4 minutes, while
    # an orphan cleanup waited in vain for it).
    import paimon_commit.operations.expire as expire_mod
    monkeypatch.setattr(expire_mod, "FIRST_CHUNK", 4)
    monkeypatch.setattr(expire_mod, "FIRST_CHUNK_FILES", 0)   # (a fixed first chunk)
    history(table, 12)
    execute, commits = ExpireSnapshots._execute, []
    writer = Table.open(str(table_path), options={"write-only": "true"})

    def execute_while_a_writer_commits(self, plan):
        done = execute(self, plan)
        for _ in range(3):   # a writer commits while the run goes on
            commits.append(write(writer, make_rows([100 + len(commits)], hr=1)))
        return done
    monkeypatch.setattr(ExpireSnapshots, "_execute", execute_while_a_writer_commits)
    r = expire(table, retain_min=2)
    assert r.complete
    assert r.expired_ids == list(range(1, 11))   # 11 = 12 - 2 + 1 was the first to keep
    # (more became expirable meanwhile: with retain_min 2, up to the latest - 1)
    assert commits and max(commits) - 2 + 1 > 11
    monkeypatch.undo()
    assert [s.id for s in table.snapshots()][0] == 11
    assert expire(table, retain_min=2).expired_ids == list(range(11, max(commits) - 1))
    assert_intact(table_path)


def test_tag_created_while_expiration_plans_stops_it(table, table_path, monkeypatch):
    expected = history(table, 9, drop_every=3)
    plan = ExpireSnapshots.plan

    def plan_then_tag(self):
        p = plan(self)
        tag_as_another_engine(table, "late", 4)   # another client, after the tags were listed
        return p

    monkeypatch.setattr(ExpireSnapshots, "plan", plan_then_tag)
    before = set(files_under(table_path))
    r = expire(table, retain_min=1)
    assert r.expired_snapshots == 0 and r.deleted_files == 0
    assert r.skipped == ["the table changed while planning (tag late was created on "
                         "snapshot 4); nothing is deleted, the next run plans again"]
    assert set(files_under(table_path)) == before | {"tag/tag-late"}
    monkeypatch.undo()
    assert expire(table, retain_min=1).expired_ids == list(range(1, 9))
    assert_intact(table_path, {9: expected[9]}, {"late": expected[4]})


def test_tag_time_retained_and_tags_listing(table, table_path):
    history(table, 3)
    t = table.create_tag("daily", time_retained="7 d")
    assert t.time_retained_ms == 7 * 86_400_000
    assert [x.name for x in table.tags()] == ["daily"]
    assert table.tags()[0].create_time is not None
    with pytest.raises(ValueError, match="already exists"):
        table.create_tag("daily")
    with pytest.raises(ValueError, match="does not exist"):
        table.create_tag("x", 99)
    with pytest.raises(ValueError, match="invalid tag name"):
        table.create_tag("../evil")


def test_consumer_caps_expiration_and_dead_consumers_can_be_removed(table, table_path):
    history(table, 12)
    cm = ConsumerManager(table.store.io, table.store.root)
    cm.write("reader-1", 5)
    r = expire(table, retain_min=1)
    assert r.expired_ids == [1, 2, 3, 4]
    old = time.time() - 7200
    os.utime(table_path / "consumer" / "consumer-reader-1", (old, old))
    assert cm.expire(int((time.time() - 3600) * 1000)) == ["reader-1"]
    assert expire(table, retain_min=1).expired_ids == list(range(5, 12))
    assert_intact(table_path)


def test_unreadable_delta_skips_only_what_it_could_protect(table, table_path):
    expected = history(table, 9, drop_every=3)
    s4 = table.snapshot(4)
    os.unlink(table_path / "manifest" / s4.delta_manifest_list)
    fresh = Table.open(str(table_path))
    r = expire(fresh, retain_min=2)
    assert r.expired_ids == list(range(1, 8))
    assert any("delta of snapshot 4" in s for s in r.skipped)
    # Files deleted at snapshot 3 (before the unreadable delta) are left; later ones go.
    assert_intact(table_path, {k: v for k, v in expected.items() if k >= 8})


def test_unreadable_tag_aborts_before_deleting(table, table_path):
    history(table, 8, drop_every=3)
    table.create_tag("bad", 3)
    (table_path / "tag" / "tag-bad").write_text("{ not json")
    before = files_under(table_path)
    with pytest.raises(Exception, match="tag-bad"):
        expire(table, retain_min=1)
    assert files_under(table_path) == before


def test_gaps_and_missing_end_are_handled(table, table_path):
    history(table, 10)
    os.unlink(table_path / "snapshot" / "snapshot-6")   # a hole where `end` will fall
    r = expire(table, retain_min=5)                     # end = 6 -> 7 (same expiring set)
    assert r.expired_ids == [1, 2, 3, 4, 5]
    assert [s.id for s in table.snapshots()] == [7, 8, 9, 10]
    assert (table_path / "snapshot" / "EARLIEST").read_text() == "7"
    assert_intact(table_path)


def test_dry_run_plans_the_same_and_deletes_nothing(table, table_path):
    history(table, 12, drop_every=3)
    before = files_under(table_path)
    dry = expire(table, retain_min=3, dry_run=True)
    assert files_under(table_path) == before
    real = expire(table, retain_min=3)
    assert (dry.expired_ids, dry.deleted_files, dry.deleted_bytes) == \
        (real.expired_ids, real.deleted_files, real.deleted_bytes)
    assert sorted(dry.deleted_paths) == sorted(real.deleted_paths)
    assert set(before) - set(files_under(table_path)) == \
        {os.path.relpath(p, table_path) for p in real.deleted_paths}


def test_two_expirers_at_once(table, table_path):
    expected = history(table, 30, drop_every=5)
    errors = []

    def run():
        try:
            expire(Table.open(str(table_path)), retain_min=4)
        except Exception as e:  # pragma: no cover - the assertion reports it
            errors.append(e)
    threads = [threading.Thread(target=run) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert [s.id for s in table.snapshots()] == [27, 28, 29, 30]
    assert_intact(table_path, expected)


def test_clean_empty_directories(table, table_path):
    write(table, make_rows([1], dt=D2, hr=7))
    with table.new_commit() as c:
        c.drop_partitions([{"dt": D2}])
    write(table, make_rows([2]))
    expire(table, retain_min=1, clean_empty_directories=True)
    assert not (table_path / "dt=19724").exists()
    assert (table_path / "dt=19723" / "hr=1" / "bucket-0").is_dir()
    assert_intact(table_path, {3: [2]})


@pytest.mark.parametrize("cfg, message", [
    (dict(retain_min=0), "'snapshot.num-retained.min' = 0: must be >= 1"),
    (dict(retain_min=5, retain_max=2), "'snapshot.num-retained.max' = 2 must be >="),
    (dict(max_deletes=-1), "'snapshot.expire.limit' = -1: must be >= 0"),
    (dict(time_retained_ms=-5), "'snapshot.time-retained' = -5"),
])
def test_config_is_validated_before_io(cfg, message):
    with pytest.raises(OptionError, match=message.replace("(", r"\(")):
        ExpireConfig(**cfg)


def test_expire_pypaimon_written_table(tmp_path):
    from oracle import pp_create, pp_drop, pp_write
    path = tmp_path / "wh" / "db.db" / "pp"
    path.parent.mkdir(parents=True)
    pp_create(path, SCHEMA, ["dt", "hr"])
    for i in range(6):
        pp_write(path, make_rows([i], hr=i % 2))
    pp_drop(path, [{"dt": D1, "hr": 0}])
    pp_write(path, make_rows([100], hr=5))
    t = Table.open(str(path))
    r = expire(t, retain_min=2)
    assert r.expired_ids == [1, 2, 3, 4, 5, 6]
    assert r.by_kind["data"]["files"] == 3          # the hr=0 files dropped at snapshot 7
    assert_intact(path, {8: [1, 3, 5, 100]})
    pp_write(path, make_rows([101]))                # pypaimon keeps committing afterwards
    assert_intact(path)


def test_one_expirer_across_runs_and_a_rollback_that_reuses_ids(table, table_path):
    # TableCommit keeps one ExpireSnapshots and what it read; a rollback then re-creates
    # snapshot ids with other contents, which the next run must read afresh.
    ex = ExpireSnapshots(table.store, ExpireConfig(retain_min=4, time_retained_ms=0,
                                                   max_deletes=100), clock=FAR_FUTURE)
    for i in range(1, 9):
        write(table, make_rows([i], hr=i % 2))
    assert ex.expire().expired_ids == [1, 2, 3, 4]
    hr0 = [f.path for f in table.live_files(6) if "/hr=0/" in f.path]
    table.rollback_to(6)                            # 7 and 8 go
    with table.new_commit() as c:
        assert c.drop_partitions([{"hr": 0}]) == 7  # a new 7: deletes the hr=0 files
    for i in (20, 21):
        write(table, make_rows([i], hr=1))          # new 8 and 9
    assert ex.expire().expired_ids == [5]
    with table.new_commit() as c:
        c.drop_partitions([{"hr": 1}])              # 10
    write(table, make_rows([30], hr=2))             # 11
    assert ex.expire().expired_ids == [6, 7]
    assert_intact(table_path, {8: [1, 3, 5, 20], 9: [1, 3, 5, 20, 21], 10: [], 11: [30]})
    # The new 7's deletes were acted on (an outdated read of 7 would have kept them).
    assert hr0 and not any(os.path.exists(p) for p in hr0)


def test_a_commit_objects_expirer_cache_stays_bounded_when_another_job_expires(
        table, table_path):
    # Audit issue26a F2: a commit object whose own retention expires nothing never lists
    # snapshot/, and its runs read the newest snapshots; with another job expiring the
    # table, every snapshot it had read stayed cached (297 after 300 commits).
    other = ExpireSnapshots(Table.open(str(table_path)).store,
                            ExpireConfig(retain_min=3, retain_max=3, time_retained_ms=0,
                                         max_deletes=1000))
    with table.new_commit(options={"write-only": "false", "snapshot.num-retained.min": "10",
                                   "snapshot.time-retained": "1 h"}) as c:
        for i in range(60):
            write(table, make_rows([i]), commit=c)
            other.expire()
        assert len(table.snapshots()) == 3
        assert len(c._expirer._raw_memo) <= 5, sorted(c._expirer._raw_memo)
