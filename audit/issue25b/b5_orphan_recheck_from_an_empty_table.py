"""Idea (data loss): orphan cleanup's delete phase re-reads the snapshots committed since its
plan, probing upwards from the newest id it marked and stopping at the first id that does
not exist. The mark's own snapshot is re-checked (gone or changed => stop), which anchors the
probe; but when the table had no snapshot at the mark (top = 0) nothing anchors it. Here: a
batch job's files, written long ago, not committed yet (the case audit a5's re-check is for:
"messages kept longer than the cutoff"). Orphan cleanup plans them (no snapshot yet). Before
its delete phase takes the lease, the job commits them (snapshot 1), more commits follow and
an expiration removes snapshots 1 and 2. The probe starts at 1, finds it absent and stops:
snapshots 3.. are never read, and the job's files, live in the latest snapshot, are deleted."""
import os
import time

from common import new_table, write, SCHEMA
import pyarrow as pa
from paimon_commit.operations.orphan import OrphanFilesCleaner

t = new_table(options={"snapshot.num-retained.min": "1"})
w = t.new_writer()
w.write_arrow(pa.table({"id": [1, 2], "v": ["job", "job"]}, schema=SCHEMA))
msgs = w.prepare_commit()
old = time.time() - 3 * 86400
for d, _, fs in os.walk(t.path):
    for f in fs:
        if f.startswith("data-"):
            os.utime(os.path.join(d, f), (old, old))
print("snapshots at the plan:", [s.id for s in t.snapshots()])

orig = OrphanFilesCleaner.find_orphans
events = []


def find_orphans(self, *a, **k):
    out = orig(self, *a, **k)
    # between the plan and the delete phase's lease: the job commits, others commit, an
    # expiration runs (ours, under the lease, or a Java job's)
    with t.new_commit(commit_user="job") as c:
        c.commit(msgs, commit_identifier=1)
    for i in range(3):
        write(t, 10 + i * 3, commit_user="other")
    r = t.expire_snapshots(retain_max=2, retain_min=1)
    events.append(f"committed, then expired {r.expired_snapshots}; snapshots now "
                  f"{[s.id for s in t.snapshots()]}")
    return out


OrphanFilesCleaner.find_orphans = find_orphans
res = t.remove_orphan_files()
OrphanFilesCleaner.find_orphans = orig
print("interleaved:", events)
print("orphan cleanup deleted:", res.deleted_paths, "complete:", res.complete,
      getattr(res, "stopped_by", None))
try:
    tbl = t.read_arrow()
    n = tbl.filter(pa.compute.equal(tbl["v"], "job")).num_rows
    print("job rows readable:", n)
    lost = n < 2
except Exception as e:  # noqa
    print("reading the latest snapshot:", type(e).__name__, str(e)[:200])
    lost = True
if lost:
    print("FINDING (data loss): orphan cleanup deleted data files live in the latest "
          "snapshot (committed after its plan on a table that had no snapshot)")
else:
    print("NO FINDING")
