"""A process of tests/objectstore/test_store_concurrency.py, on any table URI (the store is
found through the environment): `writer URI ID N [OPTIONS_JSON]` commits N one-file appends
(ids ID*100000 + i), with default options unless given, and prints the snapshot ids it was
given as JSON; `expirer URI STOP_FILE` expires snapshots in a loop; `cleaner URI STOP_FILE
CUTOFF_MS` runs orphan cleanup in a loop (only files older than CUTOFF_MS, which precedes every
writer's files). Both stop after their first run that starts once STOP_FILE exists (at most 15
minutes)."""
import json
import os
import sys
import time

import pyarrow as pa

from paimon_commit import (CleanContext, ExpireConfig, ExpireSnapshots, OrphanCleanAborted,
                           OrphanFilesCleaner, Table)

SCHEMA = pa.schema([("id", pa.int64()), ("w", pa.int32())])


def writer(uri: str, wid: int, n: int, options: dict) -> None:
    t = Table.open(uri)
    ids, attempts = [], []
    with t.new_commit(options=options) as c:
        for i in range(n):
            w = t.new_writer()
            w.write_arrow(pa.table({"id": pa.array([wid * 100000 + i], pa.int64()),
                                    "w": pa.array([wid], pa.int32())}))
            ids.append(c.commit(w.prepare_commit()))
            attempts.append(c.last_result.attempts)
    print(json.dumps({"attempts": attempts}), file=sys.stderr)
    print(json.dumps(ids))


def _going(stop_file: str, deadline: float) -> bool:
    return not os.path.exists(stop_file) and time.monotonic() < deadline


def expirer(uri: str, stop_file: str) -> None:
    deadline, runs, expired = time.monotonic() + 900, 0, 0
    last = False
    while not last:
        last = not _going(stop_file, deadline)
        t = Table.open(uri)
        r = ExpireSnapshots(t.store, ExpireConfig(retain_min=3, time_retained_ms=0,
                                                  max_deletes=1000)).expire()
        runs += 1
        expired += len(r.expired_ids)
        time.sleep(0.2)
    print(json.dumps({"runs": runs, "expired": expired}))


def cleaner(uri: str, stop_file: str, cutoff_ms: int) -> None:
    deadline, runs, aborted, deleted = time.monotonic() + 900, 0, 0, []
    last = False
    while not last:
        last = not _going(stop_file, deadline)
        try:
            r = OrphanFilesCleaner(CleanContext(uri, older_than_ms=cutoff_ms,
                                                allow_recent_cutoff=True)).clean()
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
        expirer(sys.argv[2], sys.argv[3])
    else:
        cleaner(sys.argv[2], sys.argv[3], int(sys.argv[4]))
