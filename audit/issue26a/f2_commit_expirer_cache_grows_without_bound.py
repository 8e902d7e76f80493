"""F2: a commit object's expirer (TableCommit._expirer, reused after every commit) whose own
retention expires nothing never lists snapshot/, so since b347868 its `_prune` drops nothing:
every snapshot it reads (the earliest's successor in `_end`, the new earliest in
`_head_half_expired`) stays in `_raw_memo` (bytes + parsed Snapshot) after another process's
expiration has deleted it. One long-lived stream writer + a separate, more aggressive
maintenance job (here: `ExpireSnapshots` with retain 3 after every commit): the cache grows by
~2 entries per commit, forever. Before b347868 the prune kept only what the last plan read.

argv[1] == "old": the prune of the parent commit (drop what the last plan did not read)."""
import sys
import tracemalloc

from common import Table, new_table, write

from paimon_commit.operations.expire import ExpireConfig, ExpireSnapshots

if len(sys.argv) > 1 and sys.argv[1] == "old":
    def old_prune(self):
        self.reach.prune()
        for key in [k for k in self._raw_memo if k not in self._memo]:
            del self._raw_memo[key]
        self._seen, self._listed_dirs, self._pruned_memo = set(), set(), self._memo
    ExpireSnapshots._prune = old_prune

N = int(sys.argv[2]) if len(sys.argv) > 2 else 300
t = new_table({"write-only": "false", "snapshot.num-retained.min": "10",
               "snapshot.time-retained": "1 h"})   # the stream's post-commit retention
path = t.path if hasattr(t, "path") else t.store.root
other = ExpireSnapshots(Table.open(path).store,   # the maintenance job, another process
                        ExpireConfig(retain_min=3, retain_max=3, time_retained_ms=0,
                                     max_deletes=1000))
tracemalloc.start()
with t.new_commit() as c:
    for i in range(N):
        write(t, i, commit=c)
        other.expire()
        if (i + 1) % 100 == 0:
            e = c._expirer
            print(f"after {i + 1} commits: snapshots on disk {len(t.snapshots())}, "
                  f"commit expirer's _raw_memo entries {len(e._raw_memo)}, "
                  f"_seen {len(e._seen)}, _listed_dirs {len(e._listed_dirs)}, "
                  f"bytes held {sum(len(v[0]) for v in e._raw_memo.values())}")
