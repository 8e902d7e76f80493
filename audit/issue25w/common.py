"""Set-up for audit 25w scripts: issue25u's common.py (LatePut, adders, dups, fresh, prepared,
...; it loads 25t's and 25s's) plus a few helpers."""
import os
import importlib.util

HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location(
    "common25u", os.path.join(os.path.dirname(HERE), "issue25u", "common.py"))
_c = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_c)
globals().update({k: v for k, v in vars(_c).items() if not k.startswith("__")})


def reads(path):
    """'ours [..] pypaimon [..]' of the latest snapshot, or the read's failure, and the dups."""
    try:
        ours, theirs, d = dups(path)
        return f"ours {ours} pypaimon {theirs}", d, ours
    except BaseException as e:  # noqa: BLE001
        return f"read fails: {type(e).__name__}: {str(e)[:120]}", None, None


def all_snapshots_read(path):
    """[(id, error)] of the retained snapshots that do not read (ours)."""
    from paimon_commit import Table
    bad = []
    for sid in snapshot_ids(path):
        try:
            Table.open(str(path)).read_arrow(snapshot_id=sid)
        except BaseException as e:  # noqa: BLE001
            bad.append((sid, type(e).__name__))
    return bad
