"""Issue 28, a command-line tool that behaves well at the edges: flags in the user's words
(--retain-max below the table's minimum), expirations that say why they kept snapshots,
`maintain` on a path that is not a warehouse, closed pipes, --version, bare dates, errors
first. Exact output and exit codes; every refusal touches nothing."""
import json
import os
import subprocess
import sys

import pytest

from conftest import files_under, make_rows, without_bill, write

from paimon_commit.cli import main


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, without_bill(out), err


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


# --- 4. terminals and pipes ----------------------------------------------------------------

def orphans(table_path, n):
    """`n` orphan data files, two days old (older than remove-orphan-files' default day)."""
    d = table_path / "dt=2024-01-01" / "hr=1" / "bucket-0"
    d.mkdir(parents=True, exist_ok=True)
    old = os.path.getmtime(d) - 2 * 86400
    names = []
    for i in range(n):
        p = d / f"data-orphan-{i:04d}.parquet"
        p.write_bytes(b"x" * 10)
        os.utime(p, (old, old))
        names.append(f"dt=2024-01-01/hr=1/bucket-0/{p.name}")
    return sorted(names)


def cli(*argv, **kw):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    return subprocess.run([sys.executable, "-m", "paimon_commit", *map(str, argv)],
                          env=env, capture_output=True, text=True, **kw)


def on_a_terminal(*argv):
    """stdout on a pseudo-terminal: what a person at a terminal sees."""
    import pty
    master, slave = pty.openpty()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    p = subprocess.Popen([sys.executable, "-m", "paimon_commit", *map(str, argv)], env=env,
                         stdout=slave, stderr=subprocess.PIPE)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:   # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    p.wait()
    os.close(master)
    return p.returncode, without_bill(b"".join(chunks).decode().replace("\r\n", "\n"))


def test_a_long_file_list_is_summarised_on_a_terminal(twelve, table_path):
    names = orphans(table_path, 30)
    code, out = on_a_terminal("remove-orphan-files", table_path, "--dry-run")
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "would delete 30 file(s), 300 bytes, 0 empty dir(s)"
    assert lines[1] == "  data: 30 file(s), 300 bytes"
    assert len(lines) == 2 + 5 + 1
    assert lines[-1] == "  ... and 25 more (--list-files or --json for all)"
    code, out = on_a_terminal("remove-orphan-files", table_path, "--dry-run", "--list-files")
    assert sorted(x.strip() for x in out.splitlines()[1:]) == names


def test_a_pipe_gets_every_path(twelve, table_path):
    names = orphans(table_path, 30)
    r = cli("remove-orphan-files", table_path, "--dry-run")
    assert r.returncode == 0
    assert sorted(x.strip() for x in without_bill(r.stdout).splitlines()[1:]) == names


@pytest.mark.parametrize("argv", [["remove-orphan-files", "{t}", "--dry-run"],
                                  ["report", "{t}"], ["snapshots", "{t}"], ["info", "{t}"],
                                  ["expire-snapshots", "{t}", "--dry-run"], ["--help"]])
def test_a_closed_pipe_ends_the_command_quietly(twelve, table_path, argv):
    orphans(table_path, 30)
    r_fd, w_fd = os.pipe()
    os.close(r_fd)   # the reader is gone before the first line (`| head -0`)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    p = subprocess.run([sys.executable, "-m", "paimon_commit",
                        *[a.format(t=table_path) for a in argv]], env=env, stdout=w_fd,
                       stderr=subprocess.PIPE, text=True)
    os.close(w_fd)
    # 141 = 128 + SIGPIPE, as `git log` under `| head`; argparse's help swallows the error
    # itself (exit 0): quiet either way.
    assert (p.returncode, p.stderr) == (0 if argv == ["--help"] else 141, "")


def test_head_of_a_pipeline_is_quiet(twelve, table_path):
    orphans(table_path, 3000)   # more than a pipe holds
    r = subprocess.run(f"set -o pipefail; {sys.executable} -m paimon_commit "
                       f"remove-orphan-files {table_path} --dry-run | head -3",
                       shell=True, executable="/bin/bash", capture_output=True, text=True,
                       env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
    assert (r.returncode, r.stderr, len(r.stdout.splitlines())) == (141, "", 3)


# --- 8. --version, bare dates, the error first ---------------------------------------------

def test_version(capsys):
    from paimon_commit import __version__
    assert run(capsys, "--version") == (0, f"paimon-commit {__version__}\n", "")


@pytest.mark.parametrize("command", ["expire-snapshots", "expire-tags", "remove-orphan-files"])
def test_a_bare_date_is_midnight_local_time(capsys, twelve, table_path, command):
    code, out, err = run(capsys, command, table_path, "--older-than", "2024-01-01",
                         "--dry-run", "--json")
    assert code == 0, err
    if command == "remove-orphan-files":
        import datetime
        assert json.loads(out)["older_than_ms"] == \
            int(datetime.datetime(2024, 1, 1).timestamp() * 1000)


def test_a_bad_flag_leads_with_the_error(capsys, table_path):
    code, out, err = run(capsys, "expire-snapshots", table_path, "--retian-min", 3)
    lines = err.splitlines()
    assert (code, out) == (2, "")
    assert lines[0] == ("paimon-commit expire-snapshots: error: unrecognized argument "
                        "'--retian-min': did you mean '--retain-min'?")
    assert lines[1].startswith("usage: paimon-commit expire-snapshots ")
