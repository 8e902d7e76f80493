"""F1: Table.open(path, options={'partition.default-name': X}) is accepted (not refused as a
layout option), and the commits through that handle put the NULL partition's files under
p=X/ while the manifests record the partition as NULL. Every reader that uses the stored
options (pypaimon, Java, this library opened without the option) looks under
p=__DEFAULT_PARTITION__/ and fails; expiration through a plain handle deletes nothing of those
files (it looks in the other directory)."""
import os
import common
from common import Table, SCHEMA, new_path, write, files
from oracle import pp_read

path = new_path()
Table.create(path, SCHEMA, partition_keys=["p"])
write(Table.open(path), [1, 2], None)                 # NULL partition, stored default name
t = Table.open(path, options={"partition.default-name": "nulls"})
print("accepted dynamic options:", t.dynamic_options)
write(t, [3, 4], None)                                # NULL partition through the handle
print("files:", [f for f in files(path) if "bucket-" in f])
problems = []
for who, read in [("paimon_commit (plain handle)", lambda: Table.open(path).read_arrow()),
                  ("pypaimon", lambda: pp_read(path))]:
    try:
        n = read().num_rows
        print(f"{who}: {n} rows")
        if n != 4:
            problems.append(f"{who} read {n} rows")
    except Exception as e:   # noqa: BLE001
        print(f"{who}: {type(e).__name__}: {str(e)[:200]}")
        problems.append(f"{who} fails")
print("FINDING REPRODUCED" if problems else "NO FINDING", problems)
