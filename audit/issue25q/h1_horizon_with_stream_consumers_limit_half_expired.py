"""Idea 1 (expiration horizon, 6a51db6): a run stops at the end its first chunk planned for the
whole run. Small chunks (FIRST_CHUNK = 3) and a writer committing 3 snapshots (one row each,
compactions and partition drops in between) after every chunk, combined with: a) a limit
(snapshot.expire.limit) below the horizon; b) a consumer; c) a half-expired head (the lists of
snapshots 1..4 gone, as a run killed after its list step leaves) with retention keeping all,
and with retention ending inside the half-expired range; d) decoupled changelogs
(changelog.num-retained.min above the snapshots', producer none); e) post-commit expiration (chunked) while
writing. Each time: every retained snapshot and changelog reads (pypaimon, and no file they
name is missing), EARLIEST names the first snapshot, no head is half expired after a complete
run, and complete/stopped_by agree with what a rerun still expires."""
import os
import time

from common import Table, make_rows, new_path, snapshot_ids, write
from invariants import assert_intact
from test_changelog import assert_changelogs_readable
import paimon_commit.operations.expire as X
from paimon_commit.operations.expire import ExpireConfig, ExpireSnapshots
from paimon_commit.tags import ConsumerManager

X.FIRST_CHUNK = 3
problems = []
FAR = lambda: time.time() + 10 * 365 * 86400  # noqa: E731


def table(options=None):
    path = new_path()
    t = Table.create(path, make_rows([]).schema, partition_keys=["dt", "hr"],
                     options=dict({"snapshot.num-retained.min": "1000"}, **(options or {})))
    return path, t


def history(t, n, start=0):
    for i in range(start + 1, start + n + 1):
        if i % 7 == 0:
            t.compact(options={"compaction.min.file-num": "2"})
        elif i % 11 == 0:
            with t.new_commit() as c:
                c.drop_partitions([{"dt": make_rows([1]).column("dt")[0].as_py(), "hr": 0}])
        else:
            write(t, make_rows([i], hr=i % 2))


def with_writer(path, per_chunk=3):
    writer = Table.open(path, options={"write-only": "true"})
    orig, count = ExpireSnapshots._execute, [0]

    def execute(self, plan):
        done = orig(self, plan)
        for _ in range(per_chunk):
            count[0] += 1
            write(writer, make_rows([1000 + count[0]], hr=1))
        return done
    ExpireSnapshots._execute = execute
    return lambda: setattr(ExpireSnapshots, "_execute", orig)


def run(t, **cfg):
    c = ExpireConfig.from_options(t.store.options, **dict({"time_retained_ms": 0}, **cfg))
    return ExpireSnapshots(t.store, c, clock=FAR).expire()


def check(label, path, r, cfg, expect_more):
    t = Table.open(path)
    ids = snapshot_ids(path)
    try:
        assert_intact(path)
        assert_changelogs_readable(t)
    except AssertionError as e:
        problems.append(f"{label}: {e}")
    hint = open(os.path.join(path, "snapshot", "EARLIEST")).read().strip() \
        if os.path.exists(os.path.join(path, "snapshot", "EARLIEST")) else None
    if hint is not None and int(hint) != ids[0]:
        problems.append(f"{label}: EARLIEST {hint}, first snapshot {ids[0]}")
    head = t.store.snapshots.snapshot(ids[0])
    for lst in (head.base_manifest_list, head.delta_manifest_list):
        if lst and not os.path.exists(os.path.join(path, "manifest", lst)):
            problems.append(f"{label}: head snapshot {ids[0]} half expired after the run")
    more = run(t, **cfg) if expect_more is not None else None
    print(f"{label}: expired {r.expired_ids[:1]}..{r.expired_ids[-1:]} ({len(r.expired_ids)}), "
          f"complete={r.complete} stopped_by={r.stopped_by}; left {ids[0]}..{ids[-1]}"
          + (f"; a rerun expires {len(more.expired_ids)}" if more else ""))
    if r.complete and r.stopped_by is not None or (not r.complete and r.stopped_by is None):
        problems.append(f"{label}: complete={r.complete} with stopped_by={r.stopped_by}")
    return more


# a) limit below the horizon: stops by max-deletes, and says so
path, t = table()
history(t, 20)
undo = with_writer(path)
r = run(t, retain_min=2, max_deletes=7)
undo()
check("a limit 7", path, r, {"retain_min": 2, "max_deletes": 7}, True)
if r.expired_ids != list(range(1, 8)) or r.stopped_by != "max-deletes":
    problems.append(f"a: expired {r.expired_ids}, stopped_by {r.stopped_by}")

# b) a consumer at 9
path, t = table()
history(t, 20)
ConsumerManager(t.store.io, t.store.root).write("reader", 9)
undo = with_writer(path)
r = run(t, retain_min=2, max_deletes=1000)
undo()
check("b consumer 9", path, r, {"retain_min": 2, "max_deletes": 1000}, None)
if r.expired_ids != list(range(1, 9)) or not r.complete:
    problems.append(f"b: expired {r.expired_ids}, complete {r.complete}")

# c) half-expired head: lists of 1..4 gone
for label, keep in [("c1 half-expired head, retention keeps all", 1000),
                    ("c2 half-expired head, retention ends at 3", None)]:
    path, t = table()
    history(t, 20)
    for sid in range(1, 5):
        s = t.store.snapshots.snapshot(sid)
        for lst in (s.base_manifest_list, s.delta_manifest_list):
            p = os.path.join(path, "manifest", lst)
            if os.path.exists(p):
                os.unlink(p)
    cfg = {"retain_min": 1000, "max_deletes": 1000} if keep else \
        {"retain_min": 18, "retain_max": 18, "max_deletes": 1000}
    undo = with_writer(path)
    r = run(t, **cfg)
    undo()
    check(label, path, r, cfg, None)
    if snapshot_ids(path)[0] < 5:
        problems.append(f"{label}: half-expired snapshots left: {snapshot_ids(path)[:5]}")

# d) decoupled changelogs (producer none: the deltas are the changelog; their APPEND files
# wait for changelog expiration)
path, t = table({"changelog.num-retained.min": "12", "changelog.num-retained.max": "12"})
history(t, 20)
undo = with_writer(path)
r = run(t, retain_min=2, max_deletes=1000)
undo()
check("d decoupled changelogs", path, r, {"retain_min": 2, "max_deletes": 1000}, None)

# e) post-commit expiration while a stream writes (retain 3, limit 2 per run)
path, t = table({"snapshot.num-retained.min": "3", "snapshot.num-retained.max": "3",
                 "snapshot.time-retained": "1 ms", "snapshot.expire.limit": "2"})
with t.new_commit(commit_user="stream") as c:
    w = t.new_writer()
    for i in range(1, 31):
        w.write_arrow(make_rows([i], hr=i % 2))
        c.commit(w.prepare_commit(), i)
try:
    assert_intact(path)
except AssertionError as e:
    problems.append(f"e: {e}")
print("e post-commit: snapshots left", snapshot_ids(path))

print("FINDING: " + "; ".join(problems) if problems else
      "OK: every retained snapshot/changelog reads, EARLIEST right, no half-expired head, "
      "complete/stopped_by truthful")
