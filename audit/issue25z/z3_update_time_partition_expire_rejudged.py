"""z3: update-time partition expiration (`_drop_still_expired`: `remove_files(pick)`, judged
again on every attempt). Partition D1 holds rows 10, 12 written 3 days ago; D0 row 20 fresh.
Cases, each checked by rows read back and by which data files are still named/present:
 a) a writer commits row 11 into D1 between the first attempt's pick and its publish (that
    publish loses the race; the retry must judge again and keep D1);
 b) the same with row 11's file carrying no creation time (None);
 c) a compaction of D1 (10, 12 -> one new file, a new creation time) between the selection
    and the drop;
 d) a writer commits row 11 into D1 right *after* the drop published (must survive);
 e) post-commit partition expiration (table options; its commits carry the writer's user),
    the late writer committing row 11 into D1 right after the selection (as x1).
Loss = a row other than 10/12 gone, or 10/12 gone while another D1 row was kept unjudged."""
import datetime
import time
from unittest import mock

from common import fresh, prepared, D1, Table
from paimon_commit.operations import partition_expire as pe
from paimon_commit import writer as wmod
from paimon_commit.snapshots import SnapshotManager

D0 = datetime.date(2024, 1, 3)


def rows(path):
    return sorted(Table.open(path).read_arrow().column("id").to_pylist())


def setup(opts=None):
    path, t = fresh(opts)
    old = int((time.time() - 3 * 86400) * 1000)
    with mock.patch.object(wmod, "local_millis_as_utc", lambda: old):
        with t.new_commit(commit_user="w") as c:
            c.commit(prepared(t, [10], dt=D1))
        with t.new_commit(commit_user="w") as c:
            c.commit(prepared(t, [12], dt=D1))
    with t.new_commit(commit_user="w") as c:
        c.commit(prepared(t, [20], dt=D0))
    return path, t


def late(path, ids=(11,), no_time=False):
    t = Table.open(path)
    if no_time:
        with mock.patch.object(wmod, "local_millis_as_utc", lambda: None):
            msgs = prepared(t, list(ids), dt=D1)
        assert all(f.creation_time is None for m in msgs for f in m.new_files), "not None"
    else:
        msgs = prepared(t, list(ids), dt=D1)
    with t.new_commit(commit_user="late") as c:
        return c.commit(msgs)


out, bad = [], []
for case in ("a", "b", "c", "d", "e"):
    opts = None
    if case == "e":   # (per commit object: setup's own commits must not expire D1 at once)
        popts = {"partition.expiration-time": "1 d", "partition.expiration-strategy":
                "update-time", "partition.expiration-check-interval": "0 ms"}
    path, t = setup()
    fired = []
    real_tc = SnapshotManager.try_commit

    def tc(sm, snap, *a, **k):
        if snap.commit_user not in ("w", "late", "compact") and not fired and case in "ab":
            fired.append(late(path, no_time=(case == "b")))
        r = real_tc(sm, snap, *a, **k)
        if snap.commit_user not in ("w", "late") and not fired and case == "d" and r:
            fired.append("pending")   # (the late commit's own post-commit run selects too)
            fired[0] = late(path)
        return r
    real_sel = pe.PartitionExpire._select

    def sel(self, cutoff):
        r = real_sel(self, cutoff)
        if case == "c" and not fired:
            fired.append(Table.open(path).compact().snapshot_id)
        if case == "e" and not fired:   # post-commit: its commit user is the writer's
            fired.append("pending")   # (the late commit's own post-commit run selects too)
            fired[0] = late(path)
        return r
    with mock.patch.object(SnapshotManager, "try_commit", tc), \
            mock.patch.object(pe.PartitionExpire, "_select", sel):
        if case == "e":
            with t.new_commit(commit_user="w", options=popts) as c:
                c.commit(prepared(t, [30], dt=D0))
            time.sleep(0.5)
            r = None
        else:
            r = t.expire_partitions(expiration_time="1 d", expire_strategy="update-time")
    got = rows(path)
    out.append(f"{case}: event -> {fired}; result: expired "
               f"{getattr(r, 'expired_partitions', '-')} kept {getattr(r, 'kept_new_data', '-')}"
               f"; latest reads {got}")
    want_late = 11 if case in "abde" else None
    if 20 not in got or (want_late and want_late not in got):
        bad.append(f"{case}: a row committed after the selection is gone: {got}")
    if case in "abe" and (10 not in got or 12 not in got) and 11 in got:
        bad.append(f"{case}: D1 partly dropped: {got}")
    if case == "c" and sorted(set(got) & {10, 12}) not in ([], [10, 12]):
        bad.append(f"c: D1 partly dropped: {got}")
    # every data file the latest names is on disk
    tt = Table.open(path)
    import os
    missing = [e.file.file_name for e in tt.live_entries()
               if not os.path.exists(tt.store.data_file_path(e))]
    if missing:
        bad.append(f"{case}: latest names missing files {missing}")
for line in out:
    print(line)
print("FINDING: " + "; ".join(bad) if bad else "OK")
