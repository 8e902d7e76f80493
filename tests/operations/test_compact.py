"""Compaction of bucket-unaware append tables (issue 18, items 1 and 2), on real directories,
checked with our reader and pypaimon."""
import dataclasses
import json
import os

import pyarrow as pa
import pytest

from conftest import D1, D2, SCHEMA, files_under, make_rows, write
from invariants import assert_intact
from oracle import pp_drop, pp_read, pp_write, rows

from paimon_commit import ExpireConfig, ExpireSnapshots, Table
from paimon_commit.errors import CommitConflictError, OptionError, UnsupportedTableError
from paimon_commit.format.manifest import DataFileMeta, FileKind, ManifestEntry
from paimon_commit.format.schema import DataField
from paimon_commit.operations.compact import (
    AppendCompaction, CompactionConflictError, compact_table,
)
from paimon_commit.operations.compact import CompactOptions, plan_compaction

# Small targets so that a few rows make "small" files; the open-file cost is Paimon's
# 4 MB by default, which would close a bin after every second file of a few kB.
OPTS = {"target-file-size": "64 kb", "source.split.open-file-cost": "1 b"}


def _table(table_path, **options):
    return Table.create(str(table_path), SCHEMA, partition_keys=["dt", "hr"],
                        options={**OPTS, **options})


def _fill(table, n=6, hrs=(1, 2), start=0):
    """n appends per partition (dt=D1, hr in hrs), 10 rows each; returns the ids."""
    ids = []
    i = start
    for _ in range(n):
        for hr in hrs:
            write(table, make_rows(range(i, i + 10), hr=hr))
            ids.extend(range(i, i + 10))
            i += 10
    return ids


def _parquet(table_path, part="dt=19723/hr=1"):
    d = table_path / part / "bucket-0"
    return sorted(n for n in os.listdir(d) if n.endswith(".parquet")) if d.exists() else []


def _snapshot_json(table_path, sid):
    return json.loads((table_path / "snapshot" / f"snapshot-{sid}").read_text())


def _live(table, **partition):
    return sorted(f.file_name for f in table.live_files()
                  if all(f.partition[k] == v for k, v in partition.items()))


def _all_rows(table_path, table):
    return {s.id: rows(pp_read(table_path, snapshot_id=s.id)) for s in table.snapshots()}


# --- the happy path ---------------------------------------------------------------------------
def test_compaction_rewrites_small_files_into_one_compact_snapshot(table_path):
    t = _table(table_path)
    ids = _fill(t, n=6)
    write(t, make_rows([1000, 1001], dt=D2, hr=9))    # one small file: fewer than min-file-num
    before_rows = _all_rows(table_path, t)
    old_h1, old_d2 = _parquet(table_path), _parquet(table_path, "dt=19724/hr=9")
    assert len(old_h1) == 6 and len(old_d2) == 1

    r = compact_table(t)

    assert r.snapshot_id == 14 and r.base_snapshot_id == 13 and not r.dry_run
    assert r.rewritten_files == 12 and r.written_files == 2
    by_hr = {p.partition["hr"]: p for p in r.partitions}
    assert set(by_hr) == {1, 2}                      # dt=D2/hr=9 had too few small files
    assert (by_hr[1].files_before, by_hr[1].files_after, by_hr[1].rewritten_files) == (6, 1, 6)
    assert by_hr[1].bytes_before == sum(os.path.getsize(table_path / "dt=19723/hr=1/bucket-0" / n)
                                        for n in old_h1)
    new_h1 = sorted(set(_parquet(table_path)) - set(old_h1))
    assert len(new_h1) == 1 and by_hr[1].bytes_after == \
        os.path.getsize(table_path / "dt=19723/hr=1/bucket-0" / new_h1[0])
    d = r.to_dict()
    assert d["snapshot_id"] == 14 and d["partitions"][0]["files_after"] == 1
    assert d["message"] == "rewrote 12 small files of 2 partition(s) into 2 in snapshot 14"

    # The snapshot: kind COMPACT, rows unchanged; the old files stay on disk for the older
    # snapshots, the new one is live.
    js = _snapshot_json(table_path, 14)
    assert js["commitKind"] == "COMPACT"
    assert js["totalRecordCount"] == len(ids) + 2 and js["deltaRecordCount"] == 0
    assert _parquet(table_path) == sorted(old_h1 + new_h1)
    t = Table.open(str(table_path))
    assert _live(t, hr=1) == new_h1
    assert _live(t, hr=9) == old_d2
    live = {f.file_name: f.file for f in t.live_files()}
    meta = live[new_h1[0]]
    assert (meta.file_source, meta.row_count, meta.schema_id, meta.level) == (1, 60, 0, 0)
    assert (meta.min_sequence_number, meta.max_sequence_number) == (0, 59)
    delta = t.store.delta_entries(t.snapshot(14))
    assert sorted((e.kind, e.file.file_name) for e in delta if e.file.file_name in
                  set(old_h1 + new_h1)) == sorted([(FileKind.DELETE, n) for n in old_h1]
                                                  + [(FileKind.ADD, new_h1[0])])

    # Rows: identical for us and pypaimon, now and in every earlier snapshot.
    expected = sorted(ids + [1000, 1001])
    assert [x["id"] for x in rows(t.read_arrow())] == expected
    assert [x["id"] for x in rows(pp_read(table_path))] == expected
    assert rows(t.read_arrow()) == rows(pp_read(table_path, snapshot_id=13))
    after_rows = _all_rows(table_path, t)
    assert {k: v for k, v in after_rows.items() if k != 14} == before_rows
    assert_intact(table_path)

    # A second run finds nothing: the new files are not small any more relative to what
    # is left (one file per partition).
    again = compact_table(Table.open(str(table_path)))
    assert again.nothing_to_compact and again.snapshot_id is None
    assert Table.open(str(table_path)).latest_snapshot().id == 14


def test_dry_run_plans_and_writes_nothing(table_path):
    t = _table(table_path)
    _fill(t, n=5, hrs=(1,))
    before = files_under(table_path)
    r = compact_table(t, dry_run=True)
    assert r.dry_run and r.snapshot_id is None
    assert (r.rewritten_files, r.written_files) == (5, 1)
    assert r.to_dict()["estimated"] is True
    assert r.message == "would rewrite 5 small files of 1 partition(s) into about 1"
    assert files_under(table_path) == before
    assert t.latest_snapshot().id == 5


def test_only_small_files_are_compacted(table_path):
    """Files of at least target-file-size * compaction.small-file-ratio stay as they are."""
    t = _table(table_path, **{"target-file-size": "8 kb"})
    write(t, make_rows(range(0, 3000), hr=1))         # one large file (> 0.7 * 8 kb)
    big = _parquet(table_path)
    assert os.path.getsize(table_path / "dt=19723/hr=1/bucket-0" / big[0]) > 0.7 * 8192
    _fill(t, n=5, hrs=(1,), start=10_000)
    r = compact_table(t)
    assert r.rewritten_files == 5 and r.written_files == 1
    t = Table.open(str(table_path))
    assert big[0] in _live(t, hr=1) and len(_live(t, hr=1)) == 2
    assert t.read_arrow().num_rows == 3050


def test_nothing_to_compact_commits_nothing(table_path):
    t = _table(table_path)
    r = compact_table(t)                              # no snapshot at all
    assert r.nothing_to_compact and r.base_snapshot_id is None
    _fill(t, n=4, hrs=(1,))                          # 4 small files < compaction.min.file-num
    before = files_under(table_path)
    r = compact_table(t)
    assert r.nothing_to_compact and r.snapshot_id is None and r.partitions == ()
    assert r.message == f"nothing to compact in {table_path}"
    assert r.to_dict()["nothing_to_compact"] is True
    assert files_under(table_path) == before
    # The same files with a lower minimum (a dynamic option) are compacted.
    r = compact_table(t, options={"compaction.min.file-num": "2"})
    assert r.snapshot_id == 5 and r.rewritten_files == 4


def test_partitions_limit_the_compaction(table_path):
    t = _table(table_path)
    _fill(t, n=5, hrs=(1, 2))
    r = compact_table(t, partitions=[{"hr": 2}])
    assert [p.partition for p in r.partitions] == [{"dt": D1, "hr": 2}]
    t = Table.open(str(table_path))
    assert len(_live(t, hr=1)) == 5 and len(_live(t, hr=2)) == 1


def test_file_num_limit_leaves_the_rest_for_the_next_run(table_path):
    t = _table(table_path, **{"compaction.file-num-limit": "5"})
    _fill(t, n=5, hrs=(1,))                          # 10 small files, 5 per partition
    _fill(t, n=5, hrs=(2,), start=50)
    r = compact_table(t)
    assert r.remaining and r.rewritten_files == 5    # the first 5 in manifest order
    r2 = compact_table(Table.open(str(table_path)))
    # (hr=1's new file is small too: 6 small files, so `remaining` may still be set)
    assert r2.rewritten_files == 5 and r2.partitions[0].partition["hr"] == 2
    t = Table.open(str(table_path))
    assert len(_live(t, hr=1)) == 1 and len(_live(t, hr=2)) == 1
    assert t.read_arrow().num_rows == 100


def _random_rows(ids, hr=1):
    # Random names do not compress: stored sizes follow the row count.
    return pa.Table.from_pylist(
        [{"id": i, "name": os.urandom(48).hex(), "dt": D1, "hr": hr} for i in ids],
        schema=SCHEMA)


def test_big_bins_roll_into_files_of_about_the_target(table_path):
    target = 32 << 10
    t = _table(table_path, **{"target-file-size": "32 kb"})
    for i in range(40):
        write(t, _random_rows(range(i * 100, i * 100 + 100)))
    sizes_in = [os.path.getsize(table_path / "dt=19723/hr=1/bucket-0" / n)
                for n in _parquet(table_path)]
    assert all(s < 0.7 * target for s in sizes_in)
    r = compact_table(t)
    t = Table.open(str(table_path))
    out = [f.file for f in t.live_files()]
    assert r.rewritten_files == 40 and len(out) == r.written_files > 2
    # Files are not small by Paimon's rule (so the next run leaves them), except the one of
    # the last bin (closed with fewer bytes, as Paimon's), nor far beyond the target.
    sizes = sorted(f.file_size for f in out)
    assert all(0.7 * target <= s <= 2 * target for s in sizes[1:]), sizes
    assert compact_table(t).nothing_to_compact
    assert sum(f.row_count for f in out) == 4000
    seqs = sorted((f.min_sequence_number, f.max_sequence_number) for f in out)
    assert seqs[0][0] == 0
    assert sorted(x["id"] for x in pp_read(table_path).to_pylist()) == list(range(4000))


# --- the planner alone ------------------------------------------------------------------------
def _entry(name, size, part=b"p1"):
    return ManifestEntry(FileKind.ADD, part, 0, -1, DataFileMeta(name, size, 1, 0))


def _plan(sizes, limit=100_000, min_num=5, target=100, cost=0, parts=None):
    o = CompactOptions(target, 0.7, min_num, limit, cost)
    entries = [_entry(f"f{i}", s, (parts or {}).get(i, b"p1")) for i, s in enumerate(sizes)]
    return plan_compaction(entries, o, lambda b: (b,), lambda v: True, lambda s: None, 1)


def test_planner_packs_like_paimon():
    # Sorted by size; a bin closes with > 1 file and cost >= 2 * target (200); the rest
    # forms a bin only with >= min-file-num files; files >= 70 (0.7 * 100) are not small.
    p = _plan([60, 69, 70, 5, 50, 90, 40, 45, 3])
    got = [[e.file.file_name for e in t.files] for t in p.tasks]
    assert got == [["f8", "f3", "f6", "f7", "f4", "f0"]]  # 3+5+40+45+50+60 >= 200; f1 left
    assert p.live[b"p1"] == (9, sum([60, 69, 70, 5, 50, 90, 40, 45, 3]))
    p = _plan([10, 10, 50, 60, 65, 69])              # 195 after five: the bin takes all six
    assert [len(t.files) for t in p.tasks] == [6]
    p = _plan([10, 10, 50, 60, 65, 69], cost=4)      # 195 + 5 * 4 >= 200: five; 69 waits
    assert [[e.file.file_name for e in t.files] for t in p.tasks] == \
        [["f0", "f1", "f2", "f3", "f4"]]
    p = _plan([10, 10, 50, 60], cost=4)              # 4 < compaction.min.file-num
    assert p.tasks == ()
    p = _plan([1] * 3, min_num=1)                    # one file alone is never rewritten
    assert [len(t.files) for t in p.tasks] == [3]
    p = _plan([1], min_num=1)
    assert p.tasks == ()


def test_planner_limits_files_per_run_and_keeps_partitions_apart():
    p = _plan([1] * 12, limit=10, parts={i: b"p2" for i in range(6, 12)})
    assert p.remaining
    # The first 10 small files in manifest order: 6 of p1 (a task), 4 of p2 (too few).
    assert [(t.partition, len(t.files)) for t in p.tasks] == [(b"p1", 6)]
    assert p.live[b"p2"] == (6, 6)
    assert not _plan([1] * 10, limit=10).remaining


# --- bad input --------------------------------------------------------------------------------
@pytest.mark.parametrize("options, message", [
    ({"target-file-size": "big"}, "option 'target-file-size': invalid memory size 'big'"),
    ({"target-file-size": "0 b"}, "option 'target-file-size' = '0 b': must be >= 1"),
    ({"compaction.min.file-num": "0"}, "option 'compaction.min.file-num' = '0': must be >= 1"),
    ({"compaction.small-file-ratio": "2"},
     "option 'compaction.small-file-ratio' = '2': must be > 0 and <= 1"),
    ({"compaction.file-num-limit": "x"},
     "option 'compaction.file-num-limit': expected an integer, got 'x'"),
])
def test_bad_options_are_refused_before_any_io(table_path, options, message):
    t = _table(table_path)
    _fill(t, n=5, hrs=(1,))
    before = files_under(table_path)
    with pytest.raises(OptionError) as e:
        compact_table(t, options=options)
    assert message in str(e.value)
    assert files_under(table_path) == before
    with pytest.raises(OptionError, match=message.replace("(", r"\(").replace(")", r"\)")):
        AppendCompaction(dataclasses.replace(t.store, io=_NoIO()), options=options)


class _NoIO:
    """A storage whose every use fails the test: validation must come before any I/O."""

    def __getattr__(self, name):
        raise AssertionError(f"I/O before validation: {name}")


@pytest.mark.parametrize("partitions, message", [
    ({"hr": 1}, "partitions must be a list of partition specs (dicts), got {'hr': 1}"),
    ([], "partitions is empty"),
    ([{"nope": 1}], "bad partition spec {'nope': 1} for table"),
    ([{"hr": "one"}], "bad partition spec {'hr': 'one'} for table"),
])
def test_bad_partition_specs_are_refused_before_any_io(table_path, partitions, message):
    t = _table(table_path)
    _fill(t, n=5, hrs=(1,))
    store = dataclasses.replace(t.store, io=_NoIO())
    with pytest.raises(OptionError) as e:
        AppendCompaction(store, partitions)
    assert message in str(e.value)


def test_unknown_partition_is_an_error_naming_it(table_path):
    t = _table(table_path)
    _fill(t, n=5, hrs=(1,))
    with pytest.raises(OptionError, match=r"no data files in partition\(s\) hr=7 "
                                          r"in snapshot 5"):
        compact_table(t, partitions=[{"hr": 1}, {"hr": 7}])
    assert t.latest_snapshot().id == 5


def test_tables_we_do_not_write_are_refused_before_any_io(table_path):
    t = _table(table_path)
    _fill(t, n=5, hrs=(1,))
    old = t.schema
    pk = dataclasses.replace(old, id=1, primary_keys=("id", "dt", "hr"))
    (table_path / "schema" / "schema-1").write_bytes(pk.to_json())
    before = files_under(table_path)
    with pytest.raises(UnsupportedTableError,
                       match=f"cannot write to {table_path}: it is a primary-key table"):
        compact_table(str(table_path))
    assert files_under(table_path) == before


# --- failures and conflicts -------------------------------------------------------------------
def _planned(table_path, **kw):
    """A compaction planned and rewritten, not committed yet: the rival runs in between."""
    job = AppendCompaction(Table.open(str(table_path)).store, **kw)
    plan = job.plan()
    rewritten = job.rewrite(plan)
    assert rewritten and all(os.path.exists(p) for r in rewritten for p in r.paths)
    return job, plan, rewritten


@pytest.mark.parametrize("rival", ["drop", "overwrite", "compaction", "rollback"])
def test_compaction_losing_its_inputs_fails_and_leaves_nothing(table_path, rival):
    t = _table(table_path)
    _fill(t, n=5, hrs=(1, 2))
    job, plan, rewritten = _planned(table_path)
    written = [p for r in rewritten for p in r.paths]
    if rival == "drop":
        pp_drop(table_path, [{"dt": D1, "hr": 1}])
        gone = 5
    elif rival == "overwrite":
        pp_write(table_path, make_rows([500], hr=2), overwrite={"dt": D1, "hr": 2})
        gone = 5
    elif rival == "compaction":
        assert compact_table(Table.open(str(table_path)), partitions=[{"hr": 1}]).snapshot_id
        gone = 5
    else:
        write(t, make_rows([900], hr=3))
        t.rollback_to(3)
        gone = 7
    rival_state = files_under(table_path)
    latest = Table.open(str(table_path)).latest_snapshot()
    expected_rows = rows(pp_read(table_path))

    with pytest.raises(CompactionConflictError) as e:
        job.commit(plan, rewritten)
    msg = str(e.value)
    assert f"{gone} of its 10 input files are no longer live in snapshot {latest.id}" in msg
    assert f"deleted the {len(written)} file(s) it wrote" in msg
    assert len(e.value.moved_files) == gone
    assert all(p.endswith(".parquet") and str(table_path) in p for p in e.value.moved_files)
    assert isinstance(e.value, CommitConflictError)
    # Nothing of ours is left; the rival's table is untouched.
    assert not any(os.path.exists(p) for p in written)
    assert files_under(table_path) == sorted(set(rival_state) - {
        os.path.relpath(p, table_path) for p in written})
    assert Table.open(str(table_path)).latest_snapshot().id == latest.id
    assert rows(pp_read(table_path)) == expected_rows
    assert_intact(table_path)


def test_append_racing_with_a_compaction_both_land(table_path):
    t = _table(table_path)
    ids = _fill(t, n=5, hrs=(1,))
    job, plan, rewritten = _planned(table_path)
    sid = write(t, make_rows([777, 778], hr=1))      # the racing append, same partition
    racer = sorted(set(_live(Table.open(str(table_path)), hr=1)) - {
        e.file.file_name for e in plan.tasks[0].files})
    c = job.commit(plan, rewritten)
    assert c.snapshot_id == sid + 1
    t = Table.open(str(table_path))
    assert t.snapshot(c.snapshot_id).commit_kind == "COMPACT"
    assert _live(t, hr=1) == sorted(racer + [f.file_name for r in rewritten for f in r.files])
    assert [x["id"] for x in rows(pp_read(table_path))] == sorted(ids + [777, 778])
    assert [x["id"] for x in rows(t.read_arrow())] == sorted(ids + [777, 778])
    assert_intact(table_path)


def test_compactions_of_different_partitions_both_land(table_path):
    t = _table(table_path)
    ids = _fill(t, n=5, hrs=(1, 2))
    a = _planned(table_path, partitions=[{"hr": 1}])
    b = _planned(table_path, partitions=[{"hr": 2}])
    assert a[0].commit(a[1], a[2]).snapshot_id == 11
    assert b[0].commit(b[1], b[2]).snapshot_id == 12
    t = Table.open(str(table_path))
    assert len(_live(t, hr=1)) == 1 and len(_live(t, hr=2)) == 1
    assert [x["id"] for x in rows(pp_read(table_path))] == sorted(ids)
    assert_intact(table_path)


def test_a_rewrite_that_fails_deletes_what_it_wrote(table_path):
    t = _table(table_path)
    _fill(t, n=5, hrs=(1, 2))
    job = AppendCompaction(t.store)
    plan = job.plan()
    # The last file of the second bin is unreadable: the first bin is written by then.
    victim = t.store.data_file_path(sorted(
        plan.tasks[1].files, key=lambda e: e.file.creation_time)[-1])
    with open(victim, "wb") as f:
        f.write(b"not parquet")
    before = files_under(table_path)
    with pytest.raises(Exception):
        job.rewrite(plan)
    assert files_under(table_path) == before
    assert t.latest_snapshot().id == 10


def test_an_input_file_vanishing_during_the_rewrite_is_a_conflict(table_path):
    t = _table(table_path)
    _fill(t, n=5, hrs=(1,))
    job = AppendCompaction(t.store)
    plan = job.plan()
    victim = t.store.data_file_path(plan.tasks[0].files[-1])
    os.remove(victim)
    before = files_under(table_path)
    with pytest.raises(CompactionConflictError, match=f"input file {victim} disappeared"):
        job.rewrite(plan)
    assert files_under(table_path) == before


# --- the lifecycle ----------------------------------------------------------------------------
def test_expiration_reclaims_the_small_files_once_no_snapshot_uses_them(table_path):
    t = _table(table_path)
    ids = _fill(t, n=5, hrs=(1,))
    old = _parquet(table_path)
    t.create_tag("before", 3)
    r = compact_table(t)
    new = sorted(set(_parquet(table_path)) - set(old))
    cfg = ExpireConfig(retain_min=1, retain_max=1, time_retained_ms=0, max_deletes=100)
    ExpireSnapshots(Table.open(str(table_path)).store, cfg).expire()
    # The tag still holds snapshot 3's files (the first three appends); the rest are gone.
    t = Table.open(str(table_path))
    tagged = sorted(f.file_name for f in t.live_files(tag="before"))
    assert [s.id for s in t.snapshots()] == [r.snapshot_id]
    assert _parquet(table_path) == sorted(tagged + new)
    t.delete_tag("before")
    assert _parquet(table_path) == new
    assert [x["id"] for x in rows(pp_read(table_path))] == sorted(ids)
    assert_intact(table_path)


def test_files_of_older_schemas_are_read_by_field_id(table_path):
    t = _table(table_path)
    ids = _fill(t, n=5, hrs=(1,))
    old = t.schema
    # ALTER TABLE: rename name -> label (same field id), add a nullable column.
    fields = tuple(dataclasses.replace(f, name="label") if f.name == "name" else f
                   for f in old.fields) + (DataField(old.highest_field_id + 1, "extra", "INT"),)
    new = dataclasses.replace(old, id=1, fields=fields, highest_field_id=old.highest_field_id + 1)
    (table_path / "schema" / "schema-1").write_bytes(new.to_json())
    t = Table.open(str(table_path))
    r = compact_table(t)
    assert r.rewritten_files == 5
    t = Table.open(str(table_path))
    (meta,) = [f.file for f in t.live_files()]
    assert meta.schema_id == 1
    got = rows(t.read_arrow())
    assert [x["id"] for x in got] == sorted(ids)
    assert all(x["label"] == f"n{x['id']}" and x["extra"] is None for x in got)
    assert rows(pp_read(table_path)) == got


def test_files_whose_column_type_changed_are_left_alone(table_path):
    t = _table(table_path)
    _fill(t, n=5, hrs=(1,))
    old = t.schema
    fields = tuple(dataclasses.replace(f, type="DOUBLE") if f.name == "id" else f
                   for f in old.fields)
    new = dataclasses.replace(old, id=1, fields=fields)
    (table_path / "schema" / "schema-1").write_bytes(new.to_json())
    r = compact_table(Table.open(str(table_path)))
    assert r.nothing_to_compact and len(r.skipped) == 5
    assert "column 'id' changed type from BIGINT to DOUBLE since schema 0" in r.skipped[0][1]


def test_a_publish_failing_with_io_errors_keeps_the_new_files(table_path, monkeypatch):
    """The outcome of a failed publish may be unknown: the new files are kept (orphan
    cleanup removes them if no snapshot uses them) rather than deleted under a snapshot
    that may have landed."""
    t = _table(table_path, **{"commit.max-retries": "1", "commit.min-retry-wait": "1 ms",
                              "commit.max-retry-wait": "2 ms"})
    ids = _fill(t, n=5, hrs=(1,))
    job, plan, rewritten = _planned(table_path)

    def refuse(*args, **kwargs):
        raise OSError("storage unavailable")

    monkeypatch.setattr(job.store.snapshots, "try_commit", refuse)
    with pytest.raises(Exception, match="storage unavailable"):
        job.commit(plan, rewritten)
    monkeypatch.undo()
    assert all(os.path.exists(p) for r in rewritten for p in r.paths)
    t = Table.open(str(table_path))
    assert t.latest_snapshot().id == 5
    assert [x["id"] for x in rows(pp_read(table_path))] == sorted(ids)


def test_write_only_tables_are_compacted_on_request(table_path):
    """write-only turns off compaction *after commits* (Paimon: dedicated compact jobs run
    on such tables); an explicit compaction still runs."""
    t = _table(table_path, **{"write-only": "true"})
    _fill(t, n=5, hrs=(1,))
    assert compact_table(t).snapshot_id == 6
