"""F5: long-lived changelogs exist (decoupled lifecycle); then a handle lowers the
changelog retention below the snapshot one (dynamic options: no longer decoupled) and expires
snapshots after a compaction replaced the files those changelogs add. Does a retained
changelog lose its files?"""
import os
import time
import common  # noqa: F401
from common import Table, SCHEMA, new_path, write
from f2_changelog_producer_on_append_table import OPTS, broken_changelogs

path = new_path()
Table.create(path, SCHEMA, partition_keys=["p"], options=OPTS)
t = Table.open(path)
for i in range(5):
    write(t, [i], "a")
time.sleep(0.01)
t.expire_snapshots()                      # decoupled: snapshots 1..4 -> changelogs
print("changelogs:", sorted(os.listdir(os.path.join(path, "changelog"))))
t.compact(options={"compaction.min.file-num": "2"})
write(t, [10], "a")
write(t, [11], "a")
time.sleep(0.01)
h = Table.open(path, options={"changelog.num-retained.min": "1", "changelog.num-retained.max": "1",
                              "changelog.time-retained": "1 ms"})
r = h.expire_snapshots()
print("expired:", r.to_dict().get("expired_snapshots"))
left = sorted(os.listdir(os.path.join(path, "changelog")))
bad = broken_changelogs(path)
print("changelogs left:", left, "broken:", bad)
print("FINDING REPRODUCED" if bad else "NO FINDING")
