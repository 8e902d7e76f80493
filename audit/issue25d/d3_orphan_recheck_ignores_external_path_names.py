"""Idea: orphan cleanup's plan counts the *name* of every external file as used
(reachability.manifest_names: `external_path.rsplit('/')[-1]`, Paimon's rule: its orphan
cleanup matches names), so a candidate under the table root named like a file a snapshot names
through `_EXTERNAL_PATH` is kept. The delete phase's re-check of snapshots committed since the
plan (`_published_by` -> Reachability.added -> file_paths) returns [] for an external entry: a
file published since the plan through an external path that names it is not kept, although the
plan would have kept it. Here a writer (Paimon Java with data-file.external-paths pointing at the
table's own location) publishes an old, unreferenced data file by its external path right before
the first delete batch (deterministic: wraps `_not_committed_since_plan`)."""
import dataclasses
import os

from common import new_table, write, age_all, SCHEMA, rows
import pyarrow as pa
from paimon_commit.format.commit_message import CommitMessage
from paimon_commit.operations import orphan as orphan_mod

t = new_table()
write(t, 0)                                   # snapshot 1
w = t.new_writer()
w.write_arrow(pa.table({"id": [10, 11], "v": ["x", "y"]}, schema=SCHEMA))
(m,) = w.prepare_commit()                     # a file written, not committed yet
(f,) = m.new_files
bucket_dir = os.path.join(t.path, "bucket-0")
target = os.path.join(bucket_dir, f.file_name)
age_all(t.path)                               # written long ago (a retried job)

real = orphan_mod.OrphanFilesCleaner._not_committed_since_plan
done = []


def commit_then_recheck(self, paths):
    if not done and any(p.endswith(f.file_name) for p in paths):
        done.append(1)
        ext = dataclasses.replace(f, external_path="file:" + target)
        msg = CommitMessage(m.partition, m.partition_bytes, m.bucket, m.total_buckets, (ext,))
        with t.new_commit(commit_user="java-like") as c:
            print("published since the plan as snapshot", c.commit([msg]),
                  "external path", ext.external_path)
    return real(self, paths)


orphan_mod.OrphanFilesCleaner._not_committed_since_plan = commit_then_recheck
try:
    r = t.remove_orphan_files(older_than_duration="1 d")
    print("orphan clean:", r.deleted_paths, r.complete, r.stopped_by)
finally:
    orphan_mod.OrphanFilesCleaner._not_committed_since_plan = real
print("read after:", rows(t.path))
if done and not os.path.exists(target):
    print(f"FINDING (data loss): orphan cleanup deleted {os.path.relpath(target, t.path)}, which "
          f"a snapshot committed during the run names by its external path (the plan would have "
          f"kept it by name; the delete-phase re-check ignores external entries)")
elif not done:
    print("NO FINDING (the file was not planned for deletion)")
else:
    print("NO FINDING")
