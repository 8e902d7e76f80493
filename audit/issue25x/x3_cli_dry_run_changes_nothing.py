"""x3: every destructive CLI command with --dry-run (expire-snapshots, expire-partitions,
remove-orphan-files, expire-tags, compact, maintain --orphans --compact) on a table where each
of them has work to do (expired snapshots, an expired partition, an aged orphan, a tag past its
retention, small files, an expired consumer): nothing on disk may change (names, sizes,
mtimes), and every snapshot and tag still reads as before."""
import contextlib
import datetime
import io
import os
import time

from common import new_path, make_rows, prepared, Table, ours
from paimon_commit.cli import main

path = new_path("t dry ü")          # a path with a space and a non-ASCII character
t = Table.create(path, make_rows([]).schema, partition_keys=["dt", "hr"], options={
    "compaction.min.file-num": "2", "snapshot.num-retained.min": "1",
    "snapshot.num-retained.max": "1", "write-only": "true",
    "partition.expiration-time": "1 d", "partition.timestamp-formatter": "yyyy-MM-dd",
    "tag.default-time-retained": "1 ms", "consumer.expiration-time": "1 ms"})
old_dt = datetime.date(2020, 1, 1)
new_dt = datetime.date.today()
with t.new_commit(commit_user="w") as c:
    c.commit(prepared(t, [1], dt=old_dt))
for i in (2, 3, 4):
    with t.new_commit(commit_user="w") as c:
        c.commit(prepared(t, [i], dt=new_dt))
t.create_tag("T", 2)
os.makedirs(os.path.join(path, "consumer"), exist_ok=True)
with open(os.path.join(path, "consumer", "consumer-c1"), "w") as f:
    f.write('{"nextSnapshot":2}')
orphan = os.path.join(path, "dt=18262", "hr=1", "bucket-0", "data-orphan.parquet")
with open(orphan, "wb") as f:
    f.write(b"x")
past = time.time() - 3 * 86400
for root, dirs, files in os.walk(path):
    for n in files:
        os.utime(os.path.join(root, n), (past, past))
time.sleep(0.01)


def tree():
    out = {}
    for root, dirs, files in os.walk(path):
        for n in files + [d for d in dirs]:
            p = os.path.join(root, n)
            st = os.lstat(p)
            out[os.path.relpath(p, path)] = (st.st_size, st.st_mtime_ns) if n in files else "d"
    return out


def reads():
    tb = Table.open(path)
    return ({s.id: ours(path, snapshot_id=s.id) for s in tb.snapshots()},
            {g.name: ours(path, tag=g.name) for g in tb.tags()})


wh = os.path.dirname(os.path.dirname(path))
cmds = [["expire-snapshots", path, "--dry-run"],
        ["expire-partitions", path, "--expiration-time", "1 d", "--timestamp-formatter",
         "yyyy-MM-dd", "--dry-run"],
        ["remove-orphan-files", path, "--older-than-duration", "1 d", "--dry-run"],
        ["expire-tags", path, "--dry-run"],
        ["compact", path, "--dry-run"],
        ["maintain", wh, "--orphans", "--compact", "--older-than-duration", "1 d",
         "--dry-run"]]
before, rb = tree(), reads()
bad = []
for cmd in cmds:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(io.StringIO()):
        try:
            rc = main(cmd + ["--json"])
        except SystemExit as e:
            rc = e.code
    after = tree()
    diff = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
    print(f"{cmd[0]}: rc {rc}, changed {diff[:6]}{' ...' if len(diff) > 6 else ''}; "
          f"out {buf.getvalue()[:150]!r}")
    if diff:
        bad.append((cmd[0], diff))
        before = after
ra = reads()
print("reads before", rb, "after", ra)
if ra != rb:
    bad.append(("reads", ra))
print(f"FINDING: a --dry-run changed the table: {bad}" if bad else "OK")
