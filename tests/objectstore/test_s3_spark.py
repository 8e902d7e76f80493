"""The Spark data source on the store: executors write parquet files to S3 and the driver
commits; storage options are Spark `.option(...)`s (no AWS environment anywhere)."""
import datetime

import pytest

from paimon_commit import Table
from tests.objectstore.moto_server import ACCESS_KEY, SECRET_KEY

pytestmark = pytest.mark.slow


def test_spark_writes_and_reads_the_table_on_s3_with_options(spark, s3, monkeypatch):
    from paimon_commit.spark import register
    register(spark)
    for k in ("AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION"):
        monkeypatch.delenv(k, raising=False)
    opts = {"s3.endpoint": s3.url, "s3.access-key": ACCESS_KEY, "s3.secret-key": SECRET_KEY,
            "s3.region": "us-east-1", "s3.path.style.access": "true"}
    uri = s3.table_uri()
    d1, d2 = datetime.date(2024, 1, 1), datetime.date(2024, 1, 2)
    rows = [(i, f"n{i}", d1 if i % 2 else d2) for i in range(40)]
    df = spark.createDataFrame(rows, "id long, name string, dt date").repartition(3)
    df.write.format("paimon").options(**opts).option("partition-keys", "dt") \
        .mode("append").save(uri)
    more = spark.createDataFrame([(100, "x", d1)], "id long, name string, dt date")
    more.write.format("paimon").options(**opts).mode("append").save(uri)
    assert [k for k in s3.keys() if "/snapshot/snapshot-" in k] == [
        "db.db/t/snapshot/snapshot-1", "db.db/t/snapshot/snapshot-2"]
    assert len([k for k in s3.keys() if k.endswith(".parquet")]) >= 3   # executors wrote
    back = spark.read.format("paimon").options(**opts).load(uri)
    assert sorted(r.id for r in back.collect()) == list(range(40)) + [100]
    assert back.filter("dt = date'2024-01-01'").count() == 21
    assert sorted(s3.pp_read().column("id").to_pylist()) == list(range(40)) + [100]
    t = Table.open(uri, storage_options=opts)
    assert not any(k.startswith("s3.") for k in t.options), "storage options were stored"


def test_distributed_orphan_cleanup_on_s3_with_options(spark, s3, monkeypatch):
    import time
    from paimon_commit import CleanContext
    from paimon_commit.spark.orphan import DistributedOrphanFilesCleaner
    from conftest import SCHEMA, make_rows, write
    opts = {"s3.endpoint": s3.url, "s3.access-key": ACCESS_KEY, "s3.secret-key": SECRET_KEY,
            "s3.region": "us-east-1"}
    t = Table.create(s3.table_uri(), SCHEMA, partition_keys=["dt", "hr"], storage_options=opts)
    write(t, make_rows([1, 2]))
    write(t, make_rows([3], hr=2))
    data_dir = t.live_files()[0].path.rsplit("/", 1)[0][len(s3.name) + 1:]
    orphans = [f"{data_dir}/data-orphan-{i}.parquet" for i in range(5)] + \
        ["db.db/t/manifest/manifest-orphan"]
    for k in orphans:
        s3.put(k)
    time.sleep(2.2)
    for k in ("AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION"):
        monkeypatch.delenv(k, raising=False)
    io = Table.open(s3.table_uri(), storage_options=opts).store.io
    ctx = CleanContext(s3.table_uri(), older_than_ms=int(time.time() * 1000) - 1000, file_io=io,
                       allow_recent_cutoff=True)
    r = DistributedOrphanFilesCleaner(ctx, spark=spark, parallelism=2).clean()
    assert r.deleted_files == len(orphans)
    assert not set(orphans) & set(s3.keys())
    assert sorted(Table.open(s3.table_uri(), storage_options=opts).read_arrow()
                  .column("id").to_pylist()) == [1, 2, 3]


def test_spark_compaction_on_s3_conflict_then_success(spark, s3, monkeypatch):
    # Executors rewrite the bins on the store with the storage options they were sent; a
    # compaction losing its inputs to an overwrite leaves no key of its own behind; the next
    # one lands.
    from conftest import SCHEMA, make_rows, write
    from paimon_commit.operations.compact import CompactionConflictError
    from paimon_commit.spark import compact
    from paimon_commit.spark.compact import DistributedCompaction
    opts = {"s3.endpoint": s3.url, "s3.access-key": ACCESS_KEY, "s3.secret-key": SECRET_KEY,
            "s3.region": "us-east-1"}
    small = {"target-file-size": "64 kb", "source.split.open-file-cost": "1 b"}
    t = Table.create(s3.table_uri(), SCHEMA, partition_keys=["dt", "hr"], options=small,
                     storage_options=opts)
    for i in range(5):
        write(t, make_rows(range(i * 10, i * 10 + 10), hr=1))
        write(t, make_rows(range(100 + i * 10, 110 + i * 10), hr=2))
    for k in ("AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION"):
        monkeypatch.delenv(k, raising=False)

    class OverwrittenMeanwhile(DistributedCompaction):
        def rewrite(self, plan):
            out = super().rewrite(plan)
            assert [k for k in s3.keys() if self.marker in k]      # executors wrote
            w = t.new_writer()
            w.write_arrow(make_rows([999], hr=2))
            with t.new_commit() as c:
                c.overwrite(w.prepare_commit(), partition={"hr": 2})
            return out
    job = OverwrittenMeanwhile(Table.open(s3.table_uri(), storage_options=opts).store, spark)
    with pytest.raises(CompactionConflictError, match="5 of its 10 input files"):
        job.run()
    assert not [k for k in s3.keys() if job.marker in k]
    assert Table.open(s3.table_uri(), storage_options=opts).latest_snapshot().id == 11

    r = compact(spark, s3.table_uri(), storage_options=opts)
    assert r.snapshot_id == 12 and r.rewritten_files == 5 and r.written_files == 1
    assert sorted(s3.pp_read().column("id").to_pylist()) == list(range(50)) + [999]
    live = {f.path.rsplit("/", 1)[-1] for f in Table.open(s3.table_uri(), storage_options=opts)
            .live_files()}
    assert {k.rsplit("/", 1)[-1] for k in s3.keys() if "compact-" in k} <= live
