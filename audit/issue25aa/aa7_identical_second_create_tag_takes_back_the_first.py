"""aa7: a second create_tag of an identical tag "creates" it (the storage's create contract:
the same bytes already there count as our own lost reply: io/base.py try_create_atomic), so a
refusal after that takes back the FIRST caller's tag (`_take_back` deletes the tag file when
it holds the bytes it wrote, and they are byte for byte the first caller's).
(a) control: create_tag("X", 2) twice, nothing else: the second reports success too (no
error "already exists"); X reads.
(b) create_tag("X", 2) (a release tag; no time retained: the JSON carries no creation time);
then an expiration (retain 1) killed after its data step (its mark `expiring-1-4-...` stays
and covers 1..3; X is a tag, so its files were spared: X reads); then the same create_tag
("X", 2) again (a job retried, a second operator): tags.create returns True, the marks'
listing refuses, and the take-back deletes tag X. Expected: X still there and reading."""
import os
import sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import *  # noqa

problems = []
# (a)
root = four_snapshots("a")
first = Table.open(root).create_tag("X", 2)
try:
    second = f"created on {Table.open(root).create_tag('X', 2).id}"
except ValueError as e:
    second = f"ValueError: {e}"
print("(a) second identical create_tag:", second, "| X reads:", tag_reads(root, "X"))
if not tag_reads(root, "X")[0]:
    problems.append("(a) X does not read")

# (b)
root = four_snapshots("b")
Table.open(root).create_tag("X", 2)
expire_killed_after_data_step(Table.open(root), 1)
print("(b) after the killed expiration: marks", markers(root), "| X reads:",
      tag_reads(root, "X"), "| snapshots:", sorted(Table.open(root).store.snapshots
                                                   .list_snapshot_ids()))
before = tag_reads(root, "X")
try:
    Table.open(root).create_tag("X", 2)
    res = "created"
except ValueError as e:
    res = f"ValueError: {str(e)[:140]}"
print("(b) second create_tag X on 2:", res)
print("(b) tags now:", tag_names(root), "| X:", tag_reads(root, "X"))
if before[0] and "X" not in tag_names(root):
    problems.append("(b) tag X (on snapshot 2, reading before) was deleted by a second, "
                    "refused create_tag of the same tag: the take-back took the first "
                    "caller's identical tag file")
print("OK" if not problems else f"FINDING: {problems[0]}")
