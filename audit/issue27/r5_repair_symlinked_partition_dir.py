"""Idea: a partition (or bucket) directory moved to another disk and replaced by a symlink is
read by every reader (Java, pypaimon, this library's read_arrow follow it). Orphan cleanup never
enters a symlink - but does check's listing treat the files behind it as missing, so that
`repair --apply` gives them up? A data file that is itself a symlink is tried too."""
import os
import shutil
import tempfile

import pyarrow as pa

from common import new_table, write_rows, cli_json, rows, data_files
from oracle import pp_read

schema = pa.schema([("id", pa.int64()), ("p", pa.string())])
findings = []
for case in ("partition dir", "bucket dir", "data file"):
    t = new_table(schema=schema, partition_keys=["p"])
    write_rows(t, {"id": [1, 2], "p": ["x", "x"]}, schema=schema)
    write_rows(t, {"id": [3], "p": ["y"]}, schema=schema)
    other = tempfile.mkdtemp(prefix="audit27-otherdisk-")
    src = {"partition dir": os.path.join(t.path, "p=x"),
           "bucket dir": os.path.join(t.path, "p=x", "bucket-0")}.get(case)
    if src is None:
        f = sorted(x for x in data_files(t.path) if x.startswith("p=x"))[0]
        src = os.path.join(t.path, f)
    dst = os.path.join(other, os.path.basename(src))
    shutil.move(src, dst)
    os.symlink(dst, src)
    before = rows(t.path)
    try:
        pp_before = pp_read(t.path).num_rows
    except Exception as e:  # noqa: BLE001
        pp_before = f"pypaimon error {e}"
    rc, out, err = cli_json("repair", t.path, "--apply")
    msg = out.get("message") if isinstance(out, dict) else (out or err)[-300:]
    after = rows(t.path)
    print(f"[{case}] rows before {before} (pypaimon {pp_before}); repair rc {rc}: {msg}; "
          f"rows after {after}")
    if isinstance(out, dict) and out.get("removed_files"):
        findings.append(f"{case} symlinked: repair --apply gave up {out['removed_files']} "
                        f"file(s) readers read ({before} rows before, {after} after)")
for f in findings:
    print("FINDING (data loss):", f)
if not findings:
    print("NO FINDING")
