"""Idea: after a rollback, a repeated commit() of the same messages publishes the rolled-back
files again (commit_record: "publishing is right if the files are still there"). Those files
are old (written before the rollback), and orphan cleanup, which selects by age, has them as
orphans. Its lease excludes maintenance, not commits. Interleave: orphan cleanup plans ->
the writer's retry re-publishes F -> orphan cleanup deletes F. The latest snapshot then names
a missing file: the rows the retry acknowledged are lost, and the table no longer reads."""
import os
import time

import pyarrow as pa

from common import new_table, write, SCHEMA
from paimon_commit import Table
from paimon_commit.operations import orphan as O

t = new_table(options={"snapshot.num-retained.min": "10"})
write(t, 0)                               # snapshot 1 (another writer)
w = t.new_writer()
w.write_arrow(pa.table({"id": [100, 101], "v": ["x", "y"]}, schema=SCHEMA))
msgs = w.prepare_commit()
job = t.new_commit(commit_user="job")
s2 = job.commit(msgs, commit_identifier=7)   # snapshot 2: F
job.wait_for_maintenance()
print("committed snapshot", s2, "rows", t.read_arrow().num_rows)
# The written files are old (the job wrote them 2 days ago, or older_than is short).
old = time.time() - 2 * 86400
for d, _, fs in os.walk(os.path.join(t.path, "bucket-0")):
    for f in fs:
        os.utime(os.path.join(d, f), (old, old))
t.rollback_to(snapshot_id=1)
print("rolled back to 1; rows", Table.open(t.path).read_arrow().num_rows)

orig_delete = O.OrphanFilesCleaner.delete
retried = {}


def delete(self, orphans, executor):
    # between orphan cleanup's plan and its delete phase, the job retries its commit
    try:
        retried["sid"] = job.commit(msgs, commit_identifier=7)
    except Exception as e:  # noqa
        retried["err"] = f"{type(e).__name__}: {e}"
    return orig_delete(self, orphans, executor)


O.OrphanFilesCleaner.delete = delete
r = Table.open(t.path).remove_orphan_files()
O.OrphanFilesCleaner.delete = orig_delete
print("retry during orphan cleanup:", retried)
print("orphan cleanup deleted:", [p for p in r.deleted_paths if "data-" in p])
try:
    rows = Table.open(t.path).read_arrow().num_rows
    print("table reads:", rows, "rows")
    broken = False
except Exception as e:  # noqa
    print("table does not read:", type(e).__name__, str(e)[:200])
    broken = True
if "sid" in retried and broken:
    print("FINDING (data loss): a repeat commit after a rollback re-published old files "
          "that orphan cleanup had selected; they were deleted, the latest snapshot names "
          "missing files")
else:
    print("NO FINDING")
