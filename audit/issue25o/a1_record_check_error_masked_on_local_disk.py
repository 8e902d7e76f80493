"""A1. The task side of the abort handshake on a local (or NFS/FUSE-mounted) file system: the
task asks `store.io.exists(record)`, and LocalFileIO.exists is `os.path.exists`, which answers
False for *any* OSError of the stat (EACCES: an executor user that cannot search the driver's
`.maintenance/` created under umask 077; EIO/ESTALE on NFS; ELOOP ...). datasource.py and
docs/safety.md promise "a task that cannot tell whether the record exists deletes its files
and fails too" (`_unless_aborted`: only an exception from `exists` leads there). Here the
whole abort runs first (record written, both listings done), then a task of the run closes
its file and checks; the stat of the record fails with EACCES (simulated: we run as root, so a
chmod would not refuse). The task returns its messages as if no abort had begun; Spark drops
them (the job is aborted) and the file stays: what the handshake was added to prevent."""
import errno, os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import *  # noqa
from paimon_commit.spark import datasource

t = new_table("t", KEEP)
root = t.store.root
write(t, 0)
w = batch_writer(root)
w.abort([])                                        # the driver's whole abort: record, 2 listings
record = datasource._abort_record(Table.open(root).store.io, w.marker)
print("abort record written:", os.path.isfile(record), os.path.basename(record))

real_stat = os.stat


def stat(p, *a, **k):                              # the executor cannot stat the record
    if "spark-aborted-" in os.fspath(p):
        raise PermissionError(errno.EACCES, "Permission denied", p)
    return real_stat(p, *a, **k)


os.stat = stat
try:
    try:
        msg = w.write(iter(batches([10, 11, 12])))   # the task finishes its file now
        outcome = f"returned {sum(len(m.new_files) for m in msg.messages)} file(s)"
    except Exception as e:  # noqa
        outcome = f"raised {type(e).__name__}: {e}"
finally:
    os.stat = real_stat
left = run_files(root, w.marker)
print("task:", outcome)
print("files of the aborted run left:", left, "| table ids:", ids(root))
# Control: the same failure raised by io.exists (the existing test's injection) deletes them.
w2 = batch_writer(root)
w2.abort([])
from paimon_commit.io.local import LocalFileIO
real = LocalFileIO.exists
LocalFileIO.exists = lambda self, p: (_ for _ in ()).throw(OSError("EACCES")) \
    if "spark-aborted-" in p else real(self, p)
try:
    try:
        w2.write(iter(batches([20])))
        c = "returned its files"
    except OSError as e:
        c = f"raised {e}"
finally:
    LocalFileIO.exists = real
print("control (exists raises):", c, "| left:", run_files(root, w2.marker))
print(f"FINDING: with the record there but its stat failing (EACCES), LocalFileIO.exists "
      f"answers False; the task {outcome} and {len(left)} file(s) of the aborted run stay "
      f"on disk (orphan cleanup only)" if left else "OK: the task deleted its files")
