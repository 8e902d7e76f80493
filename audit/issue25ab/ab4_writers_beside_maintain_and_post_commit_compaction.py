"""ab4: two stream writers (users A and B, commit identifiers, one commit object each; B
replays every previous micro-batch through filter_and_commit, as a restarted sink does) with
post-commit compaction (`compaction.post-commit.enabled`, min 2 files) and post-commit
expiration (snapshots: 3, long-lived changelogs: 8), while the main thread runs
`maintain_table(compact=True, orphans=True)` in a loop, creates tags, and a consumer
(consumer.expiration-time) is expired. Then: the latest snapshot holds every row exactly once,
every retained snapshot, tag and changelog reads (check), and a last expiration + orphan
cleanup of the aged tree keeps all of it."""
import json
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import *  # noqa
import pyarrow as pa
from paimon_commit.warehouse import maintain_table

OPTS = {"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "3",
        "snapshot.time-retained": "1 ms", "changelog.num-retained.min": "8",
        "changelog.num-retained.max": "8", "compaction.post-commit.enabled": "true",
        "compaction.min.file-num": "2", "consumer.expiration-time": "1 h"}
N = 12
t = new_table("w", OPTS)
root = t.store.root
os.makedirs(os.path.join(root, "consumer"), exist_ok=True)
with open(os.path.join(root, "consumer", "consumer-old"), "w") as f:
    json.dump({"nextSnapshot": 1}, f)
os.utime(os.path.join(root, "consumer", "consumer-old"), (time.time() - 7200,) * 2)
errors, committed = [], {"A": [], "B": []}


def msgs(start):
    w = Table.open(root).new_writer()
    w.write_arrow(pa.table({"id": [start, start + 1], "v": ["x", "y"]}, schema=SCHEMA))
    return w.prepare_commit()


def writer(user, base):
    try:
        with Table.open(root).new_commit(commit_user=user) as c:
            prev = None
            for i in range(N):
                m = msgs(base + 10 * i)
                c.commit(m, commit_identifier=i)
                committed[user] += [base + 10 * i, base + 10 * i + 1]
                if user == "B" and prev is not None:
                    left = c.filter_and_commit({i - 1: prev, i: m})   # a replay: both done
                    if left:
                        errors.append(f"B replay of {i - 1},{i} committed again: {left}")
                prev = m
            c.wait_for_maintenance(60)
            if c.maintenance_error:
                errors.append(f"{user} maintenance error {c.maintenance_error!r}")
    except Exception as e:  # noqa
        errors.append(f"{user}: {type(e).__name__}: {str(e)[:200]}")


ths = [threading.Thread(target=writer, args=("A", 0)), threading.Thread(target=writer, args=("B", 5))]
for th in ths:
    th.start()
maint, tags = [], []
k = 0
while any(th.is_alive() for th in ths):
    r = maintain_table(root, orphans=True, compact=True)
    maint.append(r.status if r.status == "ok" else f"{r.status}: {str(r.reason)[:100]}")
    try:
        Table.open(root).create_tag(f"T{k}")
        tags.append(f"T{k}")
    except Exception as e:  # noqa
        maint.append(f"tag: {type(e).__name__}: {str(e)[:80]}")
    k += 1
    time.sleep(0.05)
for th in ths:
    th.join()
problems = list(errors)
want = sorted(committed["A"] + committed["B"])
got = ids(root)
if got != want:
    problems.append(f"latest {got} != {want} (dupes {dupes(got) if isinstance(got, list) else '-'})")
chk = Table.open(root).check()
if chk.problems:
    problems.append(f"check: {[str(p)[:140] for p in chk.problems][:3]}")
for tg in tags:
    if isinstance(ids(root, tag=tg), str):
        problems.append(f"tag {tg}: {ids(root, tag=tg)}")
if os.path.exists(os.path.join(root, "consumer", "consumer-old")):
    problems.append("stale consumer not expired")
age_all(root)
r = maintain_table(root, orphans=True, compact=True)
chk = Table.open(root).check()
if ids(root) != want or chk.problems:
    problems.append(f"after aged maintain: {ids(root) == want}, {[str(p)[:140] for p in chk.problems][:3]}")
print("maintain runs:", len(maint), "statuses:", sorted(set(maint))[:6], "tags:", len(tags),
      "snapshots:", Table.open(root).store.snapshots.list_snapshot_ids()[-3:],
      "changelogs:", len(os.listdir(os.path.join(root, "changelog"))) if os.path.isdir(os.path.join(root, "changelog")) else 0)
print(f"FINDING: {problems}" if problems else "OK")
