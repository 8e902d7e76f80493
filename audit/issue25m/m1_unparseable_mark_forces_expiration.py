"""A mark whose content does not parse (or that lacks `endSnapshotSha256`: `{}`) is "in force
while snapshot `end` exists" (expiring.ExpiringMarkers.read / in_force). That was meant for
refusals (create_tag / rollback_to: in doubt, refuse). `_doomed_end` (new) uses the same test to
*delete*: the next expiration, here a plain post-commit one with a retention of 100 snapshots,
expires every snapshot below the mark's `end` whatever the retention says. One unverifiable
file in `.maintenance/` (bad input: a copy, a tool of another version, a stray file) makes the
table lose intact retained snapshots -- against "in doubt, leave the file"."""
import os, sys, uuid
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import *  # noqa

results = []
for content in (b"", b"{}"):
    t = new_table(f"t{len(results)}", KEEP)
    root = t.store.root
    for i in range(6):
        write(Table.open(root), 10 * i)                 # snapshots 1..6, all whole
    os.makedirs(os.path.join(root, ".maintenance"), exist_ok=True)
    with open(os.path.join(root, ".maintenance", f"expiring-1-5-{uuid.uuid4().hex}"), "wb") as f:
        f.write(content)
    before = snapshot_ids(root)
    ok_before = all(reads_at(root, s)[0] for s in before)
    write(Table.open(root), 100)                         # snapshot 7, post-commit expiration
    after = snapshot_ids(root)
    lost = [s for s in before if s not in after]
    print(f"mark content {content!r}: snapshots before {before} (all read: {ok_before}), "
          f"after one commit {after}; retention keeps 100")
    results.append(lost)
print(f"FINDING: an unparseable / digest-less mark forces expiration of intact retained "
      f"snapshots {results}" if any(results) else "OK: no retained snapshot expired")
