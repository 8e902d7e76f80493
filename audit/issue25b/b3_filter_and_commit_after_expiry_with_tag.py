"""Idea (duplicate): docs: "After a restart, filter_committed(ids) returns the identifiers this
commit user has not committed, and filter_and_commit({id: messages}) commits only those".
filter_committed looks for the user's latest *retained snapshot*. A streaming job commits
identifier 1 (file A) and stops; other writers go on, a compaction rewrites A into A' (its
rows are in A' now), a daily tag on the job's snapshot keeps A on disk, and expiration removes
the job's snapshot. The job restarts (a new process: nothing remembered) and replays its last
checkpoint with filter_and_commit({1: messages}): no snapshot of the user is left, so 1 counts
as not committed; A exists (the tag keeps it) and is not live (compacted), so the append
conflict check passes: are A's rows published a second time, next to A'?"""
import os
import subprocess
import sys
import pickle
import textwrap

from common import new_table, write, SCHEMA
import pyarrow as pa

t = new_table(options={"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "2",
                       "compaction.min.file-num": "2"})
w = t.new_writer()
w.write_arrow(pa.table({"id": [100, 101], "v": ["job", "job"]}, schema=SCHEMA))
msgs = w.prepare_commit()
with t.new_commit(commit_user="job") as c:
    c.commit(msgs, commit_identifier=1)
job_sid = t.latest_snapshot().id
t.create_tag("daily", job_sid)               # e.g. tag.automatic-creation
for i in range(3):                           # other writers
    write(t, i * 10, commit_user="other")
r = t.compact()
print("compaction:", r)
for i in range(3):
    write(t, 50 + i * 10, commit_user="other")
t.expire_snapshots(retain_max=2, retain_min=1)
print("snapshots now:", [(s.id, s.commit_user, s.commit_kind) for s in t.snapshots()])
before = t.read_arrow()
print("rows of the job in the table:", before.filter(pa.compute.equal(before["v"], "job")).num_rows)

blob = os.path.join(os.path.dirname(t.path), "msgs.pkl")
with open(blob, "wb") as f:
    pickle.dump(msgs, f)
HERE = os.path.dirname(os.path.abspath(__file__))
code = textwrap.dedent(f"""
    import sys, pickle
    sys.path.insert(0, {HERE!r})
    import common
    from paimon_commit import Table
    t = Table.open({t.path!r})
    msgs = pickle.load(open({blob!r}, "rb"))
    with t.new_commit(commit_user="job") as c:
        print("restart: filter_committed ->", c.filter_committed([1]))
        try:
            print("restart: filter_and_commit ->", c.filter_and_commit({{1: msgs}}))
        except Exception as e:
            print("restart: refused", type(e).__name__, e)
""")
p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
print(p.stdout.strip(), p.stderr.strip()[-500:])
after = t.read_arrow()
n = after.filter(pa.compute.equal(after["v"], "job")).num_rows
print("rows of the job in the table after the restart:", n, "(2 written)")
if n > 2:
    print("FINDING (duplicate): filter_and_commit after the user's snapshots expired "
          "re-published a compacted file kept by a tag; the job's rows are read twice")
else:
    print("NO FINDING")
