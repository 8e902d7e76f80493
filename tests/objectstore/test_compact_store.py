"""Compaction on the S3-protocol server (moto): the objects in the bucket, seen through an
independent client, and the rows read back by us and pypaimon (issue 18, item 2)."""
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
