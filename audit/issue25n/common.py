"""The set-up of audit/issue25m/common.py (issue27 + 25k + 25l + 25m), shared by these scripts."""
import importlib.util
import os

_spec = importlib.util.spec_from_file_location(
    "_audit_common_issue25m_25n", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                               "issue25m", "common.py"))
_shared = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_shared)
globals().update({k: v for k, v in vars(_shared).items() if not k.startswith("__")})

# --- issue25n additions -----------------------------------------------------------------


def six_snapshots(name="t", options=None):
    """A table keeping 100 snapshots (KEEP, plus `options`) with snapshots 1..6."""
    t = new_table(name, dict(KEEP, **(options or {})))
    root = t.store.root
    for i in range(6):
        write(Table.open(root), 10 * i)
    return root


def whole(root):
    return [s for s in snapshot_ids(root) if reads_at(root, s)[0]]
