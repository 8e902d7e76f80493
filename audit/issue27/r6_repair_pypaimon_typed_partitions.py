"""Idea: repair gives up an entry when the directory this library computes for its partition
does not hold the file. pypaimon 2.1.0 (legacy naming, the default) writes typed partitions:
TIMESTAMP (whole minutes, seconds, millis, micros), TIMESTAMP_LTZ, DECIMAL, FLOAT, DOUBLE,
TIME, BOOLEAN, TINYINT, DATE. If this library spells any of them differently, check reports
the files missing and `repair --apply` drops rows pypaimon reads."""
import datetime
import decimal
import os
import tempfile

import pyarrow as pa

from common import cli_json, data_files
from oracle import pp_create, pp_read, pp_write

TS = datetime.datetime
cases = {
    "timestamp(6) minute": (pa.timestamp("us"), TS(2024, 1, 1, 10, 0)),
    "timestamp(6) second": (pa.timestamp("us"), TS(2024, 1, 1, 10, 0, 5)),
    "timestamp(6) millis": (pa.timestamp("us"), TS(2024, 1, 1, 10, 0, 5, 123000)),
    "timestamp(6) micros": (pa.timestamp("us"), TS(2024, 1, 1, 10, 0, 5, 123456)),
    "timestamp(3) millis": (pa.timestamp("ms"), TS(2024, 1, 1, 10, 0, 0, 120000)),
    "timestamp_ltz": (pa.timestamp("us", "UTC"),
                      TS(2024, 1, 1, 10, 0, 5, tzinfo=datetime.timezone.utc)),
    "decimal(10,2)": (pa.decimal128(10, 2), decimal.Decimal("1.50")),
    "decimal(38,0)": (pa.decimal128(38, 0), decimal.Decimal("12345678901234567890")),
    "float": (pa.float32(), 1.5),
    "float 1e10": (pa.float32(), 1e10),
    "double": (pa.float64(), 0.1),
    "double 1e-5": (pa.float64(), 1e-5),
    "time": (pa.time32("ms"), datetime.time(10, 0, 5)),
    "boolean": (pa.bool_(), True),
    "tinyint": (pa.int8(), -5),
    "date": (pa.date32(), datetime.date(1900, 1, 1)),
}
base = tempfile.mkdtemp(prefix="audit27-pptypes-")
findings = []
for n, (name, (typ, value)) in enumerate(cases.items()):
    schema = pa.schema([("id", pa.int64()), ("p", typ)])
    path = os.path.join(base, "wh", "db.db", f"t{n}")
    try:
        pp_create(path, schema, ["p"], {"bucket": "-1"})
        pp_write(path, pa.table({"id": [1, 2], "p": [value, value]}, schema=schema))
        before = pp_read(path).num_rows
    except Exception as e:  # noqa: BLE001
        print(f"[{name}] pypaimon cannot write it: {type(e).__name__}: {str(e)[:120]}")
        continue
    rc, out, err = cli_json("repair", path)   # dry run: what it would give up
    removed = out.get("removed_files") if isinstance(out, dict) else None
    msg = out.get("message") if isinstance(out, dict) else (out or err)[-200:]
    print(f"[{name}] dir {sorted(data_files(path))[0].split('/')[0]!r}: rows {before}; "
          f"repair (dry run) rc {rc}: {msg}")
    if removed:
        findings.append(f"{name}: `repair` would give up {removed} file(s) pypaimon reads "
                        f"({before} rows): this library spells the partition directory "
                        f"differently")
for f in findings:
    print("FINDING (data loss with --apply):", f)
if not findings:
    print("NO FINDING")
