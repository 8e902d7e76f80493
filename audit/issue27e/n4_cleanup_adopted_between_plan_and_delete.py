"""N4: a file that looks like an orphan when the cleanup plans (written by a writer that has
not committed yet, its mtime 3 days old: a slow job, a copied-in file) is committed between
the plan and the deletes, in a partition directory the writer created after the listing too.
Run as a full cleanup, partition-scoped (`p=a*`), inventory-fed, and scoped + inventory-fed
(not dry runs). Afterwards the latest snapshot must read (no committed file deleted)."""
import os
import sys
import tempfile
import time

import pyarrow as pa

from common import new_table, write_rows, age_all, plant_orphan, files
from paimon_commit import Table
from paimon_commit.operations import orphan as O

schema = pa.schema([("id", pa.int64()), ("p", pa.string())])
findings = []
OLD = int(time.time() * 1000) - 3 * 86400_000


def inventory(t):
    lines = ["path,size,last_modified"]
    for rel in sorted(files(t.path)):
        full = os.path.join(t.path, rel)
        st = os.stat(full)
        lines.append(f"{full},{st.st_size},{st.st_mtime_ns // 1_000_000}")
    p = os.path.join(tempfile.mkdtemp(prefix="audit27e-n4-"), "list.csv")
    open(p, "w").write("\n".join(lines) + "\n")
    return p


def attempt(label, scoped, listed):
    t = new_table("t", schema=schema, partition_keys=["p"], options={
        "snapshot.num-retained.min": "100", "snapshot.time-retained": "1 d"})
    write_rows(t, {"id": [1, 2], "p": ["a", "b"]}, schema=schema)
    # the slow writer: files in p=a (existing) and p=a2 (new directory), not committed yet
    w = Table.open(t.path).new_writer()
    w.write_arrow(pa.table({"id": [3, 4], "p": ["a", "a2"]}, schema=schema))
    msgs = w.prepare_commit()
    orphan = plant_orphan(os.path.join(t.path, "p=a", "bucket-0"))
    age_all(t.path, OLD)
    kw = {}
    if scoped:
        kw["partitions"] = ["p=a*"]
    if listed:
        kw["file_list"] = inventory(t)
        kw["file_list_time_ms"] = int(time.time() * 1000) - 60_000
    real = O.OrphanFilesCleaner._not_committed_since_plan
    done = []

    def hook(self, paths):
        if not done:
            done.append(1)
            with Table.open(t.path).new_commit(commit_user="slow") as c:
                c.commit(msgs)
        return real(self, paths)

    O.OrphanFilesCleaner._not_committed_since_plan = hook
    try:
        r = O.OrphanFilesCleaner(O.CleanContext(
            t.path, older_than_ms=int(time.time() * 1000) - 86400_000, **kw)).clean()
        out = f"deleted {list(r.deleted_paths)}"
    except Exception as e:  # noqa: BLE001
        out = f"{type(e).__name__}: {str(e)[:200]}"
    finally:
        O.OrphanFilesCleaner._not_committed_since_plan = real
    try:
        n = Table.open(t.path).read_arrow().num_rows
    except Exception as e:  # noqa: BLE001
        n = f"{type(e).__name__}: {str(e)[:200]}"
    print(f"{label}: {out}; committed during run: {bool(done)}; latest rows {n}")
    if n != 4:
        findings.append(f"{label}: latest snapshot reads {n} (expected 4 rows)")


attempt("1 full", False, False)
attempt("2 scoped p=a*", True, False)
attempt("3 inventory", False, True)
attempt("4 scoped + inventory", True, True)
for f in findings:
    print("FINDING:", f)
if findings:
    sys.exit(1)
print("NO FINDING")
