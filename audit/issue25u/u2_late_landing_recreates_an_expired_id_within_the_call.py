"""Idea u2 (t2's fix, `_landed_late`, a false success): attempt 1's PUT of snapshot N is late.
Attempt 2 settles it 'not landed' (N absent, latest N-1 < N) and builds N again. Before its
create, another writer publishes N and N+1, and expiration (retain 1) expires N; only then
does attempt 1's late PUT land, re-creating `snapshot-N` below the latest (the store's
If-None-Match passes: the name is free again; the base precondition was checked on the client
before the PUT was sent). Attempt 2's create fails its base check (a plain lost race).
Attempt 3 runs `_landed_late(N-1, latest N+1)`, finds the re-created N (this user, identifier,
kind, ADDs F) and returns it as the commit's snapshot, without the lineage check that
`resolve_uncertain`/`confirm_published` would have made. The latest snapshot does not hold F:
its rows are lost while the commit reports success; the repeat is then a no-op too."""
from common import (fresh, write, make_rows, prepared, dups, snapshot_ids, LatePut, adders,
                    names, call, show, try_commit, OPTS)

path, t = fresh(OPTS)
write(t, make_rows([10]))
write(t, make_rows([20]))
F = prepared(t, [11])


def between(snap):
    write(t, make_rows([30]))      # another writer: snapshot 3
    write(t, make_rows([40]))      # snapshot 4
    t.expire_snapshots(retain_min=1, retain_max=1)
    late.log.append(f"others published 3, 4; expired: snapshots now {snapshot_ids(path)}")
    late.land(0)


with LatePut("job", {1: "lost", 2: between}) as late:
    with t.new_commit(commit_user="job") as c:
        r = call(lambda: c.commit(F))
print(" | ".join(late.log))
fname = names(F)[0]
ours, theirs, d = dups(path)
latest = t.latest_snapshot().id
print(f"commit -> {show(r)}; snapshots {snapshot_ids(path)} (latest {latest}); snapshots adding "
      f"F: {adders(path, [fname])[fname]}; latest reads ours {ours} pypaimon {theirs}")
r2 = try_commit(t, F, user="job")
ours2, theirs2, _ = dups(path)
print(f"repeat by the same user -> {r2 if not isinstance(r2, BaseException) else repr(r2)[:150]}; "
      f"latest reads ours {ours2} pypaimon {theirs2}")
lost = isinstance(r, int) and 11 not in ours and 11 not in theirs
print(f"FINDING: commit reported snapshot {r} (a re-created id below latest {latest}), row [11] "
      f"not in the latest snapshot; the repeat returns {r2}" if lost else "OK")
