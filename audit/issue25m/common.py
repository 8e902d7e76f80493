"""The set-up of audit/issue25l/common.py (issue27 + 25k + 25l), shared by these scripts."""
import importlib.util
import os

_spec = importlib.util.spec_from_file_location(
    "_audit_common_issue25l_25m", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                               "issue25l", "common.py"))
_shared = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_shared)
globals().update({k: v for k, v in vars(_shared).items() if not k.startswith("__")})

# --- issue25m additions -----------------------------------------------------------------


def snapshot_ids(root):
    return Table.open(root).store.snapshots.list_snapshot_ids()


def reads_at(root, sid):
    """(True, rows) if snapshot `sid` reads by time travel, else (False, the error)."""
    try:
        return True, Table.open(root).read_arrow(snapshot_id=sid).num_rows
    except Exception as e:  # noqa
        return False, f"{type(e).__name__}: {str(e)[:160]}"
