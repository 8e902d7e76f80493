"""`paimon-commit compact` and `maintain --compact`: exit codes (0 done or nothing to do, 2 bad
input with nothing touched, 1 a lost conflict with nothing left behind), the exact messages,
--json, and the progress bar on a terminal only."""
import dataclasses
import json
import os
import sys

import pytest

from conftest import SCHEMA, files_under, make_rows, without_bill, write
from invariants import assert_intact
from oracle import pp_read, rows
from .test_progress import _run_on_pty

from paimon_commit import Table
from paimon_commit.cli import main
from paimon_commit.operations.compact import AppendCompaction

OPTS = {"target-file-size": "64 kb", "source.split.open-file-cost": "1 b"}


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, without_bill(out), err


@pytest.fixture
def small_files(table_path):
    """5 one-commit files in each of dt=2024-01-01/hr=1 and hr=2 (snapshots 1-10)."""
    t = Table.create(str(table_path), SCHEMA, ["dt", "hr"], OPTS)
    for i in range(5):
        for hr in (1, 2):
            write(t, make_rows(range(10 * i, 10 * i + 10), hr=hr))
    return t


def _parquet(path):
    return sorted(f for f in files_under(path) if f.endswith(".parquet"))


def test_compact_prints_what_it_did(capsys, small_files, table_path):
    before = _parquet(table_path)
    code, out, err = run(capsys, "compact", table_path, "--partition", "hr=1")
    assert code == 0, err
    t = Table.open(str(table_path))
    new = [f for f in t.live_files() if f.partition["hr"] == 1]
    assert len(new) == 1 and t.latest_snapshot().commit_kind == "COMPACT"
    in_bytes = sum(f.file_size for f in t.live_files(10) if f.partition["hr"] == 1)
    assert out == ("rewrote 5 small files of 1 partition(s) into 1 in snapshot 11\n"
                   f"  dt=2024-01-01,hr=1: 5 file(s), {in_bytes} bytes -> 1 file(s), "
                   f"{new[0].file_size} bytes\n")
    assert set(_parquet(table_path)) - set(before) == \
        {os.path.relpath(new[0].path, table_path)}
    by = ("hr", "id")
    assert rows(pp_read(table_path), by) == rows(pp_read(table_path, snapshot_id=10), by)
    assert_intact(table_path)


def test_compact_json_and_dry_run(capsys, small_files, table_path):
    before = files_under(table_path)
    code, out, err = run(capsys, "compact", table_path, "--dry-run", "--json")
    assert code == 0, err
    r = json.loads(out)
    assert (r["dry_run"], r["snapshot_id"], r["rewritten_files"], r["conflict"]) == \
        (True, None, 10, False)
    assert [p["partition"] for p in r["partitions"]] == \
        [{"dt": "2024-01-01", "hr": 1}, {"dt": "2024-01-01", "hr": 2}]
    assert files_under(table_path) == before
    code, out, err = run(capsys, "compact", table_path, "--json",
                         "--table-conf", "compaction.min.file-num=6")
    assert code == 0 and json.loads(out)["nothing_to_compact"] is True
    assert files_under(table_path) == before
    code, out, err = run(capsys, "compact", table_path, "--json")
    r = json.loads(out)
    assert (code, r["snapshot_id"], r["written_files"]) == (0, 11, 2)


def test_nothing_to_compact_exits_0_and_says_so(capsys, small_files, table_path):
    assert run(capsys, "compact", table_path)[0] == 0
    before = files_under(table_path)
    code, out, err = run(capsys, "compact", table_path)
    assert (code, out, err) == (0, f"nothing to compact in {table_path}\n", "")
    assert files_under(table_path) == before


@pytest.mark.parametrize("argv, message", [
    (["--partition", "hr"], "bad --partition 'hr': expected k=v[,k=v]"),
    (["--partition", "hour=1"],
     "unknown partition key 'hour' in --partition 'hour=1' (partition keys: dt, hr)"),
    (["--partition", "hr=one"],
     "bad value of partition key 'hr' in --partition 'hr=one': cannot parse 'one' as INT: not "
     "an integer"),
    (["--partition", "dt=2024-01-01,dt=2024-01-02"],
     "partition key 'dt' given twice in --partition 'dt=2024-01-01,dt=2024-01-02'"),
    (["--partition", "hr=7"], "compaction of {table}: no data files in partition(s) hr=7 in "
                              "snapshot 10"),
    (["--partition", "hr=1", "--partition", "dt=2024-01-02,hr=1"],
     "compaction of {table}: no data files in partition(s) dt=2024-01-02,hr=1 in snapshot 10"),
    (["--table-conf", "target-file-size=big"],
     "option 'target-file-size': invalid memory size 'big' (expected e.g. '8 mb')"),
    (["--table-conf", "target-file-size=0 b"], "option 'target-file-size' = '0 b': must be >= 1"),
    (["--table-conf", "compaction.min.file-num=0"],
     "option 'compaction.min.file-num' = '0': must be >= 1"),
    (["--table-conf", "target-file-size"],
     "paimon-commit compact: error: --table-conf: expected KEY=VALUE"),
])
def test_bad_input_exits_2_and_touches_nothing(capsys, small_files, table_path, argv, message):
    before = files_under(table_path)
    code, out, err = run(capsys, "compact", table_path, *argv)
    assert code == 2
    assert message.format(table=table_path) in err
    if not message.startswith("paimon-commit compact: error"):   # argparse's: after usage
        assert err == f"error: {message.format(table=table_path)}\n"
    assert files_under(table_path) == before


def test_a_bad_target_file_size_of_the_table_itself_exits_2(capsys, small_files, table_path):
    p = table_path / "schema" / "schema-0"
    schema = json.loads(p.read_text())
    schema["options"]["target-file-size"] = "huge"
    p.write_text(json.dumps(schema))
    before = files_under(table_path)
    code, out, err = run(capsys, "compact", table_path)
    assert code == 2
    assert err == "error: option 'target-file-size': invalid memory size 'huge' (expected " \
                  "e.g. '8 mb')\n"
    assert files_under(table_path) == before


def test_unpartitioned_tables_take_no_partition(capsys, tmp_path):
    path = tmp_path / "wh" / "db.db" / "u"
    Table.create(str(path), SCHEMA, [], OPTS)
    code, out, err = run(capsys, "compact", path, "--partition", "hr=1")
    assert (code, err) == (2, f"error: table {path} is not partitioned: --partition does not "
                              f"apply\n")


def test_a_primary_key_table_exits_2_with_the_writers_refusal(capsys, small_files, table_path):
    pk = dataclasses.replace(small_files.schema, id=1, primary_keys=("id", "dt", "hr"))
    (table_path / "schema" / "schema-1").write_bytes(pk.to_json())
    before = files_under(table_path)
    with pytest.raises(Exception) as writer:
        Table.open(str(table_path)).new_writer()
    code, out, err = run(capsys, "compact", table_path)
    assert (code, err) == (2, f"error: {writer.value}\n")
    assert "it is a primary-key table" in err
    assert files_under(table_path) == before


def test_a_lost_conflict_exits_1_names_the_moved_files_and_leaves_nothing(
        capsys, small_files, table_path, monkeypatch):
    real = AppendCompaction.rewrite

    def rewrite_then_a_rival_drops_hr1(self, plan):
        out = real(self, plan)
        with Table.open(str(table_path)).new_commit() as rival:
            rival.drop_partitions([{"hr": 1}])
        return out
    monkeypatch.setattr(AppendCompaction, "rewrite", rewrite_then_a_rival_drops_hr1)
    before = _parquet(table_path)
    moved = sorted(os.path.relpath(f.path, table_path) for f in small_files.live_files()
                   if f.partition["hr"] == 1)
    code, out, err = run(capsys, "compact", table_path)
    assert code == 1 and out == ""
    lines = err.splitlines()
    assert lines[0].startswith(f"error: compaction of {table_path} conflicts: 5 of its 10 "
                               f"input files are no longer live in snapshot 11 (removed by a "
                               f"concurrent overwrite, partition drop, compaction or rollback)")
    assert lines[0].endswith("nothing is committed; deleted the 2 file(s) it wrote")
    assert lines[1] == "5 input file(s) moved:"
    assert sorted(x.strip() for x in lines[2:7]) == moved
    assert lines[7] == "2 file(s) it wrote were deleted:"
    assert len(lines) == 10
    # Nothing of the compaction is left: no new data file, no COMPACT snapshot.
    assert _parquet(table_path) == before
    t = Table.open(str(table_path))
    assert [s.commit_kind for s in t.snapshots()][-1] == "OVERWRITE"
    assert t.latest_snapshot().id == 11
    # --json: the same, as one object.
    monkeypatch.setattr(AppendCompaction, "rewrite", real)
    write(t, make_rows(range(100, 110), hr=1))
    for i in range(4):
        write(t, make_rows([200 + i], hr=1))
    monkeypatch.setattr(AppendCompaction, "rewrite", rewrite_then_a_rival_drops_hr1)
    code, out, err = run(capsys, "compact", table_path, "--json", "--partition", "hr=1")
    r = json.loads(out)
    assert code == 1 and r["conflict"] is True and r["snapshot_id"] is None
    assert len(r["moved_files"]) == 5 and len(r["deleted_files"]) == 1
    assert r["error"].startswith(f"compaction of {table_path} conflicts: 5 of its 5 input")
    assert_intact(table_path)


def test_maintain_compact(capsys, small_files, tmp_path, table_path):
    wh = tmp_path / "wh"
    code, out, err = run(capsys, "maintain", wh, "--compact", "--json", "--parallelism", "1")
    assert code == 0, err
    [t] = json.loads(out)["tables"]
    assert (t["compacted_files"], t["compact_snapshot_id"]) == (10, 11)
    assert t["steps"]["compaction"]["message"] == \
        "rewrote 10 small files of 2 partition(s) into 2 in snapshot 11"
    code, out, err = run(capsys, "maintain", wh, "--compact")
    assert code == 0
    assert out.splitlines()[1] == f"{'':<32} compact  nothing to compact in {table_path}"
    code, out, err = run(capsys, "maintain", wh)      # without --compact: no compaction line
    assert code == 0 and "compact " not in out


def test_compact_draws_a_bar_on_a_terminal_only(small_files, table_path):
    cmd = [sys.executable, "-m", "paimon_commit", "compact", str(table_path), "--dry-run"]
    env = dict(os.environ, PYTHONPATH=os.getcwd())
    p, drawn = _run_on_pty(cmd + ["--json"], env)
    assert p.returncode == 0 and b"reading metadata" not in drawn
    p, drawn = _run_on_pty(cmd[:-1], env)
    assert p.returncode == 0 and p.stdout.startswith("rewrote 10 small files")
    assert b"compacting" in drawn and b"10/10" in drawn and b"committing" in drawn
