"""M1: repair's found-elsewhere walk (_Repair._walk) lists each directory it met in its
parent's listing; a directory that is gone by the time it is listed (LocalFileIO.list_status
answers FileNotFoundError with an empty list) is read as empty, silently. The files in it
are then not "found elsewhere", and repair --apply gives them up, although they are still
under the table. The bucket-directory check of the same plan refuses in that case ("a file
is given up only when its own bucket directory was listed": an absent directory refuses),
the walk does not.

Set-up: audit issue27d h2 / issue25h k1 layout A (a pypaimon writer with the dynamic option
partition.default-name=NULLS wrote its NULL row to dt=NULLS/bucket-0; the table's layout puts
it in dt=__DEFAULT_PARTITION__/bucket-0, so it looks missing and is kept only because the walk
finds it). While repair walks, the operator does what k1 describes, one step at a time:
dt=NULLS is moved to another volume and linked back (`mv` then `ln -s`). The walk listed the
root before the move, and lists dt=NULLS between the `mv` and the `ln -s` (injected: the move
is made by a hook on LocalFileIO.list_status right before the walk lists dt=NULLS, the link
right after). The file is reachable through the table root when repair commits.
Control: the same without the race keeps the file (refused at the link, or found)."""
import os
import shutil
import sys
import tempfile

import pyarrow as pa

from common import new_table, write_rows, files, ROOT

sys.path.insert(0, os.path.join(ROOT, "tests"))
from oracle import pp_table  # noqa: E402

from paimon_commit import Table  # noqa: E402
from paimon_commit.errors import PaimonCommitError  # noqa: E402
from paimon_commit.io.local import LocalFileIO  # noqa: E402
from paimon_commit.operations.repair import repair_table  # noqa: E402

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
    try:
        r = repair_table(Table.open(path).store, apply=True)
    except PaimonCommitError as e:
        return [], f"refused: {type(e).__name__}: {str(e)[:160]}"
    return [f.path for f in r.files], (f"committed snapshot {r.snapshot_id}"
                                        if r.snapshot_id is not None else "nothing committed")


original = LocalFileIO.list_status
race = {"on": False, "done": False, "table": None}


def hooked(self, directory):
    walking = any(f.f_code.co_name == "_walk" for f in _frames())
    target = race["table"] and directory.rstrip("/") == os.path.join(race["table"], "dt=NULLS")
    if race["on"] and walking and target and not race["done"]:
        race["done"] = True
        link = os.path.join(race["table"], "dt=NULLS")
        moved = os.path.join(tempfile.mkdtemp(prefix="audit25i-vol-"), "dt=NULLS")
        shutil.move(link, moved)                  # mv dt=NULLS /other/volume/
        try:
            return original(self, directory)      # the walk lists it now: gone
        finally:
            os.symlink(moved, link)               # ln -s /other/volume/dt=NULLS dt=NULLS
    return original(self, directory)


def _frames():
    f = sys._getframe(1)
    while f is not None:
        yield f
        f = f.f_back


LocalFileIO.list_status = hooked

# control: no race
t, dyn = build()
given, msg = repair(t.path)
print("control: given up", given, "|", msg)
control_kept = not any(os.path.basename(p) == os.path.basename(dyn) for p in given)

# the move-and-link-back happens while the walk runs
t, dyn = build()
race.update(on=True, table=t.path)
given, msg = repair(t.path)
there = os.path.exists(os.path.join(t.path, dyn))
print("race injected:", race["done"], "| file there via the table root after:", there)
print("race: given up", given, "|", msg)
lost = race["done"] and there and \
    any(os.path.basename(p) == os.path.basename(dyn) for p in given)
if control_kept and lost:
    print(f"FINDING: repair --apply gave up {given} although {dyn} is there: the "
          "found-elsewhere walk listed dt=NULLS after it vanished (moved, before being linked "
          "back) and read the missing directory as empty instead of refusing; the same table "
          "without the race keeps the file")
    sys.exit(1)
print("NO FINDING")
