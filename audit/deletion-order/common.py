"""Shared set-up for the audit scripts: real table directories built with the test helpers."""
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
for p in (ROOT, os.path.join(ROOT, "tests")):
    if p not in sys.path:
        sys.path.insert(0, p)
# AUDIT_LIB=<dir holding another paimon_commit/> runs a script against that version of the
# library (e.g. an export of 0f76a62) with this worktree's test helpers.
if os.environ.get("AUDIT_LIB"):
    sys.path.insert(0, os.environ["AUDIT_LIB"])

from benchmarks.scale_tables import build_overwrite_table  # noqa: E402
from operations.test_changelog import add_index_and_statistics  # noqa: E402
from paimon_commit import Table  # noqa: E402


def new_table(snapshots=12, per_snapshot=2, index=True, name="t"):
    """An overwrite table (each snapshot replaces the last one's files); with `index`, each
    snapshot gets an index manifest naming two index files of its own and a statistics file."""
    path = os.path.join(tempfile.mkdtemp(prefix="auditA-"), "wh", "db.db", name)
    build_overwrite_table(path, snapshots * per_snapshot, per_snapshot)
    if index:
        t = Table.open(path)
        for sid in range(1, snapshots + 1):
            add_index_and_statistics(t, sid, [f"index-{sid}-a", f"index-{sid}-b"],
                                     f"stat-{sid}")
    return path


def files(root):
    return {os.path.relpath(os.path.join(d, f), root)
            for d, _, fs in os.walk(root) for f in fs}
