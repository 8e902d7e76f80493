"""Idea: a partition-scoped orphan cleanup skips manifests by partition statistics. Values that
need escaping (space, '/', '=', '%', ':', unicode, '%41' literally), the default partition name
(NULL, blank, the literal string), typed keys (INT negative/NULL, DATE, BOOLEAN) - does a scoped
run of each partition delete a file a retained snapshot reads?

Each row its own commit (a manifest per partition: tight statistics), then one commit across
all, then a planted old orphan in each partition's bucket dir. Every file is aged 3 days; the
scoped run of each partition (its glob, and for DATE the day number) must delete exactly the
planted orphan, and `check` must find every snapshot intact afterwards."""
import datetime
import glob as _glob
import os

import pyarrow as pa

from paimon_commit.format.paths import unescape_path_name
from common import (new_table, write_rows, age_all, plant_orphan, orphan_clean,
                    check_problems, files)

schema = pa.schema([("id", pa.int64()), ("s", pa.string()), ("i", pa.int32()),
                    ("d", pa.date32()), ("b", pa.bool_())])
t = new_table(schema=schema, partition_keys=["s", "i", "d", "b"])
D = datetime.date
values = [("a b", 7, D(2024, 1, 1), True), ("a/b", -1, D(2024, 1, 2), False),
          ("a=b", None, D(1969, 12, 31), None), ("a%b", 0, None, True),
          ("ü€", 10, D(2024, 1, 1), True), ("", 7, D(2024, 1, 1), True),
          (None, 7, D(2024, 1, 1), False), ("__DEFAULT_PARTITION__", 7, D(2024, 1, 1), True),
          ("%41", 7, D(2024, 1, 1), True), ("x:y*?", 2147483647, D(2024, 1, 1), True)]
for n, (s, i, d, b) in enumerate(values):
    write_rows(t, {"id": [n], "s": [s], "i": [i], "d": [d], "b": [b]}, schema=schema)
write_rows(t, {"id": list(range(100, 100 + len(values))), "s": [v[0] for v in values],
               "i": [v[1] for v in values], "d": [v[2] for v in values],
               "b": [v[3] for v in values]}, schema=schema)
bucket_dirs = sorted(set(os.path.dirname(p) for p in
                         _glob.glob(os.path.join(t.path, "s=*", "*", "*", "*", "bucket-*", "*"))))
planted = {plant_orphan(d) for d in bucket_dirs}
age_all(t.path)
rel = lambda p: os.path.relpath(p, t.path)  # noqa: E731
before = files(t.path)
findings = []
for d in bucket_dirs:
    parts = rel(d).split("/")[:-1]
    # a pattern per key, each the directory's value as a glob ('*' when it needs escaping)
    pats = []
    for part in parts:
        k, _, v = part.partition("=")
        u = unescape_path_name(v)   # the value itself, as a glob that matches only it
        pats.append(f"{k}=" + "".join("?" if c == "/" else f"[{c}]" if c in "*?[" else c
                                      for c in u))
    pattern = "/".join(pats)
    rc, doc, err = orphan_clean(t.path, "--partition", pattern)
    deleted = set(doc.get("deleted_paths", doc.get("deleted", []))) if isinstance(doc, dict) \
        else set()
    gone = before - files(t.path)
    lost = {g for g in gone if os.path.join(t.path, g) not in planted
            and not g.startswith(".maintenance/")}   # (old lease records: the lease's own)
    crc, problems = check_problems(t.path)
    print(f"{pattern:40s} rc={rc} deleted={len(gone)} lost={sorted(lost)} "
          f"check problems={len(problems)} read manifests={doc.get('manifests_read')}/"
          f"skipped {doc.get('manifests_skipped')}" + (f" err={err[-200:]}" if rc not in (0,) else ""))
    if lost or problems:
        findings.append(f"--partition {pattern!r} deleted {sorted(lost)}; check: "
                        f"{problems[:2]}")
    before = files(t.path)
left = {p for p in planted if os.path.exists(p)}
print("planted orphans left:", sorted(rel(p) for p in left))
for f in findings:
    print("FINDING (data loss):", f)
if not findings:
    print("NO FINDING")
