"""create_tag killed between its tag file's PUT and its listing of the markers leaves a tag
on a snapshot an expiration is deleting. The two-sided argument (expiring.py) needs create_tag
to reach its listing and take the tag back; a kill there (SIGKILL, OOM, a lost pod) leaves
the tag, and the expiration whose re-check came before the tag deletes its data. The table
ends with a tag that does not read (`check` names it). docs/safety.md: "a tag is never left
on a snapshot whose data an expiration deletes, running or stopped half-way"."""
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import *  # noqa
from paimon_commit.expiring import ExpiringMarkers
from paimon_commit.operations.expire import ExpireSnapshots
from paimon_commit.operations.tag_ops import TagOperations

t = new_table("t", KEEP)
root = t.store.root
write(t, 0)                                   # 1: A
overwrite(Table.open(root), 100)              # 2: B (A deleted by this commit)
write(Table.open(root), 10)                   # 3
write(Table.open(root), 20)                   # 4

orig_unchanged, orig_cov, orig_back = (ExpireSnapshots._unchanged, ExpiringMarkers.covering,
                                       TagOperations._take_back)
state = {}


def killed_cov(self, sid, read_snapshot):
    raise Killed("create_tag killed after its tag file was written")


def unchanged(self, plan):
    ok = orig_unchanged(self, plan)
    if ok and not state:
        # Another process: create_tag("T", 1), killed right after its tag file's PUT (a kill
        # runs no handler: no take-back).
        ExpiringMarkers.covering, TagOperations._take_back = killed_cov, lambda self, tag: None
        try:
            Table.open(root).create_tag("T", 1)
            state["tag"] = "created"
        except Killed as e:
            state["tag"] = f"killed ({e})"
        finally:
            ExpiringMarkers.covering, TagOperations._take_back = orig_cov, orig_back
    return ok


ExpireSnapshots._unchanged = unchanged
try:
    r = expirer(Table.open(root), 2).expire()
finally:
    ExpireSnapshots._unchanged = orig_unchanged
print("create_tag:", state.get("tag"), "; expire expired", r.expired_ids)
from paimon_commit.operations.tag_ops import tag_manager
tags = {tg.name: tg.id for tg in tag_manager(Table.open(root).store).tags()}
print("tags:", tags, "markers:", markers(root))
if "T" not in tags:
    print("OK: no tag left")
    sys.exit(0)
ok, what = tag_reads(root, "T")
print("tag T reads:", what)
rc, probs = check_problems(root)
print("check:", rc, str(probs)[:200].replace(root, "<t>"))
print("FINDING: a create_tag killed between its PUT and its marker listing left tag T on "
      "snapshot 1, whose data file the running expiration then deleted: the tag does not read"
      if not ok else "OK: the tag reads")
