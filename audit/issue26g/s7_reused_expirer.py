"""S7: one expirer reused across runs (as table_commit does): a run that fails in its second
chunk leaves no `_horizon` behind; the next run's first plan lists the snapshot ids only
after `_end` (horizon unset), and with RAW_MEMO_CAP tiny (the cache pruned hard) the runs
still expire exactly the expected range and the table stays intact."""
import common
from common import ExpireSnapshots, FileStore, SNAPSHOTS, cfg, small_chunks, snap_ids, table
from invariants import assert_intact
from paimon_commit.operations import expire as expire_mod

small_chunks()
expire_mod.RAW_MEMO_CAP = 3
path = table("reuse")
e = ExpireSnapshots(FileStore.open(path), cfg())
order, plans = [], []
real_list, real_end, real_execute = (ExpireSnapshots._list_with_versions, ExpireSnapshots._end,
                                     ExpireSnapshots._execute)


def lst(self, m):
    order.append(("list", len(plans)))
    return real_list(self, m)


def end(self, *a):
    order.append(("end", len(plans)))
    return real_end(self, *a)


def execute(self, plan):
    plans.append(plan.end)
    if len(plans) == 2 and not getattr(self, "_failed", False):
        self._failed = True
        raise RuntimeError("storage failure in chunk 2")
    return real_execute(self, plan)


ExpireSnapshots._list_with_versions, ExpireSnapshots._end = lst, end
ExpireSnapshots._execute = execute
try:
    e.expire()
except RuntimeError as err:
    print("run 1 failed:", err, "| _horizon after:", e._horizon)
order.clear()
plans.clear()
r = e.expire()
firsts = [k for k, n in order if n == 0]
print("run 2, first plan: order of list/_end calls:", firsts[:4])
print("run 2 expired", r.expired_ids[0], "..", r.expired_ids[-1], "skipped:", r.skipped,
      "| left:", snap_ids(path)[0], "..", snap_ids(path)[-1])
assert snap_ids(path) == list(range(SNAPSHOTS - 2, SNAPSHOTS + 1))
assert_intact(path)
print("assert_intact OK")
