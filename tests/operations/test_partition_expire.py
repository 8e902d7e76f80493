"""Partition expiration on real tables, checked with pypaimon: every expiration must leave the
latest snapshot with exactly the surviving rows and the previous one with all of them."""
import datetime
import json
import logging
import time

import pyarrow as pa
import pytest

from conftest import D1, D2, files_under, make_rows, write
from oracle import pp_create, pp_read, pp_write, rows

import paimon_commit.writer as writer_module
from paimon_commit import OptionError, Table
from paimon_commit.operations.commit import FileStoreCommit
from paimon_commit.operations.partition_expire import (
    PartitionExpire, PartitionExpireConfig, TimestampFormatter, parse_default_time,
)

LOGGER = "paimon_commit.operations.partition_expire"
HOUR_MS = 3_600_000
DAY_MS = 24 * HOUR_MS

STR_SCHEMA = pa.schema([("id", pa.int64()), ("dt", pa.string()), ("hour", pa.string())])
INT_HOUR_SCHEMA = pa.schema([("id", pa.int64()), ("dt", pa.string()), ("hour", pa.int32())])


# --- helpers ---------------------------------------------------------------------------------

def local(*args):
    """Epoch seconds of a local wall-clock time (the clock Paimon's expiration compares in)."""
    return datetime.datetime(*args).timestamp()


class Clock:
    def __init__(self, t):
        self.t = t

    def __call__(self):
        return self.t


def create(table_path, schema, keys, **options):
    return Table.create(str(table_path), schema, partition_keys=keys, options=options)


def put(table, schema, records):
    """Append `records` (dicts) as one snapshot; returns its id. write-only, so that the
    commit's own post-commit maintenance leaves the partitions to the test."""
    with table.new_commit(options={"write-only": "true"}) as c:
        return write(table, pa.Table.from_pylist(records, schema=schema), commit=c)


def expirer(table, clock, **overrides):
    store = table.store
    config = PartitionExpireConfig.from_options(store.options, **overrides)
    return PartitionExpire(store, FileStoreCommit(store, "expirer"), config, clock)


def ids(table_path, snapshot_id=None):
    return [r["id"] for r in rows(pp_read(table_path, snapshot_id=snapshot_id))]


def assert_dropped(table, table_path, result, before_ids, after_ids):
    """pypaimon sees exactly `after_ids` now and `before_ids` just before the expiration."""
    assert result.snapshot_ids, "expected at least one drop snapshot"
    first = result.snapshot_ids[0]
    for sid in result.snapshot_ids:
        assert table.snapshot(sid).commit_kind == "OVERWRITE"
    assert ids(table_path) == sorted(after_ids)
    assert ids(table_path, snapshot_id=first - 1) == sorted(before_ids)
    assert table.latest_snapshot().id == result.snapshot_ids[-1]


def snapshot_count(table):
    return len(table.snapshots())


# --- values-time -----------------------------------------------------------------------------

def test_values_time_default_parser_drops_partitions_strictly_before_the_cutoff(table_path):
    t = create(table_path, STR_SCHEMA, ["dt"])
    put(t, STR_SCHEMA, [
        {"id": 1, "dt": "2024-01-01", "hour": "a"},
        {"id": 2, "dt": "2024-1-2", "hour": "a"},                      # single-digit fields
        {"id": 3, "dt": "2024-01-03T05:00:00", "hour": "a"},           # 'T' separator
        {"id": 4, "dt": "2024-01-04 05:00:00.123", "hour": "a"},       # fraction
        {"id": 5, "dt": "2024-01-07", "hour": "a"},                    # == cutoff: kept
        {"id": 6, "dt": "2024-01-09 10:00:00", "hour": "a"},
    ])
    put(t, STR_SCHEMA, [{"id": 7, "dt": "2024-01-01", "hour": "b"}])  # 2nd file, same partition
    pe = expirer(t, Clock(local(2024, 1, 10)), expiration_time_ms="3 d")
    r = pe.expire()
    assert r.checked and not r.dry_run and r.skipped == []
    assert r.cutoff == datetime.datetime(2024, 1, 7)
    assert r.expired_partitions == [{"dt": "2024-01-01"}, {"dt": "2024-01-03T05:00:00"},
                                    {"dt": "2024-01-04 05:00:00.123"}, {"dt": "2024-1-2"}]
    assert len(r.snapshot_ids) == 1
    assert_dropped(t, table_path, r, [1, 2, 3, 4, 5, 6, 7], [5, 6])
    # Nothing left to expire.
    r2 = pe.expire(force=True)
    assert r2.checked and r2.expired_partitions == [] and r2.snapshot_ids == []


def test_date_typed_first_key_gives_its_date_directly(table, table_path):
    # The shared fixture: dt DATE, hr INT.
    write(table, make_rows([1, 2], dt=D1, hr=1))
    write(table, make_rows([3], dt=D1, hr=2))
    write(table, make_rows([4], dt=D2, hr=1))
    pe = expirer(table, Clock(local(2024, 1, 2, 12)), expiration_time_ms=DAY_MS)
    r = pe.expire()
    assert r.expired_partitions == [{"dt": D1, "hr": 1}, {"dt": D1, "hr": 2}]
    assert r.to_dict()["expired_partitions"] == [{"dt": "2024-01-01", "hr": "1"},
                                                 {"dt": "2024-01-01", "hr": "2"}]
    assert_dropped(table, table_path, r, [1, 2, 3, 4], [4])


def test_date_typed_key_inside_a_pattern_is_substituted_as_iso_date(table, table_path):
    write(table, make_rows([1], dt=D1, hr=1))
    write(table, make_rows([2], dt=D1, hr=23))
    pe = expirer(table, Clock(local(2024, 1, 1, 12)), expiration_time_ms=HOUR_MS,
                 timestamp_pattern="$dt $hr:00:00")
    r = pe.expire()
    assert r.expired_partitions == [{"dt": D1, "hr": 1}]
    assert_dropped(table, table_path, r, [1, 2], [2])


def test_timestamp_typed_key(table_path):
    schema = pa.schema([("id", pa.int64()), ("ts", pa.timestamp("us"))])
    t = create(table_path, schema, ["ts"])
    put(t, schema, [{"id": 1, "ts": datetime.datetime(2024, 1, 1, 10, 30)},
                    {"id": 2, "ts": datetime.datetime(2024, 1, 1, 11, 30)}])
    r = expirer(t, Clock(local(2024, 1, 1, 12)), expiration_time_ms=HOUR_MS).expire()
    assert r.expired_partitions == [{"ts": datetime.datetime(2024, 1, 1, 10, 30)}]
    assert r.to_dict()["expired_partitions"] == [{"ts": "2024-01-01T10:30:00"}]
    assert_dropped(t, table_path, r, [1, 2], [2])


def test_formatter_yyyyMMdd_with_pattern_over_string_keys(table_path):
    t = create(table_path, STR_SCHEMA, ["dt", "hour"])
    put(t, STR_SCHEMA, [{"id": 1, "dt": "20240101", "hour": "05"},
                        {"id": 2, "dt": "20240101", "hour": "23"},
                        {"id": 3, "dt": "20240102", "hour": "01"},   # == cutoff: kept
                        {"id": 4, "dt": "20240102", "hour": "02"}])
    pe = expirer(t, Clock(local(2024, 1, 2, 3)), expiration_time_ms="2 h",
                 timestamp_formatter="yyyyMMdd HH:mm:ss", timestamp_pattern="$dt $hour:00:00")
    r = pe.expire()
    assert r.expired_partitions == [{"dt": "20240101", "hour": "05"},
                                    {"dt": "20240101", "hour": "23"}]
    assert_dropped(t, table_path, r, [1, 2, 3, 4], [3, 4])


def test_pattern_over_int_hour_with_default_parser_and_with_formatter(table_path):
    t = create(table_path, INT_HOUR_SCHEMA, ["dt", "hour"])
    put(t, INT_HOUR_SCHEMA, [{"id": 1, "dt": "2024-01-01", "hour": 5},
                             {"id": 2, "dt": "2024-01-01", "hour": 10},
                             {"id": 3, "dt": "2024-01-01", "hour": 20}])
    clock = Clock(local(2024, 1, 1, 12))
    r = expirer(t, clock, expiration_time_ms=HOUR_MS,
                timestamp_pattern="$dt $hour:00:00").expire()
    # Sorted by directory value strings, as Java: "10" < "5".
    assert r.expired_partitions == [{"dt": "2024-01-01", "hour": 10},
                                    {"dt": "2024-01-01", "hour": 5}]
    assert_dropped(t, table_path, r, [1, 2, 3], [3])

    clock.t = local(2024, 1, 1, 22)
    r = expirer(t, clock, expiration_time_ms=HOUR_MS, timestamp_formatter="yyyy-MM-dd H:mm:ss",
                timestamp_pattern="$dt $hour:00:00").expire()
    assert r.expired_partitions == [{"dt": "2024-01-01", "hour": 20}]
    assert_dropped(t, table_path, r, [3], [])


def test_formatter_without_pattern_parses_the_first_key_as_date(table_path, caplog):
    t = create(table_path, STR_SCHEMA, ["dt"])
    put(t, STR_SCHEMA, [{"id": 1, "dt": "20240101", "hour": "x"},
                        {"id": 2, "dt": "2024-01-01", "hour": "x"},   # not yyyyMMdd: kept
                        {"id": 3, "dt": "20240301", "hour": "x"}])
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        r = expirer(t, Clock(local(2024, 2, 1)), expiration_time_ms="1 d",
                    timestamp_formatter="yyyyMMdd").expire()
    assert r.expired_partitions == [{"dt": "20240101"}]
    assert [s.partition for s in r.skipped] == [{"dt": "2024-01-01"}]
    assert "does not match the formatter" in r.skipped[0].reason
    assert_dropped(t, table_path, r, [1, 2, 3], [2, 3])


@pytest.fixture
def utc_plus_8(monkeypatch):
    monkeypatch.setenv("TZ", "CST-8")  # POSIX spelling: no tz database needed
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def test_local_wall_clock_decides_not_utc(table_path, utc_plus_8):
    # At 20:00 UTC it is already the next day at UTC+8: a 1-day expiration uses that wall clock.
    t = create(table_path, STR_SCHEMA, ["dt"])
    put(t, STR_SCHEMA, [{"id": 1, "dt": "2024-01-10", "hour": "x"},
                        {"id": 2, "dt": "2024-01-11", "hour": "x"}])
    now = datetime.datetime(2024, 1, 10, 20, 0, tzinfo=datetime.timezone.utc).timestamp()
    r = expirer(t, Clock(now), expiration_time_ms="1 d").expire()
    assert r.cutoff == datetime.datetime(2024, 1, 10, 4, 0)
    assert r.expired_partitions == [{"dt": "2024-01-10"}]
    assert_dropped(t, table_path, r, [1, 2], [2])


# --- update-time -----------------------------------------------------------------------------

def test_update_time_uses_the_newest_live_file_of_each_partition(table_path, monkeypatch):
    t = create(table_path, STR_SCHEMA, ["dt"])

    def written_at(*args):
        ms = int(datetime.datetime(*args).replace(tzinfo=datetime.timezone.utc).timestamp()) * 1000
        monkeypatch.setattr(writer_module, "local_millis_as_utc", lambda: ms)

    written_at(2024, 1, 1, 8)
    put(t, STR_SCHEMA, [{"id": 1, "dt": "old", "hour": "x"},
                        {"id": 2, "dt": "refreshed", "hour": "x"}])
    written_at(2024, 1, 1, 11)
    put(t, STR_SCHEMA, [{"id": 3, "dt": "refreshed", "hour": "x"},
                        {"id": 4, "dt": "new", "hour": "x"}])
    # Cutoff 2024-01-01 10:00 local: only 'old' has no file newer than that. Values that are no
    # dates at all are fine for this strategy.
    r = expirer(t, Clock(local(2024, 1, 2, 10)), expiration_time_ms="1 d",
                strategy="update-time").expire()
    assert r.skipped == []
    assert r.expired_partitions == [{"dt": "old"}]
    assert_dropped(t, table_path, r, [1, 2, 3, 4], [2, 3, 4])


def test_update_time_with_real_creation_times(table_path):
    t = create(table_path, STR_SCHEMA, ["dt"])
    put(t, STR_SCHEMA, [{"id": 1, "dt": "a", "hour": "x"}])
    now = time.time()
    assert expirer(t, Clock(now), expiration_time_ms="1 h",
                   strategy="update-time").expire().expired_partitions == []
    r = expirer(t, Clock(now + 2 * 3600), expiration_time_ms="1 h",
                strategy="update-time").expire()
    assert r.expired_partitions == [{"dt": "a"}]
    assert_dropped(t, table_path, r, [1], [])


# --- max-num, batch size, identifiers --------------------------------------------------------

def _five_old_days(table_path):
    t = create(table_path, STR_SCHEMA, ["dt"])
    put(t, STR_SCHEMA, [{"id": i, "dt": f"2024-01-0{i}", "hour": "x"} for i in range(1, 6)]
        + [{"id": 9, "dt": "2030-01-01", "hour": "x"}])
    return t


def test_max_num_and_batch_size(table_path):
    t = _five_old_days(table_path)
    pe = expirer(t, Clock(local(2025, 1, 1)), expiration_time_ms="1 d", max_num=3,
                 batch_size=2)
    before = snapshot_count(t)
    r = pe.expire()
    assert r.expired_partitions == [{"dt": "2024-01-01"}, {"dt": "2024-01-02"},
                                    {"dt": "2024-01-03"}]
    assert len(r.snapshot_ids) == 2 and snapshot_count(t) == before + 2
    assert_dropped(t, table_path, r, [1, 2, 3, 4, 5, 9], [4, 5, 9])
    # The batches: 2 partitions, then 1.
    assert ids(table_path, r.snapshot_ids[0]) == [3, 4, 5, 9]

    r = pe.expire(force=True)
    assert r.expired_partitions == [{"dt": "2024-01-04"}, {"dt": "2024-01-05"}]
    assert len(r.snapshot_ids) == 1
    assert_dropped(t, table_path, r, [4, 5, 9], [9])


def test_batch_size_defaults_to_max_num(table_path):
    t = _five_old_days(table_path)
    r = expirer(t, Clock(local(2025, 1, 1)), expiration_time_ms="1 d", max_num=4).expire()
    assert len(r.expired_partitions) == 4 and len(r.snapshot_ids) == 1
    assert_dropped(t, table_path, r, [1, 2, 3, 4, 5, 9], [5, 9])


def test_table_options_configure_everything(table_path):
    t = create(table_path, STR_SCHEMA, ["dt"], **{
        "partition.expiration-time": "1 d", "partition.expiration-max-num": "2",
        "partition.expiration-batch-size": "1",
        "partition.expiration-check-interval": "0"})
    put(t, STR_SCHEMA, [{"id": i, "dt": f"2024-01-0{i}", "hour": "x"} for i in range(1, 4)])
    pe = PartitionExpire(t.store, FileStoreCommit(t.store), None, Clock(local(2025, 1, 1)))
    assert pe.config.check_interval_ms == 0 and pe.config.effective_batch_size == 1
    r = pe.expire()
    assert len(r.expired_partitions) == 2 and len(r.snapshot_ids) == 2
    assert_dropped(t, table_path, r, [1, 2, 3], [3])


def test_a_fresh_commit_object_expires_on_its_first_commit(table_path):
    # "One commit object per write" must still expire partitions (apache/fluss#2861), with
    # the default one-hour check interval.
    t = create(table_path, STR_SCHEMA, ["dt"], **{"partition.expiration-time": "1 d"})
    put(t, STR_SCHEMA, [{"id": 1, "dt": "2000-01-01", "hour": "x"}])
    with t.new_commit() as c:
        sid = write(t, pa.Table.from_pylist([{"id": 2, "dt": "2999-01-01", "hour": "x"}],
                                            schema=STR_SCHEMA), commit=c)
        result = c.last_maintenance.partitions
    assert result.checked and result.expired_partitions == [{"dt": "2000-01-01"}]
    assert result.snapshot_ids == [sid + 1]
    assert_dropped(t, table_path, result, [1, 2], [2])


def test_drop_snapshots_carry_the_commit_user_and_identifier(table_path):
    t = _five_old_days(table_path)
    r = expirer(t, Clock(local(2025, 1, 1)), expiration_time_ms="1 d", max_num=2,
                batch_size=1).expire(commit_identifier=42)
    for sid in r.snapshot_ids:
        s = t.snapshot(sid)
        assert (s.commit_user, s.commit_identifier, s.commit_kind) == ("expirer", 42, "OVERWRITE")


# --- commas ----------------------------------------------------------------------------------

def test_value_with_comma_drops_exactly_its_partition(table_path, caplog):
    t = create(table_path, STR_SCHEMA, ["dt"])
    put(t, STR_SCHEMA, [{"id": 1, "dt": "2020-01-01,x", "hour": "h"},
                        {"id": 2, "dt": "2020-01-01", "hour": "h"},      # the prefix: kept
                        {"id": 3, "dt": "2099-01-01,x", "hour": "h"}])
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        r = expirer(t, Clock(local(2024, 1, 1)), expiration_time_ms="1 d",
                    timestamp_formatter="yyyy-MM-dd',x'").expire()
    assert r.expired_partitions == [{"dt": "2020-01-01,x"}]
    assert [s.partition for s in r.skipped] == [{"dt": "2020-01-01"}]
    assert_dropped(t, table_path, r, [1, 2, 3], [2, 3])


def test_comma_in_first_of_two_keys_does_not_shift_values(table_path, caplog):
    schema = pa.schema([("id", pa.int64()), ("region", pa.string()), ("dt", pa.string())])
    t = create(table_path, schema, ["region", "dt"])
    # Joined, the expired partition reads "a,b,2020-01-01"; split on commas it would name the
    # neighbour region=a/dt=b.
    put(t, schema, [{"id": 1, "region": "a,b", "dt": "2020-01-01"},
                    {"id": 2, "region": "a", "dt": "b"},
                    {"id": 3, "region": "a", "dt": "2020-01-01"}])
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        r = expirer(t, Clock(local(2024, 1, 1)), expiration_time_ms="1 d",
                    timestamp_pattern="$dt").expire()
    assert r.expired_partitions == [{"region": "a", "dt": "2020-01-01"},
                                    {"region": "a,b", "dt": "2020-01-01"}]
    assert [s.partition for s in r.skipped] == [{"region": "a", "dt": "b"}]
    assert_dropped(t, table_path, r, [1, 2, 3], [2])


# --- partitions without a time ---------------------------------------------------------------

def test_unparsable_and_null_values_are_kept_with_a_warning(table_path, caplog):
    t = create(table_path, STR_SCHEMA, ["dt", "hour"])
    put(t, STR_SCHEMA, [{"id": 1, "dt": "not-a-date", "hour": "1"},
                        {"id": 2, "dt": None, "hour": "1"},               # default partition
                        {"id": 3, "dt": "2024-02-30", "hour": "1"},       # no such day
                        {"id": 4, "dt": "2020-01-01", "hour": None}])     # unused key is null
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        r = expirer(t, Clock(local(2024, 6, 1)), expiration_time_ms="1 d").expire()
    assert r.expired_partitions == [{"dt": "2020-01-01", "hour": None}]
    reasons = {s.partition["dt"]: s.reason for s in r.skipped}
    assert set(reasons) == {"not-a-date", None, "2024-02-30"}
    assert "null" in reasons[None] and "day is out of range" in reasons["2024-02-30"]
    warnings = [rec for rec in caplog.records if rec.levelno == logging.WARNING]
    assert len(warnings) == 3 and all("keeps partition" in w.getMessage() for w in warnings)
    d = r.to_dict()
    json.dumps(d)
    assert d["expired_partitions"] == [{"dt": "2020-01-01", "hour": None}]
    assert {"partition": {"dt": None, "hour": "1"}, "reason": reasons[None]} in d["skipped"]
    assert_dropped(t, table_path, r, [1, 2, 3, 4], [1, 2, 3])


def test_pattern_with_null_referenced_key_is_kept(table_path, caplog):
    t = create(table_path, STR_SCHEMA, ["dt", "hour"])
    put(t, STR_SCHEMA, [{"id": 1, "dt": "2020-01-01", "hour": None},
                        {"id": 2, "dt": "2020-01-01", "hour": "03"}])
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        r = expirer(t, Clock(local(2024, 1, 1)), expiration_time_ms="1 d",
                    timestamp_pattern="$dt $hour:00:00").expire()
    assert r.expired_partitions == [{"dt": "2020-01-01", "hour": "03"}]
    assert [s.partition for s in r.skipped] == [{"dt": "2020-01-01", "hour": None}]
    assert_dropped(t, table_path, r, [1, 2], [1])


# --- check interval --------------------------------------------------------------------------

def test_check_interval_first_call_checks_then_waits(table_path):
    t = create(table_path, STR_SCHEMA, ["dt"])
    put(t, STR_SCHEMA, [{"id": 1, "dt": "2024-01-01", "hour": "x"},
                        {"id": 2, "dt": "2024-01-02", "hour": "x"},
                        {"id": 3, "dt": "2024-01-03", "hour": "x"}])
    clock = Clock(local(2024, 1, 3))
    pe = expirer(t, clock, expiration_time_ms="1 d", check_interval_ms="1 h")
    r = pe.expire()                             # fresh object: checks at once (fluss#2861)
    assert r.checked and r.expired_partitions == [{"dt": "2024-01-01"}]
    assert_dropped(t, table_path, r, [1, 2, 3], [2, 3])

    # 59 minutes later 2024-01-02 is expired too, but no check is due.
    clock.t = local(2024, 1, 3, 0, 59)
    n = snapshot_count(t)
    r = pe.expire()
    assert not r.checked and r.expired_partitions == [] and snapshot_count(t) == n
    assert ids(table_path) == [2, 3]

    clock.t = local(2024, 1, 3, 1, 0)           # exactly one interval after the last check
    r = pe.expire()
    assert r.checked and r.expired_partitions == [{"dt": "2024-01-02"}]
    assert_dropped(t, table_path, r, [2, 3], [3])

    # force checks inside the interval.
    clock.t = local(2024, 1, 3, 1, 30)
    assert not pe.expire().checked
    assert pe.expire(force=True).checked


def test_check_interval_zero_checks_every_call(table_path):
    t = create(table_path, STR_SCHEMA, ["dt"])
    put(t, STR_SCHEMA, [{"id": 1, "dt": "2024-01-01", "hour": "x"}])
    clock = Clock(local(2024, 1, 1, 12))
    pe = expirer(t, clock, expiration_time_ms="1 d", check_interval_ms=0)
    assert [pe.expire().checked for _ in range(3)] == [True, True, True]
    clock.t = local(2024, 1, 2, 1)
    r = pe.expire()
    assert r.checked and r.expired_partitions == [{"dt": "2024-01-01"}]
    assert_dropped(t, table_path, r, [1], [])


def test_disabled_without_expiration_time_or_partitions(table_path, tmp_path):
    t = create(table_path, STR_SCHEMA, ["dt"])
    put(t, STR_SCHEMA, [{"id": 1, "dt": "2000-01-01", "hour": "x"}])
    pe = expirer(t, Clock(local(2024, 1, 1)))
    assert not pe.enabled
    r = pe.expire(force=True)
    assert not r.checked and r.expired_partitions == [] and snapshot_count(t) == 1

    other = tmp_path / "wh" / "db.db" / "flat"
    flat = create(other, STR_SCHEMA, [])
    put(flat, STR_SCHEMA, [{"id": 1, "dt": "2000-01-01", "hour": "x"}])
    pe = expirer(flat, Clock(local(2024, 1, 1)), expiration_time_ms="1 d")
    assert not pe.enabled and not pe.expire(force=True).checked
    assert snapshot_count(flat) == 1


def test_empty_table_checks_and_does_nothing(table_path):
    t = create(table_path, STR_SCHEMA, ["dt"])
    r = expirer(t, Clock(local(2024, 1, 1)), expiration_time_ms="1 d").expire()
    assert r.checked and r.expired_partitions == [] and r.snapshot_ids == []
    assert t.latest_snapshot() is None


# --- dry run ---------------------------------------------------------------------------------

def test_dry_run_commits_nothing_and_keeps_the_schedule(table_path):
    t = _five_old_days(table_path)
    before = files_under(table_path)
    clock = Clock(local(2025, 1, 1))
    pe = expirer(t, clock, expiration_time_ms="1 d", max_num=2, batch_size=1)
    r = pe.expire(dry_run=True)
    assert r.checked and r.dry_run and r.snapshot_ids == []
    assert r.expired_partitions == [{"dt": "2024-01-01"}, {"dt": "2024-01-02"}]
    assert files_under(table_path) == before and snapshot_count(t) == 1
    d = r.to_dict()
    assert d["dry_run"] is True and d["expired_partitions"] == [{"dt": "2024-01-01"},
                                                                {"dt": "2024-01-02"}]
    # A dry run did not count as the check: the real run right after still happens.
    r = pe.expire()
    assert r.checked and len(r.snapshot_ids) == 2
    assert_dropped(t, table_path, r, [1, 2, 3, 4, 5, 9], [3, 4, 5, 9])


# --- validation ------------------------------------------------------------------------------

@pytest.mark.parametrize("overrides, option", [
    ({"expiration_time_ms": 0}, "partition.expiration-time"),
    ({"expiration_time_ms": -5}, "partition.expiration-time"),
    ({"expiration_time_ms": "soon"}, "partition.expiration-time"),
    ({"check_interval_ms": -1}, "partition.expiration-check-interval"),
    ({"max_num": 0}, "partition.expiration-max-num"),
    ({"max_num": -3}, "partition.expiration-max-num"),
    ({"batch_size": 0}, "partition.expiration-batch-size"),
    ({"strategy": "oldest-first"}, "partition.expiration-strategy"),
    ({"timestamp_formatter": "yyyy-MM-dd HH:mm:ss.SSS"}, "partition.timestamp-formatter"),
    ({"timestamp_formatter": "yyyy-MM-dd Q"}, "partition.timestamp-formatter"),
    ({"timestamp_formatter": "yyyy-MM"}, "partition.timestamp-formatter"),
    ({"timestamp_formatter": "yyyy-MM-dd[ HH]"}, "partition.timestamp-formatter"),
    ({"timestamp_formatter": "yyyy-MM-dd'T"}, "partition.timestamp-formatter"),
    ({"timestamp_pattern": "2024-01-01"}, "partition.timestamp-pattern"),
])
def test_bad_config_raises_before_any_io(table_path, overrides, option):
    t = create(table_path, STR_SCHEMA, ["dt", "hour"])
    put(t, STR_SCHEMA, [{"id": 1, "dt": "2000-01-01", "hour": "1"}])
    before = files_under(table_path)
    overrides.setdefault("expiration_time_ms", "1 d")
    with pytest.raises(OptionError, match=option):
        expirer(t, Clock(local(2024, 1, 1)), **overrides).expire()
    assert files_under(table_path) == before


def test_pattern_naming_an_unknown_key_raises_in_the_constructor(table_path):
    t = create(table_path, STR_SCHEMA, ["dt", "hour"])
    put(t, STR_SCHEMA, [{"id": 1, "dt": "2000-01-01", "hour": "1"}])
    before = files_under(table_path)
    config = PartitionExpireConfig.from_options(t.store.options, expiration_time_ms="1 d",
                                                timestamp_pattern="$dt $hr:00:00")
    with pytest.raises(OptionError, match=r"partition.timestamp-pattern.*'\$hr' is not a "
                                          r"partition key.*\['dt', 'hour'\]"):
        PartitionExpire(t.store, FileStoreCommit(t.store), config)
    assert files_under(table_path) == before


def test_bad_table_option_raises_naming_it(table_path):
    t = create(table_path, STR_SCHEMA, ["dt"], **{
        "partition.expiration-time": "1 d", "partition.timestamp-formatter": "dd/MM/yyyy G"})
    before = files_under(table_path)
    with pytest.raises(OptionError, match=r"partition.timestamp-formatter.*'G'"):
        PartitionExpire(t.store, FileStoreCommit(t.store), None)
    assert files_under(table_path) == before


def test_unused_formatter_is_not_validated(table_path):
    # Tables from other engines may carry formatters we do not support; as long as
    # values-time expiration is off, they must not break us.
    t = create(table_path, STR_SCHEMA, ["dt"], **{
        "partition.timestamp-formatter": "yyyy-MM-dd HH:mm:ss.SSS"})
    pe = PartitionExpire(t.store, FileStoreCommit(t.store), None)
    assert not pe.enabled
    PartitionExpireConfig.from_options(t.store.options, expiration_time_ms="1 d",
                                       strategy="update-time")


def test_unknown_override_is_a_type_error(table_path):
    t = create(table_path, STR_SCHEMA, ["dt"])
    with pytest.raises(TypeError, match="expiration_time"):
        PartitionExpireConfig.from_options(t.store.options, expiration_time="1 d")


def test_overrides_beat_table_options_and_none_means_not_given(table_path):
    t = create(table_path, STR_SCHEMA, ["dt"], **{
        "partition.expiration-time": "7 d", "partition.expiration-max-num": "5"})
    c = PartitionExpireConfig.from_options(t.store.options, expiration_time_ms="2 h",
                                           max_num=None, check_interval_ms=0)
    assert (c.expiration_time_ms, c.max_num, c.check_interval_ms, c.effective_batch_size) == \
        (2 * HOUR_MS, 5, 0, 5)
    assert c.strategy == "values-time" and c.timestamp_formatter is None


# --- formatter and default parser ------------------------------------------------------------

@pytest.mark.parametrize("formatter, text, expected", [
    ("yyyyMMdd", "20240131", datetime.datetime(2024, 1, 31)),
    ("yyyyMMddHH", "2024013107", datetime.datetime(2024, 1, 31, 7)),
    ("yyyy-MM-dd'T'HH:mm:ss", "2024-01-31T07:08:09", datetime.datetime(2024, 1, 31, 7, 8, 9)),
    ("yyyy/MM/dd HH:mm", "2024/01/31 07:08", datetime.datetime(2024, 1, 31, 7, 8)),
    ("dd.MM.yyyy", "31.01.2024", datetime.datetime(2024, 1, 31)),
    ("yyyy-M-d H", "2024-1-3 5", datetime.datetime(2024, 1, 3, 5)),
    ("'day '''yyyy-MM-dd", "day '2024-01-31", datetime.datetime(2024, 1, 31)),
])
def test_timestamp_formatter(formatter, text, expected):
    assert TimestampFormatter(formatter).parse(text) == expected


@pytest.mark.parametrize("formatter, text", [
    ("yyyyMMdd", "2024-01-31"), ("yyyyMMdd", "202401311"), ("yyyy-MM-dd", "2024-1-31"),
    ("yyyy-MM-dd", "2024-02-30"),
])
def test_timestamp_formatter_rejects(formatter, text):
    with pytest.raises(ValueError):
        TimestampFormatter(formatter).parse(text)


@pytest.mark.parametrize("text, expected", [
    ("2024-01-31", datetime.datetime(2024, 1, 31)),
    ("2024-1-3", datetime.datetime(2024, 1, 3)),
    ("2024-01-31 07:08:09", datetime.datetime(2024, 1, 31, 7, 8, 9)),
    ("2024-01-31T07:08:09", datetime.datetime(2024, 1, 31, 7, 8, 9)),
    ("2024-01-31 7:8:9.123456789", datetime.datetime(2024, 1, 31, 7, 8, 9, 123456)),
])
def test_default_parser(text, expected):
    assert parse_default_time(text) == expected


@pytest.mark.parametrize("text", ["20240131", "2024-01-31 07:08", "2024-01-31 ", "x",
                                  "2024-13-01", "2024-01-31 25:00:00"])
def test_default_parser_rejects(text):
    with pytest.raises(ValueError):
        parse_default_time(text)


# --- interop ---------------------------------------------------------------------------------

def test_expires_a_table_written_by_pypaimon(table_path):
    schema = pa.schema([("id", pa.int64()), ("dt", pa.string()), ("hour", pa.int32())])
    pp_create(table_path, schema, partition_keys=["dt", "hour"])
    pp_write(table_path, pa.Table.from_pylist(
        [{"id": 1, "dt": "2024-01-01", "hour": 3}, {"id": 2, "dt": "2024-01-01", "hour": 4},
         {"id": 3, "dt": "2024-01-02", "hour": 3}], schema=schema))
    pp_write(table_path, pa.Table.from_pylist(
        [{"id": 4, "dt": "2024-01-01", "hour": 3}], schema=schema))
    t = Table.open(str(table_path))
    r = expirer(t, Clock(local(2024, 1, 2)), expiration_time_ms="1 h",
                timestamp_pattern="$dt $hour:00:00").expire()
    assert r.expired_partitions == [{"dt": "2024-01-01", "hour": 3},
                                    {"dt": "2024-01-01", "hour": 4}]
    assert_dropped(t, table_path, r, [1, 2, 3, 4], [3])
    # pypaimon keeps writing to the table after our drop.
    pp_write(table_path, pa.Table.from_pylist([{"id": 5, "dt": "2024-01-01", "hour": 3}],
                                              schema=schema))
    assert ids(table_path) == [3, 5]
    # update-time on pypaimon's creation times: everything was written just now.
    r = expirer(t, Clock(time.time()), expiration_time_ms="1 h", strategy="update-time").expire()
    assert r.checked and r.expired_partitions == [] and r.skipped == []


@pytest.mark.parametrize("strategy", ["values-time", "update-time"])
def test_expiration_longer_than_the_calendar_expires_nothing(table_path, strategy):
    t = create(table_path, STR_SCHEMA, ["dt"])
    put(t, STR_SCHEMA, [{"id": 1, "dt": "0001-01-02", "hour": "x"}])
    r = expirer(t, Clock(local(2024, 1, 1)), expiration_time_ms=10 ** 15,
                strategy=strategy).expire()
    assert r.checked and r.expired_partitions == [] and r.cutoff == datetime.datetime.min
    assert snapshot_count(t) == 1


# --- a commit landing between the selection and the drop (audit issue25x x1) -----------------

def _written_at(monkeypatch, *args):
    """Files written from now on get this creation time (local wall clock, as the writer)."""
    ms = int(datetime.datetime(*args).replace(tzinfo=datetime.timezone.utc).timestamp()) * 1000
    monkeypatch.setattr(writer_module, "local_millis_as_utc", lambda: ms)


def _after_selection(monkeypatch, action):
    """Run `action` once, right after the expiration selected its partitions (before its
    drop's first commit attempt), as another writer's commit landing in that window."""
    real = PartitionExpire._select
    fired = []

    def select(self, cutoff):
        r = real(self, cutoff)
        if not fired:
            fired.append(1)
            action()
        return r
    monkeypatch.setattr(PartitionExpire, "_select", select)


def _read_ids(table_path):
    return sorted(Table.open(str(table_path)).read_arrow().column("id").to_pylist())


def _two_old_one_new(table_path, monkeypatch, **options):
    t = create(table_path, STR_SCHEMA, ["dt"], **options)
    _written_at(monkeypatch, 2024, 1, 1, 8)
    put(t, STR_SCHEMA, [{"id": 1, "dt": "2024-01-01", "hour": "x"},
                        {"id": 2, "dt": "2024-01-02", "hour": "x"}])
    _written_at(monkeypatch, 2024, 1, 3, 8)
    put(t, STR_SCHEMA, [{"id": 3, "dt": "2030-01-01", "hour": "x"}])
    return t


def _late_row(table_path, monkeypatch, row_id, dt):
    def action():
        _written_at(monkeypatch, 2024, 1, 2, 9)   # after the cutoff: new data
        put(Table.open(str(table_path)), STR_SCHEMA,
            [{"id": row_id, "dt": dt, "hour": "x"}])
    return action


def test_update_time_keeps_a_partition_that_receives_a_row_before_the_drop(table_path,
                                                                             monkeypatch):
    # Both old partitions are selected (cutoff 2024-01-01 10:00); before the drop publishes,
    # a writer commits row 4 into 2024-01-01. Under update-time that partition is no longer
    # expired: it and row 4 stay (before, the drop deleted row 4's file: its commit had
    # reported success). 2024-01-02 received nothing and is still dropped.
    t = _two_old_one_new(table_path, monkeypatch)
    _after_selection(monkeypatch, _late_row(table_path, monkeypatch, 4, "2024-01-01"))
    r = expirer(t, Clock(local(2024, 1, 2, 10)), expiration_time_ms="1 d",
                strategy="update-time").expire()
    assert _read_ids(table_path) == [1, 3, 4]
    assert r.expired_partitions == [{"dt": "2024-01-02"}]
    assert r.kept_new_data == [{"dt": "2024-01-01"}]
    assert r.to_dict()["kept_new_data"] == [{"dt": "2024-01-01"}]
    assert ids(table_path) == [1, 3, 4]   # pypaimon agrees
    # Nothing is expired any more by update time.
    again = expirer(t, Clock(local(2024, 1, 2, 10)), expiration_time_ms="1 d",
                    strategy="update-time").expire(dry_run=True)
    assert again.expired_partitions == []


def test_update_time_judges_again_on_a_drop_attempt_that_lost_a_race(table_path,
                                                                       monkeypatch):
    # The late row lands after the drop's first attempt chose its files, before it published:
    # that attempt loses the race, and the next one, judging again, keeps the partition.
    t = _two_old_one_new(table_path, monkeypatch)
    real = FileStoreCommit.remove_files
    late = _late_row(table_path, monkeypatch, 4, "2024-01-01")
    attempts = []

    def remove_files(self, pick, commit_identifier=None):
        def hooked(latest, live):
            out = pick(latest, live)
            attempts.append(len(out))
            if len(attempts) == 1:
                late()
            return out
        return real(self, hooked, commit_identifier)
    monkeypatch.setattr(FileStoreCommit, "remove_files", remove_files)
    r = expirer(t, Clock(local(2024, 1, 2, 10)), expiration_time_ms="1 d",
                strategy="update-time").expire()
    assert attempts == [2, 1]   # both partitions' files, then only 2024-01-02's
    assert _read_ids(table_path) == [1, 3, 4]
    assert r.expired_partitions == [{"dt": "2024-01-02"}]
    assert r.kept_new_data == [{"dt": "2024-01-01"}]


def test_update_time_all_selected_partitions_receiving_rows_publishes_nothing(table_path,
                                                                              monkeypatch):
    t = _two_old_one_new(table_path, monkeypatch)

    def both():
        _late_row(table_path, monkeypatch, 4, "2024-01-01")()
        _late_row(table_path, monkeypatch, 5, "2024-01-02")()
    latest = None

    def remember():
        nonlocal latest
        both()
        latest = t.latest_snapshot().id
    _after_selection(monkeypatch, remember)
    r = expirer(t, Clock(local(2024, 1, 2, 10)), expiration_time_ms="1 d",
                strategy="update-time").expire()
    assert r.checked and r.expired_partitions == [] and r.snapshot_ids == []
    assert r.kept_new_data == [{"dt": "2024-01-01"}, {"dt": "2024-01-02"}]
    assert t.latest_snapshot().id == latest
    assert _read_ids(table_path) == [1, 2, 3, 4, 5]


def test_post_commit_update_time_expiration_keeps_a_partition_receiving_a_row(table_path,
                                                                               monkeypatch):
    # Post-commit expiration runs the same `_expire`: another writer's row committed between
    # its selection and its drop keeps that partition.
    t = create(table_path, STR_SCHEMA, ["dt"], **{
        "partition.expiration-time": "1 d", "partition.expiration-strategy": "update-time",
        "partition.expiration-check-interval": "0"})
    real_clock = writer_module.local_millis_as_utc
    old = int((time.time() - 3 * 86400) * 1000)
    monkeypatch.setattr(writer_module, "local_millis_as_utc", lambda: old)
    put(t, STR_SCHEMA, [{"id": 1, "dt": "a", "hour": "x"}, {"id": 2, "dt": "b", "hour": "x"}])
    monkeypatch.setattr(writer_module, "local_millis_as_utc", real_clock)  # real from here on

    def late():
        put(Table.open(str(table_path)), STR_SCHEMA, [{"id": 4, "dt": "a", "hour": "x"}])
    _after_selection(monkeypatch, late)
    with t.new_commit() as c:
        write(t, pa.Table.from_pylist([{"id": 3, "dt": "c", "hour": "x"}], schema=STR_SCHEMA),
              commit=c)
        result = c.last_maintenance.partitions
    assert _read_ids(table_path) == [1, 3, 4]
    assert result.expired_partitions == [{"dt": "b"}]
    assert result.kept_new_data == [{"dt": "a"}]


def test_values_time_drops_a_row_committed_into_an_expired_partition_value(table_path,
                                                                           monkeypatch):
    # values-time expires a partition by its values, whatever its write time: a row committed
    # into 2024-01-01 after the selection is dropped with it, as Paimon does (the policy).
    t = _two_old_one_new(table_path, monkeypatch)
    _after_selection(monkeypatch, _late_row(table_path, monkeypatch, 4, "2024-01-01"))
    r = expirer(t, Clock(local(2024, 1, 3, 10)), expiration_time_ms="1 d").expire()
    assert r.expired_partitions == [{"dt": "2024-01-01"}, {"dt": "2024-01-02"}]
    assert r.kept_new_data == []
    assert _read_ids(table_path) == [3]


def test_cli_text_names_the_partitions_kept_for_new_data(table_path, monkeypatch, capsys):
    from paimon_commit.cli.tables import print_text
    t = _two_old_one_new(table_path, monkeypatch)
    _after_selection(monkeypatch, _late_row(table_path, monkeypatch, 4, "2024-01-01"))
    r = expirer(t, Clock(local(2024, 1, 2, 10)), expiration_time_ms="1 d",
                strategy="update-time").expire()
    print_text("expire-partitions", json.loads(json.dumps(r.to_dict())))
    out = capsys.readouterr().out
    assert "expired partitions: dt=2024-01-02;" in out
    assert "kept: partition dt=2024-01-01 received new data during the run" in out
