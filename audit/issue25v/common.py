"""Set-up for audit 25v scripts: test helpers on sys.path, small partitioned tables."""
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
for p in (ROOT, os.path.join(ROOT, "tests")):
    if p not in sys.path:
        sys.path.insert(0, p)

from conftest import SCHEMA, make_rows, write  # noqa: E402,F401
from paimon_commit import Table  # noqa: E402


def new_table(name="t", options=None):
    base = tempfile.mkdtemp(prefix="audit25v-")
    p = os.path.join(base, "wh", "db.db", name)
    os.makedirs(os.path.dirname(p))
    return Table.create(p, SCHEMA, partition_keys=["dt", "hr"], options=options or {})


def rows(path, snapshot_id=None, tag=None):
    t = Table.open(str(path))
    if tag is not None:
        tb = t.read_arrow(tag=tag)
    else:
        tb = t.read_arrow(snapshot_id=snapshot_id)
    return sorted(tb.column("id").to_pylist())


def snapshot_ids(path):
    d = os.path.join(str(path), "snapshot")
    return sorted(int(n.split("-")[1]) for n in os.listdir(d) if n.startswith("snapshot-"))


def lease_dir(t):
    d = os.path.join(t.path, ".maintenance")
    os.makedirs(d, exist_ok=True)
    return d
