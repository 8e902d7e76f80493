"""One obvious API: every operation as a Table method named as users try it, with keyword
arguments named as the CLI's flags, returning the operations' results; lower-level classes take
a Table; write_arrow takes what pyarrow.table(...) takes."""
import datetime
import json
import os
import time
import warnings

import pyarrow as pa
import pytest

from conftest import D1, SCHEMA, files_under, make_rows, write
from invariants import assert_intact
from oracle import pp_read, rows

from paimon_commit import OptionError, Table
from paimon_commit.cli import main


@pytest.fixture
def history(table, table_path):
    for i in range(1, 13):
        write(table, make_rows([i], hr=i % 2))
    return table


def cli_json(capsys, *argv):
    assert main([str(a) for a in argv] + ["--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_expire_snapshots_as_the_cli_does(history, table_path, capsys):
    dry = history.expire_snapshots(retain_min=3, time_retained="0 ms", max_deletes=50,
                                   dry_run=True)
    cli = cli_json(capsys, "expire-snapshots", table_path, "--retain-min", 3,
                   "--time-retained", "0 ms", "--max-deletes", 50, "--dry-run")
    # (the requests differ: the CLI's are the whole run's, opening the table included)
    skip = ("seconds", "kept_because", "requests")
    assert {k: v for k, v in dry.to_dict().items() if k not in skip} == \
        {k: v for k, v in cli.items() if k not in skip + ("files",)}
    # Each says why in its caller's words: the argument, or the flag.
    assert (dry.kept_because, cli["kept_because"]) == (
        ["3 snapshot(s) kept by retain_min=3"], ["3 snapshot(s) kept by --retain-min 3"])
    before = set(files_under(table_path))
    r = history.expire_snapshots(retain_min=3, time_retained="0 ms", max_deletes=50)
    assert (r.expired_snapshots, r.earliest, r.latest) == (9, 10, 12)
    gone = before - set(files_under(table_path))
    assert {os.path.relpath(p, table_path) for p in r.deleted_paths} == gone and gone
    assert [s.id for s in Table.open(str(table_path)).snapshots()] == [10, 11, 12]
    assert_intact(table_path)


def test_expire_snapshots_older_than_takes_a_datetime(history, table_path):
    time.sleep(0.01)
    r = history.expire_snapshots(retain_min=1, older_than=datetime.datetime.now(),
                                 max_deletes=100)
    assert r.expired_snapshots == 11
    assert rows(pp_read(table_path))[-1]["id"] == 12
    assert_intact(table_path)


@pytest.mark.parametrize("kwargs, message", [
    ({"older_than": datetime.datetime(2999, 1, 1)},
     "older_than='2999-01-01 00:00:00' is not in the past (it is "),
    ({"older_than": "2999-01-01 00:00:00"}, "older_than='2999-01-01 00:00:00' is not in the past"),
    ({"older_than": 1_700_000_000}, "older_than=1700000000 looks like seconds"),
    ({"older_than": "yesterday"}, "older_than='yesterday' is an invalid time"),
    ({"time_retained": "-1 h"}, "time_retained='-1 h' must not be negative"),
    ({"time_retained": "soon"}, "time_retained='soon' is an invalid duration"),
    ({"retain_min": 5, "retain_max": 2}, "retain_max=2 must be >= retain_min=5"),
    ({"retain_min": 0}, "retain_min=0 must be >= 1"),
    ({"retain_min": "3"}, "retain_min='3' is not an integer"),
    ({"max_deletes": -1}, "max_deletes=-1 must be >= 0"),
])
def test_expire_snapshots_bad_arguments_touch_nothing(history, table_path, kwargs, message):
    before = files_under(table_path)
    with pytest.raises(OptionError) as e:
        history.expire_snapshots(**kwargs)
    assert message in str(e.value)
    assert files_under(table_path) == before


def test_remove_orphan_files(history, table_path):
    stray = table_path / "dt=19723" / "hr=1" / "bucket-0" / "data-stray-0.parquet"
    stray.write_text("x" * 10)
    empty = table_path / "dt=19999"
    empty.mkdir()
    old = time.time() - 3 * 86400
    os.utime(stray, (old, old))
    os.utime(empty, (old, old))
    r = history.remove_orphan_files(dry_run=True)
    assert r.deleted_paths == ["dt=19723/hr=1/bucket-0/data-stray-0.parquet"] and stray.exists()
    young = history.remove_orphan_files(older_than_duration="4 d")
    assert young.deleted_files == 0 and stray.exists()
    r = history.remove_orphan_files(older_than_duration="2 d", parallelism=2)
    assert r.deleted_files == 1 and not stray.exists() and not empty.exists()
    # to_dict mirrors the attributes: deleted_dirs is the list in both.
    assert r.to_dict()["deleted_dirs"] == r.deleted_dirs == ["dt=19999"]
    assert r.to_dict()["deleted_paths"] == r.deleted_paths
    assert_intact(table_path)


@pytest.mark.parametrize("kwargs, message", [
    ({"older_than": "2999-01-01 00:00:00"}, "older_than='2999-01-01 00:00:00' is not in the past"),
    ({"older_than_duration": "0 s"}, "older_than_duration='0 s' must be longer than 0"),
    ({"older_than_duration": "-1 d"}, "older_than_duration='-1 d' must not be negative"),
    ({"older_than_duration": "1 d", "older_than": "2000-01-01 00:00:00"}, "not both"),
    ({"parallelism": 0}, "parallelism=0 must be >= 1"),
])
def test_remove_orphan_files_bad_arguments(history, table_path, kwargs, message):
    before = files_under(table_path)
    with pytest.raises(OptionError, match=message):
        history.remove_orphan_files(**kwargs)
    assert files_under(table_path) == before


def test_expire_partitions(table, table_path):
    write(table, make_rows([1], dt=D1))
    write(table, make_rows([2], dt=datetime.date.today()))
    r = table.expire_partitions(expiration_time="7 d", dry_run=True)
    assert [p["dt"] for p in r.expired_partitions] == [D1] and r.snapshot_ids == []
    r = table.expire_partitions(expiration_time="7 d")
    assert r.snapshot_ids == [3]
    assert [x["id"] for x in rows(pp_read(table_path))] == [2]
    with pytest.raises(OptionError, match="expiration_time='-1 d' must not be negative"):
        table.expire_partitions(expiration_time="-1 d")


def test_tags_rollback_and_report_by_name(history, table_path):
    tag = history.create_tag("release-1", 5, time_retained="7 d")
    assert (tag.name, tag.id) == ("release-1", 5)
    r = history.rollback_to(snapshot_id=8)
    assert r.to_dict()["deleted_snapshots"] == [9, 10, 11, 12]
    r = history.expire_tags(older_than=datetime.datetime.now() - datetime.timedelta(days=1))
    assert r.expired_tags == []
    with pytest.raises(OptionError, match="older_than='2999-01-01 00:00:00' is not in the past"):
        history.expire_tags(older_than="2999-01-01 00:00:00")
    time.sleep(0.01)
    r = history.expire_tags(older_than=int(time.time() * 1000) - 1)   # epoch ms
    assert r.expired_tags == ["release-1"]
    report = history.report()
    assert report.to_dict()["snapshots"] == 8
    assert_intact(table_path)


def test_lower_level_classes_take_a_table(history, table_path):
    from paimon_commit.operations.expire import ExpireSnapshots
    from paimon_commit.operations.expire_config import ExpireConfig
    from paimon_commit.operations.orphan import CleanContext, OrphanFilesCleaner
    r = OrphanFilesCleaner(CleanContext(history, dry_run=True)).clean()
    assert r.deleted_files == 0
    r = ExpireSnapshots(history, ExpireConfig(retain_min=10, time_retained_ms=0,
                                              max_deletes=100)).expire()
    assert r.expired_snapshots == 2
    assert_intact(table_path)


def test_open_takes_storage_options(history, table_path):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert Table.open(str(table_path), storage_options={"s3.region": "eu"}).latest_snapshot()


def test_open_options_are_table_options_for_this_handle_only(history, table_path):
    """`Table.open(path, options=...)` takes table options, as Table.create does: Paimon's
    dynamic options, acted on by what runs through this handle and never written."""
    schema_before = (table_path / "schema" / "schema-0").read_bytes()
    t = Table.open(str(table_path), options={"snapshot.num-retained.min": 2,
                                             "snapshot.num-retained.max": 4})
    assert t.dynamic_options == {"snapshot.num-retained.min": "2",
                                 "snapshot.num-retained.max": "4"}
    assert t.options["snapshot.num-retained.max"] == "4"
    write(t, make_rows([100]))   # the commit's expiration keeps 4 snapshots, as the handle says
    assert sorted(os.listdir(table_path / "snapshot")) == \
        ["EARLIEST", "LATEST"] + [f"snapshot-{i}" for i in (10, 11, 12, 13)]
    assert os.listdir(table_path / "schema") == ["schema-0"]
    assert (table_path / "schema" / "schema-0").read_bytes() == schema_before
    assert "snapshot.num-retained.max" not in Table.open(str(table_path)).options
    assert_intact(table_path)
    assert rows(pp_read(table_path)) == rows(t.read_arrow())
    # Maintenance through the handle uses them too (expiration: retain_max unset -> 4).
    again = Table.open(str(table_path), options={"snapshot.num-retained.min": "1",
                                                 "snapshot.num-retained.max": "2"})
    assert again.expire_snapshots().expired_snapshots == 2
    from paimon_commit.operations.orphan import CleanContext
    ctx = CleanContext(again, dry_run=True, options={"file-operation.thread-num": "2"})
    assert ctx.options == {"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "2",
                           "file-operation.thread-num": "2"}
    assert_intact(table_path)


@pytest.mark.parametrize("options, error", [
    ({"snapshot.num-retained.min": "x"},
     "option 'snapshot.num-retained.min': expected an integer, got 'x'"),
    ({"snapshot.time-retained": "-1 h"}, "option 'snapshot.time-retained'"),
    ({"s3.endpoint": "http://localhost:9000"},
     "'s3.endpoint' is a storage option, not a table option: give it as storage_options="),
    ({"bucket": "4"}, "table option 'bucket' = '4' cannot be given when opening"),
    ({"bucket-key": "id"}, "table option 'bucket-key' = 'id' cannot be given when opening"),
    ({"snapshot.num-retained.max": "3"},
     "'snapshot.num-retained.max' = 3 must be >= 'snapshot.num-retained.min' = 10 (with the "
     "options given when opening"),
])
def test_open_refuses_bad_table_options_and_touches_nothing(history, table_path, options,
                                                           error):
    before = files_under(table_path)
    with pytest.raises(OptionError) as e:
        Table.open(str(table_path), options=options)
    assert error in str(e.value)
    assert files_under(table_path) == before


def test_open_checks_option_values_before_any_io(tmp_path):
    with pytest.raises(OptionError, match="option 'write-only': expected 'true' or 'false'"):
        Table.open(str(tmp_path / "no-table-here"), options={"write-only": "maybe"})


def test_open_warns_about_a_typo_of_a_paimon_option(history, table_path):
    from paimon_commit.option_names import OptionNameWarning
    with pytest.warns(OptionNameWarning, match="table option 'snapshot.num-retaind.min' is "
                      "not a Paimon option: did you mean 'snapshot.num-retained.min'"):
        t = Table.open(str(table_path), options={"snapshot.num-retaind.min": "3"})
    assert t.expire_snapshots(dry_run=True).expired_snapshots == 0   # the typo acts on nothing
    with warnings.catch_warnings():   # an option of another engine: kept, no warning
        warnings.simplefilter("error")
        Table.open(str(table_path), options={"sink.parallelism": "4"})


@pytest.mark.parametrize("make", [
    lambda: make_rows([1, 2]),
    lambda: make_rows([1, 2]).to_batches()[0],
    lambda: pa.RecordBatchReader.from_batches(SCHEMA, make_rows([1, 2]).to_batches()),
    lambda: {"id": [1, 2], "name": ["n1", "n2"], "dt": [D1, D1], "hr": [1, 1]},
    lambda: pytest.importorskip("pandas").DataFrame(
        {"id": [1, 2], "name": ["n1", "n2"], "dt": [D1, D1], "hr": [1, 1]}),
], ids=["table", "batch", "reader", "dict", "pandas"])
def test_write_arrow_takes_what_pyarrow_table_takes(table, table_path, make):
    w = table.new_writer()
    w.write_arrow(make())
    with table.new_commit() as c:
        c.commit(w.prepare_commit())
    assert rows(pp_read(table_path)) == rows(make_rows([1, 2]))
    assert rows(table.read_arrow()) == rows(make_rows([1, 2]))


def test_write_arrow_refuses_what_it_cannot_read(table):
    with pytest.raises(TypeError, match="write_arrow takes a pyarrow Table, RecordBatch or "
                                        "RecordBatchReader, a dict of columns or a pandas "
                                        "DataFrame, not list"):
        table.new_writer().write_arrow([{"id": 1}])
