"""Automatic tags (post-commit tag.automatic-creation, tag_lifecycle -> create_tag_into) do
not consult the expiration markers. After an expiration stopped after its data step (its
marker covers snapshot 1, whose data file is gone; create_tag("x", 1) is refused for exactly
that), the next commit's post-commit maintenance walks the snapshots from the earliest (no
automatic tag yet) and tags half-expired snapshot 1: an automatic tag that does not read,
created under the lease, in the step that runs before the expiration that would finish the
range."""
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import *  # noqa

t = new_table("t", KEEP)
root = t.store.root
write(t, 0)                                   # 1: A
overwrite(Table.open(root), 100)              # 2: B (A deleted by this commit)
write(Table.open(root), 10)                   # 3
write(Table.open(root), 20)                   # 4
expire_killed_after_data_step(Table.open(root), 2)   # range 1..2 (end 3): A deleted, killed
print("markers:", markers(root))
try:
    Table.open(root).create_tag("manual", 1)
    print("create_tag on 1: created")
except ValueError as e:
    print("create_tag on 1 refused (as it should):", str(e)[:100])
# Automatic daily tags switched on (or: a writer restarting with no automatic tag left).
edit_schema_options(root, **{"tag.automatic-creation": "process-time",
                             "tag.creation-period": "daily"})
write(Table.open(root), 30)                   # 5, with post-commit maintenance
tags = {tg.name: tg.id for tg in Table.open(root).store.tags.tags()} \
    if hasattr(Table.open(root).store, "tags") else None
if tags is None:
    from paimon_commit.operations.tag_ops import tag_manager
    tags = {tg.name: tg.id for tg in tag_manager(Table.open(root).store).tags()}
print("tags:", tags, "markers:", markers(root))
bad = [n for n, sid in tags.items() if sid == 1]
if not bad:
    print("OK: no automatic tag on half-expired snapshot 1")
    sys.exit(0)
ok, what = tag_reads(root, bad[0])
print(f"tag {bad[0]} on snapshot 1; reading it:", what)
print("FINDING: post-commit automatic tag creation tagged snapshot 1, which an expiration "
      "marker covers and whose data file is gone: the tag does not read" if not ok else
      "OK: the tag reads")
