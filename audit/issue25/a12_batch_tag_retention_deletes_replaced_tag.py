"""Idea: docs/safety.md: "tag expiration deletes a tag only while it points at the snapshot it
was chosen with". The automatic (periodic) tags' tag.num-retained-max passes
`expected=t.snapshot`; the batch tags' retention (tag.automatic-creation=batch) does not. A
batch tag chosen by count, then replaced under its name on another snapshot (a user or another
engine re-tags it) before its deletion, is deleted anyway: the new tag, which nobody chose."""
import json
import os

from common import new_table, write
from paimon_commit.operations import tag_ops as TO
from paimon_commit.operations.tag_ops import TagOperations

t = new_table(options={"snapshot.num-retained.min": "10", "tag.automatic-creation": "batch",
                       "tag.num-retained-max": "2"})
for i in range(3):
    write(t, i * 3)
# two older batch tags (earlier days), on snapshots 1 and 2
for name, sid in (("batch-write-2020-01-01", 1), ("batch-write-2020-01-02", 2)):
    t.create_tag(name, sid)
print("tags before:", [(x.name, x.id) for x in t.tags()])

orig = TagOperations.delete_tag
events = []


def delete_tag(self, name, expected=None):
    if name == "batch-write-2020-01-01" and not events:
        # chosen by count (it pointed at snapshot 1); meanwhile someone re-tags it on
        # snapshot 3 (delete + create: another engine, which does not take the lease)
        path = os.path.join(t.path, "tag", "tag-" + name)
        snap = json.load(open(os.path.join(t.path, "snapshot", "snapshot-3")))
        os.remove(path)
        with open(path, "w") as f:
            json.dump(snap, f)
        events.append(f"{name} re-created on snapshot 3 before its deletion "
                      f"(expected passed: {expected is not None})")
    return orig(self, name, expected)


TagOperations.delete_tag = delete_tag
write(t, 100)     # a batch commit: creates today's batch tag, then enforces the maximum
TagOperations.delete_tag = orig
print("events:", events)
tags_after = [(x.name, x.id) for x in t.tags()]
print("tags after:", tags_after)
if events and not any(n == "batch-write-2020-01-01" for n, _ in tags_after):
    print("FINDING (tag deleted that nobody chose): batch-tag retention deleted a tag "
          "replaced after it was chosen (no expected snapshot is passed)")
else:
    print("NO FINDING")
