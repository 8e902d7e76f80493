"""N6: inventory-fed cleanup (not a dry run) from a Parquet inventory whose last-modified
column is a Parquet timestamp: with a non-UTC zone (Asia/Tokyo), zone-less (UTC by Parquet's
convention), in microseconds, and as int64 epoch milliseconds; the table as in n3 (tags,
long-lived changelogs, a planted orphan in manifest/ and in a bucket directory). Only the
planted orphans may go, and every snapshot and tag must read as before."""
import os
import sys
import tempfile
import time

import pyarrow as pa
import pyarrow.parquet as pq

from common import files
from paimon_commit.operations.orphan import CleanContext, OrphanFilesCleaner

HERE = os.path.dirname(os.path.abspath(__file__))
_src = open(os.path.join(HERE, "n3_inventory_metadata_rows.py")).read()
exec(_src.split("def fmt")[0])                       # build(), OLD, schema, findings
exec("def state" + _src.split("def state")[1].split("def api")[0])   # state(), attempt()


def parquet(t, mtype):
    paths, sizes, mt = [], [], []
    for rel in sorted(files(t.path)):
        full = os.path.join(t.path, rel)
        st = os.stat(full)
        paths.append(full)
        sizes.append(st.st_size)
        mt.append(st.st_mtime_ns // 1_000_000)
    if mtype == "int64":
        col = pa.array(mt, pa.int64())
    else:
        unit, tz = mtype
        mult = 1000 if unit == "us" else 1
        col = pa.array([m * mult for m in mt], pa.timestamp(unit, tz=tz))
    p = os.path.join(tempfile.mkdtemp(prefix="audit27e-n6-"), "inv.parquet")
    pq.write_table(pa.table({"path": paths, "size": pa.array(sizes, pa.int64()),
                             "last_modified": col}), p)
    return p


def run_with(mtype):
    def run(t):
        r = OrphanFilesCleaner(CleanContext(
            t.path, older_than_ms=int(time.time() * 1000) - 86400_000,
            file_list=parquet(t, mtype), file_list_time_ms=int(time.time() * 1000) - 60_000)
            ).clean()
        return f"deleted {len(r.deleted_paths)}, changed {r.file_list_changed}"
    return run


for mtype in (("ms", "Asia/Tokyo"), ("ms", None), ("us", "+05:30"), "int64"):
    attempt(f"parquet {mtype}", run_with(mtype))
for f in findings:
    print("FINDING:", f)
if findings:
    sys.exit(1)
print("NO FINDING")
