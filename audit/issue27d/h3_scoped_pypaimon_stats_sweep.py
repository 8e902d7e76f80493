"""H3 (expected NO FINDING): partition statistics written by pypaimon 2.1.0 (its own min/max/
null counts over Python values, manifests merged by pypaimon) instead of by this library.
Tables partitioned by TINYINT, SMALLINT, INT, BIGINT, BOOLEAN, DATE, STRING and a two-level
(STRING, INT) key; each commit mixes two values (a NULL, a blank string, negative numbers,
range ends among them), so manifests have real ranges. For each listed partition directory
a dry run scoped to exactly it must delete what a full dry run deletes there (the one
orphan planted in each directory; every other file is live)."""
import datetime
import fnmatch
import os
import sys
import tempfile

import pyarrow as pa

from common import age_all, plant_orphan, ROOT
from paimon_commit import Table

sys.path.insert(0, os.path.join(ROOT, "tests"))
from oracle import pp_create, pp_write  # noqa: E402

D = datetime.date
CASES = {
    "tinyint": (pa.int8(), [-128, 0, 127, None, 5]),
    "smallint": (pa.int16(), [-32768, 7, 32767, None]),
    "int": (pa.int32(), [-1, 0, 10, 9, None, 100]),
    "bigint": (pa.int64(), [-(2 ** 63), 2 ** 63 - 1, 1, None]),
    "boolean": (pa.bool_(), [True, False, None]),
    "date": (pa.date32(), [D(1969, 12, 31), D(2024, 1, 1), D(2024, 2, 29), None]),
    "string": (pa.string(), ["b", "", " ", "a b", "a%3Ab", "a:b", "Z", "\u00e9", None, "zz"]),
}
found = []
for name, (typ, values) in CASES.items():
    base = tempfile.mkdtemp(prefix="audit27d-h3-")
    path = os.path.join(base, "wh", "db.db", name)
    schema = pa.schema([("id", pa.int64()), ("k", typ)])
    pp_create(path, schema, ["k"], {"snapshot.num-retained.min": "1000"})
    for i in range(len(values)):
        pair = [values[i], values[(i + 3) % len(values)]]
        pp_write(path, pa.table({"id": [i, 100 + i], "k": pair}, schema=schema))
    for d in os.listdir(path):
        if d.startswith("k="):   # one planted orphan per partition: the sweep must see it
            plant_orphan(os.path.join(path, d, "bucket-0"))
    age_all(path)
    t = Table.open(path)
    full = t.remove_orphan_files(older_than_duration="1 d", dry_run=True)
    full_del = set(getattr(full, "deleted_paths", []) or [])
    dirs = sorted(d for d in os.listdir(path) if d.startswith("k="))
    for d in dirs:
        value = d[2:]
        # the glob matches the unescaped value
        from paimon_commit.format.paths import unescape_path_name
        glob = "".join("[%s]" % c if c in "*?[" else c for c in unescape_path_name(value))
        try:
            r = t.remove_orphan_files(older_than_duration="1 d", dry_run=True,
                                      partitions=[f"k={glob}"])
        except Exception as e:  # noqa: BLE001
            print(name, d, "refused:", type(e).__name__, str(e)[:120])
            continue
        got = set(getattr(r, "deleted_paths", []) or [])
        inside = {p for p in full_del if p.startswith(d + "/")}
        if got != inside:
            found.append((name, d, sorted(got - inside), sorted(inside - got)))
    print(name, "dirs:", dirs, "full run would delete:", len(full_del), "files")
if found:
    for f in found:
        print("FINDING:", f)
    sys.exit(1)
print("NO FINDING")
