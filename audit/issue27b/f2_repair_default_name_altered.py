"""F2: `repair --apply` gives up a data file that is there, after `partition.default-name` was
altered (an ALTER TABLE SET Paimon accepts: the option is not @Immutable).

NULL rows written before the ALTER live in dt=__DEFAULT_PARTITION__/bucket-0/; NULL rows
written after it in dt=NULLS/bucket-0/. check computes every NULL entry's directory with the
newest default name (dt=NULLS), calls the old file missing; repair lists dt=NULLS/bucket-0
(it exists: the newer rows), does not find the old name there, and commits a snapshot without
it. store.check_layout_history compares only partition.legacy-name and
data-file.path-directory (store._LAYOUT_KEYS), although partition.default-name decides a
directory too (dynamic_options.PATH_OPTION_NAMES). The given-up file is still on disk; once
the snapshots naming it expire, orphan cleanup deletes it for good."""
import os

import pyarrow as pa

from common import new_table, write_rows, cli_json, files, add_schema_with_options
from paimon_commit import Table

schema = pa.schema([("id", pa.int64()), ("dt", pa.string())])
t = new_table(schema=schema, partition_keys=["dt"])
write_rows(t, {"id": [1, 2], "dt": [None, None]}, schema=schema)        # before the ALTER
old = sorted(f for f in files(t.path) if "bucket-" in f)
add_schema_with_options(t.path, **{"partition.default-name": "NULLS"})   # the ALTER
write_rows(Table.open(t.path), {"id": [3], "dt": [None]}, schema=schema)  # after it
print("data files:", sorted(f for f in files(t.path) if "bucket-" in f))
rc, doc, err = cli_json("repair", t.path, "--apply")
given_up = [f["path"] for f in doc.get("files", [])] if isinstance(doc, dict) else []
print("repair --apply rc", rc, "|", doc.get("message") if isinstance(doc, dict) else
      (doc, err[-300:]))
present = [f for f in old if os.path.exists(os.path.join(t.path, f))]
dropped = [p for p in given_up
           if os.path.exists(os.path.join(t.path, "dt=__DEFAULT_PARTITION__", p.split("/", 1)[1]))]
print("given up:", given_up, "| still on disk under the old default name:", present)
# What follows in normal maintenance: expire the snapshots before the repair, then a full
# orphan cleanup (the file is old): the rows are gone for good.
from common import cli, age_all, orphan_clean   # noqa: E402
erc, eout, eerr = cli("expire-snapshots", t.path, "--retain-max", "1")
print("expire:", (eout + eerr).strip()[-300:])
age_all(t.path)
orc, odoc, oerr = orphan_clean(t.path)
print("expire-snapshots rc", erc, "| remove-orphan-files rc", orc, "deleted:",
      odoc.get("deleted_paths") if isinstance(odoc, dict) else (odoc, oerr[-300:]))
gone = [f for f in present if not os.path.exists(os.path.join(t.path, f))]
if rc == 0 and dropped:
    print(f"FINDING: repair --apply gave up {dropped}, whose file is on disk under "
          f"dt=__DEFAULT_PARTITION__/ (partition.default-name altered; not a layout key)"
          + (f"; expire + orphan cleanup then deleted {gone}" if gone else ""))
else:
    print("NO FINDING")
