"""aa1: audit 25l's l5 with real threads. An expiration (retain 2: snapshots 1 and 2 expire;
1's data file is used by 1 only) runs in thread A and is paused (threading events) at each
of its steps: right after its re-check (`_unchanged`) and before each delete step
(`Deleter.files`/`in_order` per kind). At each pause thread B calls create_tag("T", s) for
s in (1, 2, 3), with lease_settings(wait_s=0.2), and is "killed" (a BaseException, take-back
disabled) at each of its storage calls: the snapshot read, the readability check, right
after the tag file's PUT, the marks' listing, the snapshot re-read; plus once not killed.
Then the reverse: create_tag in thread B paused (holding the lease) at each of those points
and killed there, while thread A's expiration waits (wait 0.2 s: refused) and is then rerun.
Expected: every create_tag beside the paused expiration is refused with LeaseHeldError and
writes nothing; after everything, every tag file on disk reads (read_arrow(tag=...)), and
every retained snapshot reads."""
import os
import sys
import threading
import time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import *  # noqa
from paimon_commit.errors import LeaseHeldError
from paimon_commit.expiring import ExpiringMarkers
from paimon_commit.io import deletion as D
from paimon_commit.lease import lease_settings
from paimon_commit.operations.expire import ExpireSnapshots
from paimon_commit.operations.tag_ops import TagOperations
from paimon_commit.snapshots import SnapshotManager
from paimon_commit.tags import TagManager

KILL_POINTS = ["none", "snapshot-read", "readable", "after-put", "marks", "re-read"]
orig = {"files": D.Deleter.files, "in_order": D.Deleter.in_order,
        "unchanged": ExpireSnapshots._unchanged, "readable": TagOperations._check_readable,
        "create": TagManager.create, "cov": ExpiringMarkers.covering_snapshot,
        "try": SnapshotManager.try_snapshot, "latest": SnapshotManager.latest_snapshot,
        "back": TagOperations._take_back}
local = threading.local()   # .role: "expire" / "tag"; .kill; .pause_at; .pause


def restore():
    D.Deleter.files, D.Deleter.in_order = orig["files"], orig["in_order"]
    ExpireSnapshots._unchanged = orig["unchanged"]
    TagOperations._check_readable = orig["readable"]
    TagManager.create = orig["create"]
    ExpiringMarkers.covering_snapshot = orig["cov"]
    SnapshotManager.try_snapshot = orig["try"]
    SnapshotManager.latest_snapshot = orig["latest"]
    TagOperations._take_back = orig["back"]


def point(name):
    """In the create_tag thread: pause and/or die at `name`."""
    if getattr(local, "role", None) != "tag":
        return
    if getattr(local, "pause_at", None) == name:
        local.pause.hit()
    if getattr(local, "kill", None) == name:
        raise Killed(name)


def install():
    def files(self, kind, paths, must_finish=False):
        if getattr(local, "role", None) == "expire" and local.pause_at == f"files:{kind}":
            local.pause.hit()
        return orig["files"](self, kind, paths, must_finish=must_finish)

    def in_order(self, kind, paths, *a, **k):
        if getattr(local, "role", None) == "expire" and local.pause_at == f"in_order:{kind}":
            local.pause.hit()
        return orig["in_order"](self, kind, paths, *a, **k)

    def unchanged(self, plan):
        ok = orig["unchanged"](self, plan)
        if getattr(local, "role", None) == "expire" and local.pause_at == "rechecked":
            local.pause.hit()
        return ok

    def readable(self, snap, what):
        point("readable")
        return orig["readable"](self, snap, what)

    def create(self, tag):
        r = orig["create"](self, tag)
        point("after-put")
        return r

    def cov(self, sid, sm):
        point("marks")
        return orig["cov"](self, sid, sm)

    def try_snapshot(self, sid, *a, **k):
        if getattr(local, "in_check", False):
            point("re-read")
        else:
            point("snapshot-read")
        return orig["try"](self, sid, *a, **k)

    orig_cne = TagOperations._check_not_expiring

    def back(self, tag):
        if getattr(local, "kill", "none") != "none":
            return None   # a kill runs no handler
        return orig["back"](self, tag)
    D.Deleter.files, D.Deleter.in_order = files, in_order
    ExpireSnapshots._unchanged = unchanged
    TagOperations._check_readable = readable
    TagManager.create = create
    ExpiringMarkers.covering_snapshot = cov
    SnapshotManager.try_snapshot = try_snapshot
    TagOperations._take_back = back
    return orig_cne


def discover_expire_steps():
    root = four_snapshots()
    seen = []
    of, oi = D.Deleter.files, D.Deleter.in_order

    def files(self, kind, paths, must_finish=False):
        seen.append(f"files:{kind}")
        return of(self, kind, paths, must_finish=must_finish)

    def in_order(self, kind, paths, *a, **k):
        seen.append(f"in_order:{kind}")
        return oi(self, kind, paths, *a, **k)
    D.Deleter.files, D.Deleter.in_order = files, in_order
    try:
        r = expirer(Table.open(root), 2).expire()
    finally:
        D.Deleter.files, D.Deleter.in_order = of, oi
    assert r.expired_ids == [1, 2], r.expired_ids
    return ["rechecked"] + list(dict.fromkeys(seen))


def check_all(root, label, problems):
    for n, (ok, what) in all_tags_read(root).items():
        if not ok:
            problems.append(f"{label}: tag {n} on disk does not read ({what})")
    from paimon_commit.snapshots import SnapshotManager as SM
    t = Table.open(root)
    for sid in t.store.snapshots.list_snapshot_ids():
        try:
            t.read_arrow(snapshot_id=sid)
        except Exception as e:  # noqa
            problems.append(f"{label}: snapshot {sid} does not read ({type(e).__name__})")


steps = discover_expire_steps()
print("expiration steps:", steps)
problems, runs = [], 0
orig_cne = install()


def cne(self, snap, what):
    local.in_check = True
    try:
        return orig_cne(self, snap, what)
    finally:
        local.in_check = False
TagOperations._check_not_expiring = cne
try:
    # Part 1: create_tag beside an expiration paused at each step.
    for step in steps:
        for sid in (1,):   # (refused at the lease, before any kill point: s 2, 3 alike)
            for kill in KILL_POINTS:
                root = four_snapshots()
                pause = Pause()
                out = {}

                def run_expire():
                    local.role, local.pause_at, local.pause = "expire", step, pause
                    try:
                        out["expire"] = expirer(Table.open(root), 2).expire()
                    except BaseException as e:  # noqa
                        out["expire"] = e
                    finally:
                        pause.reached.set()
                a = threading.Thread(target=run_expire)
                a.start()
                pause.reached.wait(30)
                local.role, local.kill, local.pause_at = "tag", kill, None
                t0 = time.monotonic()
                try:
                    with lease_settings(wait_s=0.2):
                        TagOperations(Table.open(root).store).create_tag("T", sid)
                    res = "created"
                except LeaseHeldError:
                    res = "LeaseHeldError"
                except Killed as e:
                    res = f"killed:{e}"
                except Exception as e:  # noqa
                    res = f"{type(e).__name__}: {e}"[:120]
                took = time.monotonic() - t0
                local.role = None
                pause.go.set()
                a.join(60)
                runs += 1
                label = f"step={step} s={sid} kill={kill}"
                if res != "LeaseHeldError":
                    problems.append(f"{label}: create_tag {res}")
                if took > 5:
                    problems.append(f"{label}: create_tag took {took:.1f} s (wait 0.2 s)")
                if "T" in tag_names(root):
                    problems.append(f"{label}: a tag file was written ({res})")
                if isinstance(out.get("expire"), BaseException) or \
                        out["expire"].expired_ids != [1, 2]:
                    problems.append(f"{label}: expiration {out.get('expire')!r}"[:200])
                check_all(root, label, problems)
    print("part 1 runs:", runs, "problems so far:", len(problems))
    # Part 2: create_tag paused (holding the lease) at each point and killed there; an
    # expiration meanwhile (refused after 0.2 s), then an expiration after the kill.
    for at in KILL_POINTS[1:]:
        for sid in (1, 2, 3):
            root = four_snapshots()
            pause = Pause()
            out = {}

            def run_tag():
                local.role, local.kill, local.pause_at, local.pause = "tag", at, at, pause
                try:
                    TagOperations(Table.open(root).store).create_tag("T", sid)
                    out["tag"] = "created"
                except BaseException as e:  # noqa
                    out["tag"] = f"{type(e).__name__}:{e}"
                finally:
                    local.role = None
                    pause.reached.set()
            b = threading.Thread(target=run_tag)
            b.start()
            pause.reached.wait(30)
            try:
                with lease_settings(wait_s=0.2):
                    r = expirer(Table.open(root), 2).expire()
                mid = f"expired {r.expired_ids}"
            except LeaseHeldError:
                mid = "LeaseHeldError"
            pause.go.set()
            b.join(60)
            r2 = expirer(Table.open(root), 2).expire()
            runs += 1
            label = f"tag paused+killed at {at} s={sid}"
            if mid != "LeaseHeldError":
                problems.append(f"{label}: expiration beside the paused create_tag: {mid}")
            check_all(root, label, problems)
            kept = tag_names(root)
            print(label, "->", out.get("tag"), "| beside:", mid, "| after:",
                  r2.expired_ids, "tags", kept)
finally:
    restore()
print("runs:", runs)
for p in problems[:20]:
    print(" -", p)
print("OK" if not problems else f"FINDING: {len(problems)} problem(s): {problems[0]}")
