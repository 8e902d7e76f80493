"""Regressions of the second outside audit (audit2): a Spark expiration of a long history
stopped after its first chunk; expiration's deletes were checked against symlink
resolutions cached while planning."""
import os
import shutil

import pyarrow as pa
import pytest

from paimon_commit import ExpireConfig, ExpireSnapshots, Table
from paimon_commit.errors import UnsafePathError

SCHEMA = pa.schema([("id", pa.int64()), ("k", pa.string())])


def _history(path, n, overwrite_every=2):
    t = Table.create(str(path), SCHEMA, partition_keys=["k"])
    for i in range(n):
        w = t.new_writer()
        w.write_arrow(pa.Table.from_pylist([{"id": i, "k": "a"}], schema=SCHEMA))
        with t.new_commit() as c:
            if i % overwrite_every == overwrite_every - 1:
                c.overwrite(w.prepare_commit(), partition={"k": "a"})
            else:
                c.commit(w.prepare_commit())
    return t


class _RDD:
    """The three RDD calls spark/expire.py makes, run in this process (no JVM)."""

    def __init__(self, items, n):
        self.parts = [items[i::n] for i in range(n)]

    def mapPartitions(self, f):
        out = [x for p in self.parts for x in f(iter(p))]
        r = _RDD([], 1)
        r.parts = [out]
        return r

    def collect(self):
        return [x for p in self.parts for x in p]


class _Spark:
    class sparkContext:
        defaultParallelism = 2

        @staticmethod
        def parallelize(items, n):
            return _RDD(list(items), n)


def test_spark_expiration_of_a_long_history_equals_local(tmp_path):
    pytest.importorskip("pyspark")
    from paimon_commit.spark.expire import DistributedExpireSnapshots
    path = tmp_path / "wh" / "db.db" / "t"
    _history(path, 140)
    copy = tmp_path / "copy" / "db.db" / "t"
    shutil.copytree(path, copy)
    cfg = ExpireConfig(retain_min=3, retain_max=3, time_retained_ms=0, max_deletes=1000)
    local = ExpireSnapshots(Table.open(str(path)).store, cfg).expire()
    dist = DistributedExpireSnapshots(Table.open(str(copy)).store, cfg, _Spark()).expire()
    assert len(local.expired_ids) == 137          # more than the first chunk of 100
    assert (dist.expired_ids, dist.earliest) == (local.expired_ids, local.earliest)
    assert sorted(os.listdir(copy / "snapshot")) == sorted(os.listdir(path / "snapshot"))
    assert sorted(os.listdir(copy / "k=a" / "bucket-0")) == \
        sorted(os.listdir(path / "k=a" / "bucket-0"))


def test_a_directory_that_became_a_symlink_after_planning_is_not_deleted_through(tmp_path):
    path = tmp_path / "wh" / "db.db" / "t"
    _history(path, 4, overwrite_every=1)
    bucket = path / "k=a" / "bucket-0"
    outside = tmp_path / "elsewhere" / "bucket-0"

    class OperatorMovesThePartition(ExpireSnapshots):
        def _execute(self, plan):
            if not outside.exists():   # between planning and deleting
                outside.parent.mkdir(parents=True)
                shutil.move(str(bucket), str(outside))
                os.symlink(outside, bucket)
            return super()._execute(plan)

    before = sorted(os.listdir(bucket))
    cfg = ExpireConfig(retain_min=1, retain_max=1, time_retained_ms=0, max_deletes=100)
    with pytest.raises(UnsafePathError, match="outside the table root"):
        OperatorMovesThePartition(Table.open(str(path)).store, cfg).expire()
    assert sorted(os.listdir(outside)) == before   # nothing outside the root deleted
