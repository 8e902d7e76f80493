"""Tables whose data files are not where the standard layout puts them: pypaimon-written
`partition.legacy-name = false` (a DATE partition is `dt=2024-01-01`, not `dt=19723`) and
`data-file.path-directory` (files under TABLE/data/). check, repair, expiration and our reader
find the files where pypaimon put them; what this library cannot spell with certainty is
refused up front with one line; and repair never gives up the files of a bucket directory
that does not exist at all (audit/issue27 r1, r2, r4)."""
import datetime
import os
import shutil

import pyarrow as pa
import pytest

from conftest import files_under, make_rows, without_bill, write
from oracle import pp_create, pp_read, pp_write, rows

from paimon_commit import Table
from paimon_commit.cli import main as cli_main
from paimon_commit.errors import UnsupportedTableError
from paimon_commit.operations.expire import ExpireSnapshots
from paimon_commit.operations.expire_config import ExpireConfig
from paimon_commit.operations.repair import RepairError

D1, D2 = datetime.date(2024, 1, 1), datetime.date(2024, 1, 2)
DATES = pa.schema([("id", pa.int64()), ("dt", pa.date32())])
PLAIN = pa.schema([("id", pa.int64()), ("v", pa.string())])
FAR_FUTURE = lambda: 10 ** 14  # noqa: E731


def cli(capsys, *args):
    code = cli_main([*map(str, args)])
    out = capsys.readouterr()
    return code, out.out, out.err


def both_read(path, snapshot_id=None):
    """The ids pypaimon reads, asserted equal to what our reader reads."""
    pp = [r["id"] for r in rows(pp_read(path, snapshot_id))]
    ours = sorted(Table.open(str(path)).read_arrow(snapshot_id).column("id").to_pylist())
    assert ours == pp
    return pp


def expire(path, **cfg):
    cfg.setdefault("time_retained_ms", 0)
    cfg.setdefault("max_deletes", 1000)
    return ExpireSnapshots(Table.open(str(path)).store, ExpireConfig(**cfg),
                           clock=FAR_FUTURE).expire()


@pytest.fixture
def non_legacy(table_path):
    """pypaimon: DATE-partitioned, legacy-name false; snapshot 1 ids 1, 2 in D1 and 3 in D2,
    snapshot 2 overwrites D1 with id 4."""
    pp_create(table_path, DATES, ["dt"], {"bucket": "-1", "partition.legacy-name": "false"})
    pp_write(table_path, pa.table({"id": [1, 2, 3], "dt": [D1, D1, D2]}, schema=DATES))
    pp_write(table_path, pa.table({"id": [4], "dt": [D1]}, schema=DATES), overwrite={"dt": D1})
    return table_path


@pytest.fixture
def path_directory(table_path):
    """pypaimon: unpartitioned, data-file.path-directory 'data'; snapshot 1 ids 1, 2, snapshot
    2 overwrites them with id 3."""
    pp_create(table_path, PLAIN, [], {"bucket": "-1", "data-file.path-directory": "data"})
    pp_write(table_path, pa.table({"id": [1, 2], "v": ["a", "b"]}, schema=PLAIN))
    pp_write(table_path, pa.table({"id": [3], "v": ["c"]}, schema=PLAIN), overwrite={})
    return table_path


# --- repair and check find the files where pypaimon put them ----------------------------------

@pytest.mark.parametrize("layout", ["non_legacy", "path_directory"])
def test_repair_gives_up_nothing_of_a_pypaimon_table(layout, request, capsys):
    path = request.getfixturevalue(layout)
    before, rows_before = files_under(path), both_read(path)
    code, out, err = cli(capsys, "repair", path, "--apply")
    assert (code, err) == (0, "")
    assert without_bill(out).splitlines() == [
        f"nothing to repair: snapshot 2 of {path} names no missing data file"]
    assert [s.id for s in Table.open(str(path)).snapshots()] == [1, 2]
    assert both_read(path) == rows_before == ([3, 4] if layout == "non_legacy" else [3])
    assert Table.open(str(path)).check().problems == ()
    assert [f for f in files_under(path) if not f.startswith(".maintenance")] == \
        [f for f in before if not f.startswith(".maintenance")]


@pytest.mark.parametrize("layout, dirs", [
    ("non_legacy", {"dt=2024-01-01/bucket-0", "dt=2024-01-02/bucket-0"}),
    ("path_directory", {"data/bucket-0"})])
def test_the_paths_are_pypaimons(layout, dirs, request):
    path = request.getfixturevalue(layout)
    assert {os.path.dirname(os.path.relpath(f.path, path))
            for f in Table.open(str(path)).live_files()} == dirs


# --- expiration deletes the old files at their real paths -------------------------------------

def test_expire_a_non_legacy_date_table_deletes_the_overwritten_file(non_legacy):
    t = Table.open(str(non_legacy))
    old = {f.path for f in t.live_files(1)} - {f.path for f in t.live_files(2)}
    kept = {f.path for f in t.live_files(2)}
    assert [os.path.relpath(p, non_legacy).split("/")[0] for p in old] == ["dt=2024-01-01"]
    r = expire(non_legacy, retain_min=1, retain_max=1)
    assert r.expired_ids == [1]
    assert r.by_kind["data"]["files"] == 1
    assert not any(os.path.exists(p) for p in old)
    assert all(os.path.exists(p) for p in kept)
    assert both_read(non_legacy) == [3, 4]
    pp_write(non_legacy, pa.table({"id": [5], "dt": [D2]}, schema=DATES))
    assert both_read(non_legacy) == [3, 4, 5]


def test_expire_a_path_directory_table_deletes_the_overwritten_file(path_directory):
    t = Table.open(str(path_directory))
    old = {f.path for f in t.live_files(1)}
    kept = {f.path for f in t.live_files(2)}
    assert all("/data/bucket-0/" in p for p in old | kept)
    r = expire(path_directory, retain_min=1, retain_max=1)
    assert r.expired_ids == [1]
    assert r.by_kind["data"]["files"] == 1
    assert not any(os.path.exists(p) for p in old)
    assert all(os.path.exists(p) for p in kept)
    assert both_read(path_directory) == [3]


# --- what cannot be spelled with certainty is refused, up front -------------------------------

def _touched(path):
    return [f for f in files_under(path) if not f.startswith(".maintenance")]


def test_a_non_legacy_timestamp_partition_is_refused_by_every_path_operation(table_path,
                                                                             capsys):
    schema = pa.schema([("id", pa.int64()), ("ts", pa.timestamp("us"))])
    pp_create(table_path, schema, ["ts"], {"bucket": "-1", "partition.legacy-name": "false"})
    ts = datetime.datetime(2024, 1, 1, 10, 0, 5)
    pp_write(table_path, pa.table({"id": [1, 2], "ts": [ts, ts]}, schema=schema))
    pp_write(table_path, pa.table({"id": [3], "ts": [ts]}, schema=schema))
    before = _touched(table_path)
    line = ("option 'partition.legacy-name' = 'false' with partition key 'ts' of type "
            "TIMESTAMP(6): this library cannot spell that directory name with certainty "
            "(only STRING, integer, BOOLEAN and DATE keys)")
    for args, action in ((["repair", table_path, "--apply"], "repair"),
                         (["check", table_path], "check")):
        code, out, err = cli(capsys, *args)
        assert (code, out, err) == (2, "", f"error: cannot {action} {table_path}: {line}\n")
    t = Table.open(str(table_path))
    for call, action in ((lambda: t.repair(apply=True), "repair"),
                         (lambda: t.check(), "check"),
                         (lambda: expire(table_path, retain_min=1, retain_max=1),
                          "expire snapshots of"),
                         (lambda: t.read_arrow(), "read"),
                         (lambda: t.remove_orphan_files(older_than_duration="1s",
                                                        allow_recent_cutoff=True),
                          "clean orphan files of")):
        with pytest.raises(UnsupportedTableError) as e:
            call()
        assert str(e.value) == f"cannot {action} {table_path}: {line}"
    assert _touched(table_path) == before   # no snapshot, no file given up or written


@pytest.mark.parametrize("value", ["../elsewhere", "/abs/data", "s3://b/data", "a b",
                                   "manifest", "bucket-0", "x/../y", "dt=1"])
def test_a_path_directory_that_is_not_a_plain_name_is_refused(table, table_path, capsys,
                                                              value):
    write(table, make_rows([1, 2]))
    schema = table.schema
    import dataclasses
    new = dataclasses.replace(schema, id=schema.id + 1,
                              options={**schema.options, "data-file.path-directory": value})
    (table_path / "schema" / f"schema-{new.id}").write_bytes(new.to_json())
    before = _touched(table_path)
    code, out, err = cli(capsys, "repair", table_path, "--apply")
    assert (code, out) == (2, "")
    assert err == (f"error: cannot repair {table_path}: option 'data-file.path-directory' = "
                   f"{value!r}: this library places data files only under a plain relative "
                   f"directory name (e.g. 'data') that is not a metadata or bucket "
                   f"directory's\n")
    assert _touched(table_path) == before


# --- repair: a bucket directory that does not exist is never given up -------------------------

def test_repair_refuses_to_give_up_a_bucket_directory_that_does_not_exist(table, table_path,
                                                                          capsys):
    write(table, make_rows([1, 2], hr=0))
    write(table, make_rows([3], hr=1))
    # What a wrong path computation looks like: the directory the manifests name is absent
    # (here moved away), while the table has other files.
    shutil.move(str(table_path / "dt=19723" / "hr=0"), str(table_path.parent / "away"))
    before = _touched(table_path)
    code, out, err = cli(capsys, "repair", table_path, "--apply")
    assert (code, out) == (1, "")
    assert err == (f"error: cannot repair {table_path}: the bucket directory "
                   f"dt=19723/hr=0/bucket-0 of 1 missing data file(s) live in snapshot 2 "
                   f"does not exist at all; repair gives up a file only when its directory is "
                   f"there and listed, since an absent directory may mean the table's paths "
                   f"are computed wrongly. Nothing was written. Restore the files, or, if the "
                   f"whole directory is really lost, recreate it empty and run repair again\n")
    assert _touched(table_path) == before
    with pytest.raises(RepairError):
        Table.open(str(table_path)).repair()
    # Recreated empty (the files really are lost): the repair goes ahead.
    os.makedirs(table_path / "dt=19723" / "hr=0" / "bucket-0")
    code, out, err = cli(capsys, "repair", table_path, "--apply")
    assert (code, err) == (0, "")
    assert out.startswith("committed snapshot 3 (OVERWRITE) without 1 missing data file(s)")
    assert [r["id"] for r in rows(pp_read(table_path))] == [3]


def test_repair_refuses_a_layout_option_changed_after_files_were_written(
        table_path, capsys):
    # A DATE-partitioned table written under the legacy name (dt=19723), then ALTERed to
    # `partition.legacy-name = false` (a new schema file), and a later writer's directory of
    # the new spelling: every old file would look missing under the new spelling, and repair
    # gave up their rows although the files exist (audit/final f5).
    import json
    t = Table.create(str(table_path), DATES, partition_keys=["dt"])
    d = datetime.date(2024, 1, 1)
    w = t.new_writer()
    w.write_arrow(pa.table({"id": [1, 2, 3], "dt": [d] * 3}, schema=DATES))
    with t.new_commit() as c:
        c.commit(w.prepare_commit())
    doc = json.loads((table_path / "schema" / "schema-0").read_text())
    doc["id"] = 1
    doc["options"]["partition.legacy-name"] = "false"
    (table_path / "schema" / "schema-1").write_text(json.dumps(doc))
    os.makedirs(table_path / "dt=2024-01-01" / "bucket-0")
    before = _touched(table_path)
    for command in (("repair",), ("repair", "--apply")):
        code, out, err = cli(capsys, *command, table_path)
        assert (code, out) == (2, ""), err
        action = command[0]
        assert err == (f"error: cannot {action} {table_path}: option 'partition.legacy-name' "
                       f"was 'true' in schema 0 and is 'false' now: files written under each "
                       f"schema live under different directory names, and this library "
                       f"computes one spelling per table (nothing was read or written)\n")
    assert _touched(table_path) == before   # no snapshot, no file given up or written


def _alter(table_path, **options):
    """ALTER TABLE ... SET (options): the next schema file, as Paimon writes one."""
    import json
    sd = table_path / "schema"
    last = max(int(n.split("-")[1]) for n in os.listdir(sd))
    doc = json.loads((sd / f"schema-{last}").read_text())
    doc["id"] = last + 1
    doc["options"].update(options)
    (sd / f"schema-{last + 1}").write_text(json.dumps(doc))


def test_repair_refuses_a_partition_default_name_changed_after_files_were_written(
        table_path, capsys):
    # Rows with a null partition value are written to `p=<partition.default-name>`. Paimon
    # accepts ALTER TABLE ... SET ('partition.default-name' = ...): the null rows written
    # before it live under p=__DEFAULT_PARTITION__, those written after under p=NULLP. Repair
    # computed every path with the newest name, found the old file missing in the listed
    # p=NULLP/bucket-0 and gave up its 3 rows although it exists (audit issue25d d1).
    schema = pa.schema([("id", pa.int64()), ("p", pa.string())])
    t = Table.create(str(table_path), schema, partition_keys=["p"])
    w = t.new_writer()
    w.write_arrow(pa.table({"id": [1, 2, 3], "p": [None] * 3}, schema=schema))
    with t.new_commit() as c:
        c.commit(w.prepare_commit())
    _alter(table_path, **{"partition.default-name": "NULLP"})
    t = Table.open(str(table_path))
    w = t.new_writer()
    w.write_arrow(pa.table({"id": [4], "p": [None]}, schema=schema))
    with t.new_commit() as c:
        c.commit(w.prepare_commit())
    data = sorted(f.rpartition("/")[0] for f in _touched(table_path) if "bucket-" in f)
    assert data == ["p=NULLP/bucket-0", "p=__DEFAULT_PARTITION__/bucket-0"]
    before = _touched(table_path)
    for command in (("repair",), ("repair", "--apply")):
        code, out, err = cli(capsys, *command, table_path)
        assert (code, out) == (2, ""), err
        assert err == (f"error: cannot repair {table_path}: option 'partition.default-name' "
                       f"was '__DEFAULT_PARTITION__' in schema 0 and is 'NULLP' now: files "
                       f"written under each schema live under different directory names, and "
                       f"this library computes one spelling per table (nothing was read or "
                       f"written)\n")
    with pytest.raises(UnsupportedTableError, match="'partition.default-name' was "):
        Table.open(str(table_path)).repair(apply=True)
    assert _touched(table_path) == before   # no snapshot, no file given up or written
    # What the table's snapshot names: all 4 rows, in the 2 files still on disk.
    live = Table.open(str(table_path)).live_files()
    assert sum(f.file.row_count for f in live) == 4 and len(live) == 2


def test_the_default_name_of_an_unpartitioned_table_decides_no_directory(table_path, capsys):
    # An unpartitioned table has no partition directory: an ALTER of the partition naming
    # options moves none of its files, and repair is not refused for it.
    t = Table.create(str(table_path), PLAIN)
    w = t.new_writer()
    w.write_arrow(pa.table({"id": [1, 2], "v": ["a", "b"]}, schema=PLAIN))
    with t.new_commit() as c:
        c.commit(w.prepare_commit())
    _alter(table_path, **{"partition.default-name": "NULLP", "partition.legacy-name": "false"})
    code, out, err = cli(capsys, "repair", table_path, "--apply")
    assert (code, err) == (0, "")
    assert out.startswith("nothing to repair: snapshot 1 of")
    assert sorted(Table.open(str(table_path)).read_arrow().column("id").to_pylist()) == [1, 2]


# --- orphan cleanup looks where the data files are ------------------------------------------

OLD_S = 1_600_000_000   # 2020: far older than any cutoff below


def _old_stray(root, rel):
    p = os.path.join(str(root), rel)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    with open(p, "wb") as f:
        f.write(b"stray")
    os.utime(p, (OLD_S, OLD_S))
    return p


def _age_all(root):
    for d, dirs, files in os.walk(str(root)):
        for n in files + dirs:
            os.utime(os.path.join(d, n), (OLD_S, OLD_S), follow_symlinks=False)


def _orphans(path, **kw):
    from paimon_commit.operations.orphan import CleanContext, OrphanFilesCleaner
    # The cutoff 2023-11-14: every file here is older (aged to 2020), so only what a
    # snapshot or tag uses keeps a file.
    return OrphanFilesCleaner(CleanContext(str(path), older_than_ms=1_700_000_000_000,
                                           **kw)).clean()


def test_orphan_cleanup_deletes_the_strays_under_the_path_directory(path_directory):
    """Data files live under TABLE/data/: a stray there is an orphan (it was never looked at
    before), every file snapshot 1 or 2 names stays, and pypaimon reads both snapshots."""
    _age_all(path_directory)
    stray = _old_stray(path_directory, "data/bucket-0/data-stray-0.parquet")
    beside = _old_stray(path_directory, "bucket-0/data-stray-1.parquet")   # not a data dir
    live = {f.path for s in (1, 2) for f in Table.open(str(path_directory)).live_files(s)}
    r = _orphans(path_directory)
    assert r.deleted_paths == ["data/bucket-0/data-stray-0.parquet"]
    assert not os.path.exists(stray) and os.path.exists(beside)
    assert all(os.path.exists(p) for p in live)
    assert both_read(path_directory, 1) == [1, 2] and both_read(path_directory) == [3]


def test_orphan_cleanup_does_not_enter_a_symlinked_path_directory(path_directory, tmp_path):
    """TABLE/data a symlink (to a copy outside the table): nothing under it is a candidate,
    and nothing there is deleted."""
    _age_all(path_directory)
    _old_stray(path_directory, "data/bucket-0/data-stray-0.parquet")
    outside = tmp_path / "elsewhere"
    shutil.move(os.path.join(str(path_directory), "data"), str(outside))
    os.symlink(str(outside), os.path.join(str(path_directory), "data"))
    before = sorted(os.listdir(outside / "bucket-0"))
    r = _orphans(path_directory, dry_run=True)
    assert [p for p in r.deleted_paths if p.startswith("data/")] == []
    r = _orphans(path_directory)
    assert [p for p in r.deleted_paths if p.startswith("data/")] == []
    assert sorted(os.listdir(outside / "bucket-0")) == before


def test_an_inventory_fed_cleanup_finds_the_strays_under_the_path_directory(path_directory,
                                                                              tmp_path):
    """The same stray found through a file list (rows of TABLE/data/...) as through a
    listing."""
    _age_all(path_directory)
    _old_stray(path_directory, "data/bucket-0/data-stray-0.parquet")
    rows = []
    for d, _, files in os.walk(str(path_directory)):
        for n in files:
            p = os.path.join(d, n)
            rows.append(f"{p},{os.path.getsize(p)},2020-09-13T12:26:40.000Z")
    inv = tmp_path / "inventory.csv"
    inv.write_text("path,size,last_modified\n" + "\n".join(rows) + "\n")
    listing = _orphans(path_directory, dry_run=True)
    fed = _orphans(path_directory, dry_run=True, file_list=str(inv),
                   file_list_time_ms=1_750_000_000_000)
    assert sorted(fed.deleted_paths) == sorted(listing.deleted_paths)
    assert "data/bucket-0/data-stray-0.parquet" in fed.deleted_paths
