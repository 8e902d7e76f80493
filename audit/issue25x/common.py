"""Set-up for audit 25x scripts: loads issue25u's common.py (LatePut, and through 25t/25s:
fresh, prepared, ids_read, dups, try_commit, ...)."""
import importlib.util
import os

HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location(
    "common25u", os.path.join(os.path.dirname(HERE), "issue25u", "common.py"))
_c = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_c)
globals().update({k: v for k, v in vars(_c).items() if not k.startswith("__")})

from paimon_commit import Table  # noqa: E402,F401


def ours(path, **kw):
    return sorted(Table.open(str(path)).read_arrow(**kw).column("id").to_pylist())
