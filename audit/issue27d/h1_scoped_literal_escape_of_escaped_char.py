"""H1: a partition-scoped orphan cleanup deletes a live data file whose directory holds a
literal `%XX` of a character Paimon escapes (a STRING value such as 'a%3Ab', written unescaped
as `v=a%3Ab/`, the way pypaimon before its canonical-path change wrote every value: its
"Legacy Python ... partitions contain literal colons").

The issue25e e1 fix types a listed directory value only when it is spelled exactly as Paimon
escapes the value it decodes to (`escape(unescape(v)) == v`). For `a%3Ab` that holds: it is
both how an escaping writer spells 'a:b' and how an unescaping writer spells 'a%3Ab'. The
scope types it as 'a:b'; the manifest's stats say min = max = 'a%3Ab' < 'a:b', so may_hold()
says no, the manifest is not read and the live file's name is missing from the used set. A
full run deletes nothing."""
import os
import sys

import pyarrow as pa

from common import new_table, write_rows, age_all, orphan_clean, files

VALUE = "a%3Ab"            # literal, as an unescaping writer names its directory
schema = pa.schema([("id", pa.int64()), ("v", pa.string())])
t = new_table(schema=schema, partition_keys=["v"])
write_rows(t, {"id": [1, 2], "v": [VALUE, VALUE]}, schema=schema)
escaped = os.path.join(t.path, "v=a%253Ab")
assert os.path.isdir(escaped), sorted(os.listdir(t.path))
# The layout an unescaping writer (older pypaimon) gives the same value: v=a%3Ab/
os.rename(escaped, os.path.join(t.path, "v=a%3Ab"))
live = sorted(f for f in files(t.path) if "bucket-" in f)
print("live data files:", live)
age_all(t.path)

rc, full, err = orphan_clean(t.path, "--dry-run")
full_del = full.get("deleted_paths") if isinstance(full, dict) else (full, err[-300:])
print("full run (dry run) rc", rc, "would delete:", full_del)
rc, doc, err = orphan_clean(t.path, "--partition", "v=a*")
print("scoped run rc", rc, "deleted:", doc.get("deleted_paths") if isinstance(doc, dict)
      else (doc, err[-300:]))
lost = [f for f in live if not os.path.exists(os.path.join(t.path, f))]
if lost and not full_del:
    print(f"FINDING: scoped remove-orphan-files --partition 'v=a*' deleted live {lost} "
          f"(directory 'v=a%3Ab' typed as 'a:b', but it holds the literal value 'a%3Ab'); "
          f"a full run deletes nothing")
    sys.exit(1)
print("NO FINDING")
