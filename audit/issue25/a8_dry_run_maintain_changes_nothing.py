"""Idea: dry-run flags that still delete (or write lease records): `maintain --dry-run
--orphans` on a table where every step has work (snapshots, tags with retention, a stale
consumer, orphan files) must leave every file as it was."""
import os
import subprocess
import sys
import time

from common import new_table, write, files
from paimon_commit.tags import ConsumerManager

t = new_table(options={"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "100",
                       "snapshot.time-retained": "1 h",
                       "consumer.expiration-time": "1 ms"})
for i in range(5):
    write(t, i * 3)
t.create_tag("old", None, time_retained="1 ms")
ConsumerManager(t.store.io, t.store.root).write("c1", 1)
with open(os.path.join(t.path, "bucket-0", "data-orphan-0.parquet"), "wb") as f:
    f.write(b"x" * 10)
old = time.time() - 3 * 86400
for d, _, fs in os.walk(t.path):
    for f in fs:
        os.utime(os.path.join(d, f), (old, old))
time.sleep(0.05)
wh = os.path.dirname(os.path.dirname(t.path))
before = {p: os.path.getsize(os.path.join(t.path, p)) for p in files(t.path)}
p = subprocess.run([sys.executable, "-m", "paimon_commit", "maintain", wh, "--dry-run",
                    "--orphans", "--older-than-duration", "1 s", "--json",
                    "--parallelism", "1"],
                   capture_output=True, text=True, timeout=300,
                   env=dict(os.environ, PYTHONPATH=os.getcwd()))
print("rc", p.returncode, p.stdout[-800:], p.stderr[-500:])
after = {p: os.path.getsize(os.path.join(t.path, p)) for p in files(t.path)}
gone, new = sorted(set(before) - set(after)), sorted(set(after) - set(before))
print("gone:", gone, "new:", new)
if gone or new:
    print("FINDING: a dry run changed the table's files")
else:
    print("NO FINDING")
