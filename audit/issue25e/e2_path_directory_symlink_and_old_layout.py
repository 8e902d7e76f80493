"""E2 (item 1): orphan cleanup from `data-file.path-directory`: (a) the path directory is a
symlink to a directory outside the table holding a stray file; (b) the option was altered
from '' to 'data' after files were written at the root (old layout). Neither a file outside
the table nor a live file of the old layout may be deleted."""
import os
import shutil
import tempfile

import pyarrow as pa

from common import new_table, write_rows, age_all, orphan_clean, files, plant_orphan, \
    add_schema_with_options, edit_schema_options

bad = []
schema = pa.schema([("id", pa.int64()), ("v", pa.string())])
# (a) symlinked path-directory
t = new_table(schema=schema, partition_keys=["v"])
write_rows(t, {"id": [1], "v": ["x"]}, schema=schema)
# the table as Java writes one with the option (this library's writer refuses to): in place
edit_schema_options(t.path, **{"data-file.path-directory": "data"})
os.makedirs(os.path.join(t.path, "data"))
os.rename(os.path.join(t.path, "v=x"), os.path.join(t.path, "data", "v=x"))
outside = tempfile.mkdtemp(prefix="a3x-out-")
shutil.copytree(os.path.join(t.path, "data"), os.path.join(outside, "data"))
stray = plant_orphan(os.path.join(outside, "data", "v=x", "bucket-0"))
shutil.rmtree(os.path.join(t.path, "data"))
os.symlink(os.path.join(outside, "data"), os.path.join(t.path, "data"))
age_all(t.path); age_all(outside)
before = files(outside)
rc, doc, err = orphan_clean(t.path)
print("(a) rc", rc, "deleted:", doc.get("deleted_paths") if isinstance(doc, dict) else err[-300:])
if files(outside) != before:
    bad.append(f"(a) deleted through a symlinked path-directory: {sorted(before - files(outside))}")
# (b) old layout after an ALTER of the option
t2 = new_table(name="t2", schema=schema, partition_keys=["v"])
write_rows(t2, {"id": [1], "v": ["x"]}, schema=schema)
live = sorted(f for f in files(t2.path) if "bucket-" in f)
add_schema_with_options(t2.path, **{"data-file.path-directory": "data"})
os.makedirs(os.path.join(t2.path, "data"), exist_ok=True)
age_all(t2.path)
rc, doc, err = orphan_clean(t2.path)
print("(b) rc", rc, "deleted:", doc.get("deleted_paths") if isinstance(doc, dict) else err[-300:])
lost = [f for f in live if not os.path.exists(os.path.join(t2.path, f))]
if lost:
    bad.append(f"(b) deleted old-layout live file(s) {lost}")
print("FINDING: " + "; ".join(bad) if bad else "NO FINDING")
