"""(Next to the reviewed code.) create_tag refuses a half-expired snapshot only when a list
or index manifest is gone (_check_readable); it never got the data check rollback_to got in
9f9ba8e. On a snapshot an expiration stopped after its data step (lists read, data files
gone), create_tag succeeds and makes a tag that does not read -- and the tag then keeps the
snapshot's remaining metadata alive by name (expiration's "half expired" head is now
tagged). rollback_to(tag=...) refuses it afterwards, so the tag is dead on arrival."""
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import *  # noqa

t = new_table("t", KEEP)
root = t.store.root
write(t, 0)                                                    # snapshot 1
t = Table.open(root)
w = t.new_writer(); w.write_arrow(pa.table({"id": [5], "v": ["x"]}, schema=SCHEMA))
with t.new_commit(commit_user="u") as c:                       # snapshot 2: overwrite
    c.overwrite(w.prepare_commit())
write(Table.open(root), 10)                                    # snapshot 3
t = Table.open(root)
only1 = [f for f in t.live_files(1) if f.file_name not in {g.file_name for g in t.live_files()}]
os.unlink(only1[0].path)           # what an expiration of 1 stopped after its data step leaves
try:
    Table.open(root).create_tag("keep-me", 1)
    print("create_tag on snapshot 1 succeeded; reading the tag:",
          end=" ")
    try:
        n = Table.open(root).read_arrow(tag="keep-me").num_rows
        print(n, "rows")
        print("OK: the tag reads")
    except Exception as e:
        print(type(e).__name__, str(e)[:150])
        print("FINDING: create_tag made a tag on a snapshot whose data files are gone "
              f"({os.path.relpath(only1[0].path, root)}): the tag does not read")
except ValueError as e:
    print("OK: refused:", e)
