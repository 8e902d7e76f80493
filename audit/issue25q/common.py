"""Set-up for audit 25q scripts: the test helpers (tests/ and tests/operations on sys.path)."""
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
for p in (ROOT, os.path.join(ROOT, "tests"), os.path.join(ROOT, "tests", "operations")):
    if p not in sys.path:
        sys.path.insert(0, p)

from conftest import D1, make_rows, write  # noqa: E402,F401
from oracle import pp_read  # noqa: E402
from paimon_commit import Table  # noqa: E402


def new_path(name="t"):
    base = tempfile.mkdtemp(prefix="audit25q-")
    p = os.path.join(base, "wh", "db.db", name)
    os.makedirs(os.path.dirname(p))
    return p


def prepared(t, ids, **kw):
    w = t.new_writer()
    w.write_arrow(make_rows(ids, **kw))
    return w.prepare_commit()


def ids_read(path, snapshot_id=None):
    """(ours, pypaimon's) row ids, sorted, duplicates kept."""
    ours = sorted(Table.open(str(path)).read_arrow(snapshot_id=snapshot_id).column("id").to_pylist())
    theirs = sorted(pp_read(path, snapshot_id=snapshot_id).column("id").to_pylist())
    return ours, theirs


def snapshot_ids(path):
    d = os.path.join(str(path), "snapshot")
    return sorted(int(n.split("-")[1]) for n in os.listdir(d) if n.startswith("snapshot-"))
