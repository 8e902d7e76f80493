"""Shared set-up for the dynamic-option audit scripts: real table directories, public API."""
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
for p in (ROOT, os.path.join(ROOT, "tests")):
    if p not in sys.path:
        sys.path.insert(0, p)

import pyarrow as pa  # noqa: E402
from paimon_commit import Table  # noqa: E402

SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.string())])


def new_path(name="t"):
    return os.path.join(tempfile.mkdtemp(prefix="auditF-"), "wh", "db.db", name)


def write(table, ids, p):
    w = table.new_writer()
    w.write_arrow(pa.table({"id": pa.array(ids, pa.int64()),
                            "p": pa.array([p] * len(ids), pa.string())}))
    with table.new_commit("audit") as c:
        return c.commit(w.prepare_commit())


def files(root):
    return sorted(os.path.relpath(os.path.join(d, f), root)
                  for d, _, fs in os.walk(root) for f in fs)
