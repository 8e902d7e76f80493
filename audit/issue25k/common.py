"""The set-up of audit/issue27/common.py, shared by these scripts (loaded from there under another
module name: each audit directory's scripts import `common`)."""
import importlib.util
import os

_spec = importlib.util.spec_from_file_location(
    "_audit_common_issue27_25k", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "issue27",
                                     "common.py"))
_shared = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_shared)
globals().update({k: v for k, v in vars(_shared).items() if not k.startswith("__")})

# --- issue25k additions -----------------------------------------------------------------
import sys as _sys
_T = os.path.join(ROOT, "tests")
if _T not in _sys.path:
    _sys.path.insert(0, _T)
KEEP = {"snapshot.num-retained.min": "100", "snapshot.num-retained.max": "1000",
        "snapshot.time-retained": "1 d"}


def expirer(table, retain):
    """An ExpireSnapshots keeping exactly the newest `retain` snapshots."""
    from paimon_commit.operations.expire import ExpireConfig, ExpireSnapshots
    return ExpireSnapshots(table.store, ExpireConfig.from_options(
        table.store.options, retain_min=retain, retain_max=retain))


def table_files(root):
    return {f for f in files(root) if not f.startswith(".maintenance")}
