"""r1/r2 with pypaimon 2.1.0 as the writer (tests/oracle.py's pp_* helpers): pypaimon writes a
DATE-partitioned table with `partition.legacy-name` = 'false' (directory `dt=2024-01-01`) and a
table with `data-file.path-directory` = 'data'; pypaimon reads every row. Then `paimon-commit
repair --apply` runs and pypaimon reads again."""
import datetime
import os
import tempfile

import pyarrow as pa

from common import cli_json, data_files
from oracle import pp_create, pp_read, pp_write

findings = []
base = tempfile.mkdtemp(prefix="audit27-pp-")
ds = pa.schema([("id", pa.int64()), ("dt", pa.date32())])
vs = pa.schema([("id", pa.int64()), ("v", pa.string())])
cases = {
    "legacy-name=false": (ds, ["dt"], {"partition.legacy-name": "false"},
                          pa.table({"id": [1, 2, 3], "dt": [datetime.date(2024, 1, 1)] * 3},
                                   schema=ds)),
    "data-file.path-directory": (vs, [], {"data-file.path-directory": "data"},
                                 pa.table({"id": [1, 2, 3, 4], "v": list("abcd")}, schema=vs)),
}
for i, (name, (schema, pk, opts, data)) in enumerate(cases.items()):
    path = os.path.join(base, "wh", "db.db", f"t{i}")
    pp_create(path, schema, pk, {"bucket": "-1", **opts})
    pp_write(path, data)
    before = pp_read(path).num_rows
    rc, out, err = cli_json("repair", path, "--apply")
    msg = out.get("message") if isinstance(out, dict) else (out or err)[-300:]
    try:
        after = pp_read(path).num_rows
    except Exception as e:  # noqa: BLE001
        after = f"unreadable: {e}"
    print(f"[{name}] files {sorted(data_files(path))}; pypaimon rows before {before}; repair "
          f"rc {rc}: {msg}; pypaimon rows after {after}")
    if not isinstance(after, int) or after < before:
        findings.append(f"{name}: pypaimon read {before} rows before `repair --apply`, {after} "
                        f"after; every data file is still on disk")
for f in findings:
    print("FINDING (data loss):", f)
if not findings:
    print("NO FINDING")
