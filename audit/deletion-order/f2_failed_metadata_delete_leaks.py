"""Finding 2 (leak + wrong report): expiration's metadata steps do not stop when a delete
FAILS (as opposed to the process dying). The new order (manifests, index files, index
manifests, statistics, lists last) is only "finishable" if a later step never runs while an
earlier one left files behind; `_execute` calls `d.files(...)` without `must_finish` for
these steps, so a manifest (or index file) whose delete fails (EACCES, an object-store 5xx
on one key of a batch) stays while the list (index manifest) naming it and the snapshot file
are deleted in the same run. No later run can find it: the rerun reports nothing to do and
the file is left for orphan cleanup only; the run's own result does not mention it.
delete_tag, for the same steps, uses must_finish and stops (the marker keeps the record).

Run: PYTHONPATH=. .venv/bin/python audit/f2_failed_metadata_delete_leaks.py
"""
import os
import shutil

from common import files, new_table
from faults.fault_io import FaultIO
from paimon_commit.operations.expire import ExpireConfig, ExpireSnapshots
from paimon_commit.store import FileStore

CFG = ExpireConfig(retain_min=3, time_retained_ms=0)
template = new_table(snapshots=12)

# Reference: an unfailed run, counting the unlinks (which one is the first manifest /
# index file).
ref = template + "-ref"
shutil.copytree(template, ref)
count = FaultIO(ref)
ExpireSnapshots(FileStore.open(ref, io=count), CFG).expire()
want = files(ref)
unlinks = [p for kind, m, p in count.log if kind == "delete" and m == "_unlink"]


def first(pred):
    return next(i + 1 for i, p in enumerate(unlinks) if pred(os.path.basename(p), p))


cases = {
    "manifest": first(lambda n, p: n.startswith("manifest-") and not n.startswith("manifest-list-")),
    "index file": first(lambda n, p: "/index/" in p),
}
leaks = {}
for what, k in cases.items():
    path = template + "-" + what.replace(" ", "-")
    shutil.copytree(template, path)
    io = FaultIO(path, kind="delete", at=k, mode="unlink")   # os.unlink: EACCES, once
    r = ExpireSnapshots(FileStore.open(path, io=io), CFG).expire()
    failed = os.path.relpath(io.fired[2], path)
    print(f"[{what}] failed delete: {failed}")
    print(f"  run 1: expired {r.expired_ids}, skipped {r.skipped}")
    r2 = ExpireSnapshots(FileStore.open(path), CFG).expire()
    print(f"  rerun: expired {r2.expired_ids}, skipped {r2.skipped}")
    extra = sorted(files(path) - want)
    print(f"  left behind vs an unfailed run: {extra}")
    named_by = [f for f in files(path) if f.startswith("manifest/manifest-list") or
                os.path.basename(f).startswith("index-manifest-")]
    leaks[what] = (failed, extra, r.skipped)
if any(failed in extra or not skipped for failed, extra, skipped in leaks.values()):
    print("FINDING REPRODUCED: one failed metadata delete is leaked for good (its list / index "
          "manifest and snapshot were deleted in the same run) and the result reports nothing.")
else:
    print("NO FINDING: the failed delete is reported, its records kept, and the rerun "
          "deletes it (nothing left behind vs an unfailed run).")
