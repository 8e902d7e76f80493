"""Idea (brief 1, performance): since 9857dd4 `_filter_committed` returns an 'undecided'
reason for every user with no snapshot, also when the whole history is retained, so the
first filter_and_commit of every new commit user runs `_refuse_named`, i.e. `used_names`:
OrphanFilesCleaner.used_files() over every snapshot, manifest list and manifest of the table
(all branches, tags, changelogs). Measured here on a local table with N snapshots (default
retention: 1 h / INT_MAX keeps them all), write-only (no maintenance):
 plain commit by a new user  vs  filter_and_commit by a new user  vs  by a user with a snapshot.
Requests counted with io.metered.metering(); wall time on this (busy, 2-core) box."""
import sys
import time

from common import new_path, make_rows, Table
from paimon_commit.io.metered import metering

N = int(sys.argv[1]) if len(sys.argv) > 1 else 500
path = new_path()
t = Table.create(path, make_rows([]).schema, partition_keys=["dt", "hr"],
                 options={"write-only": "true"})
t0 = time.monotonic()
with t.new_commit(commit_user="history") as c:
    for i in range(N):
        w = t.new_writer()
        w.write_arrow(make_rows([i]))
        c.commit(w.prepare_commit())
print(f"built {N} snapshots in {time.monotonic() - t0:.1f} s")


def msgs(i):
    w = t.new_writer()
    w.write_arrow(make_rows([i]))
    return w.prepare_commit()


def measure(label, fn):
    with metering() as m:
        t0 = time.monotonic()
        fn()
        dt = time.monotonic() - t0
    b = m.bill()
    total = sum(b[k] for k in ("GET", "HEAD", "LIST", "PUT", "DELETE") if k in b.keys()) \
        if hasattr(b, "keys") else b
    print(f"{label}: {dt * 1000:.0f} ms, requests {dict(b) if hasattr(b, 'keys') else b}")
    return dt, b


def run(label, user, how):
    m = msgs(10_000 + len(label))
    with t.new_commit(commit_user=user) as c:
        if how == "commit":
            return measure(label, lambda: c.commit(m))
        return measure(label, lambda: c.filter_and_commit({1: m}))


a = run("plain commit, new user        ", "new-plain", "commit")
b = run("filter_and_commit, new user    ", "new-fac", "filter_and_commit")
# 'history' has snapshots (its latest is old: identifier BATCH); use a user with id 0 first
with t.new_commit(commit_user="stream") as c:
    c.filter_and_commit({1: msgs(20_000)})
cc = run("filter_and_commit, known user  ", "stream", "filter_and_commit")   # id 1 <= last: skipped
with t.new_commit(commit_user="stream2") as c:
    c.filter_and_commit({1: msgs(20_001)})
m2 = msgs(20_002)
with t.new_commit(commit_user="stream2") as c:
    d = measure("filter_and_commit, known user, new id", lambda: c.filter_and_commit({2: m2}))
ratio = b[0] / max(d[0], 1e-9)
print(f"new-user filter_and_commit / known-user filter_and_commit: {ratio:.1f}x")
print(("FINDING" if ratio > 5 else "OK") + f": first filter_and_commit of a new user on {N} "
      f"snapshots costs {b[0]*1000:.0f} ms vs {d[0]*1000:.0f} ms for a known user")
