"""E1: a partition-scoped orphan cleanup deletes a live data file whose partition directory
holds a literal `%XX` (a STRING value such as 'a%20b', written unescaped as `v=a%20b/`, as
pypaimon before its canonical-path change wrote every value: see pypaimon's
file_store_path_factory `canonical_partition` / "Legacy Python ... partitions contain literal
colons").

orphan_scope.PartitionScope.add_partition types a listed directory by *unescaping* it
('a%20b' -> 'a b'); the manifest's partition stats hold the value 'a%20b' (min = max), and
'a b' < 'a%20b', so may_hold() says no, the manifest is not read, and the live file's name is
missing from the used set. A full run (reads every manifest, keeps by name) deletes nothing."""
import os

import pyarrow as pa

from common import new_table, write_rows, age_all, orphan_clean, files

schema = pa.schema([("id", pa.int64()), ("v", pa.string())])
t = new_table(schema=schema, partition_keys=["v"])
write_rows(t, {"id": [1, 2], "v": ["a%20b", "a%20b"]}, schema=schema)
escaped = os.path.join(t.path, "v=a%2520b")
assert os.path.isdir(escaped), sorted(os.listdir(t.path))
# The layout an unescaping writer (older pypaimon) gives the same value: v=a%20b/
os.rename(escaped, os.path.join(t.path, "v=a%20b"))
live = sorted(f for f in files(t.path) if "bucket-" in f)
print("live data files:", live)
age_all(t.path)

rc, full, err = orphan_clean(t.path, "--dry-run")
full_del = full.get("deleted_paths") if isinstance(full, dict) else (full, err[-300:])
print("full run (dry run) rc", rc, "would delete:", full_del)
rc, doc, err = orphan_clean(t.path, "--partition", "v=a*")
print("scoped run rc", rc, "deleted:", doc.get("deleted_paths") if isinstance(doc, dict)
      else (doc, err[-300:]), "manifests read/skipped:", isinstance(doc, dict) and
      (doc.get("manifests_read"), doc.get("manifests_skipped")))
lost = [f for f in live if not os.path.exists(os.path.join(t.path, f))]
if lost and not full_del:
    print(f"FINDING: scoped remove-orphan-files --partition 'v=a*' deleted live {lost} "
          f"(directory value with a literal %20 typed as its unescaped form); a full run "
          f"deletes nothing")
else:
    print("NO FINDING")
