"""x2: a branch (as Paimon Java's createBranch(name, tag) lays it out: the tag's snapshot file
copied to branch/branch-b/snapshot/, the tag file to branch/branch-b/tag/, the schemas) shares
data files with main. Orphan cleanup keeps them (safety.md: every branch is a root). Do main's
other destructive operations? (a) delete_tag of the tag the branch was made from, after main
expired that snapshot; (b) rollback_to on main below the branch's snapshot; (c) snapshot
expiration on main with no tag at all (the branch made from a tag that was later deleted by
Java... here: branch made from snapshot 2 directly, then main expires 2); (d) orphan cleanup
as a control. Verified: every data file the branch's snapshot names exists, and the branch
snapshot reads (our reader on a copy of the branch laid out as a table)."""
import os
import shutil
import time

from common import fresh, prepared, Table, ours
from paimon_commit.reachability import Reachability
from paimon_commit.format.snapshot import Snapshot


def make_branch(path, name, src_file, sid):
    b = os.path.join(path, "branch", f"branch-{name}")
    os.makedirs(os.path.join(b, "snapshot"))
    shutil.copytree(os.path.join(path, "schema"), os.path.join(b, "schema"))
    shutil.copy(src_file, os.path.join(b, "snapshot", f"snapshot-{sid}"))
    with open(os.path.join(b, "snapshot", "LATEST"), "w") as f:
        f.write(str(sid))
    with open(os.path.join(b, "snapshot", "EARLIEST"), "w") as f:
        f.write(str(sid))
    return b


def branch_missing(path, b, sid):
    t = Table.open(path)
    sp = os.path.join(b, "snapshot", f"snapshot-{sid}")
    with open(sp, "rb") as f:
        snap = Snapshot.from_json(f.read(), sp)
    reach = Reachability(t.store)
    try:
        files = reach.live_files(snap, "branch")
    except Exception as e:   # a manifest gone
        return [f"unreadable: {type(e).__name__}: {e}"[:160]]
    return sorted(os.path.basename(p) for p in files if not os.path.exists(p))


def base():
    path, t = fresh({"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "1",
                     "write-only": "true"})
    for i in (10, 20):
        with t.new_commit(commit_user="w") as c:
            c.commit(prepared(t, [i]))
    return path, t


results = {}
# (a) delete_tag of the branch's source tag
path, t = base()
t.create_tag("T", 2)
b = make_branch(path, "b", os.path.join(path, "tag", "tag-T"), 2)
shutil.copytree(os.path.join(path, "tag"), os.path.join(b, "tag"))
t.compact()                                     # 3: rewrites 10, 20
with t.new_commit(commit_user="w") as c:
    c.commit(prepared(t, [30]))                 # 4
t.expire_snapshots(retain_min=1, retain_max=1)
before = branch_missing(path, b, 2)
t.delete_tag("T")
results["a delete_tag"] = (before, branch_missing(path, b, 2))

# (b) rollback_to below the branch's snapshot (branch made from tag T on snapshot 2)
path, t = base()
t.create_tag("T", 2)
b = make_branch(path, "b", os.path.join(path, "tag", "tag-T"), 2)
shutil.copytree(os.path.join(path, "tag"), os.path.join(b, "tag"))
before = branch_missing(path, b, 2)
t.delete_tag("T")                               # snapshot 2 still retained: tag file only
t.rollback_to(1)
results["b rollback_to"] = (before, branch_missing(path, b, 2))

# (c) expiration on main of the branch's snapshot (no tag on main)
path, t = base()
b = make_branch(path, "b", os.path.join(path, "snapshot", "snapshot-2"), 2)
t.compact()
with t.new_commit(commit_user="w") as c:
    c.commit(prepared(t, [30]))
before = branch_missing(path, b, 2)
t.expire_snapshots(retain_min=1, retain_max=1)
results["c expire"] = (before, branch_missing(path, b, 2))

# (e) automatic: tag T with tag.default-time-retained, expired by a later commit's
# post-commit tag expiration (no user action)
path, t = base()
Table.open(path, options={"tag.default-time-retained": "1 ms"}).create_tag("T", 2)
b = make_branch(path, "b", os.path.join(path, "tag", "tag-T"), 2)
shutil.copytree(os.path.join(path, "tag"), os.path.join(b, "tag"))
t.compact()
with t.new_commit(commit_user="w") as c:
    c.commit(prepared(t, [30]))
t.expire_snapshots(retain_min=1, retain_max=1)
before = branch_missing(path, b, 2)
time.sleep(0.01)
t2 = Table.open(path, options={"write-only": "false", "tag.default-time-retained": "1 ms"})
with t2.new_commit(commit_user="w") as c:
    sid = c.commit(prepared(t2, [40]))
    c.wait_for_maintenance(30)
    err = c.maintenance_error
print(f"e: commit -> {sid}, maintenance error {err!r}, tags now {[g.name for g in t2.tags()]}")
results["e post-commit tag expiration"] = (before, branch_missing(path, b, 2))

# (d) rollback_to below a branch made from the snapshot itself
path, t = base()
b = make_branch(path, "b", os.path.join(path, "snapshot", "snapshot-2"), 2)
t.rollback_to(1)
mid = branch_missing(path, b, 2)
results["d rollback_to(1) below a branch made from snapshot 2"] = ([], mid)

bad = []
for k, (b0, b1) in results.items():
    print(f"{k}: branch files missing before {b0}, after {b1}")
    if b1 and not b0:
        bad.append(k)
if bad:
    print(f"FINDING: main's {', '.join(bad)} deleted files a branch's snapshot reads "
          "(branches are roots only for orphan cleanup and abort)")
else:
    print("OK")
