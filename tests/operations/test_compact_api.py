"""The entry points of compaction (issue 18, item 3 without Spark): Table.compact, the options,
compaction after commits (compaction.post-commit.enabled) and warehouse maintenance with
compact=True. Real directories; rows checked with our reader and pypaimon."""
import dataclasses
import json
import os

import pytest

from conftest import D1, SCHEMA, files_under, make_rows, write
from invariants import assert_intact
from oracle import pp_read, rows

from paimon_commit import Table
from paimon_commit.errors import OptionError, UnsupportedTableError
from paimon_commit.operations.compact import AppendCompaction
from paimon_commit.table_commit import MaintenanceError
from paimon_commit.warehouse import maintain_table, maintain_warehouse

# Small targets so that a few rows make "small" files (the 4 MB open-file cost would close
# a bin after every second file of a few kB).
OPTS = {"target-file-size": "64 kb", "source.split.open-file-cost": "1 b"}
AUTO = {**OPTS, "compaction.post-commit.enabled": "true", "compaction.min.file-num": "3"}


def _table(path, **options):
    return Table.create(str(path), SCHEMA, ["dt", "hr"], {**OPTS, **options})


def _fill(t, n, hrs=(1, 2), start=0):
    ids, i = [], start
    for _ in range(n):
        for hr in hrs:
            write(t, make_rows(range(i, i + 10), hr=hr))
            ids.extend(range(i, i + 10))
            i += 10
    return ids


def _parquet(path):
    return sorted(f for f in files_under(path) if f.endswith(".parquet"))


def _live(t, **partition):
    return sorted(f.file_name for f in t.live_files()
                  if all(f.partition[k] == v for k, v in partition.items()))


def _by_snapshot(path):
    t = Table.open(str(path))
    return {s.id: rows(pp_read(path, snapshot_id=s.id)) for s in t.snapshots()}


def _kinds(t):
    return [s.commit_kind for s in Table.open(t.path).snapshots()]


# --- Table.compact --------------------------------------------------------------------------
def test_table_compact_returns_what_it_did_and_changes_no_row(table_path):
    t = _table(table_path)
    ids = _fill(t, 5)
    before = _by_snapshot(table_path)
    sizes = {f.file_name: f.file_size for f in t.live_files()}

    r = t.compact(partitions=[{"dt": D1, "hr": 1}])

    assert (r.base_snapshot_id, r.snapshot_id, r.dry_run) == (10, 11, False)
    [p] = r.partitions
    assert p.partition == {"dt": D1, "hr": 1}
    new = _live(Table.open(str(table_path)), hr=1)
    assert len(new) == 1 and new[0] not in sizes
    on_disk = os.path.getsize(table_path / "dt=19723" / "hr=1" / "bucket-0" / new[0])
    assert (p.files_before, p.files_after) == (5, 1)
    assert p.bytes_before == sum(f.file_size for f in t.live_files(10) if f.partition["hr"] == 1)
    assert p.bytes_after == on_disk
    assert set(r.seconds) == {"plan", "rewrite", "commit", "total"}
    d = r.to_dict()
    assert d["message"] == "rewrote 5 small files of 1 partition(s) into 1 in snapshot 11"
    assert d["partitions"] == [{"partition": {"dt": "2024-01-01", "hr": 1}, "tasks": 1,
                                "files_before": 5, "files_after": 1,
                                "bytes_before": p.bytes_before, "bytes_after": on_disk,
                                "rewritten_files": 5, "rewritten_bytes": p.bytes_before,
                                "written_files": 1, "written_bytes": on_disk}]
    json.dumps(d)
    assert _live(Table.open(str(table_path)), hr=2) == \
        sorted(f.file_name for f in t.live_files(10) if f.partition["hr"] == 2)
    # Every row as before, for pypaimon too, in every snapshot.
    after = _by_snapshot(table_path)
    assert after.pop(11) == before[10]
    assert after == before
    assert [x["id"] for x in rows(pp_read(table_path))] == sorted(ids)
    assert_intact(table_path)


def test_partition_specs_as_for_drop_partitions(table_path):
    t = _table(table_path)
    _fill(t, 5, hrs=(1, 2, None))
    # A partial spec selects every partition below it; None means NULL.
    r = t.compact(partitions=[{"hr": None}])
    assert [p.partition for p in r.partitions] == [{"dt": D1, "hr": None}]
    r = t.compact(partitions=[{"dt": D1}])
    assert sorted(p.partition["hr"] for p in r.partitions) == [1, 2]
    with pytest.raises(OptionError, match=r"^partitions must be a list of partition specs "
                                          r"\(dicts\), got \{'hr': 1\}$"):
        t.compact(partitions={"hr": 1})
    assert _kinds(t).count("COMPACT") == 2


def test_string_partitions_and_the_date_type_refusal(tmp_path, table_path):
    import pyarrow as pa
    schema = pa.schema([("id", pa.int64()), ("dt", pa.string())])
    path = tmp_path / "wh" / "db.db" / "s"
    t = Table.create(str(path), schema, ["dt"], OPTS)
    for i in range(5):
        write(t, pa.Table.from_pylist([{"id": i, "dt": "2024-01-01"}], schema=schema))
    events = []
    r = t.compact(partitions=[{"dt": "2024-01-01"}], progress=events.append)
    assert [p.partition for p in r.partitions] == [{"dt": "2024-01-01"}]
    assert r.snapshot_id == 6
    assert [(e.phase, e.done, e.total) for e in events] == [
        ("reading metadata", 0, None), ("compacting", 0, 5), ("compacting", 5, 5),
        ("committing", 0, 1)]
    # A DATE partition takes a date, as drop_partitions does: the error says so.
    d = _table(table_path)
    _fill(d, 5, hrs=(1,))
    with pytest.raises(OptionError) as e:
        d.compact(partitions=[{"dt": "2024-01-01"}])
    assert str(e.value) == (f"bad partition spec {{'dt': '2024-01-01'}} for table "
                            f"{table_path}: partition key 'dt' expects DATE, got "
                            f"'2024-01-01' (str)")


def test_dry_run_writes_nothing(table_path):
    t = _table(table_path)
    _fill(t, 5)
    before = files_under(table_path)
    r = t.compact(dry_run=True)
    assert r.dry_run and r.snapshot_id is None and r.rewritten_files == 10
    assert r.message == "would rewrite 10 small files of 2 partition(s) into about 2"
    assert files_under(table_path) == before


# --- options ----------------------------------------------------------------------------------
@pytest.mark.parametrize("options, message", [
    ({"target-file-size": "big"},
     "option 'target-file-size': invalid memory size 'big' (expected e.g. '8 mb')"),
    ({"compaction.min.file-num": "0"}, "option 'compaction.min.file-num' = '0': must be >= 1"),
    ({"compaction.small-file-ratio": "1.5"},
     "option 'compaction.small-file-ratio' = '1.5': must be > 0 and <= 1"),
    ({"compaction.file-num-limit": "many"},
     "option 'compaction.file-num-limit': expected an integer, got 'many'"),
    ({"source.split.open-file-cost": "-1 mb"},
     "option 'source.split.open-file-cost': invalid memory size '-1 mb' (expected e.g. "
     "'8 mb')"),
    ({"compaction.post-commit.enabled": "yes"},
     "option 'compaction.post-commit.enabled': expected 'true' or 'false', got 'yes'"),
])
def test_bad_compaction_options_are_refused_before_any_io(tmp_path, table_path, options,
                                                          message):
    # At creation: nothing is created.
    with pytest.raises(OptionError) as e:
        Table.create(str(tmp_path / "wh" / "db.db" / "new"), SCHEMA, ["dt"], options)
    assert str(e.value) == message
    assert not (tmp_path / "wh" / "db.db" / "new").exists()
    # As commit options and as dynamic options of a compaction: nothing is touched.
    t = _table(table_path)
    _fill(t, 5, hrs=(1,))
    before = files_under(table_path)
    with pytest.raises(OptionError) as e:
        t.new_commit(options=options)
    assert str(e.value) == message
    with pytest.raises(OptionError) as e:
        t.compact(options=options)
    assert str(e.value) == f"compaction of {table_path}: {message}"
    assert files_under(table_path) == before


def test_a_primary_key_table_is_refused_with_the_writers_message(table_path):
    t = _table(table_path)
    _fill(t, 5, hrs=(1,))
    pk = dataclasses.replace(t.schema, id=1, primary_keys=("id", "dt", "hr"))
    (table_path / "schema" / "schema-1").write_bytes(pk.to_json())
    t = Table.open(str(table_path))
    before = files_under(table_path)
    with pytest.raises(UnsupportedTableError) as writer:
        t.new_writer()
    with pytest.raises(UnsupportedTableError) as compaction:
        t.compact()
    assert str(compaction.value) == str(writer.value)
    assert str(writer.value).startswith(f"cannot write to {table_path}: it is a primary-key "
                                        f"table")
    with pytest.raises(UnsupportedTableError) as e:
        t.new_commit(options={"compaction.post-commit.enabled": "true"})
    assert str(e.value) == f"option 'compaction.post-commit.enabled' = 'true': {writer.value}"
    t.new_commit().close()   # maintenance of such a table goes on without compaction
    assert files_under(table_path) == before


# --- after commits ----------------------------------------------------------------------------
def _commit_rows(t, c, ids, identifier, hr=1):
    w = t.new_writer()
    w.write_arrow(make_rows(ids, hr=hr))
    return c.commit(w.prepare_commit(), identifier)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_post_commit_compaction_compacts_the_partitions_a_commit_wrote(table_path, mode):
    t = _table(table_path, **{"compaction.min.file-num": "3",
                              "snapshot.expire.execution-mode": mode})
    other = _fill(t, 4, hrs=(2,))            # hr=2: 4 small files, not written below
    hr2 = _live(t, hr=2)
    with t.new_commit(options={"compaction.post-commit.enabled": "true"}) as c:
        for i in range(3):
            _commit_rows(t, c, range(100 + 10 * i, 110 + 10 * i), i + 1)
            assert c.wait_for_maintenance(60)
            if i < 2:   # fewer than compaction.min.file-num small files: nothing yet
                assert c.last_maintenance.compaction.nothing_to_compact
    m = c.last_maintenance
    assert c.maintenance_error is None and m.compaction_conflict is None
    assert m.compaction.snapshot_id == 8 and m.compaction.rewritten_files == 3
    t = Table.open(str(table_path))
    assert _kinds(t) == ["APPEND"] * 7 + ["COMPACT"]
    assert len(_live(t, hr=1)) == 1 and _live(t, hr=2) == hr2
    before = _by_snapshot(table_path)
    assert before[8] == before[7]
    ids = other + list(range(100, 130))
    assert [x["id"] for x in rows(pp_read(table_path))] == sorted(ids)
    assert [x["id"] for x in rows(t.read_arrow())] == sorted(ids)
    assert_intact(table_path)


@pytest.mark.parametrize("options", [{}, {"compaction.post-commit.enabled": "false"},
                                     {"compaction.post-commit.enabled": "true",
                                      "write-only": "true"}])
def test_no_compaction_after_commits_unless_asked_and_never_write_only(table_path, options):
    t = _table(table_path, **{"compaction.min.file-num": "2"})
    with t.new_commit(options=options) as c:
        for i in range(4):
            _commit_rows(t, c, [i], i + 1)
    assert c.compaction is False
    assert _kinds(t) == ["APPEND"] * 4 and len(_live(t)) == 4


def test_table_option_turns_post_commit_compaction_on(table_path):
    t = _table(table_path, **AUTO)
    for i in range(3):
        write(t, make_rows([i]))             # one-shot batch commits: inline
    assert _kinds(t) == ["APPEND"] * 3 + ["COMPACT"]
    assert [x["id"] for x in rows(pp_read(table_path))] == [0, 1, 2]


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_failing_post_commit_compaction_is_parked_in_the_error_slot(table_path, mode):
    t = _table(table_path, **AUTO, **{"snapshot.expire.execution-mode": mode})
    with t.new_commit(options={"write-only": "true"}) as c:
        for i in range(2):
            _commit_rows(t, c, [i], i + 1)
    # A damaged small file: the rewrite cannot read it.
    [damaged] = [f for f in t.live_files() if f.row_count == 1][:1]
    with open(damaged.path, "r+b") as f:
        f.seek(0)
        f.write(b"not parquet")
    before = _parquet(table_path)
    c = t.new_commit(commit_user="job")
    sid = _commit_rows(t, c, [2], 3)        # publishes; then compaction fails
    c.wait_for_maintenance(60)
    assert sid == 3 and c.maintenance_error is not None
    # The rewrite deleted what it wrote: only the commit's own file is new.
    assert set(_parquet(table_path)) - set(before) == \
        {os.path.relpath(f.path, table_path) for f in t.live_files(3)} - \
        {os.path.relpath(f.path, table_path) for f in t.live_files(2)}
    with pytest.raises(MaintenanceError, match=r"^post-commit maintenance of .* failed earlier: "
                                               r".*\(nothing was committed by this call"):
        _commit_rows(t, c, [4], 4)
    c.close()
    t = Table.open(str(table_path))
    assert _kinds(t) == ["APPEND"] * 3      # no COMPACT, and the refused call published nothing


def test_a_post_commit_compaction_losing_a_conflict_is_no_error(table_path, monkeypatch):
    t = _table(table_path, **AUTO)
    with t.new_commit(options={"write-only": "true"}) as c:
        for i in range(2):
            _commit_rows(t, c, [i], i + 1)
    real = AppendCompaction.rewrite

    def rewrite_then_a_rival_drops_the_partition(self, plan):
        out = real(self, plan)
        with Table.open(str(table_path)).new_commit(options={"write-only": "true"}) as rival:
            rival.drop_partitions([{"hr": 1}])
        return out
    monkeypatch.setattr(AppendCompaction, "rewrite", rewrite_then_a_rival_drops_the_partition)
    before = _parquet(table_path)
    with t.new_commit(commit_user="job") as c:
        _commit_rows(t, c, [2], 3)
        m = c.last_maintenance
        assert c.maintenance_error is None and m.compaction is None
        assert m.compaction_conflict.startswith(f"compaction of {table_path} conflicts: 3 of "
                                                f"its 3 input files are no longer live")
        assert m.compaction_conflict.endswith("deleted the 1 file(s) it wrote")
        monkeypatch.setattr(AppendCompaction, "rewrite", real)
        assert _commit_rows(t, c, [3], 4) == 5   # the next commit goes on
    assert _kinds(t) == ["APPEND"] * 3 + ["OVERWRITE", "APPEND"]
    assert len(set(_parquet(table_path)) - set(before)) == 2   # the two commits' files only
    assert [x["id"] for x in rows(pp_read(table_path))] == [3]


# --- warehouse maintenance --------------------------------------------------------------------
def _pk_table(path):
    t = _table(path)
    _fill(t, 1, hrs=(1,))
    pk = dataclasses.replace(t.schema, id=1, primary_keys=("id", "dt", "hr"))
    (path / "schema" / "schema-1").write_bytes(pk.to_json())


@pytest.mark.parametrize("workers", ["process", "thread"])
def test_maintain_compacts_before_expiration_frees_the_small_files(tmp_path, workers):
    wh = tmp_path / "wh"
    eager = {"snapshot.num-retained.min": "1", "snapshot.time-retained": "0 ms",
             "snapshot.expire.limit": "100"}
    a = _table(wh / "db.db" / "a", **eager, **{"write-only": "true"})
    ids = _fill(a, 5)
    small = _parquet(wh / "db.db" / "a")
    _pk_table(wh / "db.db" / "pk")
    untouched = files_under(wh / "db.db" / "pk")

    results = {r.table: r for r in maintain_warehouse(str(wh), compact=True, parallelism=2,
                                                      workers=workers)}

    ra, rpk = results["db.a"], results["db.pk"]
    assert (ra.status, ra.compacted_files, ra.compact_snapshot_id) == ("ok", 10, 11)
    assert ra.to_dict()["steps"]["compaction"]["snapshot_id"] == 11
    # Compaction ran first: the expiration of the same run deleted the small files.
    assert ra.snapshots_expired == 10
    assert not set(small) & set(_parquet(wh / "db.db" / "a"))
    assert len(_parquet(wh / "db.db" / "a")) == 2
    assert [x["id"] for x in rows(pp_read(wh / "db.db" / "a"))] == sorted(ids)
    assert_intact(wh / "db.db" / "a")
    # The primary-key table is maintained, not compacted, and says why.
    assert rpk.status == "ok" and rpk.compacted_files == 0
    assert rpk.warnings == [f"not compacted: cannot write to {wh / 'db.db' / 'pk'}: it is a "
                            f"primary-key table (dynamic bucket) (primary keys: id, dt, hr); "
                            f"this library "
                            f"writes only bucket-unaware append tables. Write with Paimon "
                            f"(Flink, Spark, Java); maintenance works on every kind"]
    assert files_under(wh / "db.db" / "pk") == untouched


def test_maintain_without_compact_and_dry_run_compact_change_nothing(tmp_path):
    path = tmp_path / "wh" / "db.db" / "a"
    a = _table(path, **{"write-only": "true"})
    _fill(a, 5)
    before = files_under(path)
    r = maintain_table(str(path))
    assert r.status == "ok" and "compaction" not in r.steps and r.compacted_files == 0
    r = maintain_table(str(path), compact=True, dry_run=True)
    assert r.status == "ok" and r.compacted_files == 10 and r.compact_snapshot_id is None
    assert r.steps["compaction"]["message"] == \
        "would rewrite 10 small files of 2 partition(s) into about 2"
    assert files_under(path) == before


def test_maintain_fails_a_table_whose_compaction_lost_a_conflict_after_the_other_steps(
        tmp_path, monkeypatch):
    path = tmp_path / "wh" / "db.db" / "a"
    a = _table(path, **{"write-only": "true", "snapshot.num-retained.min": "1",
                        "snapshot.time-retained": "0 ms", "snapshot.expire.limit": "100"})
    _fill(a, 5, hrs=(1,))
    real = AppendCompaction.rewrite

    def rewrite_then_a_rival_drops_the_partition(self, plan):
        out = real(self, plan)
        with Table.open(str(path)).new_commit() as rival:
            rival.drop_partitions([{"hr": 1}])
        return out
    monkeypatch.setattr(AppendCompaction, "rewrite", rewrite_then_a_rival_drops_the_partition)
    r = maintain_table(str(path), "db.a", compact=True)
    assert r.status == "failed"
    assert r.reason.startswith(f"compaction: compaction of {path} conflicts: 5 of its 5 input "
                               f"files are no longer live in snapshot 6")
    assert r.snapshots_expired == 5          # the expiration still ran
    assert _parquet(path) == []              # nothing of the compaction is left
    assert_intact(path)
