"""The CLI: exit codes (0 ok, 2 invalid input, 1 failed), --json keys, validation first."""
import json
import os
import subprocess
import sys

import pytest

from conftest import D1, D2, SCHEMA, files_under, make_rows, write
from invariants import assert_intact

from paimon_commit import Table
from paimon_commit.cli import main


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def run_json(capsys, *argv):
    code, out, err = run(capsys, *argv, "--json")
    assert code == 0, err
    return json.loads(out)


@pytest.fixture
def history_table(table, table_path):
    for i in range(1, 13):
        write(table, make_rows([i], hr=i % 2))
    with table.new_commit() as c:
        c.drop_partitions([{"hr": 0}])
    return table


def test_expire_snapshots_json(capsys, history_table, table_path):
    before = files_under(table_path)
    dry = run_json(capsys, "expire-snapshots", table_path, "--retain-min", 3,
                   "--time-retained", "0 ms", "--max-deletes", 50, "--dry-run")
    assert files_under(table_path) == before
    assert {"expired_snapshots", "deleted_files", "deleted_bytes", "earliest", "latest",
            "dry_run"} <= set(dry)
    assert (dry["expired_snapshots"], dry["dry_run"], dry["latest"]) == (10, True, 13)
    real = run_json(capsys, "expire-snapshots", table_path, "--retain-min", 3,
                    "--time-retained", "0 ms", "--max-deletes", 50)
    assert (real["expired_snapshots"], real["earliest"], real["dry_run"]) == (10, 11, False)
    assert real["deleted_files"] == dry["deleted_files"] > 0
    assert sorted(set(before) - set(files_under(table_path))) == sorted(real["files"])
    assert_intact(table_path)


def test_expire_snapshots_falls_back_to_table_options(capsys, history_table, table_path):
    r = run_json(capsys, "expire-snapshots", table_path)   # defaults: min 10, 1 h
    assert r["expired_snapshots"] == 0


def test_older_than(capsys, history_table, table_path):
    r = run_json(capsys, "expire-snapshots", table_path, "--retain-min", 1,
                 "--older-than", "2000-01-01 00:00:00")
    assert r["expired_snapshots"] == 0
    import datetime
    import time as _time
    _time.sleep(1.01)   # the cutoff has second precision and must be in the past
    now = datetime.datetime.now().strftime("%Y-%m-%d %H:%M:%S")
    r = run_json(capsys, "expire-snapshots", table_path, "--retain-min", 1,
                 "--older-than", now, "--max-deletes", 100)
    assert r["expired_snapshots"] == 12


@pytest.mark.parametrize("argv, message", [
    (["--retain-min", "0"], "must be >= 1"),
    (["--retain-min", "5", "--retain-max", "2"], "--retain-max 2 must be >= --retain-min 5"),
    (["--time-retained", "soon"], "invalid duration"),
    (["--older-than", "yesterday"], "invalid timestamp"),
    (["--max-deletes", "-1"], "must be >= 0"),
])
def test_invalid_arguments_exit_2_and_touch_nothing(capsys, history_table, table_path, argv,
                                                    message):
    before = files_under(table_path)
    code, out, err = run(capsys, "expire-snapshots", table_path, *argv)
    assert code == 2 and message in err
    assert files_under(table_path) == before


@pytest.mark.parametrize("target", ["/", "not-a-table", "a-file"])
def test_non_tables_are_refused(capsys, tmp_path, target):
    (tmp_path / "not-a-table").mkdir()
    (tmp_path / "a-file").write_text("x")
    path = target if target == "/" else tmp_path / target
    before = files_under(tmp_path)
    code, _, err = run(capsys, "expire-snapshots", path, "--retain-min", 1)
    assert code == 2 and "is not a Paimon table" in err
    assert files_under(tmp_path) == before


def test_operation_failure_exits_1(capsys, history_table, table_path):
    (table_path / "snapshot" / "snapshot-13").write_text("garbage")
    before = files_under(table_path)
    code, _, err = run(capsys, "expire-snapshots", table_path, "--retain-min", 1,
                       "--time-retained", "0 s")
    assert code == 1 and "snapshot-13" in err
    assert files_under(table_path) == before


def test_tags_and_rollback(capsys, history_table, table_path):
    r = run_json(capsys, "create-tag", table_path, "t5", "--snapshot", 5)
    assert r == {"tag": "t5", "snapshot_id": 5, "time_retained_ms": None}
    r = run_json(capsys, "tags", table_path)
    assert r["tags"][0]["name"] == "t5" and r["unfinished_deletions"] == []
    code, _, err = run(capsys, "create-tag", table_path, "t5")
    assert code == 2 and "already exists" in err
    r = run_json(capsys, "rollback-to", table_path, "--snapshot", 8)
    assert r["deleted_snapshots"] == [9, 10, 11, 12, 13]
    assert Table.open(str(table_path)).latest_snapshot().id == 8
    assert_intact(table_path)
    r = run_json(capsys, "delete-tag", table_path, "t5")
    assert r["tag"] == "t5" and r["deleted_files"] == 0   # snapshot 5 still exists
    code, _, err = run(capsys, "rollback-to", table_path, "--tag", "nope")
    assert code == 2 and "does not exist" in err


def test_expire_partitions(capsys, table, table_path):
    write(table, make_rows([1], dt=D1))
    write(table, make_rows([2], dt=D2))
    r = run_json(capsys, "expire-partitions", table_path, "--expiration-time", "1 d",
                 "--dry-run")
    assert [p["dt"] for p in r["expired_partitions"]] == ["2024-01-01", "2024-01-02"]
    assert r["snapshot_ids"] == []
    r = run_json(capsys, "expire-partitions", table_path, "--expiration-time", "1 d",
                 "--max-expires", 1)
    assert [p["dt"] for p in r["expired_partitions"]] == ["2024-01-01"]
    assert r["snapshot_ids"] == [3]
    assert [x["id"] for x in Table.open(str(table_path)).read_arrow().to_pylist()] == [2]
    code, _, err = run(capsys, "expire-partitions", table_path, "--expiration-time", "1 d",
                       "--timestamp-formatter", "yyyy-QQ")
    assert code == 2


def test_console_script_and_module_help():
    out = subprocess.run([sys.executable, "-m", "paimon_commit", "expire-snapshots", "--help"],
                         capture_output=True, text=True, check=True).stdout
    assert "example:" in out and "--retain-min" in out


def test_remove_orphan_files(capsys, history_table, table_path):
    import time as _time
    stray = table_path / "dt=19723" / "hr=1" / "bucket-0" / "data-stray-0.parquet"
    stray.write_text("x" * 10)
    old = _time.time() - 3 * 86400
    os.utime(stray, (old, old))
    r = run_json(capsys, "remove-orphan-files", table_path, "--dry-run")
    assert {"deleted_files", "deleted_bytes", "deleted_dirs", "dry_run", "files"} <= set(r)
    assert (r["files"], r["dry_run"], r["deleted_bytes"]) == \
        (["dt=19723/hr=1/bucket-0/data-stray-0.parquet"], True, 10)
    assert stray.exists()
    r = run_json(capsys, "remove-orphan-files", table_path, "--older-than-duration", "2 d",
                 "--parallelism", 2)
    assert r["deleted_files"] == 1 and not stray.exists()
    assert_intact(table_path)


@pytest.mark.parametrize("argv, message", [
    (["--older-than", "2999-01-01 00:00:00"], "not in the past"),
    (["--older-than-duration", "forever"], "invalid duration"),
    (["--mode", "cluster"], "--mode 'cluster' is not one of local, distributed"),
])
def test_remove_orphan_files_bad_input(capsys, history_table, table_path, argv, message):
    before = files_under(table_path)
    code, _, err = run(capsys, "remove-orphan-files", table_path, *argv)
    assert code == 2 and message in err
    assert files_under(table_path) == before


def test_remove_orphan_files_refuses_root(capsys):
    code, _, err = run(capsys, "remove-orphan-files", "/", "--dry-run")
    assert code == 2 and "is not a Paimon table" in err


def test_info_and_drop_partition(capsys, table, table_path):
    write(table, make_rows([1, 2], dt=D1, hr=1))
    write(table, make_rows([3], dt=D2, hr=2))
    table.create_tag("t1", 1)
    r = run_json(capsys, "info", table_path)
    assert (r["snapshots"], r["latest"], r["live_files"], r["partitions"], r["tags"]) == \
        (2, 2, 2, 2, ["t1"])
    assert r["files_on_disk"] > r["live_files"] and r["total_records"] == 3
    r = run_json(capsys, "drop-partition", table_path, "dt=2024-01-02,hr=2")
    assert r["snapshot_id"] == 3 and r["deleted_files"] == 1
    assert [x["id"] for x in Table.open(str(table_path)).read_arrow().to_pylist()] == [1, 2]
    code, _, err = run(capsys, "drop-partition", table_path, "nope=1")
    assert code == 2 and "unknown partition key 'nope'" in err
    code, _, err = run(capsys, "drop-partition", table_path, "hr=abc")
    assert code == 2
    assert_intact(table_path)


def test_a_failure_after_the_first_delete_exits_1_and_says_what_was_deleted(
        capsys, history_table, table_path, monkeypatch):
    # Regression: a ValueError raised half-way through deleting exited 2 ("invalid input,
    # nothing touched") and the output did not say what had gone.
    from paimon_commit.cli import context
    from paimon_commit.io.local import LocalFileIO

    class FailsAtTheThirdDelete(LocalFileIO):
        calls = 0

        def _unlink(self, norm):
            FailsAtTheThirdDelete.calls += 1
            if FailsAtTheThirdDelete.calls == 3:
                raise ValueError(f"injected failure deleting {norm}")
            return super()._unlink(norm)

    real_io = context.open_io

    def faulty(path):
        io = real_io(path)
        f = FailsAtTheThirdDelete(io.root)
        f.deletion_log = io.deletion_log
        return f
    monkeypatch.setattr(context, "open_io", faulty)
    before = set(files_under(table_path))
    code, out, err = run(capsys, "expire-snapshots", table_path, "--retain-min", 3,
                         "--time-retained", "0 ms", "--max-deletes", 50, "--json")
    assert code == 1, err
    report = json.loads(out)
    gone = before - set(files_under(table_path))
    assert report["deleted_files"] == len(gone) == 2
    assert set(report["files"]) == gone
    assert "injected failure" in report["error"] and "2 path(s) had been deleted" in err


def test_invalid_input_found_before_any_delete_exits_2(capsys, history_table, table_path):
    before = files_under(table_path)
    code, out, err = run(capsys, "drop-partition", table_path, "hr=notanumber", "--json")
    assert code == 2
    assert json.loads(out) == {"error": err.splitlines()[0][len("error: "):], "exit_code": 2,
                               "deleted_files": 0, "files": []}
    assert files_under(table_path) == before


def _package_imports():
    """module -> the paimon_commit modules it imports (at any depth of its code)."""
    import ast
    root = os.path.dirname(os.path.abspath(sys.modules["paimon_commit"].__file__))
    mods = {}
    for d, _, names in os.walk(root):
        for n in names:
            if n.endswith(".py"):
                rel = os.path.relpath(os.path.join(d, n), os.path.dirname(root))[:-3]
                mods[rel.replace(os.sep, ".").removesuffix(".__init__")] = os.path.join(d, n)
    graph = {}
    for m, path in mods.items():
        pkg = m if path.endswith("__init__.py") else m.rpartition(".")[0]
        out = set()
        for node in ast.walk(ast.parse(open(path).read())):
            if isinstance(node, ast.ImportFrom):
                base = pkg.split(".")[:len(pkg.split(".")) - node.level + 1] \
                    if node.level else []
                target = ".".join(base + ([node.module] if node.module else []))
                for a in node.names:
                    full = f"{target}.{a.name}"
                    out.add(full if full in mods else target)
            elif isinstance(node, ast.Import):
                out.update(a.name for a in node.names)
        graph[m] = {x for x in out if x in mods and x != m}
    return graph


def test_the_cli_modules_import_no_cycle():
    # Regression: cli.py and cli_maintenance.py imported each other.
    graph = _package_imports()
    cli = [m for m in graph if m.startswith("paimon_commit.cli")]
    assert len(cli) > 1

    def reaches(start, goal, seen):
        for nxt in graph[start]:
            if nxt == goal or (nxt not in seen and not seen.add(nxt)
                               and reaches(nxt, goal, seen)):
                return True
        return False
    assert [m for m in cli if reaches(m, m, set())] == []
