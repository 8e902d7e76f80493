"""F1: a partition-scoped run, over partition columns of each type whose directory value it
types (TINYINT, SMALLINT, INT, BIGINT, BOOLEAN, DATE, CHAR, VARCHAR/STRING), with one commit
(one manifest, min = max) per value, including values whose order differs between UTF-16
code units (Java String.compareTo), code points and UTF-8 bytes ('\ue000' vs an astral
character), negative numbers, range ends and a trailing-space CHAR. For each value the run
scoped to exactly that directory must delete what a full run deletes there (nothing: every
file is live). Any live file deleted is a FINDING."""
import datetime
import fnmatch
import os

import pyarrow as pa

from common import new_table, write_rows, age_all, files
from paimon_commit import Table
from paimon_commit.format import paths as P

CASES = [
    ("tinyint", pa.int8(), [-128, -1, 0, 127]),
    ("smallint", pa.int16(), [-32768, 5, 32767]),
    ("int", pa.int32(), [-2147483648, -5, 2147483647]),
    ("bigint", pa.int64(), [-(2 ** 63), 10 ** 12, 2 ** 63 - 1]),
    ("boolean", pa.bool_(), [False, True]),
    ("date", pa.date32(), [datetime.date(1969, 12, 31), datetime.date(2024, 1, 1),
                           datetime.date(9999, 12, 31)]),
    ("string", pa.string(), ["a", "z", "\u00e9", "\ue000", "\U0001F600", "\uffff", "a b",
                             "x\u00a0", "\u200b", "A", "\x7f"]),
]
findings = []
for name, typ, values in CASES:
    schema = pa.schema([("id", pa.int64()), ("p", typ)])
    t = new_table(schema=schema, partition_keys=["p"])
    for i, v in enumerate(values):
        write_rows(t, {"id": [i], "p": [v]}, schema=schema)
    live = sorted(f for f in files(t.path) if "bucket-" in f)
    age_all(t.path)
    tab = Table.open(t.path)
    full = tab.remove_orphan_files(older_than_duration="1 d", dry_run=True).deleted_paths
    skipped = []
    dirs = sorted({f.split("/")[0] for f in live})
    for d in dirs:
        glob = "".join("[%s]" % c if c in "*?[]" else c for c in P.unescape_path_name(d.split("=", 1)[1]))
        res = Table.open(t.path).remove_orphan_files(
            older_than_duration="1 d", partitions=[f"p={glob}"])
        skipped.append(getattr(res, "manifests_skipped", None))
        lost = [f for f in live if not os.path.exists(os.path.join(t.path, f))]
        if lost:
            findings.append((name, d, lost, full))
            break
    print(name, "dirs", dirs, "full would delete", full, "manifests skipped per scoped run", skipped, "lost", findings[-1][2]
          if findings and findings[-1][0] == name else [])
for name, d, lost, full in findings:
    print(f"FINDING: {name} partition: scoped run --partition on {d!r} deleted live {lost}; "
          f"a full run deletes {full}")
if not findings:
    print("NO FINDING")
