"""Idea: the Spark data source's driver commit (paimon_commit/spark/datasource.py), retried,
driver side only (no session), on a table with post-commit compaction.
 a) PaimonBatchWriter.commit([T1, T2]) twice (a wrapper retrying the driver commit): the writer
    keeps its commit user: the second is a no-op even though post-commit compaction replaced
    the files.
 b) the first driver commit is interrupted right after its publish; Spark calls abort (what it
    does when commit raised); then the commit is retried: nothing deleted, nothing twice.
 c) PaimonStreamWriter (commit user from the checkpoint location): batch 5 interrupted after
    its publish, a compaction, then the batch is committed again by a new writer instance (a
    restart replays it with the same messages): filter_committed drops it; abort deletes
    nothing the table names.
 d) a second PaimonBatchWriter instance (a new random commit user) handed the first one's
    task messages after the post-commit compaction: refused (p5 class, other user)."""
import datetime
import os
import tempfile

import pyarrow as pa
from pyspark.sql.types import DateType, IntegerType, LongType, StringType, StructField, StructType

from common import dups, short, snapshot_ids, Table, new_path
from paimon_commit.errors import CommitConflictError
from paimon_commit.snapshots import SnapshotManager
from paimon_commit.spark import datasource

datasource.RUN_SWEEP_GRACE_S = 0.0
D = datetime.date(2024, 1, 1)
schema = StructType([StructField("id", LongType()), StructField("name", StringType()),
                     StructField("dt", DateType()), StructField("hr", IntegerType())])


def data(ids):
    return pa.Table.from_pylist(
        [{"id": i, "name": f"n{i}", "dt": D, "hr": 1} for i in ids],
        schema=pa.schema([("id", pa.int64()), ("name", pa.string()), ("dt", pa.date32()),
                          ("hr", pa.int32())])).to_batches()


def interrupt_next_publish():
    real = SnapshotManager.commit_latest_hint

    def boom(self, sid):
        SnapshotManager.commit_latest_hint = real
        raise KeyboardInterrupt("simulated: driver interrupted right after the publish")
    SnapshotManager.commit_latest_hint = boom


findings = []
for case in "abcd":
    path = new_path()
    opts = {"path": path, "partition-keys": "dt,hr",
            "compaction.post-commit.enabled": "true", "compaction.min.file-num": "2"}
    if case == "c":
        opts["checkpointLocation"] = tempfile.mkdtemp()
        W = datasource.PaimonStreamWriter
        w = W(opts, schema, overwrite=False)
        t1, t2 = w.write(iter(data([1]))), w.write(iter(data([2])))
        interrupt_next_publish()
        try:
            w.commit([t1, t2], 5)
        except KeyboardInterrupt:
            pass
        Table.open(path).compact(options={"compaction.min.file-num": "2"})
        w2 = W(opts, schema, overwrite=False)
        try:
            w2.commit([t1, t2], 5)
            r = "returned"
        except CommitConflictError as e:
            r = e
    else:
        w = datasource.PaimonBatchWriter(opts, schema, overwrite=False)
        t0 = w.write(iter(data([0])))
        w.commit([t0])
        t1, t2 = w.write(iter(data([1]))), w.write(iter(data([2])))
        if case == "b":
            interrupt_next_publish()
            try:
                w.commit([t1, t2])
            except KeyboardInterrupt:
                w.abort([t1, t2])
        else:
            w.commit([t1, t2])
        again = w if case != "d" else datasource.PaimonBatchWriter(opts, schema, overwrite=False)
        try:
            again.commit([t1, t2])
            r = "returned"
        except CommitConflictError as e:
            r = e
    ours, theirs, d = dups(path)
    print(f"{case}: snapshots {snapshot_ids(path)}; retry -> {short(r) if isinstance(r, Exception) else r}; "
          f"ours {ours} pypaimon {theirs}")
    if d:
        findings.append(f"{case}: rows {d} read twice")
    if not {1, 2} <= set(ours):
        findings.append(f"{case}: rows lost")
    if case == "d" and not isinstance(r, Exception):
        findings.append("d: the other writer's commit was not refused")
print("FINDING: " + "; ".join(findings) if findings else "OK")
