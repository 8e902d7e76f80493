"""F6: time-travel options given as dynamic options (Paimon: FileStoreTable.copy tries time
travel with scan.snapshot-id / scan.tag-name / scan.timestamp-millis and reads that snapshot)
are accepted without a word and ignored: Table.open(path, options={'scan.snapshot-id': '1'})
.read_arrow() returns the latest snapshot's rows."""
import common  # noqa: F401
from common import Table, SCHEMA, new_path, write

p = new_path()
Table.create(p, SCHEMA, options={"write-only": "true"})
t = Table.open(p)
write(t, [1], "a")
write(t, [2], "a")
t.create_tag("t1", snapshot_id=1)
bad = []
for o in ({"scan.snapshot-id": "1"}, {"scan.tag-name": "t1"}):
    n = Table.open(p, options=o).read_arrow().num_rows
    print(o, "->", n, "rows (snapshot 1 holds 1)")
    if n != 1:
        bad.append(o)
print("FINDING REPRODUCED" if bad else "NO FINDING")
