"""Set-up for audit 25s scripts: the test helpers (tests/ and tests/operations on sys.path)."""
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
for p in (ROOT, os.path.join(ROOT, "tests"), os.path.join(ROOT, "tests", "operations")):
    if p not in sys.path:
        sys.path.insert(0, p)

from conftest import D1, make_rows, write  # noqa: E402,F401
from oracle import pp_read  # noqa: E402
from paimon_commit import Table  # noqa: E402


def new_path(name="t"):
    base = tempfile.mkdtemp(prefix="audit25s-")
    p = os.path.join(base, "wh", "db.db", name)
    os.makedirs(os.path.dirname(p))
    return p


def prepared(t, ids, **kw):
    w = t.new_writer()
    w.write_arrow(make_rows(ids, **kw))
    return w.prepare_commit()


def ids_read(path, snapshot_id=None):
    """(ours, pypaimon's) row ids, sorted, duplicates kept."""
    ours = sorted(Table.open(str(path)).read_arrow(snapshot_id=snapshot_id).column("id").to_pylist())
    theirs = sorted(pp_read(path, snapshot_id=snapshot_id).column("id").to_pylist())
    return ours, theirs


def snapshot_ids(path):
    d = os.path.join(str(path), "snapshot")
    return sorted(int(n.split("-")[1]) for n in os.listdir(d) if n.startswith("snapshot-"))

from paimon_commit.errors import CommitConflictError  # noqa: E402
from paimon_commit.snapshots import SnapshotManager  # noqa: E402


def fresh(options=None):
    path = new_path()
    return path, Table.create(path, make_rows([]).schema, partition_keys=["dt", "hr"],
                              options=dict({"compaction.min.file-num": "2"}, **(options or {})))


def try_commit(t, msgs, user=None, ident=None, how="commit", **kw):
    """The snapshot id, or the CommitConflictError raised."""
    try:
        with t.new_commit(**({"commit_user": user} if user else {})) as c:
            fn = getattr(c, how)
            return fn(msgs, commit_identifier=ident, **kw) if how != "filter_and_commit" \
                else fn(msgs)
    except CommitConflictError as e:
        return e


def interrupted_after_publish(t, msgs, user, ident=None, how="commit"):
    """A call that publishes, then is interrupted (KeyboardInterrupt) right after the publish:
    the record holds its files as 'raised after it may have published'."""
    real = SnapshotManager.commit_latest_hint

    def boom(self, sid):
        SnapshotManager.commit_latest_hint = real
        raise KeyboardInterrupt("simulated Ctrl-C right after the publish")
    SnapshotManager.commit_latest_hint = boom
    c = t.new_commit(commit_user=user)
    try:
        getattr(c, how)(msgs, commit_identifier=ident)
    except KeyboardInterrupt:
        pass
    else:
        raise AssertionError("not interrupted")
    finally:
        SnapshotManager.commit_latest_hint = real


def dups(path):
    """(ours, theirs, ids read more than once by either reader)."""
    ours, theirs = ids_read(path)
    d = sorted({i for i in ours if ours.count(i) > 1} | {i for i in theirs if theirs.count(i) > 1})
    return ours, theirs, d


def short(r):
    return f"refused: {str(r)[:200]}" if isinstance(r, BaseException) else f"snapshot {r}"


def failing_publish(n=None):
    """Context: SnapshotManager.try_commit raises OSError (nothing created) on every call
    (n=None) or on the first n calls: an outage during the publish whose outcome each next
    attempt settles as 'not landed'."""
    import contextlib

    @contextlib.contextmanager
    def cm():
        real = SnapshotManager.try_commit
        left = [n]

        def boom(self, *a, **k):
            if left[0] is None or left[0] > 0:
                if left[0] is not None:
                    left[0] -= 1
                raise OSError("simulated: connection reset during the publish")
            return real(self, *a, **k)
        SnapshotManager.try_commit = boom
        try:
            yield
        finally:
            SnapshotManager.try_commit = real
    return cm()
