"""Idea: repair decides "missing" by the path this library computes for an entry
(store.data_file_path: legacy partition naming only). A table written by Paimon Java/Spark with
'partition.legacy-name' = 'false' names a DATE partition `dt=2024-01-01`, not `dt=19723`. Its
files are all there and Java reads them, but check looks for `dt=19723/...`: does `repair
--apply` give up every file of the table (a snapshot that drops every row)?

The table is made by this library, then laid out exactly as Java lays out a non-legacy table
(the option set in the schema, the partition directory renamed to the date) - the same bytes
Java would have on disk."""
import datetime
import os

import pyarrow as pa

from common import new_table, write_rows, cli_json, data_files, edit_schema_options, ROOT

schema = pa.schema([("id", pa.int64()), ("dt", pa.date32())])
t = new_table(schema=schema, partition_keys=["dt"])
d = datetime.date(2024, 1, 1)
write_rows(t, {"id": [1, 2, 3], "dt": [d] * 3}, schema=schema)
legacy = f"dt={(d - datetime.date(1970, 1, 1)).days}"
os.rename(os.path.join(t.path, legacy), os.path.join(t.path, "dt=2024-01-01"))
edit_schema_options(t.path, **{"partition.legacy-name": "false"})
before = data_files(t.path)
print("data files on disk:", sorted(before))

rc, out, err = cli_json("repair", t.path, "--apply")
print("repair rc:", rc, "|", (out.get("message") if isinstance(out, dict) else out), err[-300:])
after = data_files(t.path)
removed = out.get("removed_files", 0) if isinstance(out, dict) else 0
if rc == 0 and removed:
    print(f"FINDING (data loss): repair --apply gave up {removed} data file(s) that exist "
          f"({out['removed_records']} rows) - the latest snapshot now names none of "
          f"{sorted(after)}; the next orphan cleanup after the old snapshots expire deletes them")
else:
    print("NO FINDING")
