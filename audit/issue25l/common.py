"""The set-up of audit/issue27/common.py (and issue25k's additions), shared by these scripts."""
import importlib.util
import os

_spec = importlib.util.spec_from_file_location(
    "_audit_common_issue25k_25l", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                               "issue25k", "common.py"))
_shared = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_shared)
globals().update({k: v for k, v in vars(_shared).items() if not k.startswith("__")})

# --- issue25l additions -----------------------------------------------------------------
from paimon_commit.io import deletion as _deletion


class Killed(BaseException):
    """Stands for a kill of the expiring process at a storage step."""


def expire_killed_after_data_step(table, retain, kind="manifest", path_part=""):
    """Run an expiration keeping `retain` snapshots that dies right before its `kind` delete
    step (after the data files are gone; with `path_part`: the first step of that kind with
    a path containing it): what a kill there leaves (its marker stays)."""
    orig = _deletion.Deleter.files

    def files(self, k, paths, must_finish=False):
        if k == kind and (not path_part or any(path_part in p for p in paths)):
            raise Killed(k)
        return orig(self, k, paths, must_finish=must_finish)
    _deletion.Deleter.files = files
    try:
        expirer(table, retain).expire()
    except Killed:
        pass
    finally:
        _deletion.Deleter.files = orig


def markers(root):
    d = os.path.join(root, ".maintenance")
    return sorted(n for n in (os.listdir(d) if os.path.isdir(d) else [])
                  if n.startswith("expiring-"))


def tag_reads(root, name):
    """(True, rows) if tag `name` reads, else (False, the error)."""
    try:
        return True, Table.open(root).read_arrow(tag=name).num_rows
    except Exception as e:  # noqa
        return False, f"{type(e).__name__}: {str(e)[:160]}"


def overwrite(table, start, n=1):
    w = table.new_writer()
    w.write_arrow(pa.table({"id": list(range(start, start + n)),
                            "v": [f"o{i}" for i in range(start, start + n)]}, schema=SCHEMA))
    with table.new_commit(commit_user="u") as c:
        return c.overwrite(w.prepare_commit())
