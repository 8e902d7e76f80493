"""Idea w1: the settle loop with several uncertain snapshots of one call.
a) Attempt 1's PUT of snapshot 3 is late; attempt 2 settles it 'not landed' and builds 3 again,
   whose PUT is late too (two uncertains for id 3, different bytes: the second has a new delta
   list). Before attempt 3: the FIRST lands (3 ADDs F), a compaction (other user) publishes 4,
   expiration (retain 1) removes 3; then the SECOND lands into the free name: a re-created
   copy of 3 below the latest. Attempt 3 settles u1 (snapshot-3 holds u2's bytes: 'another
   writer's snapshot holds the id') and u2 (ours; base 2 gone; in_lineage: 4 built on it by
   content). Expected: F once, latest reads, the call reports a snapshot that is in the table.
b) as a, with a tag on snapshot 3 (u1's) before the expiration.
c) as a, but the second attempt targets id 4 (another writer published 3 with row 30 before
   it): u1 (3, base 2), u2 (4, base 3). Before attempt 3: u2 lands (4 ADDs F, in lineage),
   compaction 5, expiration removes 3, 4; then u1 lands (re-created 3, outside the lineage).
d) as c, but u1 lands before the expiration can remove 3? (it cannot: 3 is taken) -> u1 lands
   after 3 expired while 4 (u2) is still retained (retain 2).
Rows are read with ours and pypaimon; every retained snapshot must read."""
from common import (fresh, write, make_rows, prepared, snapshot_ids, LatePut, adders, names,
                    call, show, OPTS, reads, all_snapshots_read)

findings = []
for case in ("a", "b", "c", "d"):
    path, t = fresh(OPTS)
    write(t, make_rows([10]))
    write(t, make_rows([20]))
    F = prepared(t, [11])
    fname = names(F)[0]

    def before_attempt2(snap):
        if case in ("c", "d"):
            write(t, make_rows([30]))          # another writer takes id 3

    def before_attempt3(snap):
        lp = late
        if case in ("a", "b"):
            lp.land(0)                         # u1: 3 (+F)
            if case == "b":
                t.create_tag("keep", 3)
            t.compact()
            t.expire_snapshots(retain_min=1, retain_max=1)
            lp.log.append(f"u1 landed, compacted, expired: {snapshot_ids(path)}")
            lp.land(1)                         # u2 re-creates 3
        else:
            lp.land(1)                         # u2: 4 (+F), base 3
            t.compact()
            if case == "c":
                t.expire_snapshots(retain_min=1, retain_max=1)
            else:
                t.expire_snapshots(retain_min=2, retain_max=2)
            lp.log.append(f"u2 landed, compacted, expired: {snapshot_ids(path)}")
            lp.land(0)                         # u1 re-creates 3
        lp.log.append(f"snapshots now {snapshot_ids(path)}")

    plan = {1: "lost", 2: "lost", 3: before_attempt3}
    real_plan_hook = None
    with LatePut("job", plan) as late:
        # the event before attempt 2's look: hook on the first call's failure path
        import paimon_commit.operations.commit as cm
        orig = cm.FileStoreCommit._attempt_once
        n = [0]

        def wrapped(self, *a, **k):
            n[0] += 1
            if n[0] == 2:
                before_attempt2(None)
            return orig(self, *a, **k)
        cm.FileStoreCommit._attempt_once = wrapped
        try:
            with t.new_commit(commit_user="job") as c:
                r = call(lambda: c.commit(F))
        finally:
            cm.FileStoreCommit._attempt_once = orig
    rows, d, ours = reads(path)
    bad = all_snapshots_read(path)
    print(f"{case}: " + " | ".join(late.log))
    print(f"{case}: commit -> {show(r)}; snapshots {snapshot_ids(path)}; adding F: "
          f"{adders(path, [fname])[fname]}; latest {rows}; unreadable retained {bad}")
    if d or ours is None:
        findings.append(f"{case}: latest {rows} dups {d}")
    elif isinstance(r, int) and 11 not in ours:
        findings.append(f"{case}: success {r} but row 11 missing")
    elif not isinstance(r, int) and 11 in ours:
        findings.append(f"{case}: raised ({show(r)[:80]}) although row 11 is in the table")
    if bad:
        findings.append(f"{case}: retained snapshot(s) unreadable {bad}")
        if case == "a" and isinstance(r, int):
            # what a user does with the reported id: time travel, a tag; then maintenance
            from paimon_commit import Table
            tt = call(lambda: Table.open(path).read_arrow(snapshot_id=r).num_rows)
            tg = call(lambda: t.create_tag("release", r))
            tgr = call(lambda: Table.open(path).read_arrow(tag="release").num_rows)
            write(t, make_rows([50]))
            ex = call(lambda: t.expire_snapshots(retain_min=1, retain_max=1))
            chk = call(lambda: t.check())
            print(f"a: read at the reported snapshot {r}: {show(tt)}; create_tag on it: "
                  f"{show(tg)}; read the tag: {show(tgr)}; expire: {show(ex)[:80]}; "
                  f"check: {str(chk)[:200]}")
            print(f"a: after: snapshots {snapshot_ids(path)}, latest {reads(path)[0]}")
            findings.append(f"a: the call reported snapshot {r}, which does not read "
                            f"({show(tt)[:60]}); a tag on it: {show(tgr)[:60]}")
print(("FINDING: " + "; ".join(findings)) if findings else "OK")
