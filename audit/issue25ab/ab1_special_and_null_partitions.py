"""ab1: partitions with special characters, an empty string and NULL (plus the literal
default-partition name): write, compact, check, repair (dry run and apply), orphan cleanup of
an aged tree, drop of one special partition, expiration; every row read back exactly once."""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import *  # noqa
import pyarrow as pa

SCH = pa.schema([("id", pa.int64()), ("p", pa.string())])
VALUES = ["a/b", "a=b", "a b", "%25x", "ü€", None, "", "#?:*", "__DEFAULT_PARTITION__", "..",
          "a\\b", "x\ty"]
notes, problems = [], []
t = new_table("sp", {"snapshot.num-retained.min": "100", "snapshot.num-retained.max": "1000",
                     "snapshot.time-retained": "1 d"}, schema=SCH, partition_keys=["p"])
root = t.store.root
expected = {}
n = 0
for rnd in range(2):            # two files per partition (compaction has work)
    for i, v in enumerate(VALUES):
        ids_ = [n, n + 1]
        n += 2
        try:
            write_rows(Table.open(root), {"id": ids_, "p": [v, v]}, schema=SCH)
            expected.setdefault(v, []).extend(ids_)
        except Exception as e:  # noqa
            notes.append(f"write p={v!r} refused: {type(e).__name__}: {str(e)[:120]}")
all_ids = sorted(x for v in expected.values() for x in v)
got = ids(root)
if got != all_ids:
    problems.append(f"after writes: read {got} != {all_ids}")
per_p = {}
tab = Table.open(root).read_arrow()
for i, p in zip(tab.column("id").to_pylist(), tab.column("p").to_pylist()):
    per_p.setdefault(p, []).append(i)
for v, xs in expected.items():
    want = sorted(xs)
    # NULL and the literal default name share Paimon's directory; their values must survive
    if sorted(per_p.get(v, [])) != want:
        notes.append(f"p={v!r} reads back ids {sorted(per_p.get(v, []))}, wrote {want}")
latest_before = Table.open(root).latest_snapshot().id
r = Table.open(root).compact()
if ids(root) != all_ids:
    problems.append(f"after compact: {ids(root)}")
c = Table.open(root).check()
if c.problems:
    problems.append(f"check after compact: {[str(x)[:150] for x in c.problems][:3]}")
rp = Table.open(root).repair(apply=True)
if rp.files or rp.unrepaired:
    problems.append(f"repair gave up {rp.files} unrepaired {rp.unrepaired}")
# orphan cleanup of an aged tree (nothing orphan but the replaced files, still used by 1..)
age_all(root)
Table.open(root).remove_orphan_files(older_than_duration="1 d")
for sid in range(1, Table.open(root).latest_snapshot().id + 1):
    want = sorted(x for x in all_ids if x < 2 * (sid if sid <= latest_before else 10 ** 6))
    got = ids(root, snapshot_id=sid)
    if isinstance(got, str):
        problems.append(f"snapshot {sid} after orphan cleanup: {got}")
# drop one special partition, then expire to 1 and clean orphans again
try:
    with Table.open(root).new_commit(commit_user="u") as cm:
        cm.drop_partitions([{"p": "a/b"}])
    dropped = set(expected.get("a/b", []))
except Exception as e:  # noqa
    notes.append(f"drop a/b: {type(e).__name__}: {str(e)[:120]}")
    dropped = set()
keep = sorted(x for x in all_ids if x not in dropped)
if ids(root) != keep:
    problems.append(f"after drop: {ids(root)} != {keep}")
Table.open(root).create_tag("T")
for w in range(3):
    write_rows(Table.open(root), {"id": [1000 + w], "p": [None]}, schema=SCH)
keep += [1000, 1001, 1002]
expirer(Table.open(root), 1).expire()
age_all(root)
Table.open(root).remove_orphan_files(older_than_duration="1 d")
got = ids(root)
if got != sorted(keep) or dupes(got if isinstance(got, list) else []):
    problems.append(f"final latest {got} != {sorted(keep)}")
if ids(root, tag="T") != sorted(x for x in keep if x < 1000):
    problems.append(f"tag T {ids(root, tag='T')}")
c = Table.open(root).check()
if c.problems:
    problems.append(f"final check: {[str(x)[:150] for x in c.problems][:3]}")
for x in notes:
    print("note:", x)
print(f"FINDING: {problems}" if problems else "OK")
