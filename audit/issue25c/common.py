"""Shared set-up for issue25c audit scripts: small append tables in temp dirs."""
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

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


def new_table(name="t", options=None, base=None):
    base = base or tempfile.mkdtemp(prefix="audit25-")
    path = os.path.join(base, "wh", "db.db", name)
    opts = {"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "1000",
            "snapshot.time-retained": "1 ms"}
    opts.update(options or {})
    return Table.create(path, SCHEMA, options=opts)


def write(table, start, n=3, commit_user="u", ident=None):
    w = table.new_writer()
    w.write_arrow(pa.table({"id": list(range(start, start + n)),
                      "v": [f"r{i}" for i in range(start, start + n)]}, schema=SCHEMA))
    msgs = w.prepare_commit()
    with table.new_commit(commit_user=commit_user) as c:
        kw = {} if ident is None else {"commit_identifier": ident}
        return c.commit(msgs, **kw), msgs


def files(root):
    return {os.path.relpath(os.path.join(d, f), root)
            for d, _, fs in os.walk(root) for f in fs}
