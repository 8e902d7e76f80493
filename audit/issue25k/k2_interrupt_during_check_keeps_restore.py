"""A restore from a tag is taken back "on any failure" (3b72acd) only for Exception: the
`except Exception` in _rollback_to lets KeyboardInterrupt (Ctrl-C in a Python/notebook
caller: the default SIGINT handler, no request_stop) through. Interrupted while the data check
lists the bucket directories (one listing per bucket: the longest part on a big table), the
rollback raises KeyboardInterrupt having deleted nothing, yet it leaves the snapshot file it
restored from the tag and EARLIEST moved back to it: the table is not as it was."""
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import *  # noqa

t = new_table("t", KEEP)
write(t, 0)
t = Table.open(t.store.root); t.create_tag("x", 1)
write(t, 10); write(t, 20)
root = t.store.root
r = expirer(Table.open(root), 2).expire()           # snapshot 1 expires, the tag keeps it
print("expired:", r.expired_ids)
before = table_files(root)
earliest_before = open(os.path.join(root, "snapshot", "EARLIEST")).read()

t = Table.open(root)
io = t.store.io
real_ls = io.list_status
def ls(d):
    if "bucket-" in d:
        raise KeyboardInterrupt()    # Ctrl-C while the data check lists a bucket directory
    return real_ls(d)
io.list_status = ls
try:
    t.rollback_to(tag="x")
    print("rollback finished")
except KeyboardInterrupt:
    print("KeyboardInterrupt escaped rollback_to")
after = table_files(root)
earliest_after = open(os.path.join(root, "snapshot", "EARLIEST")).read()
extra, gone = sorted(after - before), sorted(before - after)
print("EARLIEST before/after:", earliest_before, earliest_after)
if extra or gone or earliest_after != earliest_before:
    print(f"FINDING: an interrupt during the data check left the restore in place: new files "
          f"{extra}, removed {gone}, EARLIEST {earliest_before} -> {earliest_after}")
else:
    print("OK: the restore was taken back after the interrupt")
