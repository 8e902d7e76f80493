"""N5 (repair and the maintenance lease): while `repair(apply=True)` has written its manifests
and list but not yet published its snapshot, other processes run, as subprocesses, an orphan
cleanup with the shortest cutoff it takes, snapshot expiration keeping one snapshot, and tag
expiration. Each must be refused by the lease (exit 75), and the repair snapshot must read.
The reverse too: while an orphan cleanup holds the lease (between its plan and its deletes),
`paimon-commit repair --apply` must be refused and nothing committed."""
import os
import sys

import pyarrow as pa

from common import new_table, write_rows, cli, age_all
from paimon_commit import Table
from paimon_commit.operations import commit as C
from paimon_commit.operations import orphan as O

schema = pa.schema([("id", pa.int64()), ("p", pa.string())])
findings = []


def table():
    t = new_table("t", schema=schema, partition_keys=["p"], options={
        "snapshot.num-retained.min": "100", "snapshot.time-retained": "1 d"})
    for i in range(3):
        write_rows(t, {"id": [i], "p": ["a"]}, schema=schema)
    t.create_tag("t1", 1)
    lost = [lf.path for lf in t.live_files()][-1]
    os.remove(lost)
    age_all(t.path)
    return t


# 1. others during repair's commit
t = table()
real = C.FileStoreCommit._write_snapshot_files
outs = []


def hook(self, *a, **kw):
    snap = real(self, *a, **kw)
    if not outs:
        for args in (("remove-orphan-files", t.path, "--older-than-duration", "1 ms",
                      "--allow-recent-cutoff"),
                     ("expire-snapshots", t.path, "--retain-max", "1", "--retain-min", "1"),
                     ("expire-tags", t.path)):
            rc, out, err = cli(*args)
            outs.append((args[0], rc, (out + err).strip().splitlines()[-1:] if (out + err)
                         else ""))
    return snap


C.FileStoreCommit._write_snapshot_files = hook
try:
    r = Table.open(t.path).repair(apply=True)
    print("repair:", r.message)
finally:
    C.FileStoreCommit._write_snapshot_files = real
for o in outs:
    print("  during repair:", o)
    if o[1] == 0:
        findings.append(f"1: {o[0]} ran (exit 0) while repair held the lease: {o[2]}")
try:
    n = Table.open(t.path).read_arrow().num_rows
    chk = Table.open(t.path).check()
    broken_latest = [b for b in chk.broken if b == f"snapshot {r.snapshot_id}"]
    print("  after: latest rows", n, "broken:", chk.broken)
    if broken_latest:
        findings.append(f"1: the repair snapshot is broken: {chk.problems[:2]}")
except Exception as e:  # noqa: BLE001
    findings.append(f"1: latest unreadable after repair: {type(e).__name__}: {e}")

# 2. repair during an orphan cleanup's lease
t = table()
before = Table.open(t.path).latest_snapshot().id
real2 = O.OrphanFilesCleaner._not_committed_since_plan
got = []


def hook2(self, paths):
    if not got:
        got.append(cli("repair", t.path, "--apply"))
    return real2(self, paths)


O.OrphanFilesCleaner._not_committed_since_plan = hook2
try:
    from common import plant_orphan
    plant_orphan(os.path.join(t.path, "p=a", "bucket-0"))
    age_all(t.path)
    Table.open(t.path).remove_orphan_files(older_than_duration="1 d")
finally:
    O.OrphanFilesCleaner._not_committed_since_plan = real2
rc, out, err = got[0] if got else (None, "", "hook not reached")
print("repair during orphan cleanup: rc", rc, (out + err).strip().splitlines()[-1:])
if rc == 0 or Table.open(t.path).latest_snapshot().id != before:
    findings.append(f"2: repair --apply ran during an orphan cleanup (rc {rc})")
for f in findings:
    print("FINDING:", f)
if findings:
    sys.exit(1)
print("NO FINDING")
