"""Shared helpers for the issue26g audit scripts (real directories under a temp dir)."""
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path[:0] = [ROOT, os.path.join(ROOT, "tests")]

from benchmarks.scale_tables import build_overwrite_table  # noqa: E402
from paimon_commit.operations import expire as expire_mod  # noqa: E402
from paimon_commit.operations.expire import ExpireConfig, ExpireSnapshots  # noqa: E402
from paimon_commit.store import FileStore  # noqa: E402

SNAPSHOTS, PER_SNAPSHOT = 60, 5


def cfg(retain=3):
    return ExpireConfig(retain_min=retain, retain_max=retain, time_retained_ms=0,
                        max_deletes=1 << 30)


def small_chunks():
    expire_mod.FIRST_CHUNK = 7
    expire_mod.CHUNK_FILES = 40


def table(name):
    path = os.path.join(tempfile.mkdtemp(prefix="a26g-"), "wh", "db.db", name)
    build_overwrite_table(path, SNAPSHOTS * PER_SNAPSHOT, PER_SNAPSHOT)
    return path


def snap_ids(path):
    return sorted(int(n.rsplit("-", 1)[1]) for n in os.listdir(os.path.join(path, "snapshot"))
                  if n.startswith("snapshot-") and n[9:].isdigit())


def recommit_same_size(path, sid):
    """Delete snapshot-<sid> and create it again (temp file + link + unlink, as a commit
    publishes) with other bytes of the same size. Returns (old stat, new stat)."""
    p = os.path.join(path, "snapshot", f"snapshot-{sid}")
    with open(p, "rb") as f:
        data = f.read()
    at = data.index(b'"commitUser": "') + len(b'"commitUser": "')
    other = data[:at] + (b"x" if data[at:at + 1] != b"x" else b"y") + data[at + 1:]
    assert len(other) == len(data) and other != data
    old = os.stat(p)
    os.unlink(p)
    tmp = p + ".tmp"
    with open(tmp, "wb") as f:
        f.write(other)
    os.link(tmp, p)
    os.unlink(tmp)
    return old, os.stat(p)
