"""F1: a partition-scoped orphan cleanup deletes a live data file of the NULL partition after
`partition.default-name` was altered (Paimon does not mark it @Immutable; ALTER TABLE SET
accepts it, and check_layout_history does not look at it).

The NULL rows written before the ALTER live in dt=__DEFAULT_PARTITION__/. After it, the scope
(orphan_scope.PartitionScope._typed) compares the directory value with the *new* default name,
so '__DEFAULT_PARTITION__' is typed as the STRING '__DEFAULT_PARTITION__' instead of "unknown";
the manifest holding the NULL entry has min = max = '2024-01-01' (stats ignore nulls), '_' >
'2', so the manifest is skipped and the live file's name is not in the used set. A full run
(name-based, reads every manifest) keeps the file: the scoped run deletes more than a full run
inside its scope, and altering the option back cannot bring the rows back."""
import os

import pyarrow as pa

from common import new_table, write_rows, age_all, orphan_clean, files, rows, \
    add_schema_with_options

schema = pa.schema([("id", pa.int64()), ("dt", pa.string())])
t = new_table(schema=schema, partition_keys=["dt"])
# one commit: one manifest with a non-null and a NULL partition
write_rows(t, {"id": [1, 2, 3], "dt": ["2024-01-01", None, None]}, schema=schema)
print("rows before:", rows(t.path))
live = sorted(f for f in files(t.path) if "bucket-" in f)
print("data files:", live)
add_schema_with_options(t.path, **{"partition.default-name": "NULLS"})   # the ALTER
age_all(t.path)

rc, full, err = orphan_clean(t.path, "--dry-run")
full_del = full.get("deleted_paths") if isinstance(full, dict) else (full, err[-300:])
print("full run (dry run) rc", rc, "would delete:", full_del)
rc, doc, err = orphan_clean(t.path, "--partition", "dt=__*")
print("scoped run rc", rc, "deleted:", doc.get("deleted_paths") if isinstance(doc, dict)
      else (doc, err[-300:]),
      "manifests read/skipped:", isinstance(doc, dict) and
      (doc.get("manifests_read"), doc.get("manifests_skipped")))
lost = [f for f in live if not os.path.exists(os.path.join(t.path, f))]
add_schema_with_options(t.path, **{"partition.default-name": "__DEFAULT_PARTITION__"})
print("rows after altering the option back:", rows(t.path))
if lost and not full_del:
    print(f"FINDING: scoped remove-orphan-files --partition 'dt=__*' deleted live {lost} "
          f"(NULL partition written before partition.default-name was altered); a full run "
          f"deletes nothing")
else:
    print("NO FINDING")
