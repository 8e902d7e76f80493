"""K1 (brief item 2): repair's "found elsewhere under the table" walk (_Repair._walk, audit
issue27d h2/h6) does not descend into symlinked directories ("Symlinks are not followed;
whatever bears the name counts"), but a symlinked directory is not "whatever bears the name":
its files are never looked at. A file that is there, reachable under the table through a
symlinked partition directory (a partition moved to another volume and linked back, a
common way to free space), is still given up.

Set-up (h2's layout A): the table writes dt=NULL to dt=__DEFAULT_PARTITION__/bucket-0; a
pypaimon job with the dynamic option partition.default-name=NULLS writes its NULL row to
dt=NULLS/bucket-0. The operator moves dt=NULLS to another volume and symlinks it back. Without
the symlink repair keeps the file (control); with it, repair --apply commits a snapshot
without it although the file is there (os.path.exists through the table root is True)."""
import os
import shutil
import sys
import tempfile

import pyarrow as pa

from common import new_table, write_rows, cli_json, files, ROOT

sys.path.insert(0, os.path.join(ROOT, "tests"))
from oracle import pp_table  # noqa: E402

SCHEMA = pa.schema([("id", pa.int64()), ("dt", pa.string())])


def build():
    t = new_table(schema=SCHEMA, partition_keys=["dt"])
    write_rows(t, {"id": [1], "dt": [None]}, schema=SCHEMA)
    pt = pp_table(t.path, **{"partition.default-name": "NULLS"})
    wb = pt.new_batch_write_builder()
    w, c = wb.new_write(), wb.new_commit()
    w.write_arrow(pa.table({"id": [2], "dt": [None]}, schema=SCHEMA))
    c.commit(w.prepare_commit())
    w.close()
    c.close()
    dyn = [f for f in files(t.path) if f.startswith("dt=NULLS/")]
    assert dyn, sorted(files(t.path))
    return t, dyn[0]


def repair(path):
    rc, doc, err = cli_json("repair", path, "--apply")
    if not isinstance(doc, dict):
        return rc, [], f"{doc!r} {err[-300:]}"
    return rc, [f["path"] for f in doc.get("files", [])], doc.get("message")


# control: no symlink
t, dyn = build()
rc, given, msg = repair(t.path)
print("control: repair rc", rc, "given up", given, "|", msg)
control_kept = not any(os.path.basename(p) == os.path.basename(dyn) for p in given)

# symlinked partition directory
t, dyn = build()
other = tempfile.mkdtemp(prefix="audit25h-vol-")
moved = os.path.join(other, "dt=NULLS")
shutil.move(os.path.join(t.path, "dt=NULLS"), moved)
os.symlink(moved, os.path.join(t.path, "dt=NULLS"))
there = os.path.exists(os.path.join(t.path, dyn))
rc, given, msg = repair(t.path)
print("symlinked: file there via the table root:", there)
print("symlinked: repair rc", rc, "given up", given, "|", msg)
lost = there and any(os.path.basename(p) == os.path.basename(dyn) for p in given)
if control_kept and lost:
    print(f"FINDING: repair --apply gave up {given} although {dyn} is there (through the "
          "symlinked partition directory dt=NULLS); the same table without the symlink keeps "
          "it: the found-elsewhere walk does not descend into symlinked directories")
    sys.exit(1)
print("NO FINDING")
