"""F3: Table.open(path, options={'branch': 'b1'}) is accepted silently (a Paimon option name,
no warning) and every operation of the handle acts on MAIN. In Paimon the 'branch' dynamic
option makes the table handle that branch (FileStoreTable.copy -> snapshot and tag managers of
branch/branch-b1). A user who rolls back or expires "branch b1" this way deletes main's newer
snapshots (and, with expiration, main's files).

The branch is made as Paimon's create-branch-from-snapshot lays it out: branch/branch-b1/
with the schema and the snapshot file copied."""
import os
import shutil
import common  # noqa: F401
from common import Table, SCHEMA, new_path, write
from oracle import pp_read

path = new_path()
Table.create(path, SCHEMA, partition_keys=["p"], options={"write-only": "true"})
t = Table.open(path)
for i in range(3):
    write(t, [i], "a")
b = os.path.join(path, "branch", "branch-b1")
for d in ("schema", "snapshot"):
    os.makedirs(os.path.join(b, d))
shutil.copy(os.path.join(path, "schema", "schema-0"), os.path.join(b, "schema", "schema-0"))
shutil.copy(os.path.join(path, "snapshot", "snapshot-1"), os.path.join(b, "snapshot", "snapshot-1"))
for hint in ("LATEST", "EARLIEST"):
    with open(os.path.join(b, "snapshot", hint), "w") as f:
        f.write("1")

before = sorted(os.listdir(os.path.join(path, "snapshot")))
print("main snapshots before:", before, "rows:", pp_read(path).num_rows)
h = Table.open(path, options={"branch": "b1"})
print("handle opened with", h.dynamic_options, "latest snapshot it sees:", h.latest_snapshot().id)
r = h.rollback_to(snapshot_id=1)          # meant: branch b1 back to its snapshot 1
after = sorted(os.listdir(os.path.join(path, "snapshot")))
rows = pp_read(path).num_rows
print("rollback result:", r.to_dict())
print("main snapshots after:", after, "rows (pypaimon):", rows)
print("FINDING REPRODUCED" if rows != 3 else "NO FINDING")
