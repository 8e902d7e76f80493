"""Idea u1 (t2's fix, `_landed_late`): within one call, attempt 1's PUT of snapshot N is late
(OSError, nothing created yet). Attempt 2 settles it 'not landed' (snapshot-N absent, latest <
N), finds nothing in `_landed_late`, checks conflicts and builds snapshot N again. Between its
look and its create: the late PUT lands (N adds F), another writer's compaction publishes N+1
(replaces F), and snapshot expiration (retain 1) expires N. Attempt 2's create loses (its base
is gone): a plain lost race. Attempt 3: `_landed_late(N-1, latest N+1)` walks N+1 (the
compaction) and N - which is gone, so it is skipped as 'not ours' - and the live-file check
passes (F was replaced). F is published a second time.
 a) nothing else keeps F's file: expiration deleted it, so the republished snapshot names a
    missing file;
 b) a tag on snapshot N (e.g. tag.automatic-creation, or a user's tag) keeps F's file: rows
    read twice."""
from common import (fresh, write, make_rows, prepared, dups, snapshot_ids, LatePut, adders,
                    names, call, show, OPTS)
import os

findings = []
for case in ("a", "b"):
    path, t = fresh(OPTS)
    write(t, make_rows([10]))
    write(t, make_rows([20]))
    F = prepared(t, [11])

    def between(snap, lp=None):
        lp = late
        lp.land(0)
        if case == "b":
            t.create_tag("keep", snap.id)
        t.compact()
        r = t.expire_snapshots(retain_min=1, retain_max=1)
        lp.log.append(f"compaction + expiration: snapshots now {snapshot_ids(path)}, "
                      f"expired {getattr(r, 'expired_snapshots', r)}")

    with LatePut("job", {1: "lost", 2: between}) as late:
        with t.new_commit(commit_user="job") as c:
            r = call(lambda: c.commit(F))
    print(f"{case}: " + " | ".join(late.log))
    fname = names(F)[0]
    if case == "a":
        from paimon_commit import Table
        lat = Table.open(path).store.snapshots.latest_snapshot()
        dl = lat.delta_manifest_list
        print(f"a: snapshot {lat.id}'s delta manifest list {dl} (attempt 1's, reused by attempt "
              f"3) exists: {os.path.exists(os.path.join(path, 'manifest', dl))}")
    add = adders(path, [fname])
    try:
        ours, theirs, d = dups(path)
        rows = f"ours {ours} pypaimon {theirs}"
    except BaseException as e:  # noqa: BLE001
        d, rows = None, f"read fails: {type(e).__name__}: {str(e)[:150]}"
    print(f"{case}: commit -> {show(r)}; snapshots {snapshot_ids(path)}; snapshots adding F: "
          f"{add[fname]}; {rows}")
    if d:
        findings.append(f"{case}: one call published F twice (snapshots {add[fname]}); rows {d} "
                        f"read twice")
    elif d is None:
        findings.append(f"{case}: one call published F again (snapshots {add[fname]}) after "
                        f"expiration deleted it: {rows[:80]}")
print(("FINDING: " + "; ".join(findings)) if findings else "OK")
