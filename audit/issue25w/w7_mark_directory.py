"""Idea w7: a directory named like an expiring mark (range 1..3) is never deleted, with a
warning. Commits with post-commit expiration (retain 1) past its range, then orphan cleanup,
check, create_tag and rollback. Nothing may raise into a published commit; snapshots read."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "issue25v"))
from common import new_table, make_rows, rows, snapshot_ids  # noqa: E402 (issue25v's)

t = new_table(options={"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "1"})
probs = []
for i in range(2):
    w = t.new_writer(); w.write_arrow(make_rows([i]))
    with t.new_commit() as c:
        c.commit(w.prepare_commit())
md = os.path.join(t.path, ".maintenance")
os.makedirs(md, exist_ok=True)
d = os.path.join(md, "expiring-1-3-" + "a" * 32)
os.makedirs(os.path.join(d, "inner"))
res = []
for i in range(2, 6):
    w = t.new_writer(); w.write_arrow(make_rows([i]))
    try:
        with t.new_commit() as c:
            c.commit(w.prepare_commit())
        res.append("ok")
    except BaseException as e:  # noqa: BLE001
        res.append(f"{type(e).__name__}: {str(e)[:80]}")
        probs.append(f"commit {i}: {res[-1]}")
print(f"commits: {res}; snapshots {snapshot_ids(t.path)}; reads {rows(t.path)}; mark dir still "
      f"there: {os.path.isdir(d)}")
for name, fn in (("orphan cleanup", lambda: t.remove_orphan_files(older_than_duration="61 min")),
                 ("check", lambda: t.check()), ("tag", lambda: t.create_tag("x")),
                 ("expire", lambda: t.expire_snapshots(retain_min=1, retain_max=1))):
    try:
        r = fn()
        print(f"{name}: {str(r)[:150]}")
    except BaseException as e:  # noqa: BLE001
        print(f"{name}: raised {type(e).__name__}: {str(e)[:150]}")
        probs.append(f"{name}: {type(e).__name__}")
print(f"after: snapshots {snapshot_ids(t.path)}; reads {rows(t.path)}; dir there "
      f"{os.path.isdir(d)}")
print(("FINDING: " + "; ".join(probs)) if probs else "OK")
