"""rollback_to's new _check_data_present: (a) a healthy target whose file is named by a
Java-style external path ("file:/abs/..."; the form tests/operations/test_orphan_recheck.py
uses) is refused as "data file does not exist"; (b) an OSError from the check after a
tag restore escapes the `except ValueError` undo and leaves the restored snapshot behind."""
import dataclasses, os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import *  # noqa
from paimon_commit.format.commit_message import CommitMessage

found = []
KEEP = {"snapshot.num-retained.min": "100", "snapshot.time-retained": "1 d"}
# (a) external path with a scheme
t = new_table("a", KEEP)
write(t, 0)
w = t.new_writer(); w.write_arrow(pa.table({"id": [9], "v": ["x"]}, schema=SCHEMA))
(m,) = w.prepare_commit()
root = t.store.root
bucket = [d for d, _, fs in os.walk(root) if m.new_files[0].file_name in fs][0]
f = os.path.join(bucket, m.new_files[0].file_name)
ext = dataclasses.replace(m.new_files[0], external_path="file:" + f)
with Table.open(root).new_commit(commit_user="java-like") as c:
    c.commit([CommitMessage(m.partition, m.partition_bytes, m.bucket, m.total_buckets, (ext,))])
write(Table.open(root), 100)   # snapshot 3
print("check problems:", check_problems(root))
try:
    Table.open(root).rollback_to(snapshot_id=2)
    print("(a) rollback to snapshot 2 (external file:/ path, file present) ok")
except ValueError as e:
    found.append("a"); print("(a) FINDING: healthy target refused:", e)

# (b) OSError after a tag restore
t = new_table("b", KEEP)
write(t, 0); t = Table.open(t.store.root); t.create_tag("x", 1)
write(t, 10); write(t, 20)
root = t.store.root
os.unlink(os.path.join(root, "snapshot", "snapshot-1"))
with open(os.path.join(root, "snapshot", "EARLIEST"), "w") as fh: fh.write("2")
before = files(root)
t = Table.open(root)
io = t.store.io
real_ls = io.list_status
def ls(d):
    if "bucket-" in d: raise OSError("503 slow down")
    return real_ls(d)
io.list_status = ls
io.exists = lambda p: (_ for _ in ()).throw(OSError("503 slow down"))
try:
    t.rollback_to(tag="x")
except ValueError as e:
    print("(b) refused with ValueError:", e)
except OSError as e:
    print("(b) OSError:", e)
after = files(root)
if after != before:
    found.append("b"); print("(b) FINDING: left behind after the failure:", sorted(after - before),
                             "removed:", sorted(before - after))
print("FINDING" if found else "NO FINDING", found)
