"""Set-up for audit 25u scripts: issue25t's common.py (which loads issue25s's) plus a
faithful "late PUT" model and helpers.

Late PUT: on an object store, `try_create_atomic` checks the base precondition on the client
and then sends a conditional PUT (If-None-Match). If the reply is lost the client sees an
OSError, but the server may still complete the PUT later; it then lands whenever
`snapshot-N` is absent, whatever the base is by then. `LatePut` intercepts
`SnapshotManager.try_commit` for one commit user, raises OSError without creating, and keeps
the snapshot; `land(i)` creates it raw (create-if-absent, no base precondition), as the store
would. Other users' commits (compaction, expiration, other writers) pass through."""
import contextlib
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
import importlib.util  # noqa: E402
_spec = importlib.util.spec_from_file_location(
    "common25t", os.path.join(os.path.dirname(HERE), "issue25t", "common.py"))
_c = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_c)
globals().update({k: v for k, v in vars(_c).items() if not k.startswith("__")})
from paimon_commit.format.manifest import FileKind  # noqa: E402

OPTS = {"commit.max-retries": "5", "commit.min-retry-wait": "1 ms",
        "commit.max-retry-wait": "2 ms", "snapshot.num-retained.min": "1"}


class LatePut:
    """Context: try_commit of snapshots by `user` is intercepted. `plan` maps the n-th
    intercepted call (1-based) to an action: 'lost' (raise OSError, create nothing, keep the
    snapshot for a later land()), 'after' (create, then raise OSError: reply lost after the
    effect), or a callable run before the real call (a hook: another writer, a compaction, a
    late landing...). Calls not in plan run normally."""

    def __init__(self, user, plan):
        self.user, self.plan = user, dict(plan)
        self.held = []       # (manager, snapshot) of each 'lost' PUT
        self.calls = 0
        self.log = []

    def __enter__(self):
        self.real = real = SnapshotManager.try_commit
        me = self

        def tc(sm, snapshot, *a, **k):
            if snapshot.commit_user != me.user:
                return real(sm, snapshot, *a, **k)
            me.calls += 1
            act = me.plan.get(me.calls)
            if act == "lost":
                me.held.append((sm, snapshot))
                me.log.append(f"call {me.calls}: snapshot {snapshot.id} PUT in flight, OSError")
                raise OSError("simulated: read timeout, the conditional PUT may still land")
            if act == "after":
                r = real(sm, snapshot, *a, **k)
                me.log.append(f"call {me.calls}: snapshot {snapshot.id} created={r}, OSError")
                raise OSError("simulated: reply lost after the create")
            if callable(act):
                act(snapshot)
            r = real(sm, snapshot, *a, **k)
            me.log.append(f"call {me.calls}: snapshot {snapshot.id} -> {r}")
            return r
        SnapshotManager.try_commit = tc
        return self

    def __exit__(self, *exc):
        SnapshotManager.try_commit = self.real
        return False

    def land(self, i=0):
        """The i-th held PUT completes on the store now (create-if-absent, no precondition)."""
        sm, s = self.held[i]
        ok = sm.io.try_create_atomic(sm.snapshot_path(s.id), s.to_json())
        self.log.append(f"late PUT of snapshot {s.id} lands: {ok}")
        return ok


def adders(path, names):
    """{file name: [snapshot ids whose delta ADDs it]} over the retained snapshots."""
    t = Table.open(str(path))
    store = t.store
    out = {n: [] for n in names}
    for s in store.snapshots.snapshots():
        try:
            for e in store.delta_entries(s):
                if e.kind == FileKind.ADD and e.file.file_name in out:
                    out[e.file.file_name].append(s.id)
        except FileNotFoundError:
            pass
    return out


def names(msgs):
    return [f.file_name for m in msgs for f in m.new_files]


def call(fn):
    """fn()'s snapshot id / result, or the exception raised (its type and message head)."""
    try:
        r = fn()
        return getattr(r, "snapshot_id", r)
    except BaseException as e:  # noqa: BLE001
        return e


def show(r):
    if isinstance(r, str):
        return r
    if isinstance(r, BaseException):
        return f"{type(r).__name__}: {str(r)[:160]}"
    return f"snapshot {r}"


def latest_rows(path):
    """(ours, pypaimon) ids of the latest snapshot."""
    return ids_read(path)
