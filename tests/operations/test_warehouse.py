"""Warehouse-wide maintenance: maintain_warehouse, the maintain CLI, table patterns for
remove-orphan-files / expire-snapshots, and progress events."""
import datetime
import json
import os
import time

import pytest

from conftest import SCHEMA, files_under, make_rows
from invariants import assert_intact
from oracle import pp_read, rows

from paimon_commit import Table
from paimon_commit.cli import main
from paimon_commit.format.snapshot import Tag
from paimon_commit.operations.expire import ExpireSnapshots
from paimon_commit.progress import ProgressEvent
from paimon_commit.tags import TagManager
from paimon_commit.warehouse import (find_tables, maintain_warehouse, resolve_table_pattern)

EAGER = {"snapshot.num-retained.min": "2", "snapshot.time-retained": "0 ms",
         "snapshot.expire.limit": "100"}
DAY = 86_400_000


def commits(t, n, start=1, hr=1):
    with t.new_commit(options={"write-only": "true"}) as c:
        for i in range(start, start + n):
            w = t.new_writer()
            w.write_arrow(make_rows([i], hr=hr))
            c.commit(w.prepare_commit(), i)


def age(root, days=3):
    old = time.time() - days * 86400
    for dirpath, _, names in os.walk(root):
        for n in names:
            os.utime(os.path.join(dirpath, n), (old, old))


@pytest.fixture
def warehouse(tmp_path):
    """sales.a: 6 snapshots to expire; sales.b: an expired tag pinning files; logs.c:
    partition expiration; logs.broken: a damaged schema; logs.badopt: a bad option value."""
    wh = tmp_path / "wh"
    a = Table.create(str(wh / "sales.db" / "a"), SCHEMA, ["dt", "hr"], EAGER)
    commits(a, 6)
    b = Table.create(str(wh / "sales.db" / "b"), SCHEMA, ["dt", "hr"], EAGER)
    commits(b, 1)
    TagManager(b.store.io, b.store.root).create(
        Tag("old", b.latest_snapshot(), datetime.datetime(2001, 1, 1), DAY))
    with b.new_commit(options={"write-only": "true"}) as c:
        w = b.new_writer()
        w.write_arrow(make_rows([2], hr=1))
        c.overwrite(w.prepare_commit(), commit_identifier=2)
        w = b.new_writer()
        w.write_arrow(make_rows([3], hr=1))
        c.overwrite(w.prepare_commit(), commit_identifier=3)
    c_ = Table.create(str(wh / "logs.db" / "c"), SCHEMA, ["dt", "hr"],
                      {"partition.expiration-time": "30 d"})
    commits(c_, 2)           # dt = 2024-01-01: long expired
    broken = wh / "logs.db" / "broken"
    Table.create(str(broken), SCHEMA, ["dt"])
    (broken / "schema" / "schema-0").write_text("{ not json")
    badopt = Table.create(str(wh / "logs.db" / "badopt"), SCHEMA, ["dt"])
    p = wh / "logs.db" / "badopt" / "schema" / "schema-0"
    schema = json.loads(p.read_text())
    schema["options"]["tag.creation-period"] = "weekly"
    p.write_text(json.dumps(schema))
    (wh / "logs.db" / "not-a-table").mkdir()
    (wh / "stray.txt").write_text("x")
    return wh


def test_find_tables_and_patterns(warehouse):
    names = [t.full_name for t in find_tables(str(warehouse))]
    assert names == ["logs.badopt", "logs.broken", "logs.c", "sales.a", "sales.b"]
    assert [t.full_name for t in find_tables(str(warehouse), database="sales")] == \
        ["sales.a", "sales.b"]
    assert [t.full_name for t in find_tables(str(warehouse), table_glob="b*")] == \
        ["logs.badopt", "logs.broken", "sales.b"]
    assert [t.full_name for t in find_tables(str(warehouse), table_glob="sales.?")] == \
        ["sales.a", "sales.b"]
    assert [t.full_name for t in resolve_table_pattern(f"{warehouse}/*.db/a")] == ["sales.a"]
    with pytest.raises(ValueError, match="must look like WAREHOUSE/db.db/"):
        resolve_table_pattern(f"{warehouse}/*/a")


def test_maintain_warehouse_goes_on_past_bad_tables(warehouse):
    events = []
    results = {r.table: r for r in maintain_warehouse(str(warehouse), progress=events.append)}
    assert {k: r.status for k, r in results.items()} == {
        "logs.badopt": "skipped", "logs.broken": "skipped", "logs.c": "ok", "sales.a": "ok",
        "sales.b": "ok"}
    assert "option 'tag.creation-period': 'weekly'" in results["logs.badopt"].reason
    assert "schema-0" in results["logs.broken"].reason
    assert "nothing was changed" in results["logs.broken"].reason
    # the damaged table was not touched
    assert (warehouse / "logs.db" / "broken" / "schema" / "schema-0").read_text() == "{ not json"
    # sales.a: snapshot expiration with the table's options
    assert results["sales.a"].snapshots_expired == 4
    a = warehouse / "sales.db" / "a"
    assert [s.id for s in Table.open(str(a)).snapshots()] == [5, 6]
    assert_intact(a, {6: [1, 2, 3, 4, 5, 6]})
    # sales.b: the expired tag went, with the file only it kept
    assert results["sales.b"].tags_expired == ["old"]
    b = warehouse / "sales.db" / "b"
    assert Table.open(str(b)).tags() == []
    assert len([n for n in files_under(b) if n.endswith(".parquet")]) == 2   # snapshots 2, 3
    assert [r["id"] for r in rows(pp_read(b))] == [3]
    # logs.c: the old partition was dropped
    assert results["logs.c"].partitions_expired == [{"dt": "2024-01-01", "hr": "1"}]
    assert rows(pp_read(warehouse / "logs.db" / "c")) == []
    # progress: one event per table, counted
    done = [e for e in events if e.phase == "maintaining" and e.unit == "tables"]
    assert done[-1].done == 5 and done[-1].total == 5
    assert any(e.message and "logs.broken: skipped" in e.message for e in events)


def test_dry_run_changes_nothing(warehouse):
    before = files_under(warehouse)
    results = {r.table: r for r in maintain_warehouse(str(warehouse), dry_run=True,
                                                      orphans=True)}
    assert results["sales.a"].snapshots_expired == 4 and results["sales.a"].dry_run
    assert results["sales.b"].tags_expired == ["old"]
    assert files_under(warehouse) == before


def test_a_failing_table_is_reported_and_the_rest_maintained(warehouse, monkeypatch):
    orig = ExpireSnapshots.expire

    def fail_for_a(self, dry_run=False):
        if self.store.path.endswith("/sales.db/a"):
            raise OSError("disk on fire")
        return orig(self, dry_run)
    monkeypatch.setattr(ExpireSnapshots, "expire", fail_for_a)
    results = {r.table: r for r in maintain_warehouse(
        str(warehouse), database="sales", parallelism=2, workers="thread")}
    assert results["sales.a"].status == "failed"
    assert results["sales.a"].reason == "snapshot expiration: OSError: disk on fire"
    assert results["sales.b"].status == "ok" and results["sales.b"].tags_expired == ["old"]


def test_orphans_and_process_workers(warehouse):
    a = warehouse / "sales.db" / "a"
    orphan = a / "dt=19723" / "hr=1" / "bucket-0" / "data-orphan.parquet"
    orphan.write_text("junk")
    young = a / "dt=19723" / "hr=1" / "bucket-0" / "data-young.parquet"
    age(a)
    young.write_text("new")
    results = {r.table: r for r in maintain_warehouse(
        str(warehouse), database="sales", orphans=True, parallelism=2)}   # processes
    assert results["sales.a"].status == "ok" and results["sales.a"].orphans_deleted == 1
    assert not orphan.exists() and young.exists()
    assert_intact(a, {6: [1, 2, 3, 4, 5, 6]})


def test_cli_maintain_json_and_exit_code(warehouse, capsys):
    code = main(["maintain", str(warehouse), "--parallelism", "1", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 1
    assert (out["ok"], out["failed"], out["skipped"]) == (3, 0, 2)
    assert [t["table"] for t in out["tables"] if t["status"] == "skipped"] == \
        ["logs.badopt", "logs.broken"]
    code = main(["maintain", str(warehouse), "--database", "sales", "--parallelism", "1"])
    text = capsys.readouterr().out
    assert code == 0 and "2 table(s): 2 ok, 0 failed, 0 skipped" in text


def test_cli_maintain_bad_input(tmp_path, capsys):
    assert main(["maintain", str(tmp_path / "nowhere")]) == 2
    assert capsys.readouterr().err == f"error: warehouse {tmp_path / 'nowhere'} does not exist\n"
    assert main(["maintain", str(tmp_path), "--parallelism", "0"]) == 2
    assert "--parallelism '0' must be >= 1" in capsys.readouterr().err


def test_patterns_for_orphans_and_expire_snapshots(warehouse, capsys):
    orphan = warehouse / "sales.db" / "b" / "dt=19723" / "hr=1" / "bucket-0" / "data-x.parquet"
    orphan.write_text("junk")
    age(warehouse / "sales.db" / "b")
    code = main(["remove-orphan-files", f"{warehouse}/sales.db/*", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and [t["table"] for t in out["tables"]] == ["sales.a", "sales.b"]
    assert not orphan.exists()
    code = main(["expire-snapshots", f"{warehouse}/*.db/*", "--retain-min", "1", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 1    # broken and badopt cannot be opened
    status = {t["table"]: t["status"] for t in out["tables"]}
    assert status == {"logs.badopt": "failed", "logs.broken": "failed", "logs.c": "ok",
                      "sales.a": "ok", "sales.b": "ok"}
    assert [s.id for s in Table.open(str(warehouse / "sales.db" / "a")).snapshots()] == [6]
    assert main(["expire-snapshots", f"{warehouse}/nodb.db/*"]) == 2
    assert "no table matches" in capsys.readouterr().err


def test_progress_callback_errors_are_ignored(warehouse):
    def broken(event: ProgressEvent):
        raise RuntimeError("display gone")
    results = maintain_warehouse(str(warehouse), database="sales", progress=broken)
    assert all(r.status == "ok" for r in results)


def test_partition_formatter_problems(tmp_path):
    wh = tmp_path / "wh"
    keep = Table.create(str(wh / "db.db" / "unparsable"), SCHEMA, ["dt", "hr"], {
        "partition.expiration-time": "1 d", "partition.timestamp-pattern": "$hr",
        "partition.timestamp-formatter": "yyyyMMdd"})
    commits(keep, 1)
    bad = Table.create(str(wh / "db.db" / "badfmt"), SCHEMA, ["dt", "hr"])
    commits(bad, 1)
    TagManager(bad.store.io, bad.store.root).create(
        Tag("old", bad.latest_snapshot(), datetime.datetime(2001, 1, 1), DAY))
    p = wh / "db.db" / "badfmt" / "schema" / "schema-0"
    schema = json.loads(p.read_text())
    schema["options"].update({"partition.expiration-time": "1 d",
                              "partition.timestamp-formatter": "yyyy-QQ"})
    p.write_text(json.dumps(schema))
    results = {r.table: r for r in maintain_warehouse(str(wh))}
    # a value the formatter cannot parse: the partition is kept, and the run says so
    r = results["db.unparsable"]
    assert r.status == "ok" and r.partitions_expired == []
    assert len(r.warnings) == 1 and r.warnings[0].startswith("partition dt=2024-01-01,hr=1 kept")
    assert "yyyyMMdd" in r.warnings[0]
    assert [x["id"] for x in rows(pp_read(wh / "db.db" / "unparsable"))] == [1]
    # a formatter that is not valid: skipped before any change (its expired tag is still there)
    r = results["db.badfmt"]
    assert r.status == "skipped" and "partition.timestamp-formatter" in r.reason
    assert "nothing was changed" in r.reason
    assert [t.name for t in Table.open(str(wh / "db.db" / "badfmt")).tags()] == ["old"]


def test_a_tag_that_cannot_expire_fails_the_table_after_the_other_steps(warehouse, capsys):
    """sales.b's expired tag 'old' is joined by '123', a Java tag past its retention under a
    name we refuse: 'old' and the snapshots still expire, and the table is reported failed
    with the tag and the reason (exit code 1), instead of '123' silently never expiring."""
    b = warehouse / "sales.db" / "b"
    snap = Table.open(str(b)).latest_snapshot()
    (b / "tag" / "tag-123").write_bytes(
        Tag("123", snap, datetime.datetime(2001, 1, 1), DAY).to_json())
    code = main(["maintain", str(warehouse), "--database", "sales", "--parallelism", "1",
                 "--json"])
    out = {t["table"]: t for t in json.loads(capsys.readouterr().out)["tables"]}
    assert code == 1
    assert (out["sales.a"]["status"], out["sales.b"]["status"]) == ("ok", "failed")
    assert out["sales.b"]["reason"] == ("tag expiration: tag '123' cannot be expired: invalid "
                                        "tag name '123': a tag name cannot be all digits")
    assert out["sales.b"]["tags_expired"] == ["old"]
    assert sorted(os.listdir(b / "tag")) == ["tag-123"]
    assert len([n for n in files_under(b) if n.endswith(".parquet")]) == 2   # snapshots 2, 3
    assert [r["id"] for r in rows(pp_read(b))] == [3]
