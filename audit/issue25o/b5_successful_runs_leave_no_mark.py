"""B5. Can a normal, successful run leave a mark for good? Runs checked, each on a fresh table,
marks listed after: (1) an explicit run; (2) a run chunked into several plans (FIRST_CHUNK
lowered to 2; each chunk writes and removes its own mark); (3) a run stopped by max_deletes
(snapshot.expire.limit) part-way, then a rerun; (4) a decoupled changelog lifecycle (expiring
snapshots written to changelog/ first); (5) post-commit expiration after every commit; (6) a
run killed after its data step (its mark stays, refusing), then a successful run past its
end: the stale mark goes."""
import os, sys, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import *  # noqa
from paimon_commit.operations import expire as expire_mod
from paimon_commit.operations.expire import ExpireConfig, ExpireSnapshots

res = {}
FAR = lambda: time.time() + 10 * 365 * 86400  # noqa: E731


def run(root, retain, **kw):
    cfg = ExpireConfig.from_options(Table.open(root).store.options, retain_min=retain,
                                    retain_max=retain, **kw)
    return ExpireSnapshots(Table.open(root).store, cfg, clock=FAR).expire()


root = six_snapshots("p1"); run(root, 2); res["explicit"] = (snapshot_ids(root), markers(root))
root = six_snapshots("p2")
saved = expire_mod.FIRST_CHUNK
expire_mod.FIRST_CHUNK = 2
try:
    r = run(root, 1)
finally:
    expire_mod.FIRST_CHUNK = saved
res["chunked"] = (snapshot_ids(root), markers(root))
root = six_snapshots("p3"); run(root, 1, max_deletes=2)
m3 = markers(root); run(root, 1); res["max_deletes then rerun"] = (snapshot_ids(root), m3 + markers(root))
root = six_snapshots("p4", {"changelog.num-retained.max": "50", "changelog.num-retained.min": "50"})
run(root, 2)
res["decoupled"] = (snapshot_ids(root), markers(root),
                    sorted(os.listdir(os.path.join(root, "changelog"))) if os.path.isdir(
                        os.path.join(root, "changelog")) else [])
root = new_table("p5", {"snapshot.num-retained.min": "2", "snapshot.num-retained.max": "2",
                        "snapshot.time-retained": "1 ms"}).store.root
for i in range(6):
    write(Table.open(root), 10 * i); time.sleep(0.01)
res["post-commit"] = (snapshot_ids(root), markers(root))
root = new_table("p6", KEEP).store.root           # overwrites: expiring deletes data files
for i in range(6):
    overwrite(Table.open(root), 10 * i)
expire_killed_after_data_step(Table.open(root), 4)   # range 1..2, end 3: killed
m6 = markers(root)
run(root, 2)                                          # a successful run past end 3
res["killed, then a run past its end"] = (snapshot_ids(root), m6, markers(root))
for k, v in res.items():
    print(f"{k}: {v}")
left = [k for k, v in res.items() if v[-1 if k != "decoupled" else 1]]
print("FINDING: marks left by successful runs: " + ", ".join(left) if left else
      "OK: no successful run leaves a mark; a stale mark goes with the first run past its end")
