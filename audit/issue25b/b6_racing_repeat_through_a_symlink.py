"""Idea (duplicate): two threads commit the same messages at once, one through the table's
path and one through a symlink to it (another spelling). InFlight claims are keyed by the
resolved identity, so the second must wait and find the first's snapshot. Publishing twice
would read the rows twice."""
import os
import threading

from common import new_table, SCHEMA
import pyarrow as pa
from paimon_commit import Table

t = new_table()
link = os.path.join(os.path.dirname(os.path.dirname(t.path)), "alias")
os.symlink(t.path, link)
w = t.new_writer()
w.write_arrow(pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"]}, schema=SCHEMA))
msgs = w.prepare_commit()
out, barrier = [], threading.Barrier(2)


def run(path):
    tb = Table.open(path)
    with tb.new_commit(commit_user="job") as c:
        barrier.wait()
        try:
            out.append((path, c.commit(msgs, commit_identifier=1)))
        except Exception as e:  # noqa
            out.append((path, f"{type(e).__name__}: {e}"))


ths = [threading.Thread(target=run, args=(p,)) for p in (t.path, link)]
[x.start() for x in ths]
[x.join() for x in ths]
print(out)
print("snapshots:", [(s.id, s.commit_user) for s in t.snapshots()], "rows:", t.read_arrow().num_rows)
print("FINDING (duplicate)" if t.read_arrow().num_rows > 3 or len(t.snapshots()) > 1
      else "NO FINDING")
