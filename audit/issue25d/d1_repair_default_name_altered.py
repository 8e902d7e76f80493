"""Idea: check_layout_history compares only `partition.legacy-name` and
`data-file.path-directory` across schemas. `partition.default-name` also names a directory (a
null/empty partition value is written as `p=<default-name>`) and is not @Immutable in Paimon
(ALTER TABLE ... SET ('partition.default-name'=...) is accepted). Files of the null partition
written before such an ALTER live under `p=__DEFAULT_PARTITION__`; this library computes
`p=<new name>` for all of them. Once a write after the ALTER created `p=<new name>/bucket-0`,
`repair --apply` lists that directory, does not find the old file and gives it up, although
it exists."""
import json
import os

import pyarrow as pa

from common import new_table, write_rows, cli_json, data_files, rows
from paimon_commit import Table

schema = pa.schema([("id", pa.int64()), ("p", pa.string())])
t = new_table(schema=schema, partition_keys=["p"])
write_rows(t, {"id": [1, 2, 3], "p": [None, None, None]}, schema=schema)   # p=__DEFAULT_PARTITION__
# ALTER TABLE ... SET ('partition.default-name' = 'NULLP'): a new schema file
sd = os.path.join(t.path, "schema")
doc = json.load(open(os.path.join(sd, "schema-0")))
doc["id"] = 1
doc["options"]["partition.default-name"] = "NULLP"
with open(os.path.join(sd, "schema-1"), "w") as f:
    json.dump(doc, f)
t2 = Table.open(t.path)
write_rows(t2, {"id": [4], "p": [None]}, schema=schema)   # written after the ALTER: p=NULLP
before = data_files(t.path)
print("files:", sorted(before))
rc, out, err = cli_json("repair", t.path, "--apply")
gave_up = out.get("removed_records", 0) if isinstance(out, dict) else 0
print("repair --apply rc", rc, (out.get("message") if isinstance(out, dict) else (out or err)[-300:]))
old = [f for f in before if "__DEFAULT_PARTITION__" in f]
still_there = [f for f in old if os.path.exists(os.path.join(t.path, f))]
print("read after:", rows(t.path), "rows (4 written)")
if gave_up and still_there:
    print(f"FINDING (data loss): repair --apply gave up {gave_up} row(s) of {still_there[0]}, "
          f"which exists (written under partition.default-name '__DEFAULT_PARTITION__' before "
          f"an ALTER set it to 'NULLP'); check_layout_history does not compare "
          f"partition.default-name")
else:
    print("NO FINDING")
