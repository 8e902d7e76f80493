"""H4 (expected NO FINDING): inventory-fed cleanup (`file_list=`) with rows spelled in ways a
real inventory spells them:
 1. rows of a sibling table whose root shares the prefix (`t2` next to `t`) mixed in;
 2. `file://` URIs, percent-encoded (a partition directory holding `%`: the value 'a:b' lives
    in `p=a%3Ab`, its URI spells `p=a%253Ab`) - the planted orphan there must go, nothing live;
 3. the same rows as raw, unencoded `file://` URIs (`%3A` then decodes to ':', a directory
    that does not exist): nothing may be deleted;
 4. a file rewritten after the list (same name and size, newer time): kept."""
import os
import sys
import tempfile
import time
from urllib.parse import quote

import pyarrow as pa

from common import new_table, write_rows, age_all, plant_orphan, files
from paimon_commit.operations.orphan import CleanContext, OrphanFilesCleaner

schema = pa.schema([("id", pa.int64()), ("p", pa.string())])
now_ms = lambda: int(time.time() * 1000)  # noqa: E731
CUTOFF = now_ms() - 86400_000
findings = []


def inventory(roots, uri=None, extra=()):
    lines = ["path,size,last_modified"]
    for root in roots:
        for rel in sorted(files(root)):
            if rel.startswith(".maintenance/"):
                continue
            full = os.path.join(root, rel)
            st = os.stat(full)
            loc = full if uri is None else "file://" + (quote(full) if uri == "enc" else full)
            lines.append(f"{loc},{st.st_size},{st.st_mtime_ns // 1_000_000}")
    lines += list(extra)
    p = os.path.join(tempfile.mkdtemp(prefix="audit27d-inv-"), "list.csv")
    with open(p, "w") as f:
        f.write("\n".join(lines) + "\n")
    return p


def run(t, listing):
    ctx = CleanContext(t.path, older_than_ms=CUTOFF, file_list=listing,
                       file_list_time_ms=now_ms() - 60_000)
    return OrphanFilesCleaner(ctx).clean()


def table(name="t", base=None):
    t = new_table(name, schema=schema, partition_keys=["p"], base=base)
    write_rows(t, {"id": [1, 2], "p": ["a:b", "x"]}, schema=schema)
    return t


def attempt(label, t, listing, expect_deleted):
    before = files(t.path)
    live = {f for f in before if "bucket-" in f and "dead" not in f}
    try:
        r = run(t, listing)
        out = f"deleted {r.deleted_paths}"
    except Exception as e:  # noqa: BLE001
        out = f"{type(e).__name__}: {str(e)[:140]}"
    gone = before - files(t.path)
    print(f"{label}: {out}")
    if gone & live:
        findings.append(f"{label}: deleted live {sorted(gone & live)}")
    if expect_deleted is not None and not (gone - live) >= expect_deleted:
        print(f"  (note: expected {sorted(expect_deleted)} deleted, got {sorted(gone)})")


# 1. sibling table t2 under the same parent, its rows mixed into t's list
base = tempfile.mkdtemp(prefix="audit27d-h4-")
t = table("t", base)
t2 = table("t2", base)
o2 = plant_orphan(os.path.join(t2.path, "p=x", "bucket-0"))
age_all(t.path)
age_all(t2.path)
attempt("1 sibling t2 rows", t, inventory([t.path, t2.path]), None)
if not os.path.exists(o2):
    findings.append("1: a file of the sibling table t2 was deleted")

# 2 / 3. file:// URIs, encoded and raw
for label, enc in (("2 encoded file:// URIs", "enc"), ("3 raw file:// URIs", "raw")):
    t = table()
    orphan = plant_orphan(os.path.join(t.path, "p=a%3Ab", "bucket-0"))
    age_all(t.path)
    rel = os.path.relpath(orphan, t.path)
    attempt(label, t, inventory([t.path], uri=enc), {rel} if enc == "enc" else set())
    if enc == "raw" and not os.path.exists(orphan):
        findings.append("3: a raw file:// URI (decoded to another directory) deleted a file")

# 4. a file rewritten after the list (same size, newer time)
t = table()
orphan = plant_orphan(os.path.join(t.path, "p=x", "bucket-0"))
age_all(t.path)
listing = inventory([t.path])
with open(orphan, "wb") as f:
    f.write(b"ORPHAN")   # same size, rewritten now
attempt("4 rewritten after the list", t, listing, set())
if not os.path.exists(orphan):
    findings.append("4: a file rewritten after the list (newer time) was deleted")

for f in findings:
    print("FINDING:", f)
if findings:
    sys.exit(1)
print("NO FINDING")
