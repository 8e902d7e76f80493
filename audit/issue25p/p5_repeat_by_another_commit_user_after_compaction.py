"""Idea (B, a repeat after a compaction rewrote its files): the memory of committed files is
per table *and commit user*; "a file handed to another commit user ... is checked against the
table's live files" (docs/safety.md 3b). After a compaction replaced the file, it is no longer
live, so handing the same messages to a commit of another user (a retried job that got a
new commit user, a second TableCommit of default user) publishes the file again while its
rows are already in the compacted file: every row read twice.
Variant b: the retried notebook cell with the default commit user (a random UUID per commit
object) on a table with post-commit compaction: the first call's own post-commit compaction
replaces the file, and the retried cell publishes it a second time."""
import os

import pyarrow as pa

from common import SCHEMA, new_table
from paimon_commit.operations import commit_record

t = new_table(options={"snapshot.num-retained.min": "10", "snapshot.num-retained.max": "100",
                       "snapshot.time-retained": "1 h"})
msgs = []
for i in range(3):
    w = t.new_writer()
    w.write_arrow(pa.table({"id": [i], "v": [f"r{i}"]}, schema=SCHEMA))
    m = w.prepare_commit()
    with t.new_commit(commit_user="job-a") as c:
        c.commit(m)
    msgs.append(m)
print("rows before compaction:", t.read_arrow().num_rows)
r = t.compact(options={"compaction.min.file-num": "2"})
print("compaction snapshot:", r.snapshot_id, "rows:", t.read_arrow().num_rows)
results = {}
try:
    with t.new_commit(commit_user="job-b") as c:
        sid = c.commit(msgs[0])
    results["other user"] = f"published snapshot {sid}"
except Exception as e:  # noqa
    results["other user"] = f"refused: {type(e).__name__}: {str(e)[:150]}"
rows = t.read_arrow()
ids = rows.column("id").to_pylist()
print("repeat of commit 1 by commit user job-b:", results["other user"])
print("rows now:", sorted(ids))
dups = sorted({i for i in ids if ids.count(i) > 1})
found = []
if dups:
    found.append(f"a: rows {dups} read twice after the same messages were committed again by "
                 f"another commit user after a compaction")

# b: a retried cell, default commit user, post-commit compaction
t = new_table(options={"snapshot.num-retained.min": "10", "snapshot.num-retained.max": "100",
                       "snapshot.time-retained": "1 h", "compaction.post-commit.enabled": "true",
                       "compaction.min.file-num": "2"})
for i in range(2):
    w = t.new_writer()
    w.write_arrow(pa.table({"id": [10 + i], "v": ["x"]}, schema=SCHEMA))
    cell = w.prepare_commit()
    with t.new_commit() as c:
        sid = c.commit(cell)
        print(f"b: cell {i} -> snapshot {sid}; post-commit compaction: "
              f"{getattr(c.last_maintenance, 'compaction', None) and c.last_maintenance.compaction.snapshot_id}")
try:
    with t.new_commit() as c:   # the cell run again with the same messages
        sid = c.commit(cell)
    print("b: retried cell ->", sid)
except Exception as e:  # noqa
    print(f"b: retried cell refused: {type(e).__name__}: {str(e)[:150]}")
ids = t.read_arrow().column("id").to_pylist()
print("b: rows now:", sorted(ids))
dups = sorted({i for i in ids if ids.count(i) > 1})
if dups:
    found.append(f"b: rows {dups} read twice after a retried cell (default commit user) "
                 f"following its own post-commit compaction")
print("FINDING: " + "; ".join(found) if found else "OK: no row read twice")
