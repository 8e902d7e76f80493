"""Idea: "Commits never take [the lease]". But post-commit maintenance reads the latest lease
record strictly: an unreadable record (or another table's) raises LeaseRecordError there. In a
streaming writer (commit with identifiers) the error is parked and the *next commit* raises:
a bad maintenance record stops the data pipeline. Expected per the brief: maintenance is
refused with a clear error naming the file, nothing deleted - not commits refused."""
import os

import pyarrow as pa

from common import new_table, SCHEMA

t = new_table(options={"snapshot.num-retained.min": "1"})
job = t.new_commit(commit_user="stream")
outcomes = []
for ident in range(1, 5):
    w = t.new_writer()
    w.write_arrow(pa.table({"id": [ident], "v": ["x"]}, schema=SCHEMA))
    msgs = w.prepare_commit()
    try:
        sid = job.commit(msgs, commit_identifier=ident)
        job.wait_for_maintenance()
        outcomes.append(f"identifier {ident}: snapshot {sid}")
    except Exception as e:  # noqa
        outcomes.append(f"identifier {ident}: RAISED {type(e).__name__}: {str(e)[:200]}")
    if ident == 1:
        md = os.path.join(t.path, ".maintenance")
        last = max(os.listdir(md), key=lambda n: int(n[6:]))
        with open(os.path.join(md, last), "wb") as f:
            f.write(b'{"table": "trunc')     # a damaged latest record
        outcomes.append(f"(damaged {last})")
for o in outcomes:
    print(o)
rows = t.read_arrow().num_rows
print("rows in table:", rows)
if any("RAISED" in o for o in outcomes):
    print("FINDING (availability / wrong layer): a damaged maintenance lease record makes "
          "the streaming writer's commits raise; the pipeline stops until `lease --break`")
else:
    print("NO FINDING")
