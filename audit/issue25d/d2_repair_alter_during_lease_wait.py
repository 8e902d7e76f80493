"""Idea: repair_table runs store.check_layout_history *before* it takes the maintenance lease
(which may wait up to --lease-wait for another holder) and never again; check and the
commit then compute every path from the handle's schema. An ALTER of `partition.legacy-name`
and a write under the new layout landing between the history check and the check (here: while
repair takes the lease; deterministic, by wrapping maintenance_lease) makes the newly written
file look missing at its old-layout path; its old-layout directory exists (earlier files), so
`repair --apply` gives up the new file although it exists."""
import contextlib
import datetime
import json
import os

import pyarrow as pa

from common import new_table, write_rows, data_files, rows
from paimon_commit import Table
import paimon_commit.operations.repair as repair_mod
from paimon_commit.operations.repair import repair_table

schema = pa.schema([("id", pa.int64()), ("dt", pa.date32())])
t = new_table(schema=schema, partition_keys=["dt"])
d = datetime.date(2024, 1, 1)
write_rows(t, {"id": [1, 2, 3], "dt": [d] * 3}, schema=schema)    # dt=19723 (legacy name)

real_lease = repair_mod.maintenance_lease


@contextlib.contextmanager
def lease_then_alter(store, op, **kw):
    # Another engine, while repair waits for / takes the lease: ALTER ... SET
    # ('partition.legacy-name'='false'), then a write under the new layout.
    # (This library writes the legacy way only: the write is made by it and its file moved to
    # the directory Paimon Java / pypaimon write it to under the new schema.)
    before = data_files(t.path)
    write_rows(Table.open(t.path), {"id": [4, 5], "dt": [d, d]}, schema=schema)
    (new,) = data_files(t.path) - before
    os.makedirs(os.path.join(t.path, "dt=2024-01-01", "bucket-0"), exist_ok=True)
    os.rename(os.path.join(t.path, new),
              os.path.join(t.path, "dt=2024-01-01", "bucket-0", os.path.basename(new)))
    sd = os.path.join(t.path, "schema")
    doc = json.load(open(os.path.join(sd, "schema-0")))
    doc["id"] = 1
    doc["options"]["partition.legacy-name"] = "false"
    with open(os.path.join(sd, "schema-1"), "w") as f:
        json.dump(doc, f)
    with real_lease(store, op, **kw) as lease:
        yield lease


repair_mod.maintenance_lease = lease_then_alter
handle = Table.open(t.path)   # the repair's handle, opened before the ALTER
try:
    r = repair_table(handle.store, apply=True)
    msg, given = r.message, [f.path for f in r.files]
except Exception as e:  # noqa: BLE001
    msg, given = f"{type(e).__name__}: {e}", []
finally:
    repair_mod.maintenance_lease = real_lease
print("files:", sorted(data_files(t.path)))
print("repair:", msg[:300])
exists = [g for g in given if any(os.path.basename(g) in f for f in data_files(t.path))]
print("read after:", rows(t.path), "rows (5 written)")
if exists:
    print(f"FINDING (data loss): repair --apply gave up {exists[0]}, whose file exists (written "
          f"under partition.legacy-name=false by an ALTER + write after check_layout_history, "
          f"which runs once, before the lease)")
else:
    print("NO FINDING")
