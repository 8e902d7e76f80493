"""Idea: `<table>/.maintenance` is a symlink out of the table (to another table's lease
directory, or anywhere). Expected: a clear error naming the path, nothing deleted, nothing
written outside the table. Also: two tables whose lease dirs point at one directory."""
import os
import tempfile

from common import new_table, write, files
from paimon_commit.lease import lease_settings

t = new_table(options={"snapshot.num-retained.min": "1"})
for i in range(4):
    write(t, i * 3)
md = os.path.join(t.path, ".maintenance")
elsewhere = tempfile.mkdtemp(prefix="audit25-outside-")
for n in os.listdir(md):
    os.rename(os.path.join(md, n), os.path.join(elsewhere, n))
os.rmdir(md)
os.symlink(elsewhere, md)
before_out = sorted(os.listdir(elsewhere))
before = files(t.path)
try:
    with lease_settings(wait_s=1):
        r = t.expire_snapshots(retain_max=1, retain_min=1)
    outcome = f"ran: expired {r.expired_snapshots} snapshot(s)"
except Exception as e:  # noqa
    outcome = f"{type(e).__name__}: {e}"
after_out = sorted(os.listdir(elsewhere))
print("outcome:", outcome[:400])
print("records written outside the table:", sorted(set(after_out) - set(before_out)))
print("table files deleted:", len(before - files(t.path)))
if "ran" in outcome and set(after_out) - set(before_out):
    print("FINDING (lesser): the lease follows a symlinked .maintenance out of the table and "
          "writes its records there without a word")
else:
    print("NO FINDING")
