"""Set-up for audit 25y scripts: loads issue25x's common.py (and through it 25u/25t/25s:
fresh, prepared, ids_read, LatePut, ...) and adds

- `make_branch`, `branch_rows` (as tests/operations/test_branch_roots.py: a branch as Paimon
  Java lays it out, read from the parquet files its manifests name);
- `add_changelog`, `add_index_and_statistics` (tests/operations/test_changelog.py: what a
  primary-key writer adds to a snapshot);
- `Interrupt(n)`: a KeyboardInterrupt raised by the n-th `LocalFileIO._unlink` (the one
  per-file delete primitive), before that unlink;
- `state(path)`: what every root reads (snapshots, tags, long-lived changelogs, branch
  snapshots and tags, consumers)."""
import importlib.util
import json
import os
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location(
    "common25x", os.path.join(os.path.dirname(HERE), "issue25x", "common.py"))
_c = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_c)
globals().update({k: v for k, v in vars(_c).items() if not k.startswith("__")})

import logging  # noqa: E402
logging.disable(logging.CRITICAL)

from paimon_commit import Table  # noqa: E402
from paimon_commit.io.local import LocalFileIO  # noqa: E402
from test_branch_roots import make_branch, branch_rows  # noqa: E402,F401
from test_changelog import add_changelog, add_index_and_statistics  # noqa: E402,F401
from paimon_commit.snapshots import ChangelogManager  # noqa: E402


class Interrupt:
    """KeyboardInterrupt at the n-th unlink (1-based) while active; counts unlinks."""

    def __init__(self, n=None):
        self.n, self.count, self.fired = n, 0, False

    def __enter__(self):
        self.real = real = LocalFileIO._unlink
        me = self

        def unlink(io, norm):
            me.count += 1
            if me.n is not None and me.count == me.n:
                me.fired = True
                raise KeyboardInterrupt(f"injected at unlink {me.count}: {norm}")
            return real(io, norm)
        LocalFileIO._unlink = unlink
        return self

    def __exit__(self, *exc):
        LocalFileIO._unlink = self.real
        return False


def set_producer(path, producer="input"):
    """Put changelog-producer into schema-0 as another engine stores it (Table.create
    refuses it on an append table), as tests/operations/test_changelog.py's cl_table."""
    sf = os.path.join(path, "schema", "schema-0")
    obj = json.load(open(sf))
    obj["options"]["changelog-producer"] = producer
    with open(sf, "w") as f:
        json.dump(obj, f)


def rows(t, **kw):
    """Our reader's ids; for a snapshot our reader refuses (an index manifest: deletion
    vectors), the ids of the parquet files its manifests name (snap_rows)."""
    try:
        return sorted(t.read_arrow(**kw).column("id").to_pylist())
    except Exception as e:  # noqa: BLE001
        if type(e).__name__ == "UnsupportedTableError":
            try:
                if "snapshot_id" in kw:
                    snap = t.store.snapshots.snapshot(kw["snapshot_id"])
                else:
                    snap = next(g.snapshot for g in t.tags() if g.name == kw["tag"])
            except Exception as e2:  # noqa: BLE001
                return f"unreadable: {type(e2).__name__}: {str(e2)[:100]}"
            return snap_rows(t.store.root, snap)
        return f"unreadable: {type(e).__name__}: {str(e)[:100]}"


def snap_rows(path, snap):
    """Ids of the parquet files a snapshot's manifests name; its index files and statistics
    file must exist too. 'unreadable: ...' otherwise."""
    import pyarrow.parquet as pq
    from paimon_commit.reachability import Reachability
    try:
        reach = Reachability(Table.open(path).store)
        files = reach.live_files(snap, "root")
        ids = []
        for p in files:
            if p.endswith(".parquet"):
                ids.extend(pq.ParquetFile(p).read(columns=["id"]).column("id").to_pylist())
        if snap.index_manifest:
            for n in reach.index_files(snap.index_manifest):
                if not os.path.exists(os.path.join(path, "index", n)):
                    return f"unreadable: index file {n} missing"
        if snap.statistics and not os.path.exists(os.path.join(path, "statistics",
                                                                snap.statistics)):
            return f"unreadable: statistics {snap.statistics} missing"
        return sorted(ids)
    except Exception as e:  # noqa: BLE001
        return f"unreadable: {type(e).__name__}: {str(e)[:100]}"


def changelog_ok(t, c):
    st = t.store
    try:
        for m in st.manifests.read_list(c.changelog_manifest_list or c.delta_manifest_list):
            for e in st.manifests.read_manifest(m.file_name):
                if not os.path.exists(st.data_file_path(e)):
                    return f"missing {os.path.basename(st.data_file_path(e))}"
        return "ok"
    except Exception as e:  # noqa: BLE001
        return f"unreadable: {type(e).__name__}: {str(e)[:100]}"


def state(path):
    """{root: what it reads} over every root on disk now."""
    t = Table.open(path)
    out = {}
    for sid in t.store.snapshots.list_snapshot_ids():
        out[f"snapshot {sid}"] = rows(t, snapshot_id=sid)
    for g in t.tags():
        out[f"tag {g.name}"] = rows(t, tag=g.name)
    cm = ChangelogManager(t.store.io, t.store.root)
    for c in cm.snapshots():
        out[f"changelog {c.id}"] = changelog_ok(t, c)
    bdir = os.path.join(path, "branch")
    for b in sorted(os.listdir(bdir)) if os.path.isdir(bdir) else []:
        bp = os.path.join(bdir, b)
        for sub in ("snapshot", "tag"):
            d = os.path.join(bp, sub)
            for n in sorted(os.listdir(d)) if os.path.isdir(d) else []:
                if n.startswith("snapshot-") or n.startswith("tag-"):
                    out[f"{b} {n}"] = _branch_file_rows(path, os.path.join(d, n))
    cdir = os.path.join(path, "consumer")
    for n in sorted(os.listdir(cdir)) if os.path.isdir(cdir) else []:
        nxt = json.load(open(os.path.join(cdir, n)))["nextSnapshot"]
        latest = t.store.snapshots.latest_snapshot_id()
        out[f"{n} -> {nxt}"] = ("held" if nxt > (latest or 0) or
                                t.store.snapshots.snapshot_exists(nxt) else "its snapshot gone")
    return out


def _branch_file_rows(path, f):
    from paimon_commit.format.snapshot import Snapshot
    try:
        with open(f, "rb") as fh:
            snap = Snapshot.from_json(fh.read(), f)
    except Exception as e:  # noqa: BLE001
        return f"unreadable: {type(e).__name__}: {str(e)[:100]}"
    return snap_rows(path, snap)


def copy_table(src):
    import tempfile
    dst = os.path.join(tempfile.mkdtemp(prefix="audit25y-"), "wh", "db.db", "t")
    shutil.copytree(src, dst, symlinks=True)
    return dst


def age_tree(path, seconds=3 * 86400):
    import time
    old = time.time() - seconds
    for d, _, fs in os.walk(path):
        for f in fs:
            os.utime(os.path.join(d, f), (old, old))


def worse(before, after):
    """Roots present in both whose reading got worse, and roots of `before` that are gone
    but that the reference run (after) keeps (the caller passes the reference)."""
    return {k: (before[k], after[k]) for k in before if k in after and before[k] != after[k]}
