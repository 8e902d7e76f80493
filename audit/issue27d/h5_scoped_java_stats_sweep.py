"""H5 (expected NO FINDING): h3 with Paimon Java (tests/java's oracle, Paimon 1.0) as the writer:
partition statistics computed by Java's SimpleStatsCollector, directories named by Java's
PartitionPathUtils. Keys TINYINT, SMALLINT, INT, BIGINT, BOOLEAN, DATE, STRING, CHAR(5); each
commit mixes two values (NULL, blank, padded, escaped, negative, range ends), so manifests have
real ranges. One orphan is planted in each partition directory; a dry run scoped to exactly
that directory must delete what a full dry run deletes there (the orphan only)."""
import datetime
import os
import sys
import tempfile

import pyarrow as pa

from common import age_all, plant_orphan, ROOT
from paimon_commit import Table
from paimon_commit.format.paths import unescape_path_name

sys.path.insert(0, os.path.join(ROOT, "tests", "java"))
from javaoracle import JavaOracle  # noqa: E402

D = datetime.date
CASES = {
    "tinyint": ("TINYINT", pa.int8(), [-128, 0, 127, None, 5]),
    "smallint": ("SMALLINT", pa.int16(), [-32768, 7, 32767, None]),
    "int": ("INT", pa.int32(), [-1, 0, 10, 9, None, 100]),
    "bigint": ("BIGINT", pa.int64(), [-(2 ** 63), 2 ** 63 - 1, 1, None]),
    "boolean": ("BOOLEAN", pa.bool_(), [True, False, None]),
    "date": ("DATE", pa.date32(), [D(1969, 12, 31), D(2024, 1, 1), D(2024, 2, 29), None]),
    "string": ("STRING", pa.string(),
               ["b", "", " ", "a b", "a:b", "a%3Ab", "Z", "\u00e9", None, "zz", "\u3000"]),
    "char": ("CHAR(5)", pa.string(), ["ab", "ab   ", "  ", None, "x"]),
}
found = []
with JavaOracle() as j:
    for name, (sql, typ, values) in CASES.items():
        path = os.path.join(tempfile.mkdtemp(prefix="audit27d-h5-"), "wh", "db.db", name)
        schema = pa.schema([("id", pa.int64()), ("k", typ)])
        try:
            j.create_table(path, [("id", "BIGINT"), ("k", sql)], ["k"], options={
                "bucket": "-1", "snapshot.num-retained.min": "1000",
                "snapshot.num-retained.max": "1000"})
            for i in range(len(values)):
                pair = [values[i], values[(i + 3) % len(values)]]
                j.write(path, pa.table({"id": [i, 100 + i], "k": pair}, schema=schema))
        except Exception as e:  # noqa: BLE001
            print(name, "Java could not write it:", type(e).__name__, str(e)[:200])
            continue
        for d in os.listdir(path):
            if d.startswith("k="):
                plant_orphan(os.path.join(path, d, "bucket-0"))
        age_all(path)
        t = Table.open(path)
        full = set(t.remove_orphan_files(older_than_duration="1 d", dry_run=True).deleted_paths)
        dirs = sorted(d for d in os.listdir(path) if d.startswith("k="))
        for d in dirs:
            glob = "".join("[%s]" % c if c in "*?[" else c for c in unescape_path_name(d[2:]))
            got = set(t.remove_orphan_files(older_than_duration="1 d", dry_run=True,
                                            partitions=[f"k={glob}"]).deleted_paths)
            inside = {p for p in full if p.startswith(d + "/")}
            if got != inside:
                found.append((name, d, sorted(got - inside), sorted(inside - got)))
        print(name, "dirs:", dirs, "full run would delete", len(full), "files")
for f in found:
    print("FINDING:", f)
if found:
    sys.exit(1)
print("NO FINDING")
