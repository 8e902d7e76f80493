"""The command line turns SIGINT into request_stop (a stop at the next safe point). The
rollback's data check (one listing per bucket directory: the long part) has no safe point,
and the first one comes only after `commit_latest_hint(target)`: a Ctrl-C pressed while the
check runs, before anything was changed, ends with a rollback half applied: LATEST already
names the (restored) target, the restored snapshot file and the moved EARLIEST stay, the newer
snapshots and tags are all still there, and the result says "the same rollback again finishes
it" -- there is no way to abort it (an interrupt before the first change should leave the
table as it was, as a refusal does)."""
import os, signal, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import *  # noqa
from paimon_commit.io.deletion import clear_stop, interrupt_reason, request_stop

t = new_table("t", KEEP)
write(t, 0)
t = Table.open(t.store.root); t.create_tag("x", 1)
write(t, 10); write(t, 20)
root = t.store.root
print("expired:", expirer(Table.open(root), 2).expire().expired_ids)
before = table_files(root)
hints = lambda: {h: open(os.path.join(root, "snapshot", h)).read()
                 for h in ("EARLIEST", "LATEST")}
hints_before = hints()

t = Table.open(root)
io = t.store.io
real_ls = io.list_status
def ls(d):
    if "bucket-" in d:
        request_stop(interrupt_reason(signal.SIGINT))   # what the CLI's SIGINT handler does
    return real_ls(d)
io.list_status = ls
try:
    r = t.rollback_to(tag="x")
    print("result: complete", r.complete, "stopped_by", r.stopped_by, "|", r.message)
finally:
    clear_stop()
after, hints_after = table_files(root), hints()
print("hints before", hints_before, "after", hints_after, "new files", sorted(after - before))
if hints_after != hints_before or after != before:
    print(f"FINDING: Ctrl-C during the data check (nothing changed yet) left a half-applied "
          f"rollback: hints {hints_before} -> {hints_after}, new files {sorted(after - before)}")
else:
    print("OK: the interrupted rollback left the table as it was")
# (what the table looks like to readers and writers meanwhile)
print("latest snapshot read by a fresh handle:", Table.open(root).latest_snapshot().id,
      "rows:", rows(root))
