"""Tables this library must not write to (primary-key, fixed-bucket, layouts we do not
produce) are refused before any file is written; every kind can still be maintained."""
import dataclasses
import datetime
import os
import time

import pytest

from conftest import D1, D2, SCHEMA, files_under, make_rows, write

from paimon_commit import Table
from paimon_commit.errors import UnsupportedTableError
from paimon_commit.format.schema import TableSchema
from paimon_commit.operations.orphan import CleanContext, OrphanFilesCleaner


def _redeclare(table_path, primary_keys=(), **options):
    """Give an existing table a newer schema the way Paimon Java's ALTER TABLE would (a new
    schema-N file), turning it into another kind of table for the tests."""
    t = Table.open(str(table_path))
    old = t.schema
    new = dataclasses.replace(old, id=old.id + 1, primary_keys=tuple(primary_keys),
                              options={**old.options, **options})
    (table_path / "schema" / f"schema-{new.id}").write_bytes(new.to_json())
    return Table.open(str(table_path))


KINDS = [
    (dict(primary_keys=("id", "dt", "hr")), "primary-key table (dynamic bucket)"),
    (dict(primary_keys=("id",)), "primary-key table (cross-partition dynamic bucket)"),
    (dict(primary_keys=("id", "dt", "hr"), bucket="4"),
     "primary-key table (fixed bucket, bucket = 4)"),
    (dict(primary_keys=("id", "dt", "hr"), bucket="-2"), "primary-key table (postpone bucket)"),
    (dict(bucket="2"), "append table (fixed bucket, bucket = 2)"),
]


@pytest.mark.parametrize("declare, kind", KINDS, ids=lambda v: str(v)[:40])
def test_writes_into_other_table_kinds_are_refused_before_any_file(table, table_path,
                                                                   declare, kind):
    write(table, make_rows([1, 2]))
    w = table.new_writer()
    w.write_arrow(make_rows([3]))
    msgs = w.prepare_commit()            # written while the table was still an append table
    other = _redeclare(table_path, **declare)
    before = files_under(table_path)
    assert other.store.table_kind == kind

    with pytest.raises(UnsupportedTableError) as e:
        other.new_writer()
    assert f"cannot write to {table_path}: it is a" in str(e.value)
    assert kind in str(e.value)
    with pytest.raises(UnsupportedTableError, match="writes only bucket-unaware append"):
        with other.new_commit() as c:
            c.commit(msgs)
    with pytest.raises(UnsupportedTableError, match="writes only bucket-unaware append"):
        with other.new_commit() as c:
            c.overwrite(msgs)
    assert files_under(table_path) == before
    assert [s.id for s in other.snapshots()] == [1]


@pytest.mark.parametrize("option, value", [
    ("data-file.path-directory", "data"),
    ("data-file.external-paths", "s3://elsewhere/data"),
    ("row-tracking.enabled", "true"),
    ("partition.legacy-name", "false"),
    ("file.format", "orc"),
])
def test_layout_options_we_do_not_write_are_refused(table, table_path, option, value):
    write(table, make_rows([1]))
    other = _redeclare(table_path, **{option: value})
    before = files_under(table_path)
    with pytest.raises(UnsupportedTableError) as e:
        other.new_writer()
    assert option in str(e.value) and str(table_path) in str(e.value)
    assert files_under(table_path) == before


def test_create_refuses_a_table_it_could_not_write(tmp_path):
    path = tmp_path / "t"
    with pytest.raises(UnsupportedTableError,
                       match=r"cannot create .*: it is an append table \(fixed bucket, "
                             r"bucket = 4\)"):
        Table.create(str(path), SCHEMA, ["dt"], {"bucket": "4"})
    assert not path.exists()


def test_primary_key_tables_are_not_read_as_plain_rows(table, table_path):
    write(table, make_rows([1]))
    other = _redeclare(table_path, primary_keys=("id", "dt", "hr"))
    with pytest.raises(UnsupportedTableError, match="need a merge by key"):
        other.read_arrow()


@pytest.mark.parametrize("declare, kind", KINDS, ids=lambda v: str(v)[:40])
def test_every_kind_is_maintained(table, table_path, declare, kind):
    """Expiration, partition drop, tags, rollback and orphan cleanup do not depend on the
    table kind (the maintenance commit only DELETEs files)."""
    for i in range(6):
        write(table, make_rows([i], dt=D1 if i % 2 else D2))
    other = _redeclare(table_path, **declare)
    live_before = {f.path for f in other.live_files()}
    tagged = {f.path for f in other.live_files(snapshot_id=3)}
    other.create_tag("t3", snapshot_id=3)
    with other.new_commit(options={"snapshot.num-retained.min": "2",
                                   "snapshot.num-retained.max": "2",
                                   "snapshot.time-retained": "0"}) as c:
        assert c.expire_snapshots().expired_snapshots == 4
        sid = c.drop_partitions([{"dt": D2}])
    assert [s.id for s in other.snapshots()] == [6, 7]   # the drop's own maintenance ran
    d1 = {p for p in live_before if f"dt={(D1 - datetime.date(1970, 1, 1)).days}/" in p}
    assert {f.path for f in other.live_files()} == d1
    assert {f.path for f in other.live_files(tag="t3")} == tagged
    assert all(os.path.exists(p) for p in live_before | tagged)

    other.rollback_to(snapshot_id=sid - 1)
    assert other.latest_snapshot().id == sid - 1
    assert {f.path for f in other.live_files()} == live_before
    time.sleep(0.01)
    result = OrphanFilesCleaner(CleanContext(str(table_path),
                                             older_than_ms=int(time.time() * 1000) - 1,
                                             allow_recent_cutoff=True)).clean()
    assert result.deleted_files >= 1   # the rolled-back snapshot's manifests
    assert all(os.path.exists(p) for p in live_before | tagged)
