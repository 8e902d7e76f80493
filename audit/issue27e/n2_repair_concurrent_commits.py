"""N2 (repair, a concurrent commit between its plan and its publish): the table (partition p,
a tag t0 of snapshot 1) loses a data file F of p=a; `repair(apply=True)`
runs, and right after its first commit attempt chose the files (so that attempt loses the race
and the next one must choose again from the new latest) another writer:
 a. appends a file to p=a;
 b. overwrites p=a (F's entry gone, a new file instead);
 c. restores F (its bytes copied back) and appends to p=b;
 d. drops partition p=a, then appends to it again.
After the repair: no data file that exists is given up (live in the repair's base snapshot or
added by the concurrent writer, but not live in the latest), the tag reads as before and
its metadata is untouched."""
import hashlib
import os
import shutil
import sys

import pyarrow as pa

from common import new_table, write_rows, files
from paimon_commit import Table
from paimon_commit.operations import repair as R

schema = pa.schema([("id", pa.int64()), ("p", pa.string())])
findings = []


def rows(t, **kw):
    return Table.open(t.path).read_arrow(**kw).num_rows


def digest(root, sub):
    h = hashlib.sha256()
    for rel in sorted(f for f in files(root) if f.startswith(sub + "/")):
        h.update(rel.encode() + open(os.path.join(root, rel), "rb").read())
    return h.hexdigest()


def existing_live(t, snapshot_id):
    return {lf.path for lf in Table.open(t.path).live_files(snapshot_id=snapshot_id)
            if os.path.exists(lf.path)}


def scenario(label, concurrent):
    t = new_table("t", schema=schema, partition_keys=["p"], options={
        "snapshot.num-retained.min": "100", "snapshot.time-retained": "1 d"})
    write_rows(t, {"id": [1, 2], "p": ["a", "b"]}, schema=schema)          # snapshot 1
    t.create_tag("t0", 1)
    write_rows(t, {"id": [3, 4], "p": ["a", "a"]}, schema=schema)          # snapshot 2: F
    f = [lf.path for lf in t.live_files() if "p=a" in lf.path and
         lf.path not in {x.path for x in t.live_files(snapshot_id=1)}][0]
    saved = open(f, "rb").read()
    os.remove(f)
    tag_rows, tag_d, br_d = rows(t, tag="t0"), digest(t.path, "tag"), digest(t.path, "branch")
    real_pick = R._Repair._pick
    calls = []

    def pick(self, latest, live):
        out = real_pick(self, latest, live)
        calls.append(latest.id)
        if len(calls) == 2:   # attempt 1, after it chose: the concurrent writer commits
            concurrent(Table.open(t.path), f, saved)
        return out

    R._Repair._pick = pick
    try:
        base = Table.open(t.path).latest_snapshot().id
        before_concurrent = existing_live(t, base)
        r = Table.open(t.path).repair(apply=True)
    except Exception as e:  # noqa: BLE001
        print(label, "repair refused/failed:", type(e).__name__, str(e)[:200])
        return
    finally:
        R._Repair._pick = real_pick
    t2 = Table.open(t.path)
    latest = t2.latest_snapshot().id
    live_now = {lf.path for lf in t2.live_files()}
    # everything that exists and was live in the repair's base or any snapshot since
    should = set(before_concurrent)
    for sid in range(base + 1, latest):
        should |= existing_live(t, sid)
    lost = sorted(p for p in should - live_now
                  if os.path.exists(p) and
                  # (files a concurrent overwrite/drop removed are not the repair's doing)
                  r.snapshot_id is not None and p in existing_live(t, r.snapshot_id - 1))
    print(f"{label}: attempts={r.attempts} snapshot={r.snapshot_id} gave up "
          f"{[x.path for x in r.files]} picks from {calls}; latest rows={rows(t2)}")
    if lost:
        findings.append(f"{label}: existing live file(s) given up: {lost}")
    if rows(t2, tag="t0") != tag_rows or digest(t.path, "tag") != tag_d or \
            digest(t.path, "branch") != br_d:
        findings.append(f"{label}: tag/branch changed by repair")


def append_a(t, f, saved):
    write_rows(t, {"id": [10], "p": ["a"]}, schema=schema, commit_user="other")


def overwrite_a(t, f, saved):
    w = t.new_writer()
    w.write_arrow(pa.table({"id": [20], "p": ["a"]}, schema=schema))
    with t.new_commit(commit_user="other") as c:
        c.overwrite(w.prepare_commit(), {"p": "a"})


def restore_and_append_b(t, f, saved):
    with open(f, "wb") as fh:
        fh.write(saved)
    write_rows(t, {"id": [30], "p": ["b"]}, schema=schema, commit_user="other")


def drop_and_readd_a(t, f, saved):
    with t.new_commit(commit_user="other") as c:
        c.drop_partitions([{"p": "a"}])
    write_rows(t, {"id": [40], "p": ["a"]}, schema=schema, commit_user="other")


for label, fn in (("a append p=a", append_a), ("b overwrite p=a", overwrite_a),
                  ("c restore F + append p=b", restore_and_append_b),
                  ("d drop p=a + re-add", drop_and_readd_a)):
    scenario(label, fn)
for f in findings:
    print("FINDING:", f)
if findings:
    sys.exit(1)
print("NO FINDING")
