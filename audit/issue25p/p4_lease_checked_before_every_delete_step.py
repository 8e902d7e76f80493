"""Idea (A3): the holder's check must run before every delete step of every destructive
operation. Instrumented: LocalFileIO._unlink / _unlink_many / delete_empty_dir and
HeldLease.check log events. At the first delete of table data (not .maintenance/ bookkeeping)
the lease is broken (`lease --break`: a released record above the holder's) *before* that
unlink runs. Whatever the operation deletes afterwards was deleted without any lease; a
check between the break and a delete would have raised StopDeleting, so every such delete
belongs to the step already checked. Printed per operation: the deletes before the first
check (none allowed), and those after the break (the step in flight). A FINDING if an
operation deletes before any check, or keeps deleting after a check that should have
stopped it (the check not being the guard), or if the step in flight spans kinds of files
that the docs name as separate steps (data files, manifests, snapshot files, tags)."""
import os
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests"))
from conftest import SCHEMA, make_rows, write  # noqa: E402

from paimon_commit import Table  # noqa: E402
from paimon_commit.io import local as LOC  # noqa: E402
from paimon_commit.io import base as BASE  # noqa: E402
from paimon_commit import lease as L  # noqa: E402
from paimon_commit.tags import ConsumerManager  # noqa: E402

events = []
state = {"armed": False, "broken": False, "mgr": None, "root": None}
orig_unlink, orig_many, orig_dir = LOC.LocalFileIO._unlink, LOC.LocalFileIO._unlink_many, \
    BASE.FileIO.delete_empty_dir
orig_check = L.HeldLease.check


def data_path(p):
    return state["root"] and p.startswith(state["root"]) and "/.maintenance/" not in p


def on_delete(paths):
    paths = [p for p in paths if data_path(p)]
    if not paths:
        return
    if state["armed"] and not state["broken"]:
        state["broken"] = True
        state["mgr"].break_lease()
        events.append(("BREAK",))
    events.append(("delete", [os.path.relpath(p, state["root"]) for p in paths]))


def _unlink(self, norm):
    on_delete([norm])
    return orig_unlink(self, norm)


def _unlink_many(self, norms):
    on_delete(list(norms))
    return orig_many(self, norms)


def delete_empty_dir(self, path):
    on_delete([path + "/"])
    return orig_dir(self, path)


def check(self):
    events.append(("check",))
    return orig_check(self)


LOC.LocalFileIO._unlink, LOC.LocalFileIO._unlink_many = _unlink, _unlink_many
BASE.FileIO.delete_empty_dir = delete_empty_dir
L.HeldLease.check = check

OLD = 3 * 86400


def setup():
    base = tempfile.mkdtemp(prefix="audit25p-")
    t = Table.create(os.path.join(base, "t"), SCHEMA, partition_keys=["dt", "hr"])
    for i in range(1, 9):
        write(t, make_rows([i], hr=i % 2))
    with t.new_commit() as c:
        c.drop_partitions([{"hr": 0}])
    t.create_tag("t2", 2, time_retained="1 ms")
    t.create_tag("t5", 5, time_retained="1 ms")
    ConsumerManager(t.store.io, t.store.root).write("reader", 9)
    ConsumerManager(t.store.io, t.store.root).write("reader2", 9)
    for name in ("manifest/manifest-orphan-0", "manifest/manifest-orphan-1"):
        p = os.path.join(t.path, name)
        with open(p, "wb") as f:
            f.write(b"x")
        os.utime(p, (time.time() - OLD, time.time() - OLD))
    time.sleep(0.05)
    return t


OPS = {
    "expire-snapshots": lambda t: t.expire_snapshots(retain_max=1, retain_min=1),
    "expire-tags": lambda t: t.expire_tags(),
    "delete-tag": lambda t: t.delete_tag("t2"),
    "rollback": lambda t: t.rollback_to(3),
    "expire-partitions": lambda t: t.expire_partitions(expiration_time="1 d"),
    "remove-orphan-files": lambda t: t.remove_orphan_files(),
    "expire-consumers": lambda t: ConsumerManager(t.store.io, t.store.root).expire(
        int(time.time() * 1000) + 1000, lease=L.LeaseManager(t.store.io, t.path)),
}

problems = []
for name, op in OPS.items():
    t = setup()
    events.clear()
    state.update(armed=True, broken=False, mgr=L.LeaseManager(t.store.io, t.path),
                 root=os.path.realpath(t.path) + "/")
    try:
        r = op(t)
        outcome = f"returned {type(r).__name__}" + (
            f" complete={getattr(r, 'complete', '?')} stopped_by={getattr(r, 'stopped_by', '?')}"
            if hasattr(r, "complete") else "")
    except Exception as e:  # noqa
        outcome = f"raised {type(e).__name__}: {str(e)[:100]}"
    state["armed"] = False
    first_check = next((i for i, e in enumerate(events) if e[0] == "check"), None)
    pre = [e for e in events[:first_check if first_check is not None else len(events)]
           if e[0] == "delete"]
    b = next((i for i, e in enumerate(events) if e[0] == "BREAK"), None)
    after = [p for e in (events[b:] if b is not None else []) if e[0] == "delete" for p in e[1]]
    checks_after = [i for i in range(b or 0, len(events)) if b is not None and events[i][0] == "check"]
    late = [p for i, e in enumerate(events) if b is not None and checks_after and
            i > checks_after[0] and e[0] == "delete" for p in e[1]]
    # (a tag file with its deletion marker is one step: docs/safety.md 5b)
    kinds = sorted({"tag" if p.startswith(".tag-deletions/") else
                    p.split("/")[0] if not p.startswith(("dt=",)) else "data" for p in after})
    print(f"{name}: {outcome}")
    print(f"   checks={sum(1 for e in events if e[0] == 'check')}, deletes before the first check: "
          f"{[p for e in pre for p in e[1]]}")
    print(f"   deleted after the break ({len(after)}): {after[:8]}{' ...' if len(after) > 8 else ''}")
    if pre:
        problems.append(f"{name}: deleted before any check")
    if late:
        problems.append(f"{name}: deleted after a check that followed the break: {late[:4]}")
    if len(kinds) > 1:
        problems.append(f"{name}: the step in flight spans {kinds}")
if problems:
    print("FINDING:", "; ".join(problems))
else:
    print("OK: every operation checked before its first delete, and after the break deleted "
          "only the step in flight")
