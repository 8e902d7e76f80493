"""Shared setup for the audit scripts: a real partitioned table (public API) with old
strays in two bucket directories."""
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
# AUDIT_TREE: another checkout to run against (e.g. the code before the change).
TREE = os.environ.get("AUDIT_TREE") or os.path.join(HERE, "..", "..")
sys.path.insert(0, os.path.join(TREE, "tests"))
sys.path.insert(0, TREE)

from conftest import SCHEMA, make_rows, write  # noqa: E402
from paimon_commit import Table  # noqa: E402

OLD = time.time() - 3 * 86400


def old(path):
    os.utime(path, (OLD, OLD), follow_symlinks=False)


def files_under(path):
    out = []
    for root, _, names in os.walk(path):
        out.extend(os.path.relpath(os.path.join(root, n), path) for n in names)
    return sorted(out)


def make_table(strays_per_bucket=100):
    """(tmp dir, table path, {bucket dir: [stray names]}): two commits (hr=1, hr=2), every
    table file made old, and old strays in both bucket directories."""
    tmp = tempfile.mkdtemp(prefix="auditO-")
    path = os.path.join(tmp, "wh", "db.db", "t")
    os.makedirs(os.path.dirname(path))
    t = Table.create(path, SCHEMA, partition_keys=["dt", "hr"])
    write(t, make_rows([1], hr=1))
    write(t, make_rows([2], hr=2))
    strays = {}
    for hr in (1, 2):
        bucket = os.path.join(path, "dt=2024-01-01", f"hr={hr}", "bucket-0")
        if not os.path.isdir(bucket):   # partition dir naming: find it
            [bucket] = [os.path.join(r, d) for r, ds, _ in os.walk(path) for d in ds
                        if d == "bucket-0" and r.endswith(f"hr={hr}")]
        names = [f"data-stray-{hr}-{i}.parquet" for i in range(strays_per_bucket)]
        for n in names:
            with open(os.path.join(bucket, n), "wb") as f:
                f.write(b"x" * 7)
        strays[bucket] = names
    for r, _, names in os.walk(path):
        for n in names:
            old(os.path.join(r, n))
    return tmp, path, strays
