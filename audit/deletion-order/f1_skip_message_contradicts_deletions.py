"""Finding 1 (wrong report): when what a retained root uses cannot be read, expiration reports
"...; no manifest, index or statistics file is deleted, only the manifest lists nothing
retained names" -- and in the same run deletes the expiring snapshots' index manifests and
statistics files (the new _unnamed_metadata). The report a user (or their alerting) reads
says the opposite of what happened on disk.

Run: PYTHONPATH=. .venv/bin/python audit/f1_skip_message_contradicts_deletions.py
"""
import os

from common import files, new_table
from paimon_commit import Table
from paimon_commit.operations.expire import ExpireConfig, ExpireSnapshots
from paimon_commit.store import FileStore

path = new_table(snapshots=12)
t = Table.open(path)
t.create_tag("t6", 6)
# Damage the tag (its base list is gone): what the tag uses cannot be read.
os.unlink(t.store.manifests.path(t.store.snapshots.snapshot(6).base_manifest_list))
before = files(path)
r = ExpireSnapshots(FileStore.open(path),
                    ExpireConfig(retain_min=3, time_retained_ms=0)).expire()
gone = before - files(path)
msg = [s for s in r.skipped if "no manifest, index or statistics file is deleted" in s]
stats_gone = sorted(f for f in gone if f.startswith("statistics/"))
index_manifests_gone = sorted(f for f in gone if os.path.basename(f).startswith("index-manifest-"))
print("expired:", r.expired_ids)
print("report :", msg[0] if msg else r.skipped)
print("statistics files deleted in the same run:", len(stats_gone), stats_gone[:3])
print("index manifests deleted in the same run :", len(index_manifests_gone),
      index_manifests_gone[:2])
if msg and stats_gone and index_manifests_gone:
    print("FINDING REPRODUCED: the skip message says no index or statistics file is deleted; "
          f"{len(stats_gone)} statistics files and {len(index_manifests_gone)} index manifests were.")
else:
    print("NO FINDING: the skip message names what the run deletes.")
