"""aa3: create_tag beside post-commit maintenance in the same process.
(a) A stream (thread A: 40 commits with increasing identifiers, `snapshot.expire.execution-
mode` = async: maintenance on the commit object's own thread, which takes the lease after
each commit; retain max 3) while thread B creates tags T0..T5 on the latest snapshot with the
default lease wait (60 s). Expected: every create_tag returns (none waits long: the waiter
line makes post-commit maintenance skip its turns), no commit raises, no maintenance error,
and at the end (after a last expiration) every tag reads the rows of its snapshot.
(b) create_tag paused while holding the lease (after its snapshot read); meanwhile a commit
with sync maintenance (identifier 1) and a one-shot batch commit (inline maintenance):
both must return their snapshot id (maintenance skipped: `lease_skipped`), never raise."""
import os
import sys
import threading
import time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import *  # noqa
import pyarrow as pa
from paimon_commit.operations.tag_ops import TagOperations

problems = []
# (a)
t = new_table("a", {"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "3",
                    "snapshot.time-retained": "1 ms",
                    "snapshot.expire.execution-mode": "async"})
root = t.store.root
stop, errs, sids = threading.Event(), [], []


def stream():
    tab = Table.open(root)
    with tab.new_commit(commit_user="stream") as c:
        for i in range(40):
            w = tab.new_writer()
            w.write_arrow(pa.table({"id": [i], "v": [f"s{i}"]}, schema=SCHEMA))
            try:
                sids.append(c.commit(w.prepare_commit(), commit_identifier=i + 1))
            except Exception as e:  # noqa
                errs.append(repr(e))
                break
        c.wait_for_maintenance(60)
        if c.maintenance_error is not None:
            errs.append(f"maintenance error: {c.maintenance_error!r}")
a = threading.Thread(target=stream)
a.start()
tags, waits = {}, []
while len(sids) < 2:
    time.sleep(0.01)
for k in range(6):
    t0 = time.monotonic()
    try:
        tg = Table.open(root).create_tag(f"T{k}")
        tags[tg.name] = sorted(Table.open(root).read_arrow(snapshot_id=tg.id)
                               .column("id").to_pylist())
    except Exception as e:  # noqa
        problems.append(f"(a) create_tag T{k}: {type(e).__name__}: {e}"[:200])
    waits.append(round(time.monotonic() - t0, 2))
    time.sleep(0.05)
a.join(120)
print("(a) commits:", len(sids), "errors:", errs, "| create_tag seconds:", waits)
problems += [f"(a) stream: {e}" for e in errs]
if max(waits) > 10:
    problems.append(f"(a) a create_tag waited {max(waits)} s")
expirer(Table.open(root), 1).expire()
for n, want in tags.items():
    ok, what = tag_reads(root, n)
    got = sorted(Table.open(root).read_arrow(tag=n).column("id").to_pylist()) if ok else what
    if got != want:
        problems.append(f"(a) tag {n}: {got} != {want}")
print("(a) tags read as created:", all(tag_reads(root, n)[0] for n in tags), sorted(tags))
print("(a) lease/waiter entries left:", [x for x in lease_records(root) if x.startswith("wait-")])

# (b)
t = new_table("b", {"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "2",
                    "snapshot.time-retained": "1 ms"})
root = t.store.root
write(t, 0)
write(Table.open(root), 10)
write(Table.open(root), 20)
pause = Pause()
orig = TagOperations._check_readable
me = {}


def readable(self, snap, what):
    if threading.current_thread() is me.get("b"):
        pause.hit()
    return orig(self, snap, what)
TagOperations._check_readable = readable
out = {}


def tagger():
    try:
        out["tag"] = Table.open(root).create_tag("held", 3).id
    except Exception as e:  # noqa
        out["tag"] = repr(e)
b = threading.Thread(target=tagger)
me["b"] = b
b.start()
pause.reached.wait(30)
results = []
for ident in (1, None):
    tab = Table.open(root)
    w = tab.new_writer()
    w.write_arrow(pa.table({"id": [99 if ident else 98], "v": ["x"]}, schema=SCHEMA))
    try:
        with tab.new_commit(commit_user="u2") as c:
            sid = c.commit(w.prepare_commit(), commit_identifier=ident)
            mr = c.last_maintenance
        results.append((ident, sid, getattr(mr, "lease_skipped", None)))
    except Exception as e:  # noqa
        problems.append(f"(b) commit ident={ident} raised {e!r}"[:200])
pause.go.set()
b.join(30)
TagOperations._check_readable = orig
print("(b) commits beside the held create_tag:", results, "| create_tag:", out)
ok, what = tag_reads(root, "held")
print("(b) tag held reads:", ok, what)
if not ok:
    problems.append(f"(b) tag does not read: {what}")
ids = sorted(Table.open(root).read_arrow().column("id").to_pylist())
if not {98, 99} <= set(ids) or len(ids) != len(set(ids)):
    problems.append(f"(b) latest reads {ids}")
print("(b) latest rows:", ids)
print("OK" if not problems else f"FINDING: {problems[0]}")
