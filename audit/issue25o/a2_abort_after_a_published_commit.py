"""A2. A job whose commit published its snapshot and then raised (the process reports an
unknown outcome; Spark then calls abort on the same writer): the abort still writes the run's
abort record first. Does that record, or the abort, touch the committed files? And a late
task attempt of the same run (a speculative duplicate or a zombie attempt still running when
the job ended) then finds the record: does it delete anything but its own, never-committed
files? Then another run (a fresh writer, and a second job with the same explicit commit-user)
writes and commits as usual."""
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import *  # noqa
from paimon_commit.spark import datasource
import paimon_commit.table_commit as tc

t = new_table("t", KEEP)
root = t.store.root
write(t, 0)
w = batch_writer(root, **{"commit-user": "job"})
msgs = [w.write(iter(batches([10, 11]))), w.write(iter(batches([12])))]   # two tasks
committed = run_files(root, w.marker)

orig = tc.TableCommit.commit


def commit_then_raise(self, *a, **k):
    orig(self, *a, **k)
    self.last_result = None                      # the caller never learnt it was published
    raise OSError("connection reset after the PUT of the snapshot (outcome unknown)")


tc.TableCommit.commit = commit_then_raise
try:
    w.commit(msgs)
    print("commit returned")
except OSError as e:
    print("commit raised:", e)
finally:
    tc.TableCommit.commit = orig
w.abort(msgs)                                    # Spark aborts the job it thinks failed
print("record:", spark_records(root))
after_abort = run_files(root, w.marker)
try:
    w.write(iter(batches([99])))                 # a late duplicate attempt of task 1
    late = "returned"
except datasource.RunAbortedError as e:
    late = f"RunAbortedError ({e})"
after_late = run_files(root, w.marker)
w3 = batch_writer(root, **{"commit-user": "job"})
w3.commit([w3.write(iter(batches([20])))])
final = ids(root)
ok = (set(committed) == set(after_abort) == set(after_late) and final == [0, 1, 2, 10, 11, 12, 20])
print("committed files:", len(committed), "after abort:", len(after_abort),
      "after the late attempt:", len(after_late), "| late attempt:", late[:60])
print("table ids:", final)
print("OK: the abort of a published write keeps every file; its record makes only a late "
      "attempt's own uncommitted file go; later runs commit" if ok else
      "FINDING: a committed file was deleted or a later run failed")
