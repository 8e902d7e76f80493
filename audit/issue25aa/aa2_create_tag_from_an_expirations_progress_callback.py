"""aa2: create_tag re-entering the lease. The lease is re-entrant per thread and table, so a
create_tag called on the thread that holds it (here: from the progress callback of an
explicit expiration, ExpireSnapshots(progress=...), in its DELETING phase, after the data
step) joins the expiration's lease instead of waiting for it: the serialisation 47bc797
relies on ("no expiration of ours is in its delete phase while a tag is created") does not
hold there. (a) create_tag("T", 1) completes normally: the marks' listing finds the
expiration's mark, takes the tag back (refusal swallowed by `emit`). (b) The same create_tag
dies right after its tag file's PUT (Killed, a BaseException; a kill runs no take-back):
the whole process dies (the expiration too, `emit` catches Exception only). What is left:
tag T on snapshot 1, whose data file the expiration deleted before the callback."""
import os
import sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import *  # noqa
from paimon_commit.operations.expire import ExpireConfig, ExpireSnapshots
from paimon_commit.operations.tag_ops import TagOperations
from paimon_commit.tags import TagManager


def run(kill):
    root = four_snapshots()
    t = Table.open(root)
    calls = []
    orig_create, orig_back = TagManager.create, TagOperations._take_back

    def create(self, tag):
        r = orig_create(self, tag)
        if kill:
            raise Killed("after the tag file's PUT")
        return r

    def cb(ev):
        if ev.phase == "deleting" and not calls:
            calls.append(ev.done)
            TagOperations(Table.open(root).store).create_tag("T", 1)
    TagManager.create = create
    if kill:
        TagOperations._take_back = lambda self, tag: None
    try:
        e = ExpireSnapshots(t.store, ExpireConfig.from_options(
            t.store.options, retain_min=2, retain_max=2), progress=cb)
        try:
            r = e.expire()
            res = f"expired {r.expired_ids}"
        except Killed as x:
            res = f"killed ({x})"
    finally:
        TagManager.create, TagOperations._take_back = orig_create, orig_back
    return root, res, calls


problems = []
root, res, calls = run(False)
print("(a) expiration:", res, "| callback at deleting, done =", calls, "| tags:",
      tag_names(root), "| marks:", markers(root))
if "T" in tag_names(root) and not tag_reads(root, "T")[0]:
    problems.append("(a) tag T left and unreadable")
root, res, calls = run(True)
tags = all_tags_read(root)
print("(b) expiration:", res, "| tags:", tags, "| marks:", markers(root))
rc, probs = check_problems(root)
print("(b) check rc:", rc, str(probs)[:160].replace(root, "<t>"))
for n, (ok, what) in tags.items():
    if not ok:
        problems.append(f"(b) tag {n} on snapshot 1 does not read: {what[:100]}")
print("OK" if not problems else
      "FINDING: create_tag called on the thread holding the lease (an expiration's progress "
      "callback) joins it and runs inside the expiration's delete phase; killed after its "
      "PUT it leaves l5's state: " + problems[-1])
