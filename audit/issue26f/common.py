"""Shared helpers for the issue26f audit scripts (real tables in a temp dir, no pytest)."""
import datetime
import os
import shutil
import sys
import tempfile
import threading
import time

import pyarrow as pa

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
# AUDIT_CODE: run against another checkout of paimon_commit (e.g. `git archive 788846d^`)
CODE = os.environ.get("AUDIT_CODE", ROOT)
sys.path.insert(0, CODE)

from paimon_commit import Table  # noqa: E402
from paimon_commit.io.local import LocalFileIO  # noqa: E402
from paimon_commit.operations.expire_config import ExpireConfig  # noqa: E402
from paimon_commit.operations.expire import ExpireSnapshots  # noqa: E402
from paimon_commit.operations.orphan import CleanContext, OrphanFilesCleaner  # noqa: E402

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("dt", pa.date32()),
                    ("hr", pa.int32())])
D1 = datetime.date(2024, 1, 1)
OLD = time.time() - 3 * 86400


def make_rows(ids):
    return pa.Table.from_pylist([{"id": i, "name": f"n{i}", "dt": D1, "hr": 1} for i in ids],
                                schema=SCHEMA)


def new_table(options=None):
    d = tempfile.mkdtemp(prefix="issue26f-")
    p = os.path.join(d, "wh", "db.db", "t")
    os.makedirs(os.path.dirname(p))
    Table.create(p, SCHEMA, partition_keys=["dt", "hr"], options=options or {})
    return p


def write(path, ids, overwrite=False, user=None):
    t = Table.open(path)
    w = t.new_writer()
    w.write_arrow(make_rows(ids))
    msgs = w.prepare_commit()
    with t.new_commit(commit_user=user) as c:
        return c.overwrite(msgs) if overwrite else c.commit(msgs)


def age_everything(path):
    for d, dirs, names in os.walk(path):
        for n in names + dirs:
            os.utime(os.path.join(d, n), (OLD, OLD))


def data_files(path):
    out = []
    for d, _, names in os.walk(path):
        out += [os.path.join(d, n) for n in names if n.startswith("data-")]
    return sorted(out)


def cutoff():
    return int((time.time() - 86400) * 1000)


def expire_keeping(path, keep, **kw):
    cfg = ExpireConfig(retain_min=keep, retain_max=keep, time_retained_ms=0, max_deletes=100,
                       **kw)
    return ExpireSnapshots(Table.open(path).store, cfg).expire()


def describe(r):
    return (f"complete={r.complete} stopped_by={r.stopped_by} deleted={sorted(r.deleted_paths)}"
            + (f"\n    message={r.message[:300]}" if r.message else ""))


def threads_now():
    return sorted(t.name for t in threading.enumerate() if t is not threading.main_thread())


class MainLeaseGate:
    """Holds the main thread's first look at `.maintenance/` (its lease take) until `open`
    is set: a slow lease take, or one waiting in line behind another holder."""

    def __init__(self):
        self.open = threading.Event()
        self.armed = False

    def maybe_wait(self, path):
        if self.armed and "/.maintenance" in path and \
                threading.current_thread() is threading.main_thread():
            self.open.wait(30)
