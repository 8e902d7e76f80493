"""Set-up for audit 25aa scripts: loads issue25l's common.py (and through it 25k/27:
new_table, write, overwrite, KEEP, expirer, Killed, markers, tag_reads, check_problems, ...)
and adds `four_snapshots()` (l5's table: 1 = rows 0..2, 2 = overwrite 100 (1's file only
used by 1), 3, 4 appends), `tag_names(root)`, `lease_records(root)`, `Pause` (a hook that
sets an event and waits for a go)."""
import importlib.util
import os
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location(
    "common25l_for_25aa", os.path.join(os.path.dirname(HERE), "issue25l", "common.py"))
_c = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_c)
globals().update({k: v for k, v in vars(_c).items() if not k.startswith("__")})


def four_snapshots(name="t"):
    t = new_table(name, KEEP)
    root = t.store.root
    write(t, 0)                         # 1: rows 0..2 (its file used by 1 only after 2)
    overwrite(Table.open(root), 100)    # 2: overwrite -> row 100
    write(Table.open(root), 10)         # 3
    write(Table.open(root), 20)         # 4
    return root


def tag_names(root):
    d = os.path.join(root, "tag")
    return sorted(n[len("tag-"):] for n in (os.listdir(d) if os.path.isdir(d) else [])
                  if n.startswith("tag-"))


def lease_records(root):
    d = os.path.join(root, ".maintenance")
    return sorted(n for n in (os.listdir(d) if os.path.isdir(d) else []) if n.startswith(("lease-", "wait-")))


def all_tags_read(root):
    """{tag: (ok, rows or error)} for every tag file."""
    return {n: tag_reads(root, n) for n in tag_names(root)}


class Pause:
    """pause.hit() from a hooked step: signals `reached` and waits for `go` (30 s max)."""

    def __init__(self):
        self.reached, self.go = threading.Event(), threading.Event()

    def hit(self):
        self.reached.set()
        self.go.wait(30)


def z_common():
    """audit/issue25z/common.py as a module (moto_bucket, s3_keys, ...; it puts tests/ on
    sys.path)."""
    spec = importlib.util.spec_from_file_location(
        "common25z_for_25aa", os.path.join(os.path.dirname(HERE), "issue25z", "common.py"))
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m
