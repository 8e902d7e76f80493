"""B3. The refusal `create_tag` / `rollback_to` give on a marked snapshot (tag_ops.py
`_check_no_mark`) still says "...so some of its files may already be deleted; the next snapshot
expiration finishes it". Commit 4ba73d0 took the finishing out: a later run whose retention
keeps the range keeps it, and the mark refuses until a run expires past its end. Case shown:
`expire-snapshots --retain-max 2` passes its re-check, then its first delete step fails for
every path (EROFS for a while: audit 25n n3's setting; the mark stays, nothing is deleted).
The table's own retention is 100: the next expirations keep snapshots 1..4 (right), so the
promised finish never comes, and tags/rollbacks on those intact, readable snapshots are
refused for as long as retention keeps them, with a message that says otherwise."""
import errno, os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import *  # noqa
from paimon_commit.operations import expire as expire_mod
from paimon_commit.operations.tag_ops import TagOperations
from paimon_commit.operations.expire import ExpireSnapshots

root = six_snapshots()
orig_changes, orig_unlink = expire_mod.ExpireSnapshots._changes, os.unlink


def refused(path, *a, **kw):
    raise OSError(errno.EROFS, "Read-only file system", path)


def changes_then_read_only(self, plan):
    out = orig_changes(self, plan)
    os.unlink = refused
    return out


files_before = table_files(root)
expire_mod.ExpireSnapshots._changes = changes_then_read_only
try:
    expirer(Table.open(root), 2).expire()
except Exception as e:  # noqa
    print("the run failed:", type(e).__name__, str(e)[:100])
finally:
    os.unlink = orig_unlink
    expire_mod.ExpireSnapshots._changes = orig_changes
print("files the failed run deleted:", sorted(files_before - table_files(root)),
      "| marks:", markers(root))


def try_tag(name, sid):
    try:
        TagOperations(Table.open(root).store).create_tag(name, sid)
        return "created"
    except ValueError as e:
        return str(e)


first = try_tag("a3", 3)
print("create_tag on snapshot 3:", first)
for i in range(5):                                   # five commits, each expiring (ret. 100)
    write(Table.open(root), 100 + 10 * i)
r = ExpireSnapshots(Table.open(root).store).expire()  # an explicit run, table retention
later = try_tag("b3", 3)
print("after 5 commits and an explicit expiration: snapshots", snapshot_ids(root),
      "| 1..4 read:", [reads_at(root, s)[0] for s in range(1, 5)], "| marks:", len(markers(root)))
print("create_tag on snapshot 3 again:", later[:90], "...")
promise = "the next snapshot expiration finishes it" in first
if promise and later != "created" and all(reads_at(root, s)[0] for s in range(1, 5)):
    print("FINDING: the refusal promises 'the next snapshot expiration finishes it', which no "
          "code does since 4ba73d0; intact, readable snapshots 1..4 stay refused after 6 "
          "expirations (until retention itself reaches snapshot 5)")
else:
    print("OK: the message and the behaviour agree")
