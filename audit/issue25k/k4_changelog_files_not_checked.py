"""rollback_to's data check reads the target's live data files only, and _check_readable
its base/delta lists and index manifest: neither looks at its changelog (the changelog list,
its manifests, the changelog files). An expiration deletes data AND changelog files in its
first step (changelog files go with their snapshot when the lifecycle is not decoupled).
Stopped after that step (here: deleting a manifest fails, the run reports it and keeps the
metadata for the next run; a kill leaves the same), the expired snapshots read their lists
and data but their changelog files are gone. rollback_to one of them succeeds, deletes the
intact newer snapshots, and leaves a latest snapshot whose changelog (what a streaming reader
of the table reads for it) names missing files; `check` reports it."""
import json, os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import *  # noqa
from operations.test_changelog import add_changelog

t = new_table("t", dict(KEEP, **{"write-only": "true"}))
root = t.store.root
sf = os.path.join(root, "schema", "schema-0")
doc = json.load(open(sf)); doc["options"]["changelog-producer"] = "input"
json.dump(doc, open(sf, "w"))           # (as tests/operations/test_changelog.py cl_table does)
cl = {}
for i in range(4):
    write(Table.open(root), 10 * i)
    cl[i + 1] = add_changelog(Table.open(root), i + 1)
print("check before:", check_problems(root))

t = Table.open(root)
io = t.store.io
real_dq = io.delete_quietly
io.delete_quietly = lambda p: False if "/manifest/manifest-" in p and "list" not in p \
    else real_dq(p)
io.delete_files = lambda ps: [p for p in ps if io.delete_quietly(p)]
r = expirer(t, 2).expire()
print("expire:", r.expired_ids, r.skipped[:1])
print("changelog file of snapshot 2 still there:", os.path.exists(cl[2]),
      "snapshot-2 still there:", os.path.exists(os.path.join(root, "snapshot", "snapshot-2")))

found = False
try:
    res = Table.open(root).rollback_to(snapshot_id=2)
    latest = Table.open(root).latest_snapshot()
    print("rollback_to(2) succeeded: deleted", res.deleted_snapshots, "latest now", latest.id)
    rc, probs = check_problems(root)
    print("check after rollback:", rc, [str(p)[:220] for p in probs] if isinstance(probs, list)
          else probs)
    if latest.id == 2 and not os.path.exists(cl[2]):
        found = True
        print(f"FINDING: rollback_to made snapshot 2 the latest although its changelog file "
              f"{os.path.relpath(cl[2], root)} is gone (deleted intact snapshots "
              f"{res.deleted_snapshots})")
except ValueError as e:
    print("refused:", e)
if not found:
    print("OK: the target whose changelog files are gone was refused (or they were there)")
