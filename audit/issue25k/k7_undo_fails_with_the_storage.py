"""The undo of a restore is itself unguarded. When the storage starts failing while the data
check runs (throttling: the bucket listing and the HEADs answer 503), the check refuses
("cannot tell whether its data file ... exists"), then _undo_restore lists snapshot/ to decide
whether it may delete the file it restored: that listing fails with the same 503 and its
OSError escapes from inside the undo. The refusal is lost (the caller gets a bare 503 from a
listing of snapshot/, the ValueError only as __context__), the restored snapshot file stays
and EARLIEST stays moved back to it, although "a restore from a tag is taken back on any
failure". (The undo makes no retry and does not restore EARLIEST before the listing.)"""
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import *  # noqa

t = new_table("t", KEEP)
write(t, 0)
t = Table.open(t.store.root); t.create_tag("x", 1)
write(t, 10); write(t, 20)
root = t.store.root
print("expired:", expirer(Table.open(root), 2).expire().expired_ids)
before = table_files(root)
earliest_before = open(os.path.join(root, "snapshot", "EARLIEST")).read()

t = Table.open(root)
io = t.store.io
throttled = []
real_ls, real_names, real_exists = io.list_status, io.list_names, io.exists
def ls(d):
    if "bucket-" in d:
        throttled.append(d)          # the storage starts answering 503 here
    if throttled:
        raise OSError("503 SlowDown")
    return real_ls(d)
def names(d):
    if throttled:
        raise OSError("503 SlowDown")
    return real_names(d)
def exists(p):
    if throttled:
        raise OSError("503 SlowDown")
    return real_exists(p)
io.list_status, io.list_names, io.exists = ls, names, exists
try:
    t.rollback_to(tag="x")
    print("rollback finished")
except Exception as e:
    print(f"rollback_to raised {type(e).__name__}: {e}"
          + (f"  (context: {type(e.__context__).__name__})" if e.__context__ else ""))
io.list_status, io.list_names, io.exists = real_ls, real_names, real_exists
after = table_files(root)
earliest_after = open(os.path.join(root, "snapshot", "EARLIEST")).read()
extra = sorted(after - before)
if extra or earliest_after != earliest_before:
    print(f"FINDING: the refused restore was not taken back when the undo's own listing "
          f"failed: left {extra}, EARLIEST {earliest_before} -> {earliest_after}")
else:
    print("OK: the restore was taken back")
