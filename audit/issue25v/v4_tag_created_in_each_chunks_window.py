"""v4: tag create (no lease) x chunked snapshot expiration (FIRST_CHUNK 3, horizon). In every
chunk, right after its content re-check (`_changes`) passed and before its first delete, another
"process" (no lease: create_tag never takes it) creates a tag on each snapshot of the chunk's
range (the first, the middle, the last expiring) and on its end snapshot; and, for a second
table, between two chunks (after a chunk's deletes, before the next plan) a tag on a snapshot
the next chunk would expire. Every tag that exists afterwards must read the rows its snapshot
had; every retained snapshot must read."""
import os
import time

from common import make_rows, new_table, snapshot_ids, rows
import paimon_commit.operations.expire as X
from paimon_commit.operations.expire import ExpireConfig, ExpireSnapshots

X.FIRST_CHUNK = 3
FAR = lambda: time.time() + 10 * 365 * 86400  # noqa: E731
problems = []


def build(n=14):
    t = new_table(options={"snapshot.num-retained.min": "1000"})
    expect = {}
    for i in range(1, n + 1):
        w = t.new_writer(); w.write_arrow(make_rows([i], hr=i % 2))
        with t.new_commit() as c:
            c.commit(w.prepare_commit())
        if i % 4 == 0:   # overwrite: files really become expirable
            with t.new_commit() as c:
                c.drop_partitions([{"hr": 0}])
    for s in snapshot_ids(t.path):
        expect[s] = rows(t.path, s)
    return t, expect


def run(t):
    cfg = ExpireConfig.from_options(t.store.options, retain_min=2, retain_max=2,
                                    time_retained_ms=0)
    return ExpireSnapshots(t.store, cfg, clock=FAR).expire()


def verify(label, t, expect, made):
    tags = {x.name: x for x in t.store.tags.tags()} if hasattr(t.store, "tags") else None
    from paimon_commit import Table
    tt = Table.open(t.path)
    names = [x.name for x in tt.list_tags()] if hasattr(tt, "list_tags") else \
        [n for n in os.listdir(os.path.join(t.path, "tag")) if n.startswith("tag-")]
    names = [n[4:] if n.startswith("tag-") else n for n in names]
    bad = []
    for name in names:
        sid = made.get(name)
        try:
            got = rows(t.path, tag=name)
        except BaseException as e:  # noqa
            bad.append(f"tag {name} (snapshot {sid}) unreadable: {type(e).__name__}")
            continue
        if sid is not None and got != expect[sid]:
            bad.append(f"tag {name} reads {got}, snapshot {sid} read {expect[sid]}")
    for s in snapshot_ids(t.path):
        try:
            if rows(t.path, s) != expect[s]:
                bad.append(f"snapshot {s} rows changed")
        except BaseException as e:  # noqa
            bad.append(f"snapshot {s} unreadable: {type(e).__name__}")
    return names, bad


# a) in the window between the re-check and the first delete
t, expect = build()
made, refused = {}, []
orig = ExpireSnapshots._changes


def changes(self, plan):
    out = orig(self, plan)
    if plan.expiring and not plan.changelogs:
        picks = sorted({min(plan.expiring), plan.expiring[len(plan.expiring) // 2],
                        max(plan.expiring), plan.end})
        for sid in picks:
            name = f"w{sid}"
            try:
                t.create_tag(name, sid)
                made[name] = sid
            except Exception as e:  # noqa
                refused.append((sid, str(e)[:60]))
    return out


ExpireSnapshots._changes = changes
r = run(t)
ExpireSnapshots._changes = orig
names, bad = verify("a", t, expect, made)
print(f"a: expire complete={r.complete} stopped_by={r.stopped_by}; tags made {made}; refused "
      f"{[s for s, _ in refused]}; snapshots now {snapshot_ids(t.path)}; problems {bad}")
problems += [f"a: {b}" for b in bad]

# b) between two chunks
t, expect = build()
made2 = {}
orig_exec = ExpireSnapshots._execute


def execute(self, plan):
    done = orig_exec(self, plan)
    if plan.end is not None and not plan.changelogs:
        for sid in (plan.end, plan.end + 1):
            try:
                t.create_tag(f"b{sid}", sid)
                made2[f"b{sid}"] = sid
            except Exception:  # noqa
                pass
    return done


ExpireSnapshots._execute = execute
r = run(t)
ExpireSnapshots._execute = orig_exec
names, bad = verify("b", t, expect, made2)
print(f"b: expire complete={r.complete} stopped_by={r.stopped_by}; tags made {made2}; "
      f"snapshots now {snapshot_ids(t.path)}; problems {bad}")
problems += [f"b: {b}" for b in bad]
print("FINDING: " + "; ".join(problems) if problems else
      "OK: every tag created in a chunk's window was refused or reads its snapshot's rows")
