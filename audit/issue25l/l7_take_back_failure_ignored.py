"""create_tag's take-back ignores the outcome of its delete: TagManager.delete_tag_file ->
FileIO.delete_quietly returns False when the delete fails (a throttled or failing store:
"False if already gone or the delete failed (logged)"), and `_take_back` neither checks it nor
looks again. The refusal then says "... Nothing was changed" while tag x stays on the
half-expired snapshot (it does not read; a later rollback_to(tag='x') skips the marker check,
see l3)."""
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import *  # noqa
from paimon_commit.io.base import FileIO

t = new_table("t", KEEP)
root = t.store.root
write(t, 0)                                   # 1: A
overwrite(Table.open(root), 100)              # 2: B (A deleted by this commit)
write(Table.open(root), 10)                   # 3
write(Table.open(root), 20)                   # 4
expire_killed_after_data_step(Table.open(root), 2)   # marker expiring-1-3, A gone
orig = FileIO.delete_quietly


def failing(self, path):
    if "/tag/" in path:
        return False          # the store refused this DELETE (503, 403, ...): logged, False
    return orig(self, path)


FileIO.delete_quietly = failing
try:
    Table.open(root).create_tag("x", 1)
    print("create_tag: created")
except ValueError as e:
    print("create_tag refused:", str(e)[-120:])
finally:
    FileIO.delete_quietly = orig
from paimon_commit.operations.tag_ops import tag_manager
tags = {tg.name: tg.id for tg in tag_manager(Table.open(root).store).tags()}
print("tags now:", tags)
if "x" in tags:
    ok, what = tag_reads(root, "x")
    print("tag x reads:", what)
    print("FINDING: create_tag said 'Nothing was changed' but its tag x stays on half-expired "
          "snapshot 1 (the take-back's failed delete is ignored)")
else:
    print("OK: no tag left")
