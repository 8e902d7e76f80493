"""Tag lifecycle: automatic creation (process-time, watermark, batch), tag.num-retained-max,
retention expiry, explicit expire_tags and the expire-tags CLI."""
import datetime
import json
import os
import time
import types

import pytest

from conftest import SCHEMA, files_under, make_rows
from tablefiles import tag_as_another_engine
from invariants import assert_intact
from oracle import pp_read, rows

from paimon_commit import Table
from paimon_commit.errors import OptionError
from paimon_commit.format.snapshot import Tag
from paimon_commit.operations import commit as commit_mod
from paimon_commit.operations.tag_lifecycle import TagPeriodHandler, expire_tags
from paimon_commit.table_commit import TableCommit
from paimon_commit.tags import TagManager


class Clock:
    """A fake wall clock (seconds), also used as the commit time of snapshots."""

    def __init__(self, when: datetime.datetime):
        self.now = when.timestamp()

    def __call__(self) -> float:
        return self.now

    def set(self, when: datetime.datetime) -> None:
        self.now = when.timestamp()


@pytest.fixture
def clock(monkeypatch):
    c = Clock(datetime.datetime(2024, 1, 1, 10, 0))
    shim = types.SimpleNamespace(time=c, perf_counter=time.perf_counter, sleep=time.sleep,
                                 monotonic=time.monotonic)
    monkeypatch.setattr(commit_mod, "time", shim)   # snapshots get timeMillis from the clock
    return c


def commit_rows(table, commit, ids, identifier=None, hr=1):
    w = table.new_writer()
    w.write_arrow(make_rows(ids, hr=hr))
    return commit.commit(w.prepare_commit(), identifier)


def tag_ids(table):
    return {t.name: t.id for t in table.tags()}


def test_period_names_and_normalisation():
    d = TagPeriodHandler("daily")
    t = datetime.datetime(2024, 1, 2, 3, 4)
    assert d.time_to_tag(d.normalize_to_previous_tag(t)) == "2024-01-01"
    assert d.is_auto_tag("2024-01-01") and d.is_auto_tag("2024-01-01 12")
    assert not d.is_auto_tag("release-1") and not d.is_auto_tag("2024-13-01")
    h = TagPeriodHandler("hourly", "without_dashes")
    assert h.time_to_tag(h.normalize_to_previous_tag(t)) == "20240102 02"
    assert h.tag_to_time("20240102 02") == datetime.datetime(2024, 1, 2, 2)
    two = TagPeriodHandler("two-hours")
    assert two.time_to_tag(two.normalize_to_previous_tag(t)) == "2024-01-02 00"
    assert two.time_to_tag(two.normalize_to_previous_tag(datetime.datetime(2024, 1, 2, 5))) \
        == "2024-01-02 02"


def test_process_time_daily_tags_with_delay(table_path, clock):
    t = Table.create(str(table_path), SCHEMA, ["dt", "hr"],
                     {"tag.automatic-creation": "process-time", "tag.creation-delay": "1 h"})
    with TableCommit(t.store, "job", clock=clock) as c:
        commit_rows(t, c, [1], 1)                      # first snapshot: tag of the day before
        assert tag_ids(t) == {"2023-12-31": 1}
        clock.set(datetime.datetime(2024, 1, 1, 23, 0))
        commit_rows(t, c, [2], 2)
        clock.set(datetime.datetime(2024, 1, 2, 0, 30))   # period over, delay not yet
        commit_rows(t, c, [3], 3)
        assert tag_ids(t) == {"2023-12-31": 1}
        clock.set(datetime.datetime(2024, 1, 2, 1, 30))
        commit_rows(t, c, [4], 4)
        assert tag_ids(t) == {"2023-12-31": 1, "2024-01-01": 4}
    # A new commit object picks up where the tags on disk left off.
    clock.set(datetime.datetime(2024, 1, 3, 2, 0))
    with TableCommit(t.store, "job", clock=clock) as c:
        commit_rows(t, c, [5], 5)
    assert tag_ids(t) == {"2023-12-31": 1, "2024-01-01": 4, "2024-01-02": 5}
    # Plain snapshot JSON without retention (readable by Paimon <= 0.7 as well).
    raw = json.loads((table_path / "tag" / "tag-2024-01-01").read_text())
    assert raw["id"] == 4 and "tagCreateTime" not in raw
    assert_intact(table_path, expected_by_tag={"2024-01-01": [1, 2, 3, 4]})


def test_num_retained_max_deletes_oldest_auto_tags_and_their_files(table_path, clock):
    t = Table.create(str(table_path), SCHEMA, ["dt", "hr"],
                     {"tag.automatic-creation": "process-time", "tag.num-retained-max": "2",
                      "snapshot.num-retained.min": "1", "snapshot.time-retained": "0 ms",
                      "snapshot.expire.limit": "100"})
    with TableCommit(t.store, "job", clock=clock) as c:
        commit_rows(t, c, [1], 1, hr=1)
        t.create_tag("release")              # a user's tag: never counted
        for day in range(2, 6):
            clock.set(datetime.datetime(2024, 1, day, 1, 0))
            # each day replaces the partition: the old file lives on only in tags
            w = t.new_writer()
            w.write_arrow(make_rows([day], hr=1))
            c.overwrite(w.prepare_commit(), commit_identifier=day)
    assert sorted(tag_ids(t)) == ["2024-01-03", "2024-01-04", "release"]
    # Days 2 and 3 were pinned only by the deleted tags 2024-01-01 and -02: gone from disk.
    names = [n for n in files_under(table_path) if n.endswith(".parquet")]
    assert len(names) == 3   # release (day 1), tag 01-03 (day 4), tag 01-04 = the latest
    got = assert_intact(table_path, expected_by_tag={"release": [1], "2024-01-03": [4],
                                                     "2024-01-04": [5]})
    assert [r["id"] for r in rows(pp_read(table_path))] == [5]
    assert got.latest_snapshot().id == 5


def test_default_time_retained_expires_auto_tags(table_path, clock):
    t = Table.create(str(table_path), SCHEMA, ["dt", "hr"],
                     {"tag.automatic-creation": "process-time",
                      "tag.default-time-retained": "2 d"})
    with TableCommit(t.store, "job", clock=clock) as c:
        commit_rows(t, c, [1], 1)
        raw = json.loads((table_path / "tag" / "tag-2023-12-31").read_text())
        assert raw["tagCreateTime"][:4] == [2024, 1, 1, 10]
        assert float(raw["tagTimeRetained"]) == 172800.0
        clock.set(datetime.datetime(2024, 1, 3, 9, 0))     # 47 h later: kept
        commit_rows(t, c, [2], 2)
        assert "2023-12-31" in tag_ids(t)
        clock.set(datetime.datetime(2024, 1, 3, 11, 0))    # 49 h: expired
        commit_rows(t, c, [3], 3)
        assert "2023-12-31" not in tag_ids(t)
        assert "2024-01-02" in tag_ids(t)
        assert c.last_maintenance.tags.expired == ["2023-12-31"]


def test_user_tag_retention_and_tag_without_retention(table_path, clock):
    t = Table.create(str(table_path), SCHEMA, ["dt", "hr"],
                     {"snapshot.num-retained.min": "1", "snapshot.time-retained": "0 ms"})
    with TableCommit(t.store, "job", clock=clock) as c:
        commit_rows(t, c, [1], 1)
        snap = t.latest_snapshot()
        tm = TagManager(t.store.io, t.store.root)
        tm.create(Tag("short", snap, datetime.datetime(2024, 1, 1, 10, 0), 3_600_000))
        t.create_tag("forever")                         # no retention
        w = t.new_writer()
        w.write_arrow(make_rows([2], hr=1))
        c.overwrite(w.prepare_commit(), commit_identifier=2)   # snapshot 1 expires
        assert [s.id for s in t.snapshots()] == [2]
        assert set(tag_ids(t)) == {"short", "forever"}
        clock.set(datetime.datetime(2030, 1, 1))
        commit_rows(t, c, [3], 3, hr=2)
    assert set(tag_ids(t)) == {"forever"}        # never expired automatically
    assert_intact(table_path, expected_by_tag={"forever": [1]})


def test_expired_tag_alone_pinning_files_deletes_them(table_path, clock):
    t = Table.create(str(table_path), SCHEMA, ["dt", "hr"],
                     {"snapshot.num-retained.min": "1", "snapshot.time-retained": "0 ms"})
    with TableCommit(t.store, "job", clock=clock) as c:
        commit_rows(t, c, [1], 1)
        tm = TagManager(t.store.io, t.store.root)
        tm.create(Tag("t1", t.latest_snapshot(), datetime.datetime(2024, 1, 1, 9), 60_000))
        before = [n for n in files_under(table_path) if n.endswith(".parquet")]
        w = t.new_writer()
        w.write_arrow(make_rows([2], hr=1))
        c.overwrite(w.prepare_commit(), commit_identifier=2)
        # tag expired at the same time: the overwritten file goes within this maintenance
        assert c.last_maintenance.tags.expired == ["t1"]
    after = [n for n in files_under(table_path) if n.endswith(".parquet")]
    assert not set(before) & set(after)
    assert not (table_path / ".tag-deletions" / "tag-t1").exists()
    assert [r["id"] for r in rows(pp_read(table_path))] == [2]


def test_watermark_mode(table_path, clock, monkeypatch):
    wm = {"value": None}
    orig = commit_mod.FileStoreCommit._write_snapshot_files

    def with_watermark(self, *a, **kw):
        return orig(self, *a, **kw).with_(watermark=wm["value"])
    monkeypatch.setattr(commit_mod.FileStoreCommit, "_write_snapshot_files", with_watermark)
    t = Table.create(str(table_path), SCHEMA, ["dt", "hr"],
                     {"tag.automatic-creation": "watermark", "tag.creation-period": "hourly"})
    utc = datetime.timezone.utc
    with TableCommit(t.store, "job", clock=clock) as c:
        commit_rows(t, c, [1], 1)                  # no watermark: skipped
        assert tag_ids(t) == {}
        wm["value"] = int(datetime.datetime(2024, 5, 1, 7, 10, tzinfo=utc).timestamp() * 1000)
        commit_rows(t, c, [2], 2)
        assert tag_ids(t) == {"2024-05-01 06": 2}
        wm["value"] = int(datetime.datetime(2024, 5, 1, 7, 50, tzinfo=utc).timestamp() * 1000)
        commit_rows(t, c, [3], 3)
        wm["value"] = int(datetime.datetime(2024, 5, 1, 8, 0, tzinfo=utc).timestamp() * 1000)
        commit_rows(t, c, [4], 4)
    assert tag_ids(t) == {"2024-05-01 06": 2, "2024-05-01 07": 4}
    assert_intact(table_path, expected_by_tag={"2024-05-01 07": [1, 2, 3, 4]})


def test_batch_mode_tags_each_batch_commit(table_path, clock):
    t = Table.create(str(table_path), SCHEMA, ["dt", "hr"],
                     {"tag.automatic-creation": "batch", "tag.num-retained-max": "2"})
    for day in (1, 1, 2, 3):
        clock.set(datetime.datetime(2024, 1, day, 12, 0))
        with TableCommit(t.store, "job", clock=clock) as c:
            commit_rows(t, c, [len(t.snapshots()) + 1])       # one-shot batch commit
    # Day 1 was tagged twice: the second replaced the first; then only 2 are kept.
    assert tag_ids(t) == {"batch-write-2024-01-02": 3, "batch-write-2024-01-03": 4}
    # Streaming commits (with an identifier) do not create batch tags.
    with TableCommit(t.store, "job", clock=clock) as c:
        commit_rows(t, c, [9], 9)
    assert len(t.tags()) == 2
    assert_intact(table_path, expected_by_tag={"batch-write-2024-01-02": [1, 2, 3]})


def test_explicit_expire_tags_older_than_and_dry_run(table_path, clock):
    t = Table.create(str(table_path), SCHEMA, ["dt", "hr"])
    with TableCommit(t.store, "job", clock=clock) as c:
        commit_rows(t, c, [1], 1)
    tm = TagManager(t.store.io, t.store.root)
    snap = t.latest_snapshot()
    tm.create(Tag("old", snap, datetime.datetime(2024, 1, 1), 10 * 86_400_000))
    tm.create(Tag("new", snap, datetime.datetime(2024, 3, 1), 10 * 86_400_000))
    cutoff = int(datetime.datetime(2024, 2, 1).timestamp() * 1000)
    clock.set(datetime.datetime(2024, 1, 2))
    dry = expire_tags(t.store, older_than_ms=cutoff, dry_run=True, clock=clock)
    assert dry.expired_tags == ["old"] and dry.dry_run
    assert set(tag_ids(t)) == {"old", "new"}
    r = t.expire_tags(older_than_ms=cutoff, clock=clock)
    assert r.expired_tags == ["old"] and set(tag_ids(t)) == {"new"}


def test_cli_expire_tags(table_path, clock, capsys):
    from paimon_commit.cli import main
    t = Table.create(str(table_path), SCHEMA, ["dt", "hr"])
    with TableCommit(t.store, "job", clock=clock) as c:
        commit_rows(t, c, [1], 1)
    tm = TagManager(t.store.io, t.store.root)
    tm.create(Tag("old", t.latest_snapshot(), datetime.datetime(2001, 1, 1), 1000))
    t.create_tag("keep")
    assert main(["expire-tags", str(table_path), "--dry-run", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["expired_tags"] == ["old"] and out["dry_run"] is True
    assert set(tag_ids(t)) == {"old", "keep"}
    assert main(["expire-tags", str(table_path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["expired_tags"] == ["old"]
    assert set(tag_ids(t)) == {"keep"}
    assert main(["expire-tags", str(table_path), "--older-than", "yesterday"]) == 2
    assert "--older-than 'yesterday' is an invalid timestamp" in capsys.readouterr().err


@pytest.mark.parametrize("options, message", [
    ({"tag.automatic-creation": "hourly"},
     "option 'tag.automatic-creation': 'hourly' is not one of none, process-time, watermark, "
     "batch"),
    ({"tag.creation-period": "weekly"},
     "option 'tag.creation-period': 'weekly' is not one of daily, hourly, two-hours"),
    ({"tag.automatic-creation": "process-time", "tag.creation-delay": "1 d"},
     "option 'tag.creation-delay' = 1 d must be shorter than 'tag.creation-period' = daily"),
    ({"tag.num-retained-max": "0"}, "option 'tag.num-retained-max' = '0': must be >= 1"),
    ({"tag.default-time-retained": "soon"}, "option 'tag.default-time-retained'"),
    ({"tag.automatic-creation": "process-time", "tag.period-formatter": "without_dashes"},
     "makes all-digit tag names"),
    ({"sink.watermark-time-zone": "Mars/Olympus"},
     "option 'sink.watermark-time-zone' = 'Mars/Olympus': unknown time zone"),
])
def test_bad_tag_options_fail_before_any_io(table_path, options, message):
    with pytest.raises(OptionError) as e:
        Table.create(str(table_path), SCHEMA, ["dt", "hr"], options)
    assert message in str(e.value)
    assert not os.path.exists(table_path / "schema")


def test_bad_batch_tag_name_fails_before_commit(table):
    with pytest.raises(OptionError, match="tag.batch.customized-name"):
        TableCommit(table.store, options={"tag.automatic-creation": "batch",
                                          "tag.batch.customized-name": "a/b"})


def test_interrupted_tag_expiry_is_finished_by_the_next_run(table_path, clock, monkeypatch):
    from paimon_commit.io.local import LocalFileIO
    t = Table.create(str(table_path), SCHEMA, ["dt", "hr"],
                     {"snapshot.num-retained.min": "1", "snapshot.time-retained": "0 ms"})
    with TableCommit(t.store, "job", clock=clock) as c:
        commit_rows(t, c, [1], 1)
        TagManager(t.store.io, t.store.root).create(
            Tag("t1", t.latest_snapshot(), datetime.datetime(2024, 1, 1, 9), 86_400_000))
        pinned = [n for n in files_under(table_path) if n.endswith(".parquet")]
        w = t.new_writer()
        w.write_arrow(make_rows([2], hr=1))
        c.overwrite(w.prepare_commit(), commit_identifier=2)   # snapshot 1 expires
    assert len(pinned) == 1 and (table_path / pinned[0]).exists()
    orig = LocalFileIO._unlink
    monkeypatch.setattr(LocalFileIO, "_unlink",
                        lambda self, p: False if p.endswith(".parquet") else orig(self, p))
    clock.set(datetime.datetime(2024, 1, 3))
    r = expire_tags(t.store, clock=clock)
    assert r.expired_tags == ["t1"] and any("again to finish" in s for s in r.skipped)
    assert (table_path / pinned[0]).exists() and t.tags() == []
    assert t.unfinished_tag_deletions() == ["t1"]
    monkeypatch.setattr(LocalFileIO, "_unlink", orig)
    r = expire_tags(t.store, clock=clock)          # the next run (a commit would do the same)
    assert r.finished_deletions == ["t1"] and r.deleted_files >= 1
    assert not (table_path / pinned[0]).exists()
    assert t.unfinished_tag_deletions() == []
    assert [x["id"] for x in rows(pp_read(table_path))] == [2]


def test_a_commit_object_per_write_does_not_reread_history(table_path, clock, monkeypatch):
    from paimon_commit.snapshots import SnapshotManager
    t = Table.create(str(table_path), SCHEMA, ["dt", "hr"],
                     {"tag.automatic-creation": "process-time"})
    for i in range(1, 31):
        clock.now += 60
        with TableCommit(t.store, "job", clock=clock) as c:
            commit_rows(t, c, [i], i)
    reads = []
    orig = SnapshotManager.try_snapshot
    monkeypatch.setattr(SnapshotManager, "try_snapshot",
                        lambda self, sid: reads.append(sid) or orig(self, sid))
    clock.now += 60
    with TableCommit(t.store, "job", clock=clock) as c:
        commit_rows(t, c, [31], 31)
        tag_reads = [r for r in reads]
    # the latest (30) for the commit, the tag and the publish's base identity check (F10),
    # and our own 31: no history.
    assert len(tag_reads) <= 4 and set(tag_reads) <= {30, 31}, tag_reads
    clock.set(datetime.datetime(2024, 1, 2, 0, 1))
    with TableCommit(t.store, "job", clock=clock) as c:
        commit_rows(t, c, [32], 32)
    assert tag_ids(t) == {"2023-12-31": 1, "2024-01-01": 32}


@pytest.mark.parametrize("completion, expected", [
    ("false", {"2023-12-31": 1, "2024-01-03": 2}),
    ("true", {"2023-12-31": 1, "2024-01-01": 2, "2024-01-02": 3}),
])
def test_automatic_completion_fills_skipped_periods(table_path, clock, completion, expected):
    t = Table.create(str(table_path), SCHEMA, ["dt", "hr"],
                     {"tag.automatic-creation": "process-time",
                      "tag.automatic-completion": completion})
    with TableCommit(t.store, "job", clock=clock) as c:
        commit_rows(t, c, [1], 1)
        clock.set(datetime.datetime(2024, 1, 4, 1, 0))      # two days without commits
        commit_rows(t, c, [2], 2)
        clock.set(datetime.datetime(2024, 1, 4, 2, 0))
        commit_rows(t, c, [3], 3)
    assert tag_ids(t) == expected


def test_a_tag_that_cannot_expire_is_reported_as_an_error(table_path, clock, caplog, capsys):
    """A tag past its retention that this library refuses to delete (Java wrote it under an
    all-digit name, which we refuse: it would read as a snapshot id) is an error naming the
    tag and why, in the result, the log, and the CLI's exit code; the other tags expire."""
    from paimon_commit.cli import main
    t = Table.create(str(table_path), SCHEMA, ["dt", "hr"])
    with TableCommit(t.store, "job", clock=clock) as c:
        commit_rows(t, c, [1], 1)
    snap = t.latest_snapshot()
    TagManager(t.store.io, t.store.root).create(
        Tag("old", snap, datetime.datetime(2001, 1, 1), 1000))
    (table_path / "tag" / "tag-123").write_bytes(
        Tag("123", snap, datetime.datetime(2001, 1, 1), 1000).to_json())
    clock.set(datetime.datetime(2024, 1, 2))
    error = ("tag '123' cannot be expired: invalid tag name '123': a tag name cannot be all "
             "digits")
    r = expire_tags(t.store, clock=clock)
    assert r.expired_tags == ["old"] and r.errors == [error] and r.to_dict()["errors"] == [error]
    assert sorted(os.listdir(table_path / "tag")) == ["tag-123"]
    assert [(x.levelname, x.getMessage()) for x in caplog.records
            if "123" in x.getMessage()] == [("ERROR", f"{t.store.path}: {error}")]
    # Post-commit maintenance reports it too (and the commit itself succeeds).
    with TableCommit(t.store, "job", clock=clock) as c:
        commit_rows(t, c, [2], 2)
        assert c.last_maintenance.tags.errors == [error]
    capsys.readouterr()
    assert main(["expire-tags", str(table_path)]) == 1
    assert f"error: {error}" in capsys.readouterr().out.splitlines()
    assert main(["expire-tags", str(table_path), "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["errors"] == [error]
    assert (table_path / "tag" / "tag-123").exists()
    assert_intact(table_path, {2: [1, 2]}, {"123": [1]})


def test_a_hostile_manifest_name_in_another_tag_is_an_error_not_a_concurrent_delete(
        table_path, clock, caplog):
    """Tag 'old' is due and its snapshot expired, so deleting it must know what every other
    tag uses; tag 'java' names a manifest list outside the manifest directory. Nothing is
    deleted, and the error names 'old' and the bad name (it was logged at INFO as deleted
    concurrently, and 'old' never expired)."""
    t = Table.create(str(table_path), SCHEMA, ["dt", "hr"],
                     {"snapshot.num-retained.min": "1", "snapshot.time-retained": "0 ms"})
    tm = TagManager(t.store.io, t.store.root)
    with TableCommit(t.store, "job", clock=clock) as c:
        commit_rows(t, c, [1], 1)
        tm.create(Tag("old", t.latest_snapshot(), datetime.datetime(2024, 1, 1, 9), 86_400_000))
        w = t.new_writer()
        w.write_arrow(make_rows([2], hr=1))
        c.overwrite(w.prepare_commit(), commit_identifier=2)   # snapshot 1 expires
    assert [s.id for s in t.snapshots()] == [2] and [x.name for x in t.tags()] == ["old"]
    hostile = t.latest_snapshot().with_(base_manifest_list="../../outside")
    (table_path / "tag" / "tag-java").write_bytes(Tag("java", hostile, None, None).to_json())
    before = files_under(table_path)
    clock.set(datetime.datetime(2024, 1, 3))
    r = expire_tags(t.store, clock=clock)
    assert r.expired_tags == [] and r.deleted_files == 0
    assert r.errors == [f"tag 'old' cannot be expired: {table_path}/tag/tag-java: manifest file "
                        f"name '../../outside' must not contain '/', '\\' or NUL"]
    assert files_under(table_path) == before
    assert [x.levelname for x in caplog.records if "'old'" in x.getMessage()] == ["ERROR"]


def test_batch_tag_replacement_finishes_an_unfinished_deletion_first(
        table_path, clock, monkeypatch):
    """A batch overwrite replaces the day's batch tag, but the replaced tag's file cannot be
    deleted: its deletion is left unfinished (a marker). Creating the new tag of that name
    must finish that deletion first (as delete_tag does), not create the tag over it: the
    next replacement would overwrite the marker, and the file only the first tag kept would
    stay on disk forever."""
    from paimon_commit.io.local import LocalFileIO
    t = Table.create(str(table_path), SCHEMA, ["dt", "hr"],
                     {"tag.automatic-creation": "batch", "snapshot.num-retained.min": "1",
                      "snapshot.time-retained": "0 ms"})
    name = "batch-write-2024-01-01"
    clock.set(datetime.datetime(2024, 1, 1, 12, 0))

    def batch_overwrite(ids):
        with TableCommit(t.store, "job", clock=clock) as c:
            w = t.new_writer()
            w.write_arrow(make_rows(ids, hr=1))
            c.overwrite(w.prepare_commit())        # one-shot batch: no identifier
            return c.last_maintenance.tags

    def parquet():
        return [n for n in files_under(table_path) if n.endswith(".parquet")]
    batch_overwrite([1])
    first = parquet()
    assert tag_ids(t) == {name: 1} and len(first) == 1
    orig = LocalFileIO._unlink
    monkeypatch.setattr(LocalFileIO, "_unlink",
                        lambda self, p: False if p.endswith(".parquet") else orig(self, p))
    r = batch_overwrite([2])         # snapshot 1 expires; the tag's file cannot be deleted
    assert t.unfinished_tag_deletions() == [name] and (table_path / first[0]).exists()
    assert name not in tag_ids(t) and r.created == []
    assert any(f"tag {name} not created: an earlier deletion" in s for s in r.skipped)
    monkeypatch.setattr(LocalFileIO, "_unlink", orig)
    r = batch_overwrite([3])         # the next batch commit finishes it, then tags
    assert r.created == [name] and tag_ids(t) == {name: 3}
    assert t.unfinished_tag_deletions() == []
    assert not (table_path / first[0]).exists() and len(parquet()) == 1   # snapshot 3's
    assert_intact(table_path, {3: [3]}, {name: [3]})


def _retag_before_its_deletion(monkeypatch, table_path, name, snapshot_id):
    """Another handle (a user, an engine that does not take the lease) re-creates tag `name`
    on `snapshot_id` right after a policy chose the tag and before its deletion runs."""
    from paimon_commit.operations.tag_ops import TagOperations
    delete, done = TagOperations.delete_tag, []

    def retag_then_delete(self, tag, expected=None):
        if tag == name and not done:
            done.append(True)
            other = Table.open(str(table_path))
            other.store.io.delete_quietly(str(table_path / "tag" / f"tag-{name}"))
            tag_as_another_engine(other, name, snapshot_id)
        return delete(self, tag, expected)
    monkeypatch.setattr(TagOperations, "delete_tag", retag_then_delete)
    return done


def test_batch_tag_retention_keeps_a_tag_replaced_after_it_was_counted(
        table_path, clock, monkeypatch):
    """Issue 25 a12: tag.num-retained-max of batch tags chose the day-1 tag (snapshot 1);
    re-created on snapshot 3 before its deletion, it is a tag nobody chose: kept."""
    t = Table.create(str(table_path), SCHEMA, ["dt", "hr"],
                     {"tag.automatic-creation": "batch", "tag.num-retained-max": "2"})
    for day in (1, 2):
        clock.set(datetime.datetime(2024, 1, day, 12, 0))
        with TableCommit(t.store, "job", clock=clock) as c:
            commit_rows(t, c, [day])
    with TableCommit(t.store, "job", clock=clock) as c:
        commit_rows(t, c, [3], 3)                     # streaming: snapshot 3, no batch tag
    ran = _retag_before_its_deletion(monkeypatch, table_path, "batch-write-2024-01-01", 3)
    clock.set(datetime.datetime(2024, 1, 3, 12, 0))
    with TableCommit(t.store, "job", clock=clock) as c:
        commit_rows(t, c, [4])                        # day 3: tags 4, then counts
        r = c.last_maintenance.tags
    assert ran
    assert tag_ids(t) == {"batch-write-2024-01-01": 3, "batch-write-2024-01-02": 2,
                          "batch-write-2024-01-03": 4}
    assert r.created == ["batch-write-2024-01-03"] and r.removed_by_count == []
    assert r.skipped == ["tag batch-write-2024-01-01: tag batch-write-2024-01-01 changed while "
                         "its deletion was planned (it now points at snapshot 3, was 1); "
                         "nothing is deleted"]
    assert_intact(table_path, expected_by_tag={"batch-write-2024-01-01": [1, 2, 3]})


def test_batch_tag_replacement_keeps_a_tag_replaced_meanwhile(table_path, clock, monkeypatch):
    """Issue 25 a12: a batch commit replaces the day's batch tag (snapshot 1); re-created on
    snapshot 2 by someone else in between, it is not deleted, and not overwritten."""
    t = Table.create(str(table_path), SCHEMA, ["dt", "hr"], {"tag.automatic-creation": "batch"})
    name = "batch-write-2024-01-01"
    clock.set(datetime.datetime(2024, 1, 1, 12, 0))
    with TableCommit(t.store, "job", clock=clock) as c:
        commit_rows(t, c, [1])                        # snapshot 1, tagged
        commit_rows(t, c, [2], 2)                     # streaming: snapshot 2, no batch tag
    ran = _retag_before_its_deletion(monkeypatch, table_path, name, 2)
    with TableCommit(t.store, "job", clock=clock) as c:
        commit_rows(t, c, [3])                        # replaces the tag of snapshot 1
        r = c.last_maintenance.tags
    assert ran
    assert tag_ids(t) == {name: 2} and r.created == []
    assert r.skipped == [f"tag {name}: tag {name} changed while its deletion was planned (it "
                         f"now points at snapshot 2, was 1); nothing is deleted"]
    assert_intact(table_path, expected_by_tag={name: [1, 2]})
