"""The set-up of audit/issue25/common.py, shared by these scripts (loaded from there under another
module name: each audit directory's scripts import `common`)."""
import importlib.util
import os

_spec = importlib.util.spec_from_file_location(
    "_audit_common_issue25", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "issue25",
                                     "common.py"))
_shared = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_shared)
globals().update({k: v for k, v in vars(_shared).items() if not k.startswith("__")})
