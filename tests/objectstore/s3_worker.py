"""A process of the concurrency test: `writer URI ID N [OPTIONS_JSON]` commits N one-file
appends (ids ID*100000 + i), with default options unless given and prints the snapshot ids it was given as JSON;
`expirer URI SECONDS` expires snapshots in a loop; `cleaner URI SECONDS CUTOFF_MS` runs orphan
cleanup in a loop (only files older than CUTOFF_MS, which precedes every writer's files)."""
import json
import sys
import time

import pyarrow as pa

from paimon_commit import (CleanContext, ExpireConfig, ExpireSnapshots, OrphanCleanAborted,
                           OrphanFilesCleaner, Table)

SCHEMA = pa.schema([("id", pa.int64()), ("w", pa.int32())])


def writer(uri: str, wid: int, n: int, options: dict) -> None:
    t = Table.open(uri)
    ids = []
    with t.new_commit(options=options) as c:
        for i in range(n):
            w = t.new_writer()
            w.write_arrow(pa.table({"id": pa.array([wid * 100000 + i], pa.int64()),
                                    "w": pa.array([wid], pa.int32())}))
            ids.append(c.commit(w.prepare_commit()))
    print(json.dumps(ids))


def expirer(uri: str, seconds: float) -> None:
    end, runs, expired = time.monotonic() + seconds, 0, 0
    while time.monotonic() < end:
        t = Table.open(uri)
        r = ExpireSnapshots(t.store, ExpireConfig(retain_min=3, time_retained_ms=0,
                                                  max_deletes=1000)).expire()
        runs += 1
        expired += len(r.expired_ids)
        time.sleep(0.2)
    print(json.dumps({"runs": runs, "expired": expired}))


def cleaner(uri: str, seconds: float, cutoff_ms: int) -> None:
    end, runs, aborted, deleted = time.monotonic() + seconds, 0, 0, []
    while time.monotonic() < end:
        try:
            r = OrphanFilesCleaner(CleanContext(uri, older_than_ms=cutoff_ms)).clean()
            deleted.extend(r.deleted_paths)
        except OrphanCleanAborted:
            aborted += 1   # a concurrent expiration removed what it was reading: nothing deleted
        runs += 1
        time.sleep(0.3)
    print(json.dumps({"runs": runs, "aborted": aborted, "deleted": deleted}))


if __name__ == "__main__":
    kind = sys.argv[1]
    if kind == "writer":
        writer(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]),
               json.loads(sys.argv[5]) if len(sys.argv) > 5 else {})
    elif kind == "expirer":
        expirer(sys.argv[2], float(sys.argv[3]))
    else:
        cleaner(sys.argv[2], float(sys.argv[3]), int(sys.argv[4]))
