"""Issue 28, a command-line tool that behaves well at the edges: flags in the user's words
(--retain-max below the table's minimum), expirations that say why they kept snapshots,
`maintain` on a path that is not a warehouse, closed pipes, --version, bare dates, errors
first. Exact output and exit codes; every refusal touches nothing."""
import json
import os
import subprocess
import sys

import pytest

from conftest import files_under, make_rows, write

from paimon_commit.cli import main


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def twelve(table, table_path):
    """12 snapshots, all younger than the default snapshot.time-retained (1 h)."""
    for i in range(1, 13):
        write(table, make_rows([i]))
    return table


# --- 1. --retain-max below the table's minimum ---------------------------------------------

def test_retain_max_below_the_tables_minimum_lowers_it_for_the_run(capsys, twelve,
                                                                    table_path):
    code, out, err = run(capsys, "expire-snapshots", table_path, "--retain-max", 3,
                         "--json")
    assert (code, err) == (0, "")
    r = json.loads(out)
    # Snapshots 1-9 are beyond the newest 3: retain_max expires them whatever their age.
    assert (r["expired_snapshots"], r["earliest"], r["latest"]) == (9, 10, 12)
    assert r["notes"] == ["--retain-max 3 is below the table's snapshot.num-retained.min = "
                          "10: this run keeps at least 3 (the table's option is unchanged)"]
    assert r["kept_because"] == ["3 snapshot(s) kept by --retain-max 3"]
    assert [s.id for s in twelve.snapshots()] == [10, 11, 12]


def test_retain_max_text_says_the_minimum_was_lowered(capsys, twelve, table_path):
    code, out, err = run(capsys, "expire-snapshots", table_path, "--retain-max", 3,
                         "--dry-run")
    assert (code, err) == (0, "")
    assert out.splitlines()[1:] == [
        "note: --retain-max 3 is below the table's snapshot.num-retained.min = 10: this run "
        "keeps at least 3 (the table's option is unchanged)",
        "kept: 3 snapshot(s) kept by --retain-max 3"]


def test_retain_max_in_the_python_api(twelve):
    r = twelve.expire_snapshots(retain_max=3, dry_run=True)
    assert r.expired_snapshots == 9
    assert r.notes == ["retain_max=3 is below the table's snapshot.num-retained.min = 10: "
                       "this run keeps at least 3 (the table's option is unchanged)"]


def test_conflicting_retain_flags_one_line_naming_both(capsys, twelve, table_path):
    before = files_under(table_path)
    code, out, err = run(capsys, "expire-snapshots", table_path, "--retain-max", 3,
                         "--retain-min", 5)
    assert (code, out, err) == (2, "", "error: --retain-max 3 must be >= --retain-min 5\n")
    assert files_under(table_path) == before


# --- 2. an expiration says why it kept snapshots -------------------------------------------

def test_an_expiration_that_does_nothing_says_why(capsys, twelve, table_path):
    code, out, err = run(capsys, "expire-snapshots", table_path, "--dry-run")
    assert (code, err) == (0, "")
    assert out.splitlines() == [
        "would expire 0 snapshot(s); would delete 0 file(s), 0 bytes; earliest 1, latest 12",
        "kept: 10 snapshot(s) kept by snapshot.num-retained.min = 10; 2 snapshot(s) younger "
        "than snapshot.time-retained = 1 h"]
    code, out, err = run(capsys, "expire-snapshots", table_path, "--json")
    assert json.loads(out)["kept_because"] == [
        "10 snapshot(s) kept by snapshot.num-retained.min = 10",
        "2 snapshot(s) younger than snapshot.time-retained = 1 h"]


def test_kept_because_names_consumers_and_the_limit(capsys, twelve, table_path):
    from paimon_commit.tags import ConsumerManager
    ConsumerManager(twelve.store.io, twelve.store.root).write("reader-1", 6)
    code, out, err = run(capsys, "expire-snapshots", table_path, "--retain-min", 2,
                         "--time-retained", "0 s", "--max-deletes", 2, "--json")
    r = json.loads(out)
    assert (code, r["expired_snapshots"], r["earliest"]) == (0, 2, 3)
    assert r["kept_because"] == [
        "2 snapshot(s) kept by --retain-min 2",
        "5 snapshot(s) kept for consumer(s) reader-1 (the slowest reads from snapshot 6)",
        "3 snapshot(s) left by --max-deletes 2 (snapshots expired per run at most; a rerun "
        "continues)"]


# --- 3. maintain on a path that is not a warehouse -----------------------------------------

LOOKED = ("is not a warehouse: maintain looks for tables at <warehouse>/<db>.db/<table> and "
          "found no <db>.db directory")


def test_maintain_on_a_table_path_is_refused(capsys, twelve, table_path):
    before = files_under(table_path)
    wh = table_path.parent.parent
    code, out, err = run(capsys, "maintain", table_path, "--orphans")
    assert (code, out) == (2, "")
    assert err == (f"error: {table_path} {LOOKED}; {table_path} is a table: run "
                   f"`paimon-commit maintain {wh} --table db.t` or the table commands "
                   f"(expire-snapshots, remove-orphan-files, ...)\n")
    assert files_under(table_path) == before


def test_maintain_on_a_database_path_is_refused(capsys, twelve, table_path):
    db, wh = table_path.parent, table_path.parent.parent
    code, out, err = run(capsys, "maintain", db)
    assert (code, out) == (2, "")
    assert err == (f"error: {db} {LOOKED}; {db} is a database: run `paimon-commit maintain "
                   f"{wh} --database db`\n")


def test_maintain_on_any_directory_is_refused(capsys, tmp_path):
    (tmp_path / "x").mkdir()
    code, out, err = run(capsys, "maintain", tmp_path / "x", "--json")
    assert code == 2
    assert err == f"error: {tmp_path / 'x'} {LOOKED}\n"
    assert json.loads(out)["exit_code"] == 2


def test_maintain_on_a_warehouse_still_runs(capsys, twelve, table_path):
    code, out, err = run(capsys, "maintain", table_path.parent.parent, "--dry-run")
    assert code == 0, err
    assert out.splitlines()[-1].startswith("1 table(s): 1 ok")
