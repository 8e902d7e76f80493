"""LATEST / EARLIEST are only hints; hostile names in manifests never lead outside the table."""
import dataclasses

from conftest import SCHEMA, make_rows, write
from invariants import assert_intact

import pytest

from paimon_commit import CommitMessage, Table
from paimon_commit.format.manifest import FileKind, ManifestEntry
from paimon_commit.operations.commit import FileStoreCommit
from paimon_commit.operations.expire import ExpireConfig, ExpireSnapshots


def test_stale_or_missing_latest_hint(table, table_path):
    for i in range(1, 6):
        write(table, make_rows([i]))
    (table_path / "snapshot" / "LATEST").write_text("2")
    assert Table.open(str(table_path)).latest_snapshot().id == 5
    (table_path / "snapshot" / "LATEST").unlink()
    assert Table.open(str(table_path)).latest_snapshot().id == 5
    assert write(table, make_rows([6])) == 6
    (table_path / "snapshot" / "LATEST").write_text("garbage")
    assert write(table, make_rows([7])) == 7


def test_earliest_found_by_listing_after_more_than_300_expired(table_path):
    t = Table.create(str(table_path), SCHEMA, ["dt", "hr"], {"write-only": "true"})
    with t.new_commit() as c:
        for i in range(1, 331):
            w = t.new_writer()
            w.write_arrow(make_rows([i]))
            c.commit(w.prepare_commit(), i)
    r = ExpireSnapshots(t.store, ExpireConfig(retain_min=5, time_retained_ms=0,
                                              max_deletes=1000)).expire()
    assert r.expired_snapshots == 325
    (table_path / "snapshot" / "EARLIEST").unlink()   # e.g. written by pypaimon-only tools
    assert t.store.snapshots.earliest_snapshot_id() == 326
    (table_path / "snapshot" / "EARLIEST").write_text("7")   # stale
    assert t.store.snapshots.earliest_snapshot_id() == 326
    assert_intact(table_path)


def test_hostile_file_names_in_manifests_are_never_deleted(table, table_path, tmp_path):
    precious = table_path.parent / "precious.parquet"
    precious.write_text("keep me")
    write(table, make_rows([1]))
    live = table.live_entries()[0]
    evil = dataclasses.replace(live.file, file_name="../../../precious.parquet")
    msg = CommitMessage((None, None), live.partition, 0, -1, (evil,), ())
    with table.new_commit() as c, pytest.raises(ValueError, match="data file name"):
        c.commit([msg])                          # our writers are refused...
    # ...but a foreign writer committed a file with a path in its name, then deleted it.
    entry = ManifestEntry(FileKind.ADD, live.partition, 0, -1, evil)
    FileStoreCommit(table.store)._run(lambda latest: [entry], "APPEND", 1, False)
    with table.new_commit() as c:
        c.drop_partitions([{"hr": 1}])
    write(table, make_rows([2], hr=2))
    r = ExpireSnapshots(table.store, ExpireConfig(retain_min=1, time_retained_ms=0)).expire()
    assert r.expired_snapshots == 3
    assert any("precious" in s for s in r.skipped)
    assert precious.read_text() == "keep me"


@pytest.mark.parametrize("hint", ["9" * 40, "9223372036854775807", "-5", "0"])
def test_a_hint_outside_the_snapshot_id_range_is_ignored(table, table_path, hint):
    """A LATEST or EARLIEST hint holding no snapshot id (40 nines made every commit and read
    raise "snapshot-id out of range": audit issue25x x4) is advisory: ignored."""
    write(table, make_rows([1]))
    for name in ("LATEST", "EARLIEST"):
        (table_path / "snapshot" / name).write_text(hint)
    write(table, make_rows([2]))
    t = Table.open(str(table_path))
    assert sorted(t.read_arrow().column("id").to_pylist()) == [1, 2]
    assert t.store.snapshots.latest_snapshot_id() == 2
    assert t.store.snapshots.earliest_snapshot_id() == 1
