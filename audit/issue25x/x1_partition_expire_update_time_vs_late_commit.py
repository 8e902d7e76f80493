"""x1: partition expiration (update-time) selects a partition from the latest snapshot, then a
writer commits a fresh row to that partition, then the drop commits. drop_partitions
recomputes its DELETEs from each attempt's latest snapshot, so it deletes the fresh file too,
although under update-time the partition is no longer expired. (a) API expire_partitions.
(b) post-commit partition expiration of another commit object."""
import time
from unittest import mock

from common import fresh, prepared, D1, ours, Table
from paimon_commit.operations import partition_expire as pe
from paimon_commit import writer as wmod
import datetime

D0 = datetime.date(2024, 1, 3)
out = []
for case in ("api", "values-time-control"):
    path, t = fresh()
    old = int((time.time() - 3 * 86400) * 1000)
    with mock.patch.object(wmod, "local_millis_as_utc", lambda: old):
        with t.new_commit(commit_user="w") as c:
            c.commit(prepared(t, [10], dt=D1))    # partition dt=D1, written 3 days ago
    with t.new_commit(commit_user="w") as c:
        c.commit(prepared(t, [20], dt=D0))        # other partition, fresh
    late_msgs = prepared(t, [11], dt=D1)          # a writer's fresh row for dt=D1
    real = pe.PartitionExpire._select
    fired = []

    def sel(self, cutoff):
        r = real(self, cutoff)
        if not fired:
            fired.append(1)
            with Table.open(path).new_commit(commit_user="late") as c2:
                out.append(f"{case}: late commit -> snapshot {c2.commit(late_msgs)}")
        return r
    with mock.patch.object(pe.PartitionExpire, "_select", sel):
        if case == "api":
            r = t.expire_partitions(expiration_time="1 d", expire_strategy="update-time")
        else:
            r = None
    if r is not None:
        out.append(f"{case}: expired {r.expired_partitions} snapshots {r.snapshot_ids}")
    rows = ours(path)
    out.append(f"{case}: latest reads {rows}")
    if case == "api":
        # is the partition still expired under update-time after the late commit?
        r2 = Table.open(path).expire_partitions(expiration_time="1 d",
                                                expire_strategy="update-time", dry_run=True)
        out.append(f"{case}: dry-run now selects {r2.expired_partitions}")
        api_rows = rows
for line in out:
    print(line)
if 11 not in api_rows:
    print("FINDING: update-time partition expiration deleted row 11, committed (success "
          "reported) after the partition was selected; the partition was no longer expired "
          "by its update time")
else:
    print("OK")
