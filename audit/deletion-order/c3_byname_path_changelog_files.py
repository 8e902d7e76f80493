"""Check (no loss; an untested, undocumented behaviour): in the by-name path (a damaged tag)
expiration now deletes the expiring snapshots' changelog files (their changelog list is
named by nothing retained), where 0f76a62 deleted none. The damaged tag's own changelog
file (its changelog list is named by the tag) stays, and retained snapshots read.

Run: PYTHONPATH=. .venv/bin/python audit/c3_byname_path_changelog_files.py
"""
import os

from common import new_table
from invariants import assert_intact
from operations.test_changelog import add_changelog
from paimon_commit import Table
from paimon_commit.operations.expire import ExpireConfig, ExpireSnapshots
from paimon_commit.store import FileStore

path = new_table(snapshots=12, index=False)
t = Table.open(path)
cl = {sid: add_changelog(Table.open(path), sid) for sid in range(1, 13)}
t = Table.open(path)
t.create_tag("t6", 6)
tag_base = t.store.manifests.path(t.store.snapshots.snapshot(6).base_manifest_list)
with open(tag_base, "rb") as f:
    backup = f.read()
os.unlink(tag_base)
r = ExpireSnapshots(FileStore.open(path), ExpireConfig(retain_min=3, time_retained_ms=0)).expire()
gone = sorted(sid for sid, p in cl.items() if not os.path.exists(p))
print("expired", r.expired_ids, "| changelog files deleted for snapshots", gone)
assert 6 not in gone and not any(s >= 10 for s in gone)
with open(tag_base, "wb") as f:
    f.write(backup)
assert_intact(path)
print("NO FINDING (the tag's changelog file and the retained ones stay); deleted:", len(gone))
