"""H2: `repair --apply` gives up a data file that is there, when the NULL partition was written
by a job with `partition.default-name` as a *dynamic option* (pypaimon `table.copy({...})`,
a Flink/Spark SQL hint: Paimon lets a dynamic option set it, it is not @Immutable, and no
schema change records it).

orphan_scope's own docstring names this layout ("a Paimon job can write with a default name of
its own (a dynamic option, no schema change)") and keeps such files. repair does not: it
computes every NULL entry's directory with the table's stored default name
(dt=__DEFAULT_PARTITION__/bucket-0); that directory exists (another writer's NULL rows), is
listed, does not hold the pypaimon-written file (it is in dt=NULLS/bucket-0), and the entry is
given up. store.check_layout_history sees no ALTER (there was none), and the "absent
directory" defence does not fire because the stored default's directory exists. Once the
snapshots naming it expire, orphan cleanup deletes the file for good."""
import os
import sys

import pyarrow as pa

from common import new_table, write_rows, cli_json, files, ROOT

sys.path.insert(0, os.path.join(ROOT, "tests"))
from oracle import pp_table  # noqa: E402

schema = pa.schema([("id", pa.int64()), ("dt", pa.string())])
t = new_table(schema=schema, partition_keys=["dt"])
write_rows(t, {"id": [1], "dt": [None]}, schema=schema)   # dt=__DEFAULT_PARTITION__/bucket-0
# A job with a default name of its own (dynamic option): dt=NULLS/bucket-0
pt = pp_table(t.path, **{"partition.default-name": "NULLS"})
wb = pt.new_batch_write_builder()
w, c = wb.new_write(), wb.new_commit()
w.write_arrow(pa.table({"id": [2], "dt": [None]}, schema=schema))
c.commit(w.prepare_commit())
w.close()
c.close()
data = sorted(f for f in files(t.path) if "bucket-" in f)
dyn = [f for f in data if f.startswith("dt=NULLS/")]
print("data files:", data)
assert dyn, data

rc, doc, err = cli_json("repair", t.path, "--apply")
given_up = [f["path"] for f in doc.get("files", [])] if isinstance(doc, dict) else []
print("repair --apply rc", rc, "|", doc.get("message") if isinstance(doc, dict) else
      (doc, err[-300:]))
name = os.path.basename(dyn[0])
there = os.path.exists(os.path.join(t.path, dyn[0]))
if there and any(os.path.basename(p) == name for p in given_up):
    print(f"FINDING: repair --apply gave up {given_up} although that file exists at {dyn[0]} "
          f"(written under a dynamic partition.default-name); snapshot "
          f"{doc.get('snapshot_id')} no longer names it")
    sys.exit(1)
print("NO FINDING")
