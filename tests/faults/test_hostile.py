"""Hostile input: a clear error or a skip with a warning; never a deletion outside the table,
never a deletion of a referenced file."""
import dataclasses
import os
import shutil
import time

import pytest

from conftest import D1, SCHEMA, files_under, make_rows, write
from invariants import assert_intact, referenced_files

from paimon_commit import CorruptMetadataError, Table
from paimon_commit.format.manifest import FileKind, ManifestEntry
from paimon_commit.operations.commit import FileStoreCommit
from paimon_commit.operations.expire import ExpireConfig, ExpireSnapshots
from paimon_commit.operations.orphan import CleanContext, OrphanCleanAborted, OrphanFilesCleaner
from paimon_commit.tags import ConsumerManager

OLD = time.time() - 3 * 86400
EXPIRE_ALL = ExpireConfig(retain_min=1, time_retained_ms=0, max_deletes=100)


def age_tree(path):
    for root, dirs, files in os.walk(path):
        for n in files + dirs:
            os.utime(os.path.join(root, n), (OLD, OLD), follow_symlinks=False)


def expire(table):
    return ExpireSnapshots(Table.open(table.path).store, EXPIRE_ALL).expire()


def clean(path):
    return OrphanFilesCleaner(CleanContext(str(path))).clean()


def foreign_commit(table, entries, kind="APPEND", ident=1):
    """What a buggy or malicious foreign writer could publish (our writers refuse it)."""
    FileStoreCommit(table.store, "foreign")._run(lambda latest: entries, kind, ident, False)


@pytest.fixture
def outside(tmp_path):
    d = tmp_path / "outside"
    d.mkdir()
    (d / "precious.parquet").write_text("precious")
    return d


def test_symlinked_partition_dir_pointing_outside(table, table_path, outside):
    write(table, make_rows([1], hr=1))
    write(table, make_rows([2], hr=2))
    # Someone replaced a partition directory by a link to a directory outside the table.
    part = table_path / "dt=19723" / "hr=1"
    shutil.move(str(part), str(outside / "moved"))
    os.symlink(outside / "moved", part)
    with table.new_commit() as c:
        c.drop_partitions([{"hr": 1}])
    write(table, make_rows([3], hr=3))
    r = expire(table)
    assert r.expired_snapshots == 3
    assert any("outside the table root" in s for s in r.skipped)
    assert len(list((outside / "moved" / "bucket-0").iterdir())) == 1   # not deleted
    age_tree(table_path)
    clean(table_path)
    assert len(list((outside / "moved" / "bucket-0").iterdir())) == 1
    assert (outside / "precious.parquet").read_text() == "precious"
    assert_intact(table_path, {5: [2, 3]})


@pytest.mark.parametrize("name", ["../../../outside/precious.parquet", "/etc/hostname",
                                  "a/b.parquet", ".."])
def test_paths_in_file_names(table, table_path, outside, name):
    write(table, make_rows([1]))
    live = table.live_entries()[0]
    evil = ManifestEntry(FileKind.ADD, live.partition, 0, -1,
                         dataclasses.replace(live.file, file_name=name))
    foreign_commit(table, [evil])
    foreign_commit(table, [evil.as_delete()], "OVERWRITE", 2)
    write(table, make_rows([2]))
    r = expire(table)
    assert r.expired_snapshots == 3
    age_tree(table_path)
    before_outside = sorted(os.listdir(outside))
    clean(table_path)
    assert sorted(os.listdir(outside)) == before_outside
    assert (outside / "precious.parquet").read_text() == "precious"
    assert os.path.exists("/etc/hostname")


def test_external_path_outside_the_table_is_never_deleted(table, table_path, outside):
    write(table, make_rows([1]))
    live = table.live_entries()[0]
    ext = ManifestEntry(FileKind.ADD, live.partition, 0, -1, dataclasses.replace(
        live.file, file_name="data-ext-0.parquet",
        external_path=str(outside / "precious.parquet")))
    foreign_commit(table, [ext])
    foreign_commit(table, [ext.as_delete()], "OVERWRITE", 2)
    write(table, make_rows([2]))
    expire(table)
    assert (outside / "precious.parquet").read_text() == "precious"


def test_manifest_list_naming_a_path(table, table_path):
    write(table, make_rows([1]))
    write(table, make_rows([2]))
    s2 = table_path / "snapshot" / "snapshot-2"
    s2.write_text(s2.read_text().replace('"baseManifestList": "manifest-list-',
                                         '"baseManifestList": "../../manifest-list-'))
    before = files_under(table_path)
    with pytest.raises(ValueError, match="manifest file name"):
        expire(table)
    with pytest.raises((OrphanCleanAborted, ValueError)):
        clean(table_path)
    assert files_under(table_path) == before


@pytest.mark.parametrize("content", [b"", b"{", b"[]", b'{"nextSnapshot": "x"}'])
def test_corrupt_consumer_stops_expiration_until_it_expires(table, table_path, content):
    for i in range(1, 6):
        write(table, make_rows([i]))
    cm = ConsumerManager(table.store.io, table.store.root)
    cm.write("reader", 2)
    (table_path / "consumer" / "consumer-reader").write_bytes(content)
    before = files_under(table_path)
    with pytest.raises(CorruptMetadataError, match="consumer-reader"):
        expire(table)
    assert files_under(table_path) == before
    os.utime(table_path / "consumer" / "consumer-reader", (OLD, OLD))
    assert cm.expire(int(time.time() * 1000) - 3_600_000) == ["reader"]
    assert expire(table).expired_snapshots == 4


@pytest.mark.parametrize("content", [b"", b"{", b'{"id": 1}', b"\xff\xfe"])
def test_corrupt_tag_file(table, table_path, content):
    for i in range(1, 5):
        write(table, make_rows([i], hr=i % 2))
    table.create_tag("t2", 2)
    (table_path / "tag" / "tag-t2").write_bytes(content)
    before = files_under(table_path)
    with pytest.raises(CorruptMetadataError, match="tag-t2"):
        expire(table)
    age_tree(table_path)
    with pytest.raises(OrphanCleanAborted, match="tag-t2"):
        clean(table_path)
    assert files_under(table_path) == before


@pytest.mark.parametrize("victim", ["snapshot-1", "snapshot-3"])
def test_snapshot_id_mismatch(table, table_path, victim):
    for i in range(1, 5):
        write(table, make_rows([i]))
    p = table_path / "snapshot" / victim
    p.write_text(p.read_text().replace(f'"id": {victim[-1]}', '"id": 99'))
    before = files_under(table_path)
    if victim == "snapshot-1":      # being expired: skipped with a warning, files left
        r = expire(table)
        assert any("unreadable" in s for s in r.skipped)
        assert r.expired_snapshots == 3
    else:                           # retained: a clear error, nothing deleted
        with pytest.raises(CorruptMetadataError, match="holds id 99, but its name says 3"):
            expire(table)
        assert files_under(table_path) == before
    age_tree(table_path)
    if victim == "snapshot-1":      # expired above: the cleaner takes what it left
        clean(table_path)
        assert_intact(table_path, {4: [1, 2, 3, 4]})
    else:
        with pytest.raises(OrphanCleanAborted, match="holds id 99"):
            clean(table_path)
        assert files_under(table_path) == before


def test_referenced_files_survive_every_hostile_case_above(table, table_path):
    # The invariant checker itself must catch a missing referenced file.
    write(table, make_rows([1]))
    os.unlink(next(iter(p for p in referenced_files(table) if p.endswith(".parquet"))))
    with pytest.raises(AssertionError, match="referenced files missing"):
        assert_intact(table_path)
