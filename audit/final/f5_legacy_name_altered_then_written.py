"""Idea: `partition.legacy-name` set to 'false' by ALTER TABLE after a DATE-partitioned table was
written (its files lie in `dt=19723`, the legacy name). This library computes every file's
directory from the newest schema (`dt=2024-01-01`). Does check/repair give the files up, or
orphan cleanup (files aged 3 days) delete live files it lists under `dt=19723`?"""
import datetime
import json
import os

import pyarrow as pa

from common import new_table, write_rows, cli_json, data_files, age_all, rows

schema = pa.schema([("id", pa.int64()), ("dt", pa.date32())])
t = new_table(schema=schema, partition_keys=["dt"])
d = datetime.date(2024, 1, 1)
write_rows(t, {"id": [1, 2, 3], "dt": [d] * 3}, schema=schema)
# ALTER TABLE ... SET ('partition.legacy-name' = 'false'): a new schema file
sd = os.path.join(t.path, "schema")
doc = json.load(open(os.path.join(sd, "schema-0")))
doc["id"] = 1
doc["options"]["partition.legacy-name"] = "false"
with open(os.path.join(sd, "schema-1"), "w") as f:
    json.dump(doc, f)
os.makedirs(os.path.join(t.path, "dt=2024-01-01", "bucket-0"))   # what a later write after the ALTER makes (pypaimon, Java)
before = data_files(t.path)
print("files:", sorted(before))
rc, out, err = cli_json("check", t.path)
print("check rc", rc, str(out)[:300], err[-200:])
rc, out, err = cli_json("repair", t.path, "--apply")
print("repair (dry) rc", rc, str(out)[-400:], err[-300:])
age_all(t.path)
rc, oc, err = cli_json("remove-orphan-files", t.path, "--older-than-duration", "1 d")
print("orphan rc", rc, (oc.get("deleted_paths") if isinstance(oc, dict) else (oc or err)[-300:]))
rc, ex, err = cli_json("expire-snapshots", t.path, "--retain-max", "1", "--retain-min", "1")
print("expire rc", rc, str(ex)[:200] if isinstance(ex, dict) else (ex or err)[-300:])
age_all(t.path)
rc, oc2, err = cli_json("remove-orphan-files", t.path, "--older-than-duration", "1 d")
print("orphan after expiration rc", rc, (oc2.get("deleted_paths") if isinstance(oc2, dict) else (oc2 or err)[-300:]))
after = data_files(t.path)
lost = before - after
print("read:", rows(t.path))
gave_up = out.get("removed_records", 0) if isinstance(out, dict) else 0
if gave_up or lost:
    print(f"FINDING (data loss): repair --apply gave up {gave_up} rows of a file that exists "
          f"(under the legacy name); then deleted: {sorted(lost)}")
elif lost:
    print(f"FINDING (data loss): live files deleted: {sorted(lost)}")
else:
    print("NO FINDING")
