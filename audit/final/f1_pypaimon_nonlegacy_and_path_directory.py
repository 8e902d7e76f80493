"""Idea: tables written by pypaimon (the independent writer) with `partition.legacy-name=false`
and/or `data-file.path-directory`, partition types this library says it honours (DATE as ISO,
STRING with characters that need escaping, INT, BOOLEAN, several keys, NULL). Every maintenance
command must agree with pypaimon's paths: check reports nothing missing, repair gives nothing
up, orphan cleanup (files aged 3 days) deletes only a planted orphan, expiration of the
overwritten snapshot deletes only the replaced files, and both readers see the same rows."""
import datetime
import os
import tempfile

import pyarrow as pa

from common import cli_json, data_files, age_all, check_problems, plant_orphan, orphan_clean, rows
from oracle import pp_create, pp_read, pp_write

D = datetime.date
cases = {
    "date nonlegacy": (pa.date32(), [D(2024, 1, 1), D(999, 12, 31)], {"partition.legacy-name": "false"}),
    "string nonlegacy escapes": (pa.string(), ["a/b", "x=y:%#?", "sp ace", None], {"partition.legacy-name": "false"}),
    "int nonlegacy": (pa.int32(), [-5, 7, None], {"partition.legacy-name": "false"}),
    "bool nonlegacy": (pa.bool_(), [True, False], {"partition.legacy-name": "false"}),
    "date path-dir": (pa.date32(), [D(2024, 1, 1)], {"data-file.path-directory": "data"}),
    "date nonlegacy + path-dir": (pa.date32(), [D(2024, 1, 1)],
                                  {"partition.legacy-name": "false", "data-file.path-directory": "d1/d2"}),
    "string path-dir": (pa.string(), ["a/b", None], {"data-file.path-directory": "data"}),
    "unpartitioned path-dir": (None, [None], {"data-file.path-directory": "data"}),
}
base = tempfile.mkdtemp(prefix="auditfinal-f1-")
findings = []
for n, (name, (typ, values, opts)) in enumerate(cases.items()):
    if typ is None:
        schema = pa.schema([("id", pa.int64())]); pk = []
        batch = lambda s: pa.table({"id": list(range(s, s + 3))}, schema=schema)
    else:
        schema = pa.schema([("id", pa.int64()), ("p", typ)]); pk = ["p"]
        batch = lambda s: pa.table({"id": list(range(s, s + len(values))), "p": values}, schema=schema)
    path = os.path.join(base, "wh", "db.db", f"t{n}")
    o = {"bucket": "-1", "snapshot.num-retained.min": "1", "snapshot.num-retained.max": "100",
         "snapshot.time-retained": "1 ms"}
    o.update(opts)
    try:
        pp_create(path, schema, pk, o)
        pp_write(path, batch(0))
        pp_write(path, batch(100))
        pp_write(path, batch(200), overwrite={})   # replaces the first two snapshots' files
        pp_write(path, batch(300))
        expected = pp_read(path).num_rows
    except Exception as e:  # noqa: BLE001
        print(f"[{name}] pypaimon cannot write it: {type(e).__name__}: {str(e)[:160]}")
        continue
    dirs = sorted({f.rsplit('/', 1)[0] for f in data_files(path)})
    rc, probs = check_problems(path)
    missing = [p for p in probs if "missing" in str(p).lower()]
    rc2, rep, err2 = cli_json("repair", path)
    removed = rep.get("removed_files") if isinstance(rep, dict) else None
    orphan_dir = os.path.join(path, *dirs[0].split("/")) if dirs else path
    orphan = plant_orphan(orphan_dir)
    age_all(path)
    before = data_files(path)
    rc3, oc, err3 = orphan_clean(path)
    after_oc = data_files(path)
    lost_oc = before - after_oc - {os.path.relpath(orphan, path)}
    read_after_oc = pp_read(path).num_rows
    rc4, ex, err4 = cli_json("expire-snapshots", path, "--retain-max", "1", "--retain-min", "1", "--time-retained", "1 ms")
    after_ex = data_files(path)
    read_after_ex = pp_read(path).num_rows
    ours = rows(path)
    print(f"[{name}] dirs {dirs}; pp rows {expected}; check rc {rc} problems {probs[:2]}; "
          f"repair rc {rc2} removed {removed} {'' if isinstance(rep, dict) else (rep or err2)[-200:]}; "
          f"orphan rc {rc3} deleted {sorted(before - after_oc)} {'' if isinstance(oc, dict) else (oc or err3)[-200:]}; "
          f"expire rc {rc4} deleted {len(after_oc - after_ex)} {'' if isinstance(ex, dict) else (ex or err4)[-200:]}; "
          f"pp rows after {read_after_oc}/{read_after_ex}; our read {ours}")
    if missing:
        findings.append(f"{name}: check reports files missing that pypaimon reads: {missing[:2]}")
    if removed:
        findings.append(f"{name}: repair would give up {removed} file(s) pypaimon reads")
    if lost_oc or read_after_oc != expected:
        findings.append(f"{name}: orphan cleanup deleted live files {sorted(lost_oc)} "
                        f"(pypaimon rows {expected} -> {read_after_oc})")
    if orphan in {os.path.join(path, f) for f in after_oc}:
        print(f"  note [{name}]: the planted orphan was not deleted (a leak, not a loss)")
    if not (after_oc - after_ex):
        print(f"  note [{name}]: expiration deleted no replaced file (a leak, not a loss)")
    if read_after_ex != expected:
        findings.append(f"{name}: expire-snapshots lost rows {expected} -> {read_after_ex}")
    if isinstance(ours, int) and ours != expected:
        findings.append(f"{name}: our read {ours} rows, pypaimon {expected}")
for f in findings:
    print("FINDING (data loss):", f)
if not findings:
    print("NO FINDING")
