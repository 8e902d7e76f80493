"""_check_data_present looks for each live entry's data file only, not its extra files (the
file-index files Paimon writes next to a data file, DataFileMeta.extra_files), which
expiration deletes in the same data step (reachability.file_paths gives both). A data step
that stopped having deleted the extra file but not the data file (one delete failing: the
run stops and keeps the metadata for its rerun; a kill of the parallel step leaves any
subset) leaves a target whose data file is there and its file index gone. rollback_to
accepts it, deletes the intact newer snapshots, and the latest snapshot names a missing
file (`check` reports it; Java readers that use the file index fail on it)."""
import dataclasses, os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import *  # noqa
from paimon_commit.format.commit_message import CommitMessage

t = new_table("t", KEEP)
root = t.store.root
w = t.new_writer(); w.write_arrow(pa.table({"id": [1], "v": ["a"]}, schema=SCHEMA))
(m,) = w.prepare_commit()
f = m.new_files[0]
bucket = [d for d, _, fs in os.walk(root) if f.file_name in fs][0]
extra = f.file_name + ".index"
with open(os.path.join(bucket, extra), "wb") as fh:
    fh.write(b"file-index")
fx = dataclasses.replace(f, extra_files=(extra,))
with Table.open(root).new_commit(commit_user="u") as c:                  # snapshot 1
    c.commit([CommitMessage(m.partition, m.partition_bytes, m.bucket, m.total_buckets, (fx,))])
t = Table.open(root)
w = t.new_writer(); w.write_arrow(pa.table({"id": [2], "v": ["b"]}, schema=SCHEMA))
with t.new_commit(commit_user="u") as c:                                 # snapshot 2: overwrite
    c.overwrite(w.prepare_commit())
write(Table.open(root), 10)                                              # snapshot 3
print("check before:", check_problems(root))

# Expire snapshot 1; the delete of its data file fails, the one of its file index succeeds.
t = Table.open(root)
io = t.store.io
real_dq = io.delete_quietly
io.delete_quietly = lambda p: False if p.endswith(f.file_name) else real_dq(p)
io.delete_files = lambda ps: [p for p in ps if io.delete_quietly(p)]
r = expirer(t, 2).expire()
print("expire:", r.expired_ids, r.skipped[:1])
print("data file there:", os.path.exists(os.path.join(bucket, f.file_name)),
      "extra file there:", os.path.exists(os.path.join(bucket, extra)))
try:
    res = Table.open(root).rollback_to(snapshot_id=1)
    latest = Table.open(root).latest_snapshot().id
    rc, probs = check_problems(root)
    print("rollback_to(1) succeeded: deleted", res.deleted_snapshots, "latest", latest)
    print("check after:", rc, [str(p)[:200] for p in probs] if isinstance(probs, list) else probs)
    if latest == 1 and not os.path.exists(os.path.join(bucket, extra)):
        print(f"FINDING: rollback_to made snapshot 1 the latest although its data file's extra "
              f"file {extra} is gone (intact snapshots {res.deleted_snapshots} deleted)")
    else:
        print("OK")
except ValueError as e:
    print("OK: refused:", e)
