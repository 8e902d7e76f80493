"""H6: h2 with Paimon Java (tests/java's oracle, Paimon 1.0) as the writer: a Java job with the
dynamic option `partition.default-name` = 'NULLS' (what a Flink/Spark SQL hint
`/*+ OPTIONS('partition.default-name'='NULLS') */` does) and one with
`partition.legacy-name` = 'false', each after a job with the table's stored options wrote the
same partition. `repair --apply` must give up no file that is there.

Seen with Paimon 1.0: Java honours the dynamic default name (A reproduces); it names DATE
directories by the table's stored `partition.legacy-name` whatever the dynamic option says
(B: both files land in dt=19723, nothing to show; pypaimon 2.1.0 does honour it, h2 B)."""
import datetime
import os
import sys
import tempfile

import pyarrow as pa

from common import cli_json, files, ROOT

sys.path.insert(0, os.path.join(ROOT, "tests", "java"))
from javaoracle import JavaOracle  # noqa: E402

findings = []
with JavaOracle() as j:
    for label, sql, typ, value, option, value_dir in (
            ("A", "STRING", pa.string(), None, {"partition.default-name": "NULLS"},
             "dt=NULLS"),
            ("B", "DATE", pa.date32(), datetime.date(2024, 1, 1),
             {"partition.legacy-name": "false"}, "dt=2024-01-01")):
        path = os.path.join(tempfile.mkdtemp(prefix="audit27d-h6-"), "wh", "db.db", "t")
        schema = pa.schema([("id", pa.int64()), ("dt", typ)])
        j.create_table(path, [("id", "BIGINT"), ("dt", sql)], ["dt"], options={"bucket": "-1"})
        j.write(path, pa.table({"id": [1], "dt": [value]}, schema=schema))
        j.write(path, pa.table({"id": [2], "dt": [value]}, schema=schema), options=option)
        data = sorted(f for f in files(path) if "bucket-" in f)
        dyn = [f for f in data if f.startswith(value_dir + "/")]
        print(label, "data files:", data)
        if not dyn:
            print(label, "Java did not honour the dynamic option; nothing to show")
            continue
        rc, doc, err = cli_json("repair", path, "--apply")
        given_up = [f["path"] for f in doc.get("files", [])] if isinstance(doc, dict) else []
        print(label, "repair --apply rc", rc, "|", doc.get("message") if isinstance(doc, dict)
              else (doc, err[-300:]))
        name = os.path.basename(dyn[0])
        if os.path.exists(os.path.join(path, dyn[0])) and \
                any(os.path.basename(p) == name for p in given_up):
            findings.append(f"{label}: repair --apply gave up {given_up}; the file Java wrote "
                            f"under dynamic option {option} is at {dyn[0]}")
for f in findings:
    print("FINDING:", f)
if findings:
    sys.exit(1)
print("NO FINDING")
