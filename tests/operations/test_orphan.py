"""Orphan file cleanup on real tables; pypaimon reads every snapshot and tag afterwards."""
import os
import shutil
import time

import pytest

from conftest import D1, D2, SCHEMA, files_under, make_rows, write
from invariants import assert_intact, referenced_files
from oracle import pp_read, rows

from paimon_commit import OptionError, Table, TableNotFoundError
from paimon_commit.io.local import LocalFileIO
from paimon_commit.operations.orphan import CleanContext, OrphanCleanAborted, OrphanFilesCleaner

OLD = time.time() - 3 * 86400


def age(path, when=OLD):
    """Make a file or a whole tree look old."""
    path = str(path)
    for root, dirs, files in os.walk(path):
        for n in files + dirs:
            os.utime(os.path.join(root, n), (when, when), follow_symlinks=False)
    os.utime(path, (when, when), follow_symlinks=False)


def clean(path, **kw):
    return OrphanFilesCleaner(CleanContext(str(path), **kw)).clean()


def snapshot_rows(path):
    t = Table.open(str(path))
    out = {("s", s.id): rows(pp_read(path, snapshot_id=s.id)) for s in t.snapshots()}
    out.update({("t", x.name): rows(pp_read(path, tag=x.name)) for x in t.tags()})
    return out


@pytest.fixture
def busy(table, table_path):
    """A table with history, a tag, an overwrite and a dropped partition."""
    for i in range(1, 6):
        write(table, make_rows([i], hr=i % 2))
    table.create_tag("t3", 3)
    w = table.new_writer()
    w.write_arrow(make_rows([50], hr=1))
    with table.new_commit() as c:
        c.overwrite(w.prepare_commit())
        c.drop_partitions([{"hr": 0}])
    return table


def plant(table_path):
    """One orphan of every kind; returns their relative paths."""
    planted = {
        "dt=19723/hr=1/bucket-0/data-stray-0.parquet": b"x" * 100,
        "manifest/manifest-lostrace-0": b"m" * 10,
        "manifest/manifest-list-lostrace-0": b"l" * 10,
        "manifest/manifest-list-lostrace-1": b"l" * 10,
        "manifest/.manifest-abc-0.1234.tmp": b"t",
        "snapshot/.snapshot-9.5678.tmp": b"{}",
        "snapshot/garbage": b"?",
        "index/index-stray-0": b"i",
        "statistics/stat-stray-0": b"s",
        "changelog/.changelog-3.999.tmp": b"c",
        "tag/.tag-t9.4321.tmp": b"{",           # pypaimon would list this as a tag
        "consumer/.consumer-r.1111.tmp": b"{",
        "schema/.schema-1.2222.tmp": b"{",
    }
    for rel, data in planted.items():
        p = table_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
    return sorted(planted)


def test_every_kind_of_orphan_is_deleted_and_nothing_used(busy, table_path):
    planted = plant(table_path)
    before_rows = snapshot_rows(table_path)
    used = referenced_files(busy)
    age(table_path)
    r = clean(table_path)
    assert r.deleted_paths == planted
    assert r.by_kind["data"] == {"files": 1, "bytes": 100}
    assert r.by_kind["manifest-list"]["files"] == 2
    assert r.by_kind["temp"]["files"] == 6
    assert {"manifest", "snapshot", "index", "statistics"} <= set(r.by_kind)
    assert all(os.path.exists(p) for p in used)
    assert snapshot_rows(table_path) == before_rows
    assert_intact(table_path)
    assert clean(table_path).deleted_files == 0   # idempotent


def test_young_files_survive(busy, table_path):
    planted = plant(table_path)
    r = clean(table_path)                          # default threshold: one day
    assert r.deleted_files == 0 and r.retained_young >= len(planted)
    assert all((table_path / p).exists() for p in planted)


def test_dry_run_deletes_nothing(busy, table_path):
    planted = plant(table_path)
    age(table_path)
    before = files_under(table_path)
    r = clean(table_path, dry_run=True)
    assert r.deleted_paths == planted and r.dry_run
    assert files_under(table_path) == before
    assert clean(table_path).deleted_paths == planted


def test_unknown_dirs_root_files_and_partition_files_survive(busy, table_path):
    keep = ["README", "my-notes/data-x.parquet", "dt=19723/_SUCCESS",
            "dt=19723/hr=1/other/data-y.parquet", "dt=19723/notakey=1/bucket-0/data-z.parquet",
            "schema/junk", "tag/junk", "consumer/junk", "bucket-0/data-w.parquet"]
    for rel in keep:
        (table_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (table_path / rel).write_text("keep")
    age(table_path)
    r = clean(table_path)
    assert r.deleted_files == 0
    assert all((table_path / rel).exists() for rel in keep)


def test_branch_and_changelog_files_are_used(table, table_path):
    for i in range(1, 5):
        write(table, make_rows([i], hr=i))
    # A branch keeps snapshot 3's files, a long-lived changelog snapshot 2's.
    (table_path / "branch" / "branch-b1" / "snapshot").mkdir(parents=True)
    shutil.copytree(table_path / "schema", table_path / "branch" / "branch-b1" / "schema")
    shutil.copy(table_path / "snapshot" / "snapshot-3",
                table_path / "branch" / "branch-b1" / "snapshot" / "snapshot-3")
    s2 = (table_path / "snapshot" / "snapshot-2").read_bytes()
    s4 = table.snapshot(4)
    protected = referenced_files(table, min_snapshot=2) - referenced_files(table, 4)
    data4 = [f.path for f in table.live_files(4) if f.partition["hr"] == 4]
    table.rollback_to(1)                           # snapshots 2..4 unreachable from main
    (table_path / "changelog").mkdir()             # (rollback deletes changelogs past 1)
    (table_path / "changelog" / "changelog-2").write_bytes(s2)
    age(table_path)
    r = clean(table_path)
    assert protected and all(os.path.exists(p) for p in protected)
    # Only snapshot 4's own files go: its data file, its two lists and its delta manifest.
    delta4 = table.store.manifests.read_list(s4.delta_manifest_list)[0].file_name
    assert r.deleted_paths == sorted([os.path.relpath(data4[0], table_path),
                                      f"manifest/{s4.base_manifest_list}",
                                      f"manifest/{s4.delta_manifest_list}",
                                      f"manifest/{delta4}"])


def test_tag_files_survive_expiration_and_cleanup(table, table_path):
    for i in range(1, 7):
        write(table, make_rows([i], hr=i % 2))
    table.create_tag("t2", 2)
    with table.new_commit() as c:
        c.drop_partitions([{"hr": 0}])
        c.expire_snapshots(retain_min=1, time_retained_ms=0)
    expected = rows(pp_read(table_path, tag="t2"))
    age(table_path)
    assert clean(table_path).deleted_files == 0
    assert rows(pp_read(table_path, tag="t2")) == expected
    assert_intact(table_path, expected_by_tag={"t2": [1, 2]})


def test_empty_partitions_are_removed(table, table_path):
    write(table, make_rows([1], dt=D2, hr=3))
    write(table, make_rows([2], dt=D1, hr=1))
    with table.new_commit() as c:
        c.drop_partitions([{"dt": D2}])
        c.expire_snapshots(retain_min=1, time_retained_ms=0)
    assert (table_path / "dt=19724" / "hr=3" / "bucket-0").is_dir()   # left by expiration
    (table_path / "dt=19723" / "hr=9" / "bucket-0").mkdir(parents=True)  # young, empty
    age(table_path / "dt=19724")
    r = clean(table_path)
    assert r.deleted_dirs == ["dt=19724/hr=3/bucket-0", "dt=19724/hr=3", "dt=19724"]
    assert (table_path / "dt=19723" / "hr=9" / "bucket-0").is_dir()
    assert (table_path / "dt=19723" / "hr=1" / "bucket-0").is_dir()
    assert table_path.is_dir()
    assert_intact(table_path, {3: [2]})


class _VanishingSnapshot(LocalFileIO):
    """A concurrent expiration deletes snapshot-2 right after the cleaner listed it."""

    def read_bytes(self, path):
        if path.endswith("/snapshot/snapshot-2") and os.path.exists(path):
            os.unlink(path)
        return super().read_bytes(path)


def test_snapshot_vanishing_during_clean_aborts(busy, table_path):
    plant(table_path)
    age(table_path)
    before = files_under(table_path)
    ctx = CleanContext(str(table_path), file_io=_VanishingSnapshot(str(table_path)))
    with pytest.raises(OrphanCleanAborted, match="snapshot-2 was listed but cannot be read"):
        OrphanFilesCleaner(ctx).clean()
    assert set(files_under(table_path)) == set(before) - {"snapshot/snapshot-2"}


def test_unreadable_manifest_aborts(busy, table_path):
    plant(table_path)
    age(table_path)
    s = busy.latest_snapshot()
    (table_path / "manifest" / s.delta_manifest_list).write_bytes(b"garbage")
    before = files_under(table_path)
    with pytest.raises(OrphanCleanAborted, match=s.delta_manifest_list):
        clean(table_path)
    assert files_under(table_path) == before


def test_symlinks_are_never_followed(busy, table_path, tmp_path):
    outside = tmp_path / "outside"
    (outside / "bucket-0").mkdir(parents=True)
    (outside / "bucket-0" / "data-precious.parquet").write_text("precious")
    (outside / "data-precious2.parquet").write_text("precious")
    os.symlink(outside, table_path / "dt=19723" / "hr=7")                # partition dir link
    os.symlink(outside / "bucket-0", table_path / "dt=19723" / "hr=1" / "bucket-1")
    os.symlink(outside / "data-precious2.parquet",
               table_path / "dt=19723" / "hr=1" / "bucket-0" / "data-link.parquet")
    age(table_path)
    age(outside)
    clean(table_path)
    assert (outside / "bucket-0" / "data-precious.parquet").read_text() == "precious"
    assert (outside / "data-precious2.parquet").read_text() == "precious"
    assert_intact(table_path)


@pytest.mark.parametrize("target", ["/", "plain-dir", "a-file", "missing"])
def test_non_tables_are_refused_before_listing(tmp_path, target):
    (tmp_path / "plain-dir" / "manifest").mkdir(parents=True)
    (tmp_path / "plain-dir" / "manifest" / "manifest-old").write_text("x")
    (tmp_path / "a-file").write_text("x")
    age(tmp_path)
    path = "/" if target == "/" else str(tmp_path / target)
    before = files_under(tmp_path)
    with pytest.raises(TableNotFoundError, match="is not a Paimon table"):
        clean(path)
    assert files_under(tmp_path) == before


def test_threshold_validation(busy, table_path):
    with pytest.raises(OptionError, match="not in the past"):
        CleanContext(str(table_path), older_than_ms=int(time.time() * 1000) + 1000)
    with pytest.raises(OptionError, match="looks like seconds"):
        CleanContext(str(table_path), older_than_ms=int(time.time()))


def test_mtimes_in_seconds_abort(busy, table_path):
    plant(table_path)
    age(table_path)
    age(table_path / "manifest" / "manifest-lostrace-0", when=1000)   # 1970: 1,000,000 ms
    before = files_under(table_path)
    with pytest.raises(OrphanCleanAborted, match="looks like seconds"):
        clean(table_path)
    assert files_under(table_path) == before


def test_should_be_retained_vetoes(busy, table_path):
    planted = plant(table_path)
    age(table_path)
    r = clean(table_path, should_be_retained=lambda rel: rel.startswith("manifest/"))
    assert r.retained_vetoed == 4
    assert r.deleted_paths == [p for p in planted if not p.startswith("manifest/")]


def test_pypaimon_written_table(tmp_path):
    from oracle import pp_create, pp_drop, pp_write
    path = tmp_path / "wh" / "db.db" / "pp"
    path.parent.mkdir(parents=True)
    pp_create(path, SCHEMA, ["dt", "hr"])
    for i in range(4):
        pp_write(path, make_rows([i], hr=i % 2))
    pp_drop(path, [{"dt": D1, "hr": 0}])
    before = snapshot_rows(path)
    (path / "dt=19723" / "hr=0" / "bucket-0" / "data-stray-0.parquet").write_text("x")
    age(path)
    r = clean(path)
    assert r.deleted_paths == ["dt=19723/hr=0/bucket-0/data-stray-0.parquet"]
    assert snapshot_rows(path) == before


def test_cyclic_gc_is_restored_after_a_clean(busy, table_path):
    import gc
    assert gc.isenabled()
    clean(table_path)
    assert gc.isenabled()
    gc.disable()
    try:
        clean(table_path)
        assert not gc.isenabled()      # a caller that turned it off keeps it off
    finally:
        gc.enable()


def test_context_options_are_used_not_only_validated(busy, table_path, monkeypatch):
    # Regression: CleanContext.options was validated, then ignored.
    from paimon_commit.io.metered import ContextExecutor
    import paimon_commit.operations.orphan as orphan_mod
    sizes = []

    class Recording(ContextExecutor):
        def __init__(self, max_workers=None, *args, **kwargs):
            sizes.append(max_workers)
            super().__init__(max_workers, *args, **kwargs)
    monkeypatch.setattr(orphan_mod, "ContextExecutor", Recording)
    OrphanFilesCleaner(CleanContext(str(table_path), dry_run=True,
                                    options={"file-operation.thread-num": "3"})).clean()
    # the listing pool and the I/O pool (statuses, deletes): the option, not the CPU count
    assert sizes == [3, 3]
    with pytest.raises(OptionError, match="file-operation.thread-num"):
        OrphanFilesCleaner(CleanContext(str(table_path), options={
            "file-operation.thread-num": "0"}))


class _Recording(LocalFileIO):
    """Records every directory listed (with the method that listed it) and every per-file
    status request."""

    def __init__(self, root):
        super().__init__(root)
        self.listed, self.per_file = [], []

    def list_files(self, directory):
        self.listed.append(("list_files", directory))
        return super().list_files(directory)

    def list_status(self, directory):
        self.listed.append(("list_status", directory))
        return super().list_status(directory)

    def list_names(self, directory):
        self.listed.append(("list_names", directory))
        return super().list_names(directory)

    def file_size(self, path):
        self.per_file.append(path)
        return super().file_size(path)

    def exists(self, path):
        self.per_file.append(path)
        return super().exists(path)


def test_each_candidate_directory_is_listed_once_with_its_status(busy, table_path):
    # One listing per directory returns every file's size and modification time: nothing is
    # asked per candidate afterwards, and the result (sizes included) is the same.
    planted = plant(table_path)
    for i in range(50):
        (table_path / "dt=19723" / "hr=1" / "bucket-0" / f"data-more-{i}.parquet").write_bytes(
            b"d" * i)
    planted = sorted(planted + [f"dt=19723/hr=1/bucket-0/data-more-{i}.parquet"
                                for i in range(50)])
    age(table_path)
    size = {rel: os.path.getsize(table_path / rel) for rel in planted}
    io = _Recording(str(table_path))
    r = OrphanFilesCleaner(CleanContext(str(table_path), file_io=io, dry_run=True)).clean()
    assert r.deleted_paths == planted
    assert r.deleted_bytes == sum(size.values())
    buckets = {os.path.join(root, d) for root, dirs, _ in os.walk(table_path) for d in dirs
               if d.startswith("bucket-")}
    by_files = [d for how, d in io.listed if how == "list_files"]
    assert sorted(d for d in by_files if d in buckets) == sorted(buckets)   # once each
    assert not [d for how, d in io.listed if how != "list_files" and d in buckets]
    assert not [p for p in io.per_file if "/bucket-" in p or "/manifest/" in p]
    assert_intact(table_path)


class _ChangesAfterListing(LocalFileIO):
    """Right after the listing of a bucket directory: one orphan is removed (a concurrent
    cleaner), one is replaced by a symlink to a file outside the table."""

    def __init__(self, root, outside):
        super().__init__(root)
        self.outside = outside

    def list_files(self, directory):
        listing = super().list_files(directory)
        for name in listing.names:
            path = os.path.join(directory, name)
            if name == "data-gone-0.parquet":
                os.unlink(path)
            elif name == "data-link-0.parquet":
                os.unlink(path)
                os.symlink(self.outside, path)
        return listing


def test_files_changed_after_listing(busy, table_path, tmp_path):
    # A candidate removed after the listing is not reported deleted; one replaced by a
    # symlink never costs its target. (That a file changed after the listing is left alone
    # is the delete phase's re-check before each batch, not the listing's.)
    outside = tmp_path / "precious.parquet"
    outside.write_text("precious")
    bucket = table_path / "dt=19723" / "hr=1" / "bucket-0"
    for name in ("data-gone-0.parquet", "data-link-0.parquet", "data-stray-0.parquet"):
        (bucket / name).write_text("x")
    age(table_path)
    io = _ChangesAfterListing(str(table_path), str(outside))
    r = OrphanFilesCleaner(CleanContext(str(table_path), file_io=io)).clean()
    assert "dt=19723/hr=1/bucket-0/data-stray-0.parquet" in r.deleted_paths
    assert "dt=19723/hr=1/bucket-0/data-gone-0.parquet" not in r.deleted_paths
    assert not (bucket / "data-stray-0.parquet").exists()
    assert outside.read_text() == "precious"
    assert_intact(table_path)
