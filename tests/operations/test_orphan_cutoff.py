"""A floor under the orphan cutoff (finding 12): a writer writes its data files before the
commit that names them, so a cutoff of seconds deletes a file a commit is about to name
(delta-rs lost data so). A cutoff less than an hour before now, or than the table's
commit.timeout, is refused before any I/O, in the caller's words, unless explicitly allowed;
on the command line an orphan age needs a unit (a bare `1` was a millisecond)."""
import os
import time

import pytest

from conftest import files_under, make_rows, write
from invariants import assert_intact

from paimon_commit import Table
from paimon_commit.cli import main
from paimon_commit.errors import OptionError
from paimon_commit.operations.orphan import CleanContext, OrphanFilesCleaner
from paimon_commit.operations.orphan_context import RecentCutoffError
from paimon_commit.warehouse import maintain_table, maintain_warehouse

WHY = ("a data file a writer has written but not committed yet would be deleted; give an older "
       "cutoff, or {override} to allow it (only when no writer is running)")
CLI = WHY.format(override="pass --allow-recent-cutoff")
API = WHY.format(override="pass allow_recent_cutoff=True")


@pytest.fixture
def uncommitted(table, table_path):
    """A table with a commit, and a data file a writer has written and not committed yet."""
    write(table, make_rows([1, 2]))
    writer = table.new_writer()
    writer.write_arrow(make_rows([3]))
    (message,) = writer.prepare_commit()
    (f,) = message.new_files
    (rel,) = [p for p in files_under(table_path) if p.endswith(f.file_name)]
    return str(table_path / rel)


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def refused(capsys, root, argv, line):
    """exit 2, nothing on stdout, `line` on stderr (first: a parser's error, with the usage
    after it; or alone), nothing touched."""
    before = files_under(root)
    code, out, err = run(capsys, *argv)
    assert (code, out, err.splitlines()[0]) == (2, "", line), err
    assert files_under(root) == before


@pytest.mark.parametrize("age", ["1 s", "1 ms", "59 min", "3599 s"])
def test_a_cutoff_under_an_hour_is_refused_and_the_uncommitted_file_stays(
        capsys, uncommitted, table_path, age):
    refused(capsys, table_path, ["remove-orphan-files", table_path, "--older-than-duration", age],
            f"error: --older-than-duration '{age}' is within 1 h of now: {CLI}")
    assert os.path.exists(uncommitted)


def test_the_override_deletes_what_it_is_told_to(capsys, uncommitted, table_path):
    time.sleep(0.02)
    code, out, err = run(capsys, "remove-orphan-files", table_path, "--older-than-duration",
                         "10 ms", "--allow-recent-cutoff")
    assert code == 0, err
    assert not os.path.exists(uncommitted)   # exactly what the floor protects
    assert_intact(table_path)


def test_a_recent_older_than_timestamp_is_refused(capsys, uncommitted, table_path):
    ts = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(time.time() - 120))
    refused(capsys, table_path, ["remove-orphan-files", table_path, "--older-than", ts],
            f"error: --older-than '{ts}' is within 1 h of now: {CLI}")


@pytest.mark.parametrize("command", [["remove-orphan-files", "{t}"],
                                     ["maintain", "{wh}", "--orphans"]])
@pytest.mark.parametrize("age", ["1", "3600000"])
def test_an_orphan_age_without_a_unit_is_refused(capsys, uncommitted, table_path, command, age):
    wh = table_path.parent.parent
    argv = [a.format(t=table_path, wh=wh) for a in command] + ["--older-than-duration", age]
    refused(capsys, wh, argv,
            f"paimon-commit {command[0]}: error: --older-than-duration '{age}' has no unit: "
            f"give one, e.g. '1 h', '30 min', '2 d'")


def test_maintain_refuses_a_recent_cutoff_before_any_table(capsys, uncommitted, table_path):
    wh = table_path.parent.parent
    refused(capsys, wh, ["maintain", wh, "--orphans", "--older-than-duration", "30 s"],
            f"error: --older-than-duration '30 s' is within 1 h of now: {CLI}")
    assert os.path.exists(uncommitted)


def test_the_tables_commit_timeout_is_the_floor_when_longer(capsys, table_path):
    t = Table.create(str(table_path), __import__("conftest").SCHEMA,
                     partition_keys=["dt", "hr"], options={"commit.timeout": "3 h"})
    write(t, make_rows([1]))
    refused(capsys, table_path, ["remove-orphan-files", table_path, "--older-than-duration",
                                 "2 h"],
            f"error: --older-than-duration '2 h' is within the table's commit.timeout (3 h) of "
            f"now: {CLI}")
    now = int(time.time() * 1000)
    with pytest.raises(RecentCutoffError) as e:
        OrphanFilesCleaner(CleanContext(str(table_path), older_than_ms=now - 7_200_000))
    assert str(e.value) == (f"older_than_ms = {now - 7_200_000} is within the table's "
                            f"commit.timeout (3 h) of now: {API}")
    (r,) = maintain_warehouse(str(table_path.parent.parent), orphans=True,
                              older_than_ms=now - 7_200_000, workers="thread")
    assert r.status == "skipped" and r.snapshots_expired == 0
    assert r.reason.endswith("within the table's commit.timeout (3 h) of now: a data file a "
                             "writer has written but not committed yet would be deleted; give "
                             "an older cutoff, or pass allow_recent_cutoff=True (--allow-recent-cutoff) to allow it (only "
                             "when no writer is running); nothing was changed"), r.reason
    code, _, err = run(capsys, "remove-orphan-files", table_path, "--older-than-duration",
                       "4 h", "--dry-run")
    assert code == 0, err


def test_the_python_api_refuses_a_recent_cutoff(uncommitted, table_path):
    t = Table.open(str(table_path))
    before = files_under(table_path)
    for age in ("1 s", 1, 1000):   # an int stays milliseconds: the floor applies to it too
        with pytest.raises(RecentCutoffError) as e:
            t.remove_orphan_files(older_than_duration=age)
        assert str(e.value).endswith(f" is within 1 h of now: {API}"), str(e.value)
        assert isinstance(e.value, OptionError)
    now = int(time.time() * 1000)
    with pytest.raises(RecentCutoffError) as e:
        CleanContext(str(table_path), older_than_ms=now - 1000, clock=lambda: now / 1000)
    assert str(e.value) == f"older_than_ms = {now - 1000} is within 1 h of now: {API}"
    with pytest.raises(RecentCutoffError):
        maintain_warehouse(str(table_path.parent.parent), orphans=True,
                           older_than_ms=now - 1000)
    with pytest.raises(RecentCutoffError):
        maintain_table(str(table_path), orphans=True, older_than_ms=now - 1000)
    with pytest.raises(OptionError, match="allow_recent_cutoff must be True or False"):
        CleanContext(str(table_path), allow_recent_cutoff="yes")
    assert files_under(table_path) == before
    time.sleep(0.02)
    r = t.remove_orphan_files(older_than_duration=10, allow_recent_cutoff=True)
    assert r.deleted_files == 1 and not os.path.exists(uncommitted)


def test_the_spark_paths_refuse_a_recent_cutoff_before_spark(table_path, uncommitted):
    from paimon_commit.spark.maintain import maintain_warehouse_spark
    before = files_under(table_path)
    now = int(time.time() * 1000)
    with pytest.raises(RecentCutoffError):   # before a Spark session is looked for
        maintain_warehouse_spark(str(table_path.parent.parent), spark=None, orphans=True,
                                 older_than_ms=now - 1000)
    from paimon_commit.spark.orphan import DistributedOrphanFilesCleaner
    with pytest.raises(RecentCutoffError):
        DistributedOrphanFilesCleaner(CleanContext(str(table_path), older_than_ms=now - 1000),
                                      spark=object())
    assert files_under(table_path) == before


# Adapted from the parallel implementation's tests/operations/test_orphan_floor.py (branch
# h-interrupt): maintain's override and the commit.timeout floor on the command line, where
# the tables run in worker processes.

def second_table(table_path, options=None):
    """<wh>/db.db/u beside the fixture's table, one commit: two tables make maintain run
    them in worker processes (--parallelism 2, the default)."""
    u = Table.create(str(table_path.parent / "u"), __import__("conftest").SCHEMA,
                     partition_keys=["dt", "hr"], options=options or {})
    write(u, make_rows([7]))
    return u


def test_maintain_allow_recent_cutoff_deletes_what_the_floor_kept(capsys, uncommitted,
                                                                  table_path):
    second_table(table_path)
    wh = table_path.parent.parent
    time.sleep(0.02)
    refused(capsys, wh, ["maintain", wh, "--orphans", "--older-than-duration", "10 ms"],
            f"error: --older-than-duration '10 ms' is within 1 h of now: {CLI}")
    assert os.path.exists(uncommitted)
    # The override reaches the worker that cleans the table: exactly what the floor kept.
    code, out, err = run(capsys, "maintain", wh, "--orphans", "--older-than-duration", "10 ms",
                         "--allow-recent-cutoff")
    assert code == 0, out + err
    assert out.splitlines()[0].startswith("db.t ") and " 1 orphan(s); deleted 1 file(s)" in \
        out.splitlines()[0], out
    assert not os.path.exists(uncommitted)
    assert_intact(table_path)


def test_maintain_skips_a_table_whose_commit_timeout_is_longer_than_the_orphan_age(
        capsys, table_path):
    # The command line's floor is 1 h; a table with a longer commit.timeout is skipped before
    # its first step (nothing expired either), the others are maintained.
    t = Table.create(str(table_path), __import__("conftest").SCHEMA,
                     partition_keys=["dt", "hr"],
                     options={"commit.timeout": "3 h", "snapshot.num-retained.min": "1",
                              "snapshot.num-retained.max": "1",
                              "snapshot.time-retained": "0 ms", "write-only": "true"})
    for i in (1, 2, 3):
        write(t, make_rows([i]))
    second_table(table_path)
    wh = table_path.parent.parent
    before = files_under(table_path)
    code, out, err = run(capsys, "maintain", wh, "--orphans", "--older-than-duration", "2 h")
    assert code == 1, out + err   # a skipped table
    lines = out.splitlines()
    assert lines[0].startswith("db.t ") and " skipped " in lines[0], out
    assert lines[0].endswith("is within the table's commit.timeout (3 h) of now: a data file a "
                             "writer has written but not committed yet would be deleted; give "
                             "an older cutoff, or pass allow_recent_cutoff=True "
                             "(--allow-recent-cutoff) to allow it (only when no writer is "
                             "running); nothing was changed"), out
    assert lines[1].startswith("db.u ") and " ok " in lines[1], out
    assert files_under(table_path) == before
    assert [s.id for s in Table.open(str(table_path)).snapshots()] == [1, 2, 3]
    code, out, err = run(capsys, "maintain", wh, "--orphans", "--older-than-duration", "4 h")
    assert code == 0, out + err
    assert [s.id for s in Table.open(str(table_path)).snapshots()] == [3]
