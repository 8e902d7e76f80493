"""N1: partition-scoped orphan cleanup of tables whose partition keys mix a type the scope
cannot type (DECIMAL(20,2) and TIMESTAMP(6), both stored in BinaryRow's variable part; long
strings, also in the variable part) with keys it can (INT, STRING), written by Paimon Java
(tests/java's oracle), so the manifests' partition statistics are Java's BinaryRows of several
fields. Each commit writes two rows in different partitions (real ranges). One orphan is
planted per bucket directory; a dry run scoped on each single key value (and on each whole
directory) must delete exactly what a full dry run deletes there (the orphans only): anything
else is a live file lost (a manifest pruned wrongly)."""
import datetime
import decimal
import os
import sys
import tempfile

import pyarrow as pa

from common import age_all, plant_orphan, ROOT
from paimon_commit import Table
from paimon_commit.format.paths import unescape_path_name

sys.path.insert(0, os.path.join(ROOT, "tests", "java"))
from javaoracle import JavaOracle  # noqa: E402

Dec = decimal.Decimal
TS = datetime.datetime
CASES = {
    # name: ([(col, sql, arrow type)], partition keys, rows of key values)
    "dec_int": ([("d", "DECIMAL(20,2)", pa.decimal128(20, 2)), ("k", "INT", pa.int32())],
                [(Dec("1.50"), 5), (Dec("-99999999999.99"), 7), (Dec("12345678901234.56"), -3),
                 (None, 9), (Dec("0.00"), 100), (Dec("1.50"), 1)]),
    "int_longstr": ([("k", "INT", pa.int32()), ("s", "STRING", pa.string())],
                    [(1, "2024-01-01-long-value"), (2, "short"), (-7, "abcdefgh"),
                     (40, "zzzzzzzzzzzzzzzz"), (3, "a"), (None, "2024-01-02-long-value")]),
    "ts_str_int": ([("ts", "TIMESTAMP(6)", pa.timestamp("us")), ("s", "STRING", pa.string()),
                    ("k", "INT", pa.int32())],
                   [(TS(2024, 1, 1, 10, 0, 0, 123456), "alpha-beta-gamma", 10),
                    (TS(1999, 12, 31, 23, 59, 59), "b", 20),
                    (TS(2024, 6, 1), "cccccccccccc", 30), (None, "dd", 40),
                    (TS(2030, 1, 1, 0, 0, 0, 1), "alpha-beta-gamma", 50)]),
}
found = []
pruned = {}
with JavaOracle() as j:
    for name, (cols, rows) in CASES.items():
        path = os.path.join(tempfile.mkdtemp(prefix="audit27e-n1-"), "wh", "db.db", name)
        schema = pa.schema([("id", pa.int64())] + [(c, t) for c, _, t in cols])
        keys = [c for c, _, _ in cols]
        try:
            j.create_table(path, [("id", "BIGINT")] + [(c, s) for c, s, _ in cols], keys,
                           options={"bucket": "-1", "snapshot.num-retained.min": "1000",
                                    "snapshot.num-retained.max": "1000"})
            for i in range(len(rows)):
                pair = [rows[i], rows[(i + 2) % len(rows)]]
                data = {"id": [i, 100 + i]}
                for n, c in enumerate(keys):
                    data[c] = [pair[0][n], pair[1][n]]
                j.write(path, pa.table(data, schema=schema))
        except Exception as e:  # noqa: BLE001
            print(name, "Java could not write it:", type(e).__name__, str(e)[:300])
            continue
        bdirs = []
        for d, ds, fs in os.walk(path):
            if os.path.basename(d).startswith("bucket-"):
                bdirs.append(os.path.relpath(d, path))
                plant_orphan(d)
        age_all(path)
        t = Table.open(path)
        full = set(t.remove_orphan_files(older_than_duration="1 d", dry_run=True).deleted_paths)
        # every single key=value seen, and every whole directory
        patterns = set()
        for b in bdirs:
            parts = b.split("/")[:-1]
            globs = []
            for part in parts:
                k, _, v = part.partition("=")
                g = "".join("[%s]" % c if c in "*?[" else c for c in unescape_path_name(v))
                patterns.add(f"{k}={g}")
                globs.append(f"{k}={g}")
            patterns.add("/".join(globs))
        for pat in sorted(patterns):
            try:
                r = t.remove_orphan_files(older_than_duration="1 d", dry_run=True,
                                          partitions=[pat])
            except Exception as e:  # noqa: BLE001
                print(name, pat, "refused:", type(e).__name__, str(e)[:150])
                continue
            got = set(r.deleted_paths)
            skipped = getattr(r, "manifests_skipped", 0)
            pruned[name] = pruned.get(name, 0) + (skipped or 0)
            live_lost = {p for p in got if p not in full}
            if live_lost:
                found.append((name, pat, sorted(live_lost)))
        print(name, "bucket dirs:", len(bdirs), "full run would delete", len(full),
              "patterns:", len(patterns))
print("manifests skipped by pruning, per table:", pruned)
for f in found:
    print("FINDING: scoped run deletes what a full run keeps (live):", f)
if found:
    sys.exit(1)
print("NO FINDING")
