"""H2: `repair --apply` gives up a data file that is there, when a writer placed it with a
*dynamic* layout option (pypaimon `table.copy({...})`, a Flink/Spark SQL hint; Paimon marks
neither option @Immutable, and no schema change records it):

A. `partition.default-name` = 'NULLS' for one job: its NULL rows go to dt=NULLS/bucket-0.
B. `partition.legacy-name` = 'false' for one job: its DATE rows go to dt=2024-01-01/bucket-0
   (the table's legacy naming puts them in dt=19723/bucket-0).

orphan_scope's own docstring names layout A ("a Paimon job can write with a default name of
its own (a dynamic option, no schema change)") and keeps such files. repair does not: it
computes every entry's directory with the table's *stored* options (dt=__DEFAULT_PARTITION__,
dt=19723); that directory exists (another writer's rows of the same partition), is listed,
does not hold the file, and the entry is given up. store.check_layout_history sees no ALTER
(there was none), and the "absent directory" defence does not fire because the stored
layout's directory exists. Once the snapshots naming it expire, orphan cleanup deletes the
file for good."""
import datetime
import os
import sys

import pyarrow as pa

from common import new_table, write_rows, cli_json, files, ROOT

sys.path.insert(0, os.path.join(ROOT, "tests"))
from oracle import pp_table  # noqa: E402


def case(label, typ, value, option, value_dir):
    schema = pa.schema([("id", pa.int64()), ("dt", typ)])
    t = new_table(schema=schema, partition_keys=["dt"])
    write_rows(t, {"id": [1], "dt": [value]}, schema=schema)   # the table's own layout
    pt = pp_table(t.path, **option)                               # a job with its own
    wb = pt.new_batch_write_builder()
    w, c = wb.new_write(), wb.new_commit()
    w.write_arrow(pa.table({"id": [2], "dt": [value]}, schema=schema))
    c.commit(w.prepare_commit())
    w.close()
    c.close()
    data = sorted(f for f in files(t.path) if "bucket-" in f)
    dyn = [f for f in data if f.startswith(value_dir + "/")]
    print(label, "data files:", data)
    assert dyn, data
    rc, doc, err = cli_json("repair", t.path, "--apply")
    given_up = [f["path"] for f in doc.get("files", [])] if isinstance(doc, dict) else []
    print(label, "repair --apply rc", rc, "|", doc.get("message") if isinstance(doc, dict)
          else (doc, err[-300:]))
    name = os.path.basename(dyn[0])
    if os.path.exists(os.path.join(t.path, dyn[0])) and \
            any(os.path.basename(p) == name for p in given_up):
        return (f"{label}: repair --apply gave up {given_up} although that file exists at "
                f"{dyn[0]} (written under dynamic option {option}); snapshot "
                f"{doc.get('snapshot_id')} no longer names it")
    return None


found = [f for f in (
    case("A", pa.string(), None, {"partition.default-name": "NULLS"}, "dt=NULLS"),
    case("B", pa.date32(), datetime.date(2024, 1, 1), {"partition.legacy-name": "false"},
         "dt=2024-01-01"),
) if f]
for f in found:
    print("FINDING:", f)
if found:
    sys.exit(1)
print("NO FINDING")
