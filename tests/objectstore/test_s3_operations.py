"""Every operation on an S3-protocol server (moto, started by the tests): what a user notices
is checked in the bucket itself (keys present or gone) and by reading the rows back, with our
reader and with pypaimon through its own S3 options."""
import time

import pytest

from conftest import D1, D2, SCHEMA, make_rows, write
from paimon_commit import CleanContext, ExpireConfig, ExpireSnapshots, OrphanFilesCleaner, Table
from paimon_commit.objectstore import ObjectStoreFileIO
from paimon_commit.tags import ConsumerManager


def _create(s3, **options):
    return Table.create(s3.table_uri(), SCHEMA, partition_keys=["dt", "hr"],
                        options={"snapshot.num-retained.min": "100", **options})


def _ids(t, **kw):
    return sorted(t.read_arrow(**kw).column("id").to_pylist())


def _pp_ids(s3, **kw):
    return sorted(s3.pp_read(**kw).column("id").to_pylist())


def test_commit_writes_no_markers_no_temp_files_and_reads_back(s3):
    t = _create(s3)
    assert isinstance(t.store.io, ObjectStoreFileIO)
    assert write(t, make_rows([1, 2])) == 1
    assert write(t, make_rows([3], dt=D2, hr=5)) == 2
    keys = s3.keys()
    assert not [k for k in keys if k.endswith("/")], "directory markers written"
    assert not [k for k in keys if k.rsplit("/", 1)[-1].startswith(".")], \
        "temp or probe objects left"
    assert "db.db/t/snapshot/snapshot-2" in keys and "db.db/t/schema/schema-0" in keys
    assert s3.get("db.db/t/snapshot/LATEST") == b"2"
    again = Table.open(s3.table_uri())
    assert _ids(again) == [1, 2, 3]
    assert _pp_ids(s3) == [1, 2, 3]
    assert _pp_ids(s3, snapshot_id=1) == [1, 2]


def test_overwrite_and_drop_partition(s3):
    t = _create(s3)
    write(t, make_rows([1, 2]))
    write(t, make_rows([3], dt=D2))
    w = t.new_writer()
    w.write_arrow(make_rows([10, 11]))
    with t.new_commit() as c:
        c.overwrite(w.prepare_commit())          # replaces dt=D1/hr=1 only
    assert _ids(t) == [3, 10, 11]
    with t.new_commit() as c:
        c.drop_partitions([{"dt": D2}])
    assert _ids(t) == [10, 11]
    assert _pp_ids(s3) == [10, 11]
    assert [s.commit_kind for s in t.snapshots()] == ["APPEND", "APPEND", "OVERWRITE",
                                                      "OVERWRITE"]


def test_expire_snapshots_deletes_the_objects_only_they_used(s3):
    t = _create(s3)
    for i in range(6):
        w = t.new_writer()
        w.write_arrow(make_rows([i]))
        with t.new_commit() as c:
            c.overwrite(w.prepare_commit())      # each snapshot replaces the last file
    data_before = [k for k in s3.keys() if k.endswith(".parquet")]
    assert len(data_before) == 6
    r = ExpireSnapshots(Table.open(s3.table_uri()).store,
                        ExpireConfig(retain_min=2, time_retained_ms=0)).expire()
    assert r.expired_ids == [1, 2, 3, 4]
    keys = s3.keys()
    assert [k for k in keys if "/snapshot/snapshot-" in k] == [
        "db.db/t/snapshot/snapshot-5", "db.db/t/snapshot/snapshot-6"]
    data_after = [k for k in keys if k.endswith(".parquet")]
    assert len(data_after) == 2          # the files of snapshots 5 and 6
    assert _ids(t) == [5] and _ids(t, snapshot_id=5) == [4]
    assert _pp_ids(s3) == [5] and _pp_ids(s3, snapshot_id=5) == [4]
    assert s3.get("db.db/t/snapshot/EARLIEST") == b"5"


def test_post_commit_maintenance_expires_snapshots_partitions_and_consumers(s3):
    t = _create(s3)
    old_day = "2000-01-01"
    import datetime
    write(t, make_rows([1], dt=datetime.date(2000, 1, 1)))
    cm = ConsumerManager(t.store.io, t.store.root)
    cm.write("reader-1", 1)
    time.sleep(1.1)   # S3 last-modified has second resolution
    opts = {"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "2",
            "snapshot.time-retained": "0 ms", "partition.expiration-time": "1 d",
            "partition.expiration-check-interval": "0 ms", "consumer.expiration-time": "1 s",
            "partition.timestamp-formatter": "yyyy-MM-dd"}
    for i in range(2, 6):
        write(t, make_rows([i], dt=datetime.date.today()), commit=t.new_commit(options=opts))
    assert t.consumers() == []
    assert not [k for k in s3.keys() if "/consumer/" in k]
    assert not [k for k in s3.keys() if f"dt={old_day}" in k], "expired partition's files"
    assert _ids(t) == [2, 3, 4, 5]
    assert len(t.snapshots()) <= 2
    assert _pp_ids(s3) == [2, 3, 4, 5]


def test_tags_and_rollback(s3):
    t = _create(s3)
    for i in range(1, 5):
        write(t, make_rows([i]))
    t.create_tag("v2", 2)
    assert "db.db/t/tag/tag-v2" in s3.keys()
    assert _pp_ids(s3, tag="v2") == [1, 2]
    r = t.rollback_to(snapshot_id=3)
    assert t.latest_snapshot().id == 3 and _ids(t) == [1, 2, 3]
    assert "db.db/t/snapshot/snapshot-4" not in s3.keys()
    assert s3.get("db.db/t/snapshot/LATEST") == b"3"
    ExpireSnapshots(t.store, ExpireConfig(retain_min=1, time_retained_ms=0)).expire()
    assert _ids(t, tag="v2") == [1, 2] and _pp_ids(s3, tag="v2") == [1, 2]
    t.delete_tag("v2")
    assert not [k for k in s3.keys() if "/tag/" in k]
    assert _ids(t) == [1, 2, 3]
    assert r is not None


def test_orphan_cleanup_uses_the_stores_last_modified(s3):
    t = _create(s3)
    write(t, make_rows([1, 2]))
    write(t, make_rows([3], dt=D2))
    old = ["db.db/t/dt=2024-01-01/hr=1/bucket-0/data-orphan-old.parquet",
           "db.db/t/manifest/manifest-orphan-old"]
    for k in old:
        s3.put(k)
    time.sleep(2.2)
    cutoff = int(time.time() * 1000) - 1000
    young = "db.db/t/dt=2024-01-02/hr=1/bucket-0/data-orphan-young.parquet"
    s3.put(young)
    dry = OrphanFilesCleaner(CleanContext(s3.table_uri(), older_than_ms=cutoff,
                                          dry_run=True)).clean()
    assert sorted(dry.deleted_paths) == sorted(k[len("db.db/t/"):] for k in old)
    assert all(k in s3.keys() for k in old)
    r = OrphanFilesCleaner(CleanContext(s3.table_uri(), older_than_ms=cutoff)).clean()
    assert r.deleted_files == 2
    keys = s3.keys()
    assert not any(k in keys for k in old) and young in keys
    assert _ids(t) == [1, 2, 3] and _pp_ids(s3) == [1, 2, 3]


def test_a_second_table_in_the_bucket_is_out_of_reach(s3):
    t = _create(s3)
    write(t, make_rows([1]))
    s3.put("db.db/t2/snapshot/snapshot-1", b"{}")
    s3.put("db.db/t-sibling.parquet")
    io = t.store.io
    from paimon_commit import UnsafePathError
    for bad in (f"{s3.name}/db.db/t2/snapshot/snapshot-1", f"{s3.name}/db.db/t-sibling.parquet",
                f"{s3.name}/db.db/t/../t2/snapshot/snapshot-1", f"{s3.name}/db.db/t",
                f"{s3.name}/db.db/t//x", "other-bucket/db.db/t/x"):
        with pytest.raises(UnsafePathError):
            io.delete_files([f"{s3.name}/db.db/t/manifest/x", bad])
    assert "db.db/t2/snapshot/snapshot-1" in s3.keys()
    assert _ids(t) == [1]


def test_exists_sees_files_and_directories(s3):
    t = _create(s3)
    write(t, make_rows([1]))
    io, root = t.store.io, f"{s3.name}/db.db/t"
    assert io.exists(f"{root}/snapshot/snapshot-1") and not io.exists(f"{root}/snapshot/snapshot-2")
    partition_dir = t.live_files()[0].path.split("/hr=")[0]     # .../dt=<day number>
    assert io.exists(f"{root}/snapshot") and io.exists(partition_dir)
    assert not io.exists(f"{root}/changelog") and not io.exists(f"{root}/tag/tag-x")
    assert io.exists(root) and not io.exists(f"{s3.name}/db.db/nothing")
    assert s3.keys(f"db.db/t/snapshot/") == ["db.db/t/snapshot/LATEST",
                                            "db.db/t/snapshot/snapshot-1"]
