"""Idea 2 (exactly-once): the p5 fix (7d5cc63) refuses a file *another* commit user of this
process published once it is no longer live -- but only while the bounded record (50,000 files
per process) still remembers it. Past that, the "forgotten" path looks in the table's history
for a snapshot of *this* user only; another user's snapshot is not considered, the compacted
file is still on disk, and the messages are published a second time. Real capacity: the
middle commit adds 50,000 metadata-only files (as tests/operations/test_commit_findings.py::
test_a_repeat_after_the_default_capacity_of_files_is_published_once), in another partition that
is then dropped so that the table reads."""
import dataclasses
import time

from common import Table, make_rows, new_path, prepared, ids_read, snapshot_ids, write
from paimon_commit.errors import CommitConflictError
from paimon_commit.operations import commit_record

path = new_path()
t = Table.create(path, make_rows([]).schema, partition_keys=["dt", "hr"],
                 options={"compaction.post-commit.enabled": "true",
                          "compaction.min.file-num": "2"})
write(t, make_rows([10]))
cell = prepared(t, [11])
with t.new_commit() as c:           # the cell's first run (a random commit user)
    c.commit(cell)
print("after the cell and its post-commit compaction:", snapshot_ids(path))
# The process goes on committing (another job, another partition): 50,000 files.
big = prepared(t, [99], hr=2)
m, f = big[0], big[0].new_files[0]
t0 = time.time()
fakes = tuple(dataclasses.replace(f, file_name=f"data-fake-{i}.parquet")
              for i in range(commit_record.CAPACITY))
with t.new_commit(commit_user="bulk") as c:
    c.commit([dataclasses.replace(m, new_files=fakes)])
with t.new_commit(commit_user="bulk") as c:
    c.drop_partitions([{"dt": make_rows([1]).column("dt")[0].as_py(), "hr": 2}])
print(f"50,000 files committed and their partition dropped ({time.time() - t0:.0f} s):",
      snapshot_ids(path))
refused = None
with t.new_commit() as c:           # the cell run again: another random commit user
    try:
        c.commit(cell)
    except CommitConflictError as e:
        refused = e
ours, theirs = ids_read(path)
print("snapshots:", snapshot_ids(path), "ours:", ours, "pypaimon:", theirs)
if refused is None and (ours.count(11) > 1 or theirs.count(11) > 1):
    print(f"FINDING: once the record forgot the cell's file (50,000 files later), the cell run "
          f"again as another commit user published it a second time: row 11 read "
          f"{ours.count(11)}x (ours), {theirs.count(11)}x (pypaimon)")
else:
    print(f"OK: refused ({str(refused)[:160]}...)" if refused else "OK: row read once")
