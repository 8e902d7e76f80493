"""v3: orphan cleanup x compaction in flight. Orphan cleanup's only protection for files a
writer or compaction wrote and has not committed yet is their age: the cutoff floor is 1 h
(or commit.timeout when longer). A compaction whose rewrite runs longer than that (large
partitions: hours) has outputs older than the floor and named by no snapshot. Modelled: plan
+ rewrite, then the outputs' mtime set 2 h back (the bins written first in a 2 h rewrite),
then `remove_orphan_files(older_than_duration='61 min')` (above the floor, no override), then
the compaction's commit. Also the same for a plain writer (TableWriter.prepare_commit, commit
2 h later) as a control. Verified by reading the latest snapshot and checking files exist."""
import os
import time

from common import make_rows, new_table, snapshot_ids, rows
from paimon_commit.operations.compact.job import AppendCompaction

problems = []
# --- compaction ---
t = new_table(options={"compaction.min.file-num": "2"})
for i in range(4):
    w = t.new_writer(); w.write_arrow(make_rows([i])); 
    with t.new_commit() as c:
        c.commit(w.prepare_commit())
job = AppendCompaction(t.store)
plan = job.plan()
rewritten = job.rewrite(plan, processes=False)
outs = [p for r in rewritten for p in r.paths]
old = time.time() - 2 * 3600
for p in outs:
    local = p[len("file://"):] if p.startswith("file://") else p
    os.utime(local, (old, old))
r = t.remove_orphan_files(older_than_duration="61 min")
print(f"compaction outputs {len(outs)}; orphan cleanup deleted {getattr(r, 'deleted_files', r)}")
try:
    res = job.commit(plan, rewritten)
    outcome = f"committed snapshot {getattr(res, 'snapshot_id', res)}"
except BaseException as e:  # noqa
    outcome = f"raised {type(e).__name__}: {str(e)[:150]}"
ids = snapshot_ids(t.path)
try:
    got = rows(t.path)
    read = f"reads {got}"
except BaseException as e:  # noqa
    got = None
    read = f"latest snapshot {ids[-1]} unreadable: {type(e).__name__}: {str(e)[:120]}"
missing = [p for p in outs if not os.path.exists(p[len('file://'):] if p.startswith('file://') else p)]
print(f"compaction: {outcome}; snapshots {ids}; {read}; outputs missing: {len(missing)}")
if got != [0, 1, 2, 3]:
    problems.append(f"compaction: {outcome}, {read}")

# --- control: a plain writer whose commit comes 2 h after its files ---
t2 = new_table()
w = t2.new_writer(); w.write_arrow(make_rows([0]))
with t2.new_commit() as c:
    c.commit(w.prepare_commit())
w = t2.new_writer(); w.write_arrow(make_rows([1]))
msgs = w.prepare_commit()
for d, _, fs in os.walk(t2.path):
    for f in fs:
        if f.startswith("data-"):
            os.utime(os.path.join(d, f), (old, old))
r2 = t2.remove_orphan_files(older_than_duration="61 min")
try:
    with t2.new_commit() as c:
        c.commit(msgs)
    o2 = "committed"
except BaseException as e:  # noqa
    o2 = f"raised {type(e).__name__}: {str(e)[:150]}"
try:
    read2 = f"reads {rows(t2.path)}"
except BaseException as e:  # noqa
    read2 = f"unreadable: {type(e).__name__}"
print(f"writer: {o2}; {read2}")
if "unreadable" in read2:
    problems.append(f"writer: {o2}, {read2}")
print("FINDING: " + " | ".join(problems) if problems else
      "OK: nothing published names a file orphan cleanup deleted")
