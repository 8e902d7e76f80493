"""Idea u8 (a deletion triggered by a commit path): a commit whose every publish fails with an
I/O error (its PUT of snapshot N is late) raises CommitFailedError. The commit keeps every
metadata file of the uncertain attempts precisely because that PUT may still land; but the
caller then aborts the messages, which is what Spark does whenever the driver commit raised
(PaimonBatchWriter.abort / PaimonStreamWriter.abort -> the one abort, abort_files), and what
TableCommit.abort is for. The abort checks the table only: no snapshot names F yet and the
user published nothing since the write began, so it deletes F's data file. It does not ask the
process record, which holds F as 'handed to a call that raised after it may have published'.
The late PUT then lands: the latest snapshot names a deleted data file, and reading the table
fails (ours and pypaimon). Cases:
 a) TableCommit: c.commit(F) fails, c.abort(F);
 b) the Spark batch data source, driver side: PaimonBatchWriter.commit fails, .abort;
 c) the Spark stream sink, batch 5: PaimonStreamWriter.commit fails, .abort(msgs, 5)."""
import datetime
import tempfile

import pyarrow as pa
from pyspark.sql.types import DateType, IntegerType, LongType, StringType, StructField, StructType

from common import (fresh, write, make_rows, prepared, snapshot_ids, LatePut, call, show,
                    ids_read, new_path, recorded, OPTS)
from paimon_commit import Table
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


LOST = {i: "lost" for i in range(1, 40)}
findings = []
for case in "abc":
    if case == "a":
        path, t = fresh(OPTS)
        write(t, make_rows([10]))
        F = prepared(t, [11])
        with LatePut("job", LOST) as late:
            with t.new_commit(commit_user="job") as c:
                r = call(lambda: c.commit(F))
                deleted = c.abort(F)
    else:
        path = new_path()
        opts = {"path": path, "partition-keys": "dt,hr", **OPTS}
        if case == "b":
            w0 = datasource.PaimonBatchWriter(opts, schema, overwrite=False)
            w0.commit([w0.write(iter(data([10])))])
            w = datasource.PaimonBatchWriter(opts, schema, overwrite=False)   # one per write
            msgs = [w.write(iter(data([11])))]
            with LatePut(w.commit_user, LOST) as late:
                r = call(lambda: w.commit(msgs))
                w.abort(msgs)
        else:
            opts["checkpointLocation"] = tempfile.mkdtemp()
            w = datasource.PaimonStreamWriter(opts, schema, overwrite=False)
            w.commit([w.write(iter(data([10])))], 4)
            msgs = [w.write(iter(data([11])))]
            with LatePut(w.commit_user, LOST) as late:
                r = call(lambda: w.commit(msgs, 5))
                w.abort(msgs, 5)
        deleted = "its files"
    before = snapshot_ids(path)
    landed = late.land(0)
    try:
        ours, theirs = ids_read(path)
        rows = f"ours {ours} pypaimon {theirs}"
        bad = None
    except BaseException as e:  # noqa: BLE001
        rows = bad = f"read fails: {type(e).__name__}: {str(e)[-70:]}"
    print(f"{case}: commit -> {show(r)[:70]}; abort deleted {deleted}; snapshots {before}; late "
          f"PUT of snapshot {late.held[0][1].id} lands: {landed}; {rows}")
    if bad:
        findings.append(f"{case}: abort after the failed commit deleted F's data file, the "
                        f"late PUT landed: latest snapshot {late.held[0][1].id} unreadable")
print(("FINDING: " + "; ".join(findings)) if findings else "OK")
