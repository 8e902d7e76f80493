"""The `paimon` Spark data source (local[2]); every result is also read back with pypaimon."""
import datetime
import os
import subprocess
import sys
import textwrap

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from invariants import assert_intact
from oracle import pp_read, rows

from paimon_commit import Table

pytestmark = pytest.mark.slow

D = [datetime.date(2024, 1, 1) + datetime.timedelta(days=i) for i in range(3)]


@pytest.fixture(scope="module")
def sp(spark):
    from paimon_commit.spark import register
    register(spark)
    return spark


@pytest.fixture
def path(tmp_path):
    p = tmp_path / "wh" / "db.db" / "t"
    p.parent.mkdir(parents=True)
    return p


def frame(sp, ids, day=None, hr=None):
    data = [(i, f"n{i}", day or D[i % 3], hr if hr is not None else i % 2) for i in ids]
    return sp.createDataFrame(data, "id long, name string, dt date, hr int")


def ids_of(path, **kw):
    return [r["id"] for r in rows(pp_read(path, **kw))]


def data_files(path):
    return sorted(str(p.relative_to(path)) for p in path.rglob("*.parquet"))


def test_create_on_write_append_and_read_back(sp, path):
    frame(sp, range(30)).write.format("paimon").option("partition-keys", "dt,hr") \
        .option("paimon.snapshot.num-retained.min", "3").mode("append").save(str(path))
    t = Table.open(str(path))
    assert t.partition_keys == ["dt", "hr"]
    assert t.options["snapshot.num-retained.min"] == "3"
    frame(sp, range(30, 40)).write.format("paimon").mode("append").save(str(path))
    assert ids_of(path) == list(range(40))
    assert ids_of(path, snapshot_id=1) == list(range(30))
    back = sp.read.format("paimon").load(str(path))
    assert sorted(r.id for r in back.collect()) == list(range(40))
    assert sorted(r.id for r in sp.read.format("paimon").option("snapshot-id", 1)
                  .load(str(path)).collect()) == list(range(30))
    # 6 partitions, two writes, 2 tasks each: at most one file per partition per task.
    assert len(data_files(path)) <= 2 * 2 * 6


def test_dynamic_and_static_overwrite(sp, path):
    frame(sp, range(30)).write.format("paimon").option("partition-keys", "dt,hr") \
        .mode("append").save(str(path))
    frame(sp, [100, 102], day=D[0], hr=0).write.format("paimon").mode("overwrite") \
        .save(str(path))                                              # dynamic: (D0, 0) only
    expected = sorted([i for i in range(30) if not (i % 3 == 0 and i % 2 == 0)] + [100, 102])
    assert ids_of(path) == expected
    frame(sp, [200], day=D[1], hr=1).write.format("paimon").mode("overwrite") \
        .option("overwrite-partition", "dt=2024-01-02").save(str(path))  # static: all of D1
    expected = sorted([i for i in expected if i >= 100 or i % 3 != 1] + [200])
    assert ids_of(path) == expected
    assert Table.open(str(path)).latest_snapshot().commit_kind == "OVERWRITE"


def test_schema_mismatch_fails_before_any_file_is_written(sp, path):
    frame(sp, range(5)).write.format("paimon").option("partition-keys", "dt") \
        .mode("append").save(str(path))
    before = data_files(path)
    bad = sp.createDataFrame([(1, "x")], "id long, other string")
    with pytest.raises(Exception, match="unexpected columns \\['other'\\]"):
        bad.write.format("paimon").mode("append").save(str(path))
    wrong_type = sp.createDataFrame([(1, "x", "not a date", 1)],
                                    "id long, name string, dt string, hr int")
    with pytest.raises(Exception, match="column 'dt'"):
        wrong_type.write.format("paimon").mode("append").save(str(path))
    assert data_files(path) == before
    assert len(Table.open(str(path)).snapshots()) == 1


def test_failed_task_leaves_no_file_behind(sp, path):
    from pyspark.sql import functions as F
    frame(sp, range(5)).write.format("paimon").option("partition-keys", "dt,hr") \
        .mode("append").save(str(path))
    before = data_files(path)

    @F.udf("long")
    def explode_on_17(i):
        if i == 17:
            raise ValueError("boom")
        return i
    df = frame(sp, range(100)).repartition(2).withColumn("id", explode_on_17("id"))
    with pytest.raises(Exception, match="boom"):
        df.write.format("paimon").mode("append").save(str(path))
    assert data_files(path) == before
    assert len(Table.open(str(path)).snapshots()) == 1
    assert ids_of(path) == list(range(5))


def test_read_prunes_partitions_and_reads_tags(sp, path):
    frame(sp, range(30)).write.format("paimon").option("partition-keys", "dt,hr") \
        .mode("append").save(str(path))
    t = Table.open(str(path))
    t.create_tag("first")
    frame(sp, range(30, 33)).write.format("paimon").mode("append").save(str(path))
    # Remove a file of another partition: a pruned read never opens it, a full read fails.
    victim = next(f for f in t.live_files() if f.partition["dt"] == D[2])
    os.unlink(victim.path)
    got = sp.read.format("paimon").load(str(path)) \
        .filter("dt = date'2024-01-01' and hr = 0").collect()
    assert sorted(r.id for r in got) == [i for i in range(33) if i % 3 == 0 and i % 2 == 0]
    got = sp.read.format("paimon").load(str(path)).filter("dt in (date'2024-01-01', "
                                                          "date'2024-01-02')").count()
    assert got == len([i for i in range(33) if i % 3 != 2])
    with pytest.raises(Exception):
        sp.read.format("paimon").load(str(path)).count()
    tagged = sp.read.format("paimon").option("tag", "first").load(str(path)) \
        .filter("dt = date'2024-01-02'").collect()
    assert sorted(r.id for r in tagged) == [i for i in range(30) if i % 3 == 1]


def test_post_commit_maintenance_runs_after_each_write(sp, path):
    for i in range(5):
        frame(sp, [i]).write.format("paimon").option("partition-keys", "dt") \
            .option("snapshot.num-retained.min", "2").option("snapshot.time-retained", "0 s") \
            .option("snapshot.expire.execution-mode", "sync").mode("append").save(str(path))
    assert [s.id for s in Table.open(str(path)).snapshots()] == [4, 5]
    assert_intact(path)
    assert ids_of(path) == list(range(5))


STREAM = textwrap.dedent("""
    import os, sys
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession
    from paimon_commit.spark import register
    src, table, ckpt = sys.argv[1:4]
    spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
             .config("spark.sql.shuffle.partitions", "2").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    from paimon_commit.spark.datasource import PaimonDataSource, PaimonStreamWriter

    class KilledAfterPublish(PaimonStreamWriter):
        # KILL_AFTER_PUBLISH=<batch>: the committing process dies right after that batch's
        # snapshot is published, before Spark records the batch in its checkpoint.
        def commit(self, messages, batchId):
            super().commit(messages, batchId)
            if os.environ.get("KILL_AFTER_PUBLISH") == str(batchId):
                os._exit(137)

    class KillableSource(PaimonDataSource):
        @classmethod
        def name(cls):
            return "paimon_killable"

        def streamWriter(self, schema, overwrite):
            return KilledAfterPublish(self.options, schema, overwrite)

    spark.dataSource.register(KillableSource)
    q = (spark.readStream.schema("id long, name string, dt date, hr int")
         .option("maxFilesPerTrigger", 1).parquet(src)
         .writeStream.format("paimon_killable").option("checkpointLocation", ckpt)
         .option("partition-keys", "dt").trigger(availableNow=True).start(table))
    q.awaitTermination()
    spark.stop()
""")


def test_streaming_restart_after_kill_is_exactly_once(path, tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    schema = pa.schema([("id", pa.int64()), ("name", pa.string()), ("dt", pa.date32()),
                        ("hr", pa.int32())])
    for b in range(3):
        ids = list(range(b * 10, b * 10 + 10))
        pq.write_table(pa.Table.from_pylist(
            [{"id": i, "name": f"n{i}", "dt": D[i % 3], "hr": i % 2} for i in ids],
            schema=schema), src / f"part-{b}.parquet")
        os.utime(src / f"part-{b}.parquet", (1_700_000_000 + b, 1_700_000_000 + b))
    script = tmp_path / "stream.py"
    script.write_text(STREAM)
    ckpt = tmp_path / "ckpt"
    args = [sys.executable, str(script), str(src), str(path), str(ckpt)]
    # Batch 1 is published, then the process committing it is killed (os._exit) before
    # Spark records the batch in its checkpoint; the query dies.
    killed = subprocess.run(args, env={**os.environ, "KILL_AFTER_PUBLISH": "1"},
                            capture_output=True, timeout=300)
    assert killed.returncode != 0
    assert b"crashed" in killed.stderr or killed.returncode == 137
    t = Table.open(str(path))
    assert [s.commit_identifier for s in t.snapshots()] == [0, 1]
    done = subprocess.run(args, env=dict(os.environ), capture_output=True, timeout=300)
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    t = Table.open(str(path))
    assert [s.commit_identifier for s in t.snapshots()] == [0, 1, 2]
    assert len({s.commit_user for s in t.snapshots()}) == 1     # kept in the checkpoint
    assert ids_of(path) == list(range(30))                      # nothing lost, nothing twice
    # The replayed batch's files were deleted, not left behind.
    live = {os.path.basename(f.path) for f in t.live_files()}
    assert {p.name for p in path.rglob("*.parquet")} == live


def test_maintenance_failure_after_publish_neither_fails_nor_deletes(sp, path):
    frame(sp, range(5)).write.format("paimon").option("partition-keys", "dt") \
        .mode("append").save(str(path))
    t = Table.open(str(path))
    t.create_tag("broken")
    (path / "tag" / "tag-broken").write_text("{ not json")   # expiration will fail on it
    for i in range(3):
        frame(sp, [10 + i]).write.format("paimon").mode("append") \
            .option("snapshot.num-retained.min", "1").option("snapshot.time-retained", "0 s") \
            .save(str(path))
    assert ids_of(path) == [0, 1, 2, 3, 4, 10, 11, 12]
    missing = [f.path for f in Table.open(str(path)).live_files() if not os.path.exists(f.path)]
    assert missing == []


def test_save_into_a_primary_key_table_is_refused_on_the_driver(sp, path):
    import dataclasses
    frame(sp, range(5)).write.format("paimon").option("partition-keys", "dt") \
        .mode("append").save(str(path))
    t = Table.open(str(path))
    pk = dataclasses.replace(t.schema, id=1, primary_keys=("id", "dt"))
    (path / "schema" / "schema-1").write_bytes(pk.to_json())   # as Java's ALTER TABLE would
    before = sorted(str(p.relative_to(path)) for p in path.rglob("*") if p.is_file())
    with pytest.raises(Exception, match=r"primary-key table \(dynamic bucket\)"):
        frame(sp, range(5, 10)).write.format("paimon").mode("append").save(str(path))
    with pytest.raises(Exception, match="need a merge by key"):
        sp.read.format("paimon").load(str(path)).collect()
    assert sorted(str(p.relative_to(path)) for p in path.rglob("*") if p.is_file()) == before


def test_refused_options_write_nothing(sp, path):
    """Audit F: a credential given as a table option (paimon.<key>) would be stored in
    schema-0; a branch would be written as main; a changelog producer on this append table
    would make post-commit expiration drop what its changelogs read. All refused on the
    driver, before any file (the credential's value never in the message)."""
    with pytest.raises(Exception) as e:
        frame(sp, range(3)).write.format("paimon").option("paimon.s3.secret-key", "TOPSECRET") \
            .mode("append").save(str(path))
    assert "option 'paimon.s3.secret-key' is a storage option, not a table option: give it " \
           "as .option('s3.secret-key', ...)" in str(e.value)
    assert "TOPSECRET" not in str(e.value)
    assert not path.exists()
    with pytest.raises(Exception, match="option 'branch' = 'b1': branches are not supported"):
        frame(sp, range(3)).write.format("paimon").option("branch", "b1") \
            .mode("append").save(str(path))
    assert not path.exists()
    frame(sp, range(3)).write.format("paimon").mode("append").save(str(path))
    before = sorted(str(p.relative_to(path)) for p in path.rglob("*") if p.is_file())
    with pytest.raises(Exception, match="option 'changelog-producer' = 'input' needs a table "
                                        "with primary keys"):
        frame(sp, range(3, 6)).write.format("paimon").option("changelog-producer", "input") \
            .mode("append").save(str(path))
    with pytest.raises(Exception, match="option 'paimon.branch' = 'b1': branches are not"):
        sp.read.format("paimon").option("paimon.branch", "b1").load(str(path)).collect()
    assert sorted(str(p.relative_to(path)) for p in path.rglob("*") if p.is_file()) == before
    assert ids_of(path) == [0, 1, 2]


def test_a_task_cancelled_mid_write_leaves_no_file_of_the_run(sp, path):
    # Task 0 hands the writer more rows than a row group (its file is open on disk) and then
    # stalls; task 1 waits for that file and fails the job. Spark cancels task 0, which
    # never returns a message: the abort finds its file by the run marker in its name.
    from paimon_commit.writer import ROW_GROUP_ROWS
    frame(sp, range(5)).write.format("paimon").option("partition-keys", "dt,hr") \
        .mode("append").save(str(path))
    before = sorted(str(p.relative_to(path)) for p in path.rglob("*")
                    if p.is_file() and "=" in str(p.relative_to(path)))
    root, rows_0 = str(path), ROW_GROUP_ROWS + 1000
    old = {str(p) for p in path.rglob("data-*")}

    def stall_or_fail(batches):
        import glob
        import time as _t
        import pyarrow as _pa
        from pyspark import TaskContext
        if TaskContext.get().partitionId() == 0:
            ids = _pa.array(range(1000, 1000 + rows_0), _pa.int64())
            yield _pa.RecordBatch.from_arrays(
                [ids, _pa.array(["n"] * rows_0), _pa.array([D[0]] * rows_0, _pa.date32()),
                 _pa.array([0] * rows_0, _pa.int32())], names=["id", "name", "dt", "hr"])
            _t.sleep(120)   # cancelled long before
            return
        deadline = _t.time() + 60
        while not set(glob.glob(f"{root}/*/*/bucket-0/data-*")) - old and \
                _t.time() < deadline:
            _t.sleep(0.1)
        raise ValueError("boom while task 0 is mid-write")
        yield   # noqa - a generator

    df = sp.range(2).repartition(2).mapInArrow(
        stall_or_fail, "id long, name string, dt date, hr int")
    with pytest.raises(Exception, match="boom while task 0 is mid-write"):
        df.write.format("paimon").mode("append").save(str(path))
    after = sorted(str(p.relative_to(path)) for p in path.rglob("*")
                   if p.is_file() and "=" in str(p.relative_to(path)))
    assert after == before
    assert len(Table.open(str(path)).snapshots()) == 1
    assert ids_of(path) == list(range(5))
    assert_intact(path)


def test_a_near_miss_of_a_paimon_option_is_refused_before_any_file(sp, path):
    """Issue 28 item 5: a typo of a Paimon option name in the write that creates the table
    ('paimon.<key>', which Table.create stores) or as a per-write option (which would be
    ignored) fails on the driver with one line naming the option as typed and the
    suggestion, before any file. Spark lower-cases option keys: Paimon's mixed-case names
    are stored as Paimon spells them, not refused as a typo of themselves."""
    def one_line(e, message):
        assert any(line.endswith(message) for line in str(e.value).splitlines()), str(e.value)
    with pytest.raises(Exception) as e:
        frame(sp, range(3)).write.format("paimon").option("partition-keys", "dt") \
            .option("paimon.snapshot.num-retained.mn", "3").mode("append").save(str(path))
    one_line(e, "option 'paimon.snapshot.num-retained.mn' is not a Paimon option: did you "
                "mean 'paimon.snapshot.num-retained.min'?")
    assert not path.exists()
    with pytest.raises(Exception) as e:
        frame(sp, range(3)).write.format("paimon").option("snapshot.num-retained.mn", "3") \
            .mode("append").save(str(path))
    one_line(e, "option 'snapshot.num-retained.mn' is not a Paimon option: did you mean "
                "'snapshot.num-retained.min'?")
    assert not path.exists()
    frame(sp, range(3)).write.format("paimon").option("partition-keys", "dt") \
        .option("paimon.snapshot.num-retained.min", "3") \
        .option("paimon.read.stream.maxFilesPerTrigger", "5").mode("append").save(str(path))
    assert Table.open(str(path)).options["read.stream.maxFilesPerTrigger"] == "5"
    assert Table.open(str(path)).options["snapshot.num-retained.min"] == "3"
    assert ids_of(path) == [0, 1, 2]


def test_a_task_message_handed_twice_to_the_driver_is_refused_and_aborted(path, monkeypatch):
    # Audit issue25b b2: the driver's commit of a batch write whose task messages list one
    # task twice (e.g. a retried task whose first report was kept) published that task's file
    # twice in one delta. It is refused before the table is touched; Spark then aborts the
    # write, which deletes the files (nothing was published). Driver side only: no session.
    from pyspark.sql.types import DateType, IntegerType, LongType, StringType, StructField, \
        StructType
    from paimon_commit.errors import CommitConflictError
    from paimon_commit.spark import datasource
    monkeypatch.setattr(datasource, "RUN_SWEEP_GRACE_S", 0.0)
    schema = StructType([StructField("id", LongType()), StructField("name", StringType()),
                         StructField("dt", DateType()), StructField("hr", IntegerType())])
    data = pa.Table.from_pylist([{"id": i, "name": f"n{i}", "dt": D[0], "hr": 0}
                                 for i in range(3)],
                                schema=pa.schema([("id", pa.int64()), ("name", pa.string()),
                                                  ("dt", pa.date32()), ("hr", pa.int32())]))
    opts = {"path": str(path), "partition-keys": "dt"}
    w = datasource.PaimonBatchWriter(opts, schema, overwrite=False)
    task = w.write(iter(data.to_batches()))
    name = task.messages[0].new_files[0].file_name
    with pytest.raises(CommitConflictError) as e:
        w.commit([task, task])
    assert str(e.value) == (
        f"data file {path}/dt=19723/bucket-0/{name} is listed twice in the messages of "
        f"one call (the same CommitMessage handed twice?); refusing to commit it, as its rows "
        f"would be read twice. Nothing was committed: commit each message once")
    assert Table.open(str(path)).snapshots() == []
    w.abort([task, task])
    assert data_files(path) == []
    w = datasource.PaimonBatchWriter(opts, schema, overwrite=False)
    w.commit([w.write(iter(data.to_batches()))])
    assert ids_of(path) == [0, 1, 2]


def test_a_task_finishing_its_file_after_the_aborts_listings_deletes_it(path, monkeypatch):
    # test_failed_task_leaves_no_file_behind failed under load: a task cancelled because
    # another one failed finished its file after both of the abort's listings, and the file
    # stayed. The abort now writes the run's abort record before it lists; a task checks for
    # it once its files are closed. Here the worst order, without load: the whole abort runs
    # first, then a task of the same run writes its file. Driver side only: no session.
    from pyspark.sql.types import DateType, IntegerType, LongType, StringType, StructField, \
        StructType
    from paimon_commit.spark import datasource
    monkeypatch.setattr(datasource, "RUN_SWEEP_GRACE_S", 0.0)
    schema = StructType([StructField("id", LongType()), StructField("name", StringType()),
                         StructField("dt", DateType()), StructField("hr", IntegerType())])

    def data(ids):
        return pa.Table.from_pylist(
            [{"id": i, "name": f"n{i}", "dt": D[i % 3], "hr": 0} for i in ids],
            schema=pa.schema([("id", pa.int64()), ("name", pa.string()),
                              ("dt", pa.date32()), ("hr", pa.int32())])).to_batches()
    opts = {"path": str(path), "partition-keys": "dt"}
    w = datasource.PaimonBatchWriter(opts, schema, overwrite=False)
    w.commit([w.write(iter(data(range(3))))])
    before = data_files(path)

    failed = datasource.PaimonBatchWriter(opts, schema, overwrite=False)
    failed.abort([])   # both listings done: nothing of the run there yet
    record = datasource._abort_record(Table.open(str(path)).store.io, failed.marker)
    assert os.path.isfile(record) and "/.maintenance/" in record
    with pytest.raises(datasource.RunAbortedError, match="3 file\\(s\\) deleted"):
        failed.write(iter(data(range(10, 13))))   # its files closed after the listings
    assert data_files(path) == before
    assert not [p for p in path.rglob("*") if p.name.startswith(failed.marker)]
    assert len(Table.open(str(path)).snapshots()) == 1
    assert ids_of(path) == [0, 1, 2]
    assert_intact(path)

    # The record is of that run only: a later write (a fresh run id) commits as before.
    w = datasource.PaimonBatchWriter(opts, schema, overwrite=False)
    w.commit([w.write(iter(data(range(3, 5))))])
    assert ids_of(path) == [0, 1, 2, 3, 4]


def test_a_task_that_cannot_tell_whether_its_run_is_aborted_deletes_its_files(
        path, monkeypatch):
    # The task's check of the abort record fails: it cannot know the driver will not abort
    # the write after listing the bucket directories, so it deletes its own files and fails.
    # Injected at the stat of the record (an executor that may not search the driver's
    # `.maintenance/`, EACCES): `os.path.exists` answers False to that, which let the task
    # return its file (audit issue25o a1).
    import errno
    from pyspark.sql.types import LongType, StructField, StructType
    from paimon_commit.spark import datasource
    schema = StructType([StructField("id", LongType())])
    w = datasource.PaimonBatchWriter({"path": str(path)}, schema, overwrite=False)
    real = os.stat

    def stat(p, *a, **k):
        if "spark-aborted-" in os.fspath(p):
            raise PermissionError(errno.EACCES, "Permission denied", p)
        return real(p, *a, **k)
    monkeypatch.setattr(os, "stat", stat)
    batch = pa.RecordBatch.from_arrays([pa.array([1, 2], pa.int64())], names=["id"])
    with pytest.raises(PermissionError, match="Permission denied"):
        w.write(iter([batch]))
    monkeypatch.undo()
    assert data_files(path) == []


def test_a_failed_micro_batch_leaves_no_file_and_other_streams_go_on(sp, path, tmp_path):
    # Stream A's batch 1 fails as the batch write above: task 0 has a file open on disk
    # (more rows than a row group, in a partition nothing else writes) and stalls, task 1
    # waits for that file and fails the batch. Spark cancels task 0, which never returns a
    # message: the abort of batch 1 finds its file by the batch marker in its name. Stream B
    # (its own checkpoint) writes the same table before and after; A, restarted, replays
    # batch 1.
    from paimon_commit.writer import ROW_GROUP_ROWS
    schema = pa.schema([("id", pa.int64()), ("name", pa.string()), ("dt", pa.date32()),
                        ("hr", pa.int32())])

    def put(src, n, ids):
        src.mkdir(exist_ok=True)
        pq.write_table(pa.Table.from_pylist(
            [{"id": i, "name": f"n{i}", "dt": D[i % 2], "hr": i % 2} for i in ids],
            schema=schema), src / f"part-{n}.parquet")
        os.utime(src / f"part-{n}.parquet", (1_700_000_000 + n, 1_700_000_000 + n))

    src_a, src_b, fail = tmp_path / "src_a", tmp_path / "src_b", tmp_path / "fail"
    put(src_a, 0, range(10))
    put(src_a, 1, range(100, 110))          # batch 1 of A: fails while `fail` exists
    put(src_b, 0, range(50, 60))
    fail.touch()
    stalled, rows_0 = f"{path}/dt={D[2]}/bucket-0", ROW_GROUP_ROWS + 1000

    def stall_or_fail(batches):
        import glob
        import os as _os
        import time as _t
        import pyarrow as _pa
        from pyspark import TaskContext
        batches = list(batches)
        if not _os.path.exists(fail) or \
                not any(i >= 100 for b in batches for i in b.column(0).to_pylist()):
            yield from batches
            return
        if TaskContext.get().partitionId() == 0:
            ids = _pa.array(range(1000, 1000 + rows_0), _pa.int64())
            yield _pa.RecordBatch.from_arrays(
                [ids, _pa.array(["n"] * rows_0), _pa.array([D[2]] * rows_0, _pa.date32()),
                 _pa.array([0] * rows_0, _pa.int32())], names=["id", "name", "dt", "hr"])
            _t.sleep(120)   # cancelled long before
            return
        deadline = _t.time() + 60
        while not glob.glob(f"{stalled}/data-*") and _t.time() < deadline:
            _t.sleep(0.1)
        raise ValueError("boom while task 0 is mid-write")

    def run(src, ckpt):
        q = (sp.readStream.schema("id long, name string, dt date, hr int")
             .option("maxFilesPerTrigger", 1).parquet(str(src)).repartition(2)
             .mapInArrow(stall_or_fail, "id long, name string, dt date, hr int")
             .writeStream.format("paimon").option("checkpointLocation", str(tmp_path / ckpt))
             .option("partition-keys", "dt").trigger(availableNow=True).start(str(path)))
        q.awaitTermination()

    def unreferenced():
        live = {os.path.basename(f.path) for f in Table.open(str(path)).live_files()}
        return sorted(p.name for p in path.rglob("*.parquet") if p.name not in live)

    def our_ids():
        return sorted(Table.open(str(path)).read_arrow().column("id").to_pylist())

    run(src_b, "ckpt_b")
    with pytest.raises(Exception, match="boom while task 0 is mid-write"):
        run(src_a, "ckpt_a")
    assert unreferenced() == []
    expected = list(range(10)) + list(range(50, 60))
    assert ids_of(path) == expected and our_ids() == expected
    assert [s.commit_identifier for s in Table.open(str(path)).snapshots()] == [0, 0]
    assert_intact(path)

    put(src_b, 1, range(60, 70))            # the other stream goes on
    run(src_b, "ckpt_b")
    fail.unlink()                           # A, restarted, replays batch 1
    run(src_a, "ckpt_a")
    expected = sorted(expected + list(range(60, 70)) + list(range(100, 110)))
    assert ids_of(path) == expected and our_ids() == expected
    assert [s.commit_identifier for s in Table.open(str(path)).snapshots()] == [0, 0, 1, 1]
    assert unreferenced() == []
    assert_intact(path)


def test_stream_abort_deletes_only_its_own_batch(path, tmp_path, monkeypatch):
    """The abort of a micro-batch, driven directly (no Spark job): it deletes that batch's
    files of this stream, returned or not, and nothing of its earlier batches, nothing of
    another stream's batch of the same id (here even with the same explicit commit user,
    on another checkpoint), and nothing at all once the batch is published (a replay)."""
    from pyspark.sql.types import (DateType, IntegerType, LongType, StringType, StructField,
                                   StructType)
    from paimon_commit.spark import datasource as ds
    monkeypatch.setattr(ds, "RUN_SWEEP_GRACE_S", 0.0, raising=False)
    schema = StructType([StructField("id", LongType()), StructField("name", StringType()),
                         StructField("dt", DateType()), StructField("hr", IntegerType())])

    def writer(ckpt):   # Spark builds one for the tasks and one for each commit and abort
        return ds.PaimonStreamWriter({"path": str(path), "partition-keys": "dt",
                                      "commit-user": "shared",
                                      "checkpointLocation": str(tmp_path / ckpt)},
                                     schema, False)

    def task(w, batch_id, ids):   # a task of micro-batch `batch_id` (as its TaskContext says)
        monkeypatch.setattr(ds, "_task_batch_id", lambda: batch_id, raising=False)
        data = pa.RecordBatch.from_pylist(
            [{"id": i, "name": f"n{i}", "dt": D[i % 2], "hr": 0} for i in ids],
            schema=pa.schema([("id", pa.int64()), ("name", pa.string()),
                              ("dt", pa.date32()), ("hr", pa.int32())]))
        return w.write(iter([data]))

    def on_disk():
        return {p.name for p in path.rglob("*.parquet")}

    writer("a").commit([task(writer("a"), 0, range(10))], 0)
    committed = on_disk()
    returned = task(writer("a"), 1, range(10, 20))
    task(writer("a"), 1, range(20, 30))          # cancelled: its message never comes back
    before = on_disk()
    other = task(writer("b"), 1, range(50, 60))  # stream B's batch 1, not committed yet
    of_b = on_disk() - before
    writer("a").abort([returned, None], 1)
    assert on_disk() == committed | of_b
    writer("b").commit([other], 1)
    assert ids_of(path) == list(range(10)) + list(range(50, 60))

    published = task(writer("a"), 2, range(70, 80))
    writer("a").commit([published], 2)
    kept = on_disk()
    task(writer("a"), 2, range(80, 90))          # a replay of batch 2, failing again
    writer("a").abort([], 2)
    assert on_disk() >= kept                     # published: nothing deleted
    assert ids_of(path) == list(range(10)) + list(range(50, 60)) + list(range(70, 80))
    assert_intact(path)
