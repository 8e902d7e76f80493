"""Check (no finding): the kill-and-rerun matrix of tests/faults/test_interrupted_expire.py,
but with metadata SHARED across snapshots as Paimon Java writes it -- an index manifest
reused by name by every snapshot of a group (Java carries `indexManifest` over when a commit
changes no index), index files (deletion vectors) carried forward from one index manifest to
the next, and a statistics file carried over by name. The repo's tests give every snapshot
its own index manifest, index files and statistics file, so they cannot see a shared one
deleted too early. Killed halfway through each delete step, rerun as one run or with
`snapshot.expire.limit` 10: the table must end exactly as after an unkilled run, and every
index file a retained snapshot or the tag names must still exist.

Run: PYTHONPATH=. .venv/bin/python audit/c1_shared_index_kill_matrix.py
"""
import io
import os
import shutil
import uuid

import fastavro

from common import files
from faults import test_interrupted_expire as T
from faults.faulty_io import Crash, FaultyIO
from invariants import assert_intact
from operations.test_changelog import INDEX_SCHEMA, rewrite_snapshot

from benchmarks.scale_tables import build_overwrite_table
from paimon_commit import Table
from paimon_commit.operations import expire as expire_mod
from paimon_commit.operations.expire import ExpireSnapshots
from paimon_commit.reachability import Reachability
from paimon_commit.store import FileStore
import tempfile

expire_mod.FIRST_CHUNK = T.FIRST_CHUNK
GROUPS = {range(1, 21): ["dv-a1", "dv-a2"], range(21, 41): ["dv-a2", "dv-b1"],
          range(41, 61): ["dv-b1", "dv-c1"]}


def index_manifest(root, names):
    os.makedirs(os.path.join(root, "index"), exist_ok=True)
    for n in names:
        p = os.path.join(root, "index", n)
        if not os.path.exists(p):
            with open(p, "wb") as f:
                f.write(b"dv")
    buf = io.BytesIO()
    fastavro.writer(buf, INDEX_SCHEMA, [
        {"_VERSION": 1, "_KIND": 0, "_PARTITION": b"", "_BUCKET": 0,
         "_INDEX_TYPE": "DELETION_VECTORS", "_FILE_NAME": n, "_FILE_SIZE": 2, "_ROW_COUNT": 1}
        for n in names])
    m = f"index-manifest-{uuid.uuid4()}-0"
    with open(os.path.join(root, "manifest", m), "wb") as f:
        f.write(buf.getvalue())
    return m


template = os.path.join(tempfile.mkdtemp(prefix="auditA-c1-"), "wh", "db.db", "t")
build_overwrite_table(template, T.SNAPSHOTS * T.PER_SNAPSHOT, T.PER_SNAPSHOT)
t = Table.open(template)
os.makedirs(os.path.join(template, "statistics"))
for g, (ids, names) in enumerate(GROUPS.items()):
    m = index_manifest(template, names)
    stat = f"stat-group-{g}"
    with open(os.path.join(template, "statistics", stat), "w") as f:
        f.write("{}")
    for sid in ids:
        rewrite_snapshot(t, sid, index_manifest=m, statistics=stat)
Table.open(template).create_tag(f"t{T.TAG}", T.TAG)

ref = template + "-ref"
shutil.copytree(template, ref)
count = FaultyIO(ref, kinds={"_unlink"})
r = ExpireSnapshots(FileStore.open(ref, io=count), T.cfg(), executor=T.LastBatchFirst()).expire()
assert r.expired_ids == list(range(1, T.KEPT)) and not r.skipped, r.to_dict()
want = files(ref)
steps = [T.step_of(os.path.relpath(p, ref)) for _, p in count.log]
print("unkilled run's steps:", [s for i, s in enumerate(steps) if i == 0 or steps[i - 1] != s])


def needed_index_files(path):
    t = Table.open(path)
    reach = Reachability(t.store)
    out = set()
    for s in list(t.snapshots()) + [x.snapshot for x in t.tags()]:
        if s.index_manifest:
            out |= {os.path.join("index", n) for n in reach.index_files(s.index_manifest)}
    return out


bad = []
for step in [s for s in T.STEPS if s in steps]:
    for limit in (None, 10):
        path = f"{template}-{step}-{limit}"
        shutil.copytree(template, path)
        last = max(i for i, s in enumerate(steps) if s == step)
        first = last
        while first > 0 and steps[first - 1] == step:
            first -= 1
        io_ = FaultyIO(path, fail_at=(first + last) // 2 + 1, kinds={"_unlink"})
        try:
            ExpireSnapshots(FileStore.open(path, io=io_), T.cfg(),
                            executor=T.LastBatchFirst()).expire()
        except Crash:
            pass
        for _ in range(10):
            rr = ExpireSnapshots(FileStore.open(path), T.cfg(limit or (1 << 30))).expire()
            if not rr.expired_ids:
                break
        missing = sorted(needed_index_files(path) - files(path))
        extra, lost = sorted(files(path) - want), sorted(want - files(path))
        assert_intact(path)
        ok = not (missing or extra or lost)
        print(f"kill in {step:13s} rerun limit {str(limit):4s}: "
              f"{'same files as unkilled' if ok else f'extra {extra[:3]} lost {lost[:3]} missing {missing}'}")
        if not ok:
            bad.append((step, limit))
print("NO FINDING" if not bad else f"DIFFERENCES: {bad}")
