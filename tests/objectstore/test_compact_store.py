"""Compaction on the S3-protocol server (moto): the objects in the bucket, seen through an
independent client, and the rows read back by us and pypaimon (issue 18, item 2)."""
import threading

import pytest

from conftest import D1, SCHEMA, make_rows, write

from paimon_commit import Table
from paimon_commit.operations.commit import FileStoreCommit
from paimon_commit.operations.compact import (
    AppendCompaction, CompactionConflictError, compact_table,
)

OPTS = {"target-file-size": "64 kb", "source.split.open-file-cost": "1 b"}
PART = "db.db/t/dt=19723/hr=1/bucket-0/"


def _parquet(store, prefix=PART):
    return [k for k in store.keys(prefix) if k.endswith(".parquet")]


def _table(s3):
    t = Table.create(s3.table_uri(), SCHEMA, partition_keys=["dt", "hr"], options=OPTS)
    for i in range(5):
        write(t, make_rows(range(i * 10, i * 10 + 10), hr=1))
    return Table.open(s3.table_uri())


def test_compaction_on_s3(s3):
    t = _table(s3)
    old = _parquet(s3)
    r = compact_table(t)
    assert (r.snapshot_id, r.rewritten_files, r.written_files) == (6, 5, 1)
    new = sorted(set(_parquet(s3)) - set(old))
    assert len(new) == 1 and sorted(_parquet(s3)) == sorted(old + new)
    t = Table.open(s3.table_uri())
    assert t.latest_snapshot().commit_kind == "COMPACT"
    assert [PART + f.file_name for f in t.live_files()] == new
    assert sorted(t.read_arrow().column("id").to_pylist()) == list(range(50))
    for sid in range(1, 7):
        assert sorted(s3.pp_read(snapshot_id=sid).column("id").to_pylist()) == \
            sorted(t.read_arrow(snapshot_id=sid).column("id").to_pylist())


def test_compaction_losing_its_inputs_on_s3_leaves_nothing(s3):
    t = _table(s3)
    job = AppendCompaction(t.store)
    plan = job.plan()
    rewritten = job.rewrite(plan)
    before = _parquet(s3)
    ours = [k for k in before if any(p.endswith(k) for r in rewritten for p in r.paths)]
    assert len(ours) == 1
    FileStoreCommit(Table.open(s3.table_uri()).store).drop_partitions([{"dt": D1, "hr": 1}])
    with pytest.raises(CompactionConflictError) as e:
        job.commit(plan, rewritten)
    assert "5 of its 5 input files are no longer live in snapshot 6" in str(e.value)
    assert sorted(_parquet(s3)) == sorted(set(before) - set(ours))
    t = Table.open(s3.table_uri())
    assert t.latest_snapshot().id == 6 and t.read_arrow().num_rows == 0


def _two_partitions(s3):
    t = Table.create(s3.table_uri(), SCHEMA, partition_keys=["dt", "hr"], options=OPTS)
    for i in range(5):
        for hr in (1, 2):
            write(t, make_rows(range(i * 100 + hr * 10, i * 100 + hr * 10 + 10), hr=hr))
    return Table.open(s3.table_uri())


def _ids(t, **at):
    return sorted(t.read_arrow(**at).column("id").to_pylist())


def test_an_append_racing_with_a_compaction_on_s3_both_land(s3):
    t = _table(s3)
    job = AppendCompaction(t.store)
    plan = job.plan()
    rewritten = job.rewrite(plan)
    # The append publishes between the compaction's rewrite and its commit, in the same
    # partition: the compaction's base is no longer the latest, its inputs are still live.
    sid = write(Table.open(s3.table_uri()), make_rows([777, 778], hr=1))
    assert sid == 6
    c = job.commit(plan, rewritten)
    assert c.snapshot_id == 7
    t = Table.open(s3.table_uri())
    assert [s.commit_kind for s in t.snapshots()][-2:] == ["APPEND", "COMPACT"]
    live = {f.file_name for f in t.live_files()}
    new = {f.file_name for r in rewritten for f in r.files}
    assert len(live) == 2 and new < live          # the compacted file and the racer's
    assert _ids(t) == list(range(50)) + [777, 778]
    assert sorted(s3.pp_read().column("id").to_pylist()) == list(range(50)) + [777, 778]


def test_two_compactions_of_different_partitions_at_once_on_s3_both_land(s3):
    t = _two_partitions(s3)
    ids = _ids(t)
    before = set(_parquet(s3, "db.db/t/dt=19723/"))
    results, errors = {}, []
    start = threading.Barrier(2)

    def run(hr):
        try:
            start.wait()
            results[hr] = compact_table(Table.open(s3.table_uri()), partitions=[{"hr": hr}])
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)
    threads = [threading.Thread(target=run, args=(hr,)) for hr in (1, 2)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors, errors
    assert sorted(r.snapshot_id for r in results.values()) == [11, 12]
    assert all(r.rewritten_files == 5 and r.written_files == 1 for r in results.values())
    t = Table.open(s3.table_uri())
    assert [s.commit_kind for s in t.snapshots()][-2:] == ["COMPACT", "COMPACT"]
    live = t.live_files()
    assert sorted(f.partition["hr"] for f in live) == [1, 2]
    # Each new file is in the bucket; every old small file is still there for snapshots 1-10.
    assert set(_parquet(s3, "db.db/t/dt=19723/")) == before | {
        f"db.db/t/dt=19723/hr={f.partition['hr']}/bucket-0/{f.file_name}" for f in live}
    assert _ids(t) == ids
    assert sorted(s3.pp_read().column("id").to_pylist()) == ids
    for sid in range(1, 13):
        assert sorted(s3.pp_read(snapshot_id=sid).column("id").to_pylist()) == \
            _ids(t, snapshot_id=sid)


def test_compaction_losing_to_an_overwrite_of_its_partition_on_s3_leaves_nothing(s3):
    t = _table(s3)
    job = AppendCompaction(t.store)
    plan = job.plan()
    rewritten = job.rewrite(plan)
    ours = [k for k in _parquet(s3) if any(p.endswith(k) for r in rewritten for p in r.paths)]
    assert len(ours) == 1
    o = Table.open(s3.table_uri())
    w = o.new_writer()
    w.write_arrow(make_rows([900, 901], hr=1))
    assert o.new_commit().overwrite(w.prepare_commit(), {"dt": D1, "hr": 1}) == 6
    before = s3.keys("db.db/t/")
    with pytest.raises(CompactionConflictError) as e:
        job.commit(plan, rewritten)
    assert "5 of its 5 input files are no longer live in snapshot 6" in str(e.value)
    assert "deleted the 1 file(s) it wrote" in str(e.value)
    assert len(e.value.moved_files) == 5
    # Nothing of the compaction is left (no data file, manifest or snapshot); the
    # overwrite's table is untouched.
    # (its abort held the maintenance lease: the lease's records are bookkeeping, not the
    # compaction's files)
    lease = lambda keys: [k for k in keys if "/.maintenance/" not in k]  # noqa: E731
    assert lease(s3.keys("db.db/t/")) == lease(sorted(set(before) - set(ours)))
    t = Table.open(s3.table_uri())
    assert t.latest_snapshot().id == 6 and t.latest_snapshot().commit_kind == "OVERWRITE"
    assert _ids(t) == [900, 901]
    assert sorted(s3.pp_read().column("id").to_pylist()) == [900, 901]
