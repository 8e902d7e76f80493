"""Set-up for audit 25ab scripts: loads issue25aa's common.py (and through it 25l/25k/27:
new_table, write, write_rows, overwrite, KEEP, expirer, Killed, markers, tag_reads, age_all,
check_problems, cli_json, four_snapshots, tag_names, all_tags_read, Pause, ...) and adds
`ids(t, **kw)` (sorted ids read back, or the error) and `dupes(list)`."""
import collections
import importlib.util
import os

HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location(
    "common25aa_for_25ab", os.path.join(os.path.dirname(HERE), "issue25aa", "common.py"))
_c = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_c)
globals().update({k: v for k, v in vars(_c).items() if not k.startswith("__")})


def ids(path_or_table, **kw):
    """Sorted ids of a fresh handle's read (or 'ERR ...')."""
    try:
        p = path_or_table if isinstance(path_or_table, str) else path_or_table.store.root
        return sorted(Table.open(p).read_arrow(**kw).column("id").to_pylist())
    except Exception as e:  # noqa: BLE001
        return f"ERR {type(e).__name__}: {str(e)[:200]}"


def dupes(xs):
    return sorted(k for k, n in collections.Counter(xs).items() if n > 1)
