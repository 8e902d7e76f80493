"""Finding 4 (wrong report that leads to deleting a live tag; leak): the marker logic when a
tag of the same name is re-created between the kill and the rerun by an engine that does
not know about `.tag-deletions/` (Paimon Java, pypaimon, Flink/Spark procedures write
tag/tag-<name> directly; only our create_tag refuses while a marker exists).

- `expire-tags` never finishes the old deletion (`_finish_pending` skips a name whose tag
  exists), so the marker and the old tag's leftovers stay forever;
- `paimon-commit tags` keeps printing "t5  deletion unfinished: run `paimon-commit
  delete-tag TABLE t5`" next to the live tag t5;
- following that advice deletes the NEW, live tag (its snapshot exists: the tag file goes),
  removes the marker, and leaves the old tag's data files, manifests and lists with nothing
  naming them.

Run: PYTHONPATH=. .venv/bin/python audit/f4_recreated_tag_name_advice_deletes_live_tag.py
"""
import os
import shutil
import subprocess
import sys

from common import ROOT, files, new_table
from faults.faulty_io import Crash, FaultyIO
from paimon_commit import Table
from paimon_commit.operations.expire import ExpireConfig, ExpireSnapshots
from paimon_commit.operations.tag_expire import expire_tags
from paimon_commit.store import FileStore

path = new_table(snapshots=10, per_snapshot=4, index=False)
t = Table.open(path)
t.create_tag("t5", 5)
ExpireSnapshots(FileStore.open(path), ExpireConfig(retain_min=2, time_retained_ms=0)).expire()
ref = path + "-ref"
shutil.copytree(path, ref)
Table.open(ref).delete_tag("t5")      # what an unkilled deletion leaves

try:   # killed halfway through the data step
    Table(FileStore.open(path, io=FaultyIO(path, fail_at=3, kinds={"_unlink"}))).delete_tag("t5")
except Crash:
    pass
# Another engine tags the latest snapshot "t5" (a tag file is the snapshot's JSON).
shutil.copyfile(os.path.join(path, "snapshot", "snapshot-10"), os.path.join(path, "tag", "tag-t5"))
t = Table.open(path)
print("tags:", [(x.name, x.id) for x in t.tags()], "unfinished:", t.unfinished_tag_deletions())
# (b) a copy where the user runs what `tags` advised before expire-tags ran.
direct = path + "-direct"
shutil.copytree(path, direct)
cli0 = subprocess.run([sys.executable, "-m", "paimon_commit", "tags", direct], cwd=ROOT,
                      capture_output=True, text=True, env={**os.environ, "PYTHONPATH": ROOT})
print("`paimon-commit tags` prints before expire-tags:\n  " + cli0.stdout.strip().replace("\n", "\n  "))
bad_advice = "deletion unfinished: run `paimon-commit delete-tag TABLE t5`" in cli0.stdout
Table.open(direct).delete_tag("t5")   # the user follows the advice

r = expire_tags(t.store)
print("expire-tags finished:", r.finished_deletions, "| unfinished after it:",
      Table.open(path).unfinished_tag_deletions())
cli = subprocess.run([sys.executable, "-m", "paimon_commit", "tags", path], cwd=ROOT,
                     capture_output=True, text=True, env={**os.environ, "PYTHONPATH": ROOT})
print("`paimon-commit tags` prints after:\n  " + cli.stdout.strip().replace("\n", "\n  "))
bad = bad_advice
for p in (path, direct):
    t = Table.open(p)
    live = [(x.name, x.id) for x in t.tags()]
    leaked = sorted(f for f in files(p) - files(ref) if not f.startswith("tag/"))
    print(f"{os.path.basename(p)}: tags {live}, unfinished {t.unfinished_tag_deletions()}, "
          f"old t5's files left: {len(leaked)}")
    bad = bad or live != [("t5", 10)] or leaked or t.unfinished_tag_deletions()
if bad:
    print("FINDING REPRODUCED: the live tag t5 was deleted, the advice would delete it, or "
          "the old t5's files are left for orphan cleanup only.")
else:
    print("NO FINDING: expire-tags and delete-tag finish the earlier t5's deletion (its files "
          "gone, as after an unkilled deletion), the live t5 is kept, and the advice says so.")
