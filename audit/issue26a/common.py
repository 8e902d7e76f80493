"""Shared set-up for the issue26a audit scripts: small tables in real temp dirs, a second
maintenance run ("B", the lease's new holder) started on its own thread at a chosen moment of
the first ("A"), as another process would."""
import os
import sys
import tempfile
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
for p in (ROOT, os.path.join(ROOT, "tests")):
    if p not in sys.path:
        sys.path.insert(0, p)

import pyarrow as pa  # noqa: E402
from paimon_commit import Table  # noqa: E402
from paimon_commit.lease import lease_manager  # noqa: E402

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


def new_table(options=None, name="t"):
    base = tempfile.mkdtemp(prefix="audit26a-")
    path = os.path.join(base, "wh", "db.db", name)
    opts = {"write-only": "true"}
    opts.update(options or {})
    return Table.create(path, SCHEMA, options=opts)


def write(table, i, commit=None):
    w = table.new_writer()
    w.write_arrow(pa.table({"id": [i], "v": [f"r{i}"]}, schema=SCHEMA))
    msgs = w.prepare_commit()
    if commit is not None:
        return commit.commit(msgs)
    with table.new_commit() as c:
        return c.commit(msgs)


def break_lease(path):
    """`paimon-commit lease TABLE --break`, from another handle."""
    lease_manager(Table.open(path).store).break_lease()


def on_other_thread(fn):
    """Run fn on its own thread (a lease is re-entrant per thread: another thread is another
    holder) and wait for it; re-raises its exception."""
    out = {}

    def run():
        try:
            out["r"] = fn()
        except BaseException as e:  # noqa: BLE001
            out["e"] = e
    t = threading.Thread(target=run)
    t.start()
    t.join()
    if "e" in out:
        raise out["e"]
    return out.get("r")


def ls(path, sub):
    d = os.path.join(path, sub)
    return sorted(os.listdir(d)) if os.path.isdir(d) else []
