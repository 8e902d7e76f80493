"""`check` (operations/check.py, Table.check, `paimon-commit check`) on real tables: which
snapshots, tags, long-lived changelogs and branches a missing, truncated or damaged file
breaks; one listing per directory and one read per metadata file; read-only."""
import collections
import hashlib
import json
import os
import shutil

import pytest

from conftest import make_rows, without_bill, write

from paimon_commit import Table
from paimon_commit.cli import main as cli_main
from paimon_commit.io.local import LocalFileIO
from paimon_commit.operations.check import CheckProblem


@pytest.fixture
def five(table):
    """Five snapshots, one row each in hr = i % 2 (ids 2 and 4 in hr=0); tag t2 on snapshot
    2; snapshot 5 drops hr=0, so the files of hr=0 are used by snapshots 2-4 and the tag
    only."""
    for i in range(1, 5):
        write(table, make_rows([i], hr=i % 2))
    table.create_tag("t2", 2)
    with table.new_commit() as c:
        c.drop_partitions([{"hr": 0}])
    return table


class CountingIO(LocalFileIO):
    """Local disk that counts its listings and reads per path (a real FileIO, not a mock)."""

    def __init__(self, root):
        super().__init__(root)
        self.listed = collections.Counter()
        self.read = collections.Counter()

    def list_status(self, directory):
        self.listed[directory] += 1
        return super().list_status(directory)

    def list_names(self, directory):
        self.listed[directory] += 1
        return super().list_names(directory)

    def read_bytes(self, path):
        self.read[path] += 1
        return super().read_bytes(path)


def counting(table_path):
    io = CountingIO(str(table_path))
    t = Table.open(str(table_path), file_io=io)
    io.listed.clear()
    io.read.clear()
    return t, io


def hr0_file(t, sid=2):
    """The data file snapshot `sid` added in hr=0."""
    (f,) = [f for f in t.live_files(sid) if f.partition["hr"] == 0 and
            f.file_name not in {g.file_name for g in t.live_files(sid - 1)}]
    return f


def rel(t, path):
    return os.path.relpath(path, t.path)


def tree(path):
    """Every file and directory under `path` with a hash of its bytes."""
    out = {}
    for root, dirs, names in os.walk(path):
        for d in dirs:
            out[os.path.relpath(os.path.join(root, d), path) + "/"] = None
        for n in names:
            with open(os.path.join(root, n), "rb") as f:
                out[os.path.relpath(os.path.join(root, n), path)] = \
                    hashlib.sha256(f.read()).hexdigest()
    return out


def run_cli(capsys, *args):
    code = cli_main(["check", *map(str, args)])
    out = capsys.readouterr()
    return code, without_bill(out.out), out.err


# --- a healthy table ---------------------------------------------------------------------------

def test_a_healthy_table_says_so_and_exits_0(five, table_path, capsys):
    r = five.check()
    assert r.healthy and r.complete and r.problems == () and r.broken == ()
    assert (r.snapshots, r.tags, r.changelogs, r.branches) == (5, 1, 0, 0)
    # Data files of every root: ids 1-4 (the dropped ones are live in snapshots 2-4).
    assert r.checked["data"]["files"] == 4
    assert r.checked["data"]["bytes"] == sum(f.file_size for f in five.live_files(4))
    assert r.checked["manifest-list"]["files"] == 10   # base and delta of 5 snapshots
    code, out, err = run_cli(capsys, table_path, "--json")
    assert code == 0 and err == ""
    d = json.loads(out)
    assert d["healthy"] is True and d["problems"] == [] and d["broken"] == []
    code, out, err = run_cli(capsys, table_path)
    assert code == 0
    c = d["checked"]
    assert out == (
        f"{table_path}: 5 snapshot(s), 1 tag(s), 0 changelog(s), 0 branch(es)\n"
        f"checked 4 data file(s) ({c['data']['bytes']} bytes), {c['manifest']['files']} "
        f"manifest(s), 10 manifest list(s), 0 index file(s), 0 statistics file(s); "
        f"{d['listings']} listing(s), {d['reads']} read(s)\n"
        f"healthy: every file the snapshots, tags and changelogs use is there, with the "
        f"size the metadata records\n")


def test_not_a_table_is_refused_like_every_command(tmp_path, capsys):
    (tmp_path / "x").mkdir()
    code, out, err = run_cli(capsys, tmp_path / "x")
    assert code == 2 and out == ""
    assert err == f"error: {tmp_path / 'x'} is not a Paimon table: no schema/schema-N file\n"


# --- missing, truncated, damaged ---------------------------------------------------------------

def test_a_data_file_only_old_snapshots_use_breaks_them_and_their_tag(five, table_path,
                                                                       capsys):
    f = hr0_file(five)
    os.unlink(f.path)
    r = five.check()
    assert not r.healthy
    assert r.problems == (CheckProblem(rel(five, f.path), "data", "missing", f.file_size, None,
                                       ("snapshot 2", "snapshot 3", "snapshot 4", "tag t2")),)
    assert r.broken == ("snapshot 2", "snapshot 3", "snapshot 4", "tag t2")
    assert r.broken_snapshots == [2, 3, 4] and r.broken_tags == ["t2"]
    assert 5 not in r.broken_snapshots and 1 not in r.broken_snapshots   # the latest is fine
    code, out, _ = run_cli(capsys, table_path)
    assert code == 1
    assert out.splitlines()[2:] == [
        "1 problem(s); broken: snapshot 2, snapshot 3, snapshot 4, tag t2",
        f"  data {rel(five, f.path)}: missing ({f.file_size} bytes); breaks snapshot 2, "
        f"snapshot 3, snapshot 4, tag t2"]
    code, out, _ = run_cli(capsys, table_path, "--json")
    assert code == 1
    assert json.loads(out)["problems"] == [
        {"path": rel(five, f.path), "kind": "data", "state": "missing",
         "expected_size": f.file_size, "actual_size": None,
         "roots": ["snapshot 2", "snapshot 3", "snapshot 4", "tag t2"], "detail": None}]


def test_a_truncated_data_file_has_the_wrong_size(five):
    (f,) = [f for f in five.live_files(5) if f.file_name not in
            {g.file_name for g in five.live_files(2)}]   # id 3: live in 3, 4, 5
    with open(f.path, "r+b") as fh:
        fh.truncate(f.file_size - 7)
    r = five.check()
    assert r.problems == (CheckProblem(rel(five, f.path), "data", "wrong-size", f.file_size,
                                       f.file_size - 7,
                                       ("snapshot 3", "snapshot 4", "snapshot 5")),)
    assert r.problems[0].describe() == (
        f"data {rel(five, f.path)}: wrong size: {f.file_size - 7} bytes, the metadata says "
        f"{f.file_size}; breaks snapshot 3, snapshot 4, snapshot 5")


def test_a_missing_manifest_breaks_every_root_that_uses_it(five):
    s1 = five.snapshot(1)
    (m,) = five.store.manifests.read_list(s1.delta_manifest_list)
    os.unlink(five.store.manifests.path(m.file_name))
    r = five.check()
    # Snapshot 1's delta manifest is in the base list of every later snapshot (and the tag).
    assert r.problems == (CheckProblem(f"manifest/{m.file_name}", "manifest", "missing",
                                       m.file_size, None,
                                       ("snapshot 1", "snapshot 2", "snapshot 3", "snapshot 4",
                                        "snapshot 5", "tag t2")),)


def test_a_damaged_manifest_list_is_reported_as_unreadable(five, table_path):
    s5 = five.snapshot(5)
    path = table_path / "manifest" / s5.delta_manifest_list
    size = path.stat().st_size
    path.write_bytes(b"\0" * size)   # same size: only reading it tells
    r = five.check()
    (p,) = r.problems
    assert (p.path, p.kind, p.state, p.expected_size, p.actual_size, p.roots) == (
        f"manifest/{s5.delta_manifest_list}", "manifest-list", "unreadable", size, size,
        ("snapshot 5",))
    assert p.detail and "unreadable" in p.describe()
    # Truncated: the size the snapshot records says so first (and why it cannot be read).
    path.write_bytes(b"\0" * 10)
    (p,) = five.check().problems
    assert (p.state, p.expected_size, p.actual_size, p.roots) == (
        "wrong-size", size, 10, ("snapshot 5",))


def test_an_unreadable_snapshot_file_breaks_itself(five, table_path):
    (table_path / "snapshot" / "snapshot-3").write_bytes(b"{not json")
    r = five.check()
    (p,) = r.problems
    assert (p.path, p.kind, p.state, p.roots) == ("snapshot/snapshot-3", "snapshot",
                                                  "unreadable", ("snapshot 3",))


def test_a_file_only_an_expired_snapshot_used_is_no_problem(five, table_path):
    # Snapshot 5 DELETEs the hr=0 files: once snapshots 2-4 and the tag are gone, nothing
    # needs them (expiration would have deleted them).
    f = hr0_file(five)
    os.unlink(f.path)
    for sid in (1, 2, 3, 4):
        os.unlink(table_path / "snapshot" / f"snapshot-{sid}")
    os.unlink(table_path / "tag" / "tag-t2")
    r = five.check()
    assert r.healthy, r.problems


# --- branches and long-lived changelogs --------------------------------------------------------

def test_a_branch_and_a_long_lived_changelog_are_roots_too(five, table_path):
    branch = table_path / "branch" / "branch-b1"
    (branch / "snapshot").mkdir(parents=True)
    shutil.copytree(table_path / "schema", branch / "schema")
    shutil.copy(table_path / "snapshot" / "snapshot-4", branch / "snapshot" / "snapshot-4")
    (table_path / "changelog").mkdir()
    shutil.copy(table_path / "snapshot" / "snapshot-4", table_path / "changelog" / "changelog-4")
    f = hr0_file(five, 4)   # added by snapshot 4: its delta, what its changelog reads
    os.unlink(f.path)
    r = five.check()
    assert (r.snapshots, r.changelogs, r.branches) == (6, 1, 1)
    assert r.broken == ("snapshot 4", "changelog 4", "branch b1 snapshot 4")
    assert r.broken_changelogs == [4]


# --- cost and safety ---------------------------------------------------------------------------

def test_one_listing_per_directory_and_one_read_per_file(five, table_path):
    os.unlink(hr0_file(five).path)
    buckets = {os.path.dirname(f.path) for s in (1, 2, 3, 4, 5) for f in five.live_files(s)}
    t, io = counting(table_path)
    r = t.check()
    root = str(table_path)
    assert len(buckets) == 2
    assert set(io.listed) == {os.path.join(root, d) for d in
                              ("branch", "snapshot", "tag", "changelog", "schema",
                               "manifest")} | buckets
    assert set(io.listed.values()) == {1}
    assert r.listings == len(io.listed) == 8
    # Every metadata file once; the broken roots once more (are they still there?).
    again = {os.path.join(root, p) for p in ("snapshot/snapshot-2", "snapshot/snapshot-3",
                                             "snapshot/snapshot-4", "tag/tag-t2")}
    assert {p for p, n in io.read.items() if n == 2} == again
    assert set(io.read.values()) == {1, 2}
    assert r.reads == sum(io.read.values())
    assert not [p for p in io.read if p.endswith(".parquet")]   # data files: listed only
    # The request bill, by kind: only listings and reads, and the bytes those reads returned.
    assert r.requests == {"LIST": 8, "GET": r.reads, "HEAD": 0, "PUT": 0, "DELETE": 0,
                          "bytes_written": 0,
                          "bytes_read": sum(os.path.getsize(p) * n
                                            for p, n in io.read.items())}


def test_the_checks_storage_view_cannot_write_or_delete(table_path, table):
    from paimon_commit.io.metered import MeteredReadOnlyIO
    write(table, make_rows([1]))
    view = MeteredReadOnlyIO(LocalFileIO(str(table_path)))
    snapshot = str(table_path / "snapshot" / "snapshot-1")
    before = tree(table_path)
    for attempt in (lambda: view.delete_quietly(snapshot),
                    lambda: view.delete_files([snapshot]),
                    lambda: view.write_new(str(table_path / "x"), b"x"),
                    lambda: view.overwrite_atomic(snapshot, b"x"),
                    lambda: view.try_create_atomic(str(table_path / "x"), b"x"),
                    lambda: view.open_output_stream(str(table_path / "x")),
                    lambda: view.mkdirs(str(table_path / "d"))):
        with pytest.raises(PermissionError, match="read-only view of"):
            attempt()
    assert tree(table_path) == before
    assert view.read_bytes(snapshot) and view.requests()["GET"] == 1


def test_check_is_read_only(five, table_path, capsys):
    os.unlink(hr0_file(five).path)
    s5 = five.snapshot(5)
    (table_path / "manifest" / s5.base_manifest_list).write_bytes(b"junk")
    before = tree(table_path)
    five.check()
    assert run_cli(capsys, table_path, "--json")[0] == 1
    assert run_cli(capsys, table_path)[0] == 1
    assert tree(table_path) == before


def test_max_duration_stops_between_manifests(five, table_path, capsys):
    import time
    slow = lambda event: time.sleep(0.01)   # noqa: E731 - a progress callback that takes time
    r = five.check(progress=slow, max_duration=1)
    assert not r.complete and r.stopped_by == "max-duration" and not r.healthy
    assert r.unchecked and r.message.startswith("stopped by ")
    assert r.to_dict()["unchecked"] == list(r.unchecked)


# --- tables others wrote -----------------------------------------------------------------------

def test_a_table_pypaimon_wrote(tmp_path, capsys):
    from conftest import D1, SCHEMA
    from oracle import pp_create, pp_drop, pp_write
    path = tmp_path / "wh" / "db.db" / "pp"
    pp_create(path, SCHEMA, ["dt", "hr"])
    for i in range(1, 5):
        pp_write(path, make_rows([i], hr=i % 2))
    pp_drop(path, [{"dt": D1, "hr": 0}])
    t = Table.open(str(path))
    assert [s.id for s in t.snapshots()] == [1, 2, 3, 4, 5]
    assert t.check().healthy
    assert run_cli(capsys, path)[0] == 0
    f = hr0_file(t)
    os.unlink(f.path)
    r = t.check()
    assert r.problems == (CheckProblem(rel(t, f.path), "data", "missing", f.file_size, None,
                                       ("snapshot 2", "snapshot 3", "snapshot 4")),)
    assert run_cli(capsys, path)[0] == 1


def test_a_root_a_concurrent_expiration_removes_is_not_reported(five, table_path):
    f = hr0_file(five)
    os.unlink(f.path)   # as expiration deletes data first, then the snapshot files

    class ExpiringMeanwhile(LocalFileIO):
        """Snapshots 2-4 and the tag go while the check lists the bucket directories."""

        def list_status(self, directory):
            if "bucket-" in directory:
                for name in ("snapshot/snapshot-2", "snapshot/snapshot-3",
                             "snapshot/snapshot-4", "tag/tag-t2"):
                    if os.path.exists(table_path / name):
                        os.unlink(table_path / name)
            return super().list_status(directory)

    r = Table.open(str(table_path), file_io=ExpiringMeanwhile(str(table_path))).check()
    assert r.healthy and r.snapshots == 5 and r.tags == 1


def test_the_text_names_the_first_ten_problems(table, table_path, capsys):
    for i in range(12):
        write(table, make_rows([i], hr=i))
    files = sorted(f.path for f in table.live_files())
    for p in files:
        os.unlink(p)
    code, out, _ = run_cli(capsys, table_path)
    lines = out.splitlines()
    assert code == 1 and len(files) == 12
    assert lines[2].startswith("12 problem(s); broken: snapshot 1, snapshot 2, ")
    assert [x.split(":")[0] for x in lines[3:13]] == [f"  data {rel(table, p)}"
                                                      for p in files[:10]]
    assert lines[13:] == ["  ... and 2 more: use --json for all"]
    assert len(json.loads(run_cli(capsys, table_path, "--json")[1])["problems"]) == 12


def test_a_missing_statistics_file_and_a_truncated_manifest(five, table_path):
    # Snapshot 5 names a statistics file (as ANALYZE in Java writes) that is not there.
    path = table_path / "snapshot" / "snapshot-5"
    snap = json.loads(path.read_text())
    snap["statistics"] = "stat-00000000-0000-0000-0000-000000000000-0"
    path.write_text(json.dumps(snap))
    s4 = five.snapshot(4)
    (m,) = five.store.manifests.read_list(s4.delta_manifest_list)
    mpath = table_path / "manifest" / m.file_name
    mpath.write_bytes(mpath.read_bytes()[:50])
    r = five.check()
    assert [(p.kind, p.path, p.state, p.expected_size, p.actual_size, p.roots)
            for p in r.problems] == [
        ("manifest", f"manifest/{m.file_name}", "wrong-size", m.file_size, 50,
         ("snapshot 4", "snapshot 5")),
        ("statistics", "statistics/stat-00000000-0000-0000-0000-000000000000-0", "missing",
         None, None, ("snapshot 5",))]
    assert r.problems[0].detail   # and why it cannot be read


def test_a_missing_schema_file_breaks_every_root_of_that_schema(five, table_path):
    os.unlink(table_path / "schema" / "schema-0")
    (p,) = five.check().problems
    assert (p.kind, p.path, p.state, p.roots) == (
        "schema", "schema/schema-0", "missing",
        ("snapshot 1", "snapshot 2", "snapshot 3", "snapshot 4", "snapshot 5", "tag t2"))


def test_cli_max_duration_stops_with_exit_3_and_says_so(table, table_path, capsys):
    with table.new_commit() as c:
        for i in range(30):
            write(table, make_rows([i], hr=i % 3), commit=c)
    # 1 ms is gone before the first manifest: one is read, the rest are not.
    code, out, _ = run_cli(capsys, table_path, "--max-duration", "1 ms")
    assert code == 3
    last = out.splitlines()[-1]
    assert last.startswith("incomplete: stopped by the time limit (max-duration 0.001 s) "
                           "after reading 1 manifest(s): the data files of ")
    assert last.endswith(" root(s) were not all checked; a rerun checks everything again")
    code, out, _ = run_cli(capsys, table_path, "--max-duration", "1 ms", "--json")
    d = json.loads(out)
    assert code == 3 and d["complete"] is False and d["stopped_by"] == "max-duration"
    assert d["healthy"] is False and d["unchecked"]


def test_a_directory_where_a_data_file_should_be_is_not_a_file(five):
    f = hr0_file(five)
    os.unlink(f.path)
    os.mkdir(f.path)
    (p,) = five.check().problems
    assert (p.state, p.expected_size, p.actual_size) == ("not-a-file", f.file_size, None)
    assert p.describe() == (f"data {rel(five, f.path)}: not a regular file; breaks snapshot 2, "
                            f"snapshot 3, snapshot 4, tag t2")
