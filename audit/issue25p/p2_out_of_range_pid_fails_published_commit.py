"""Idea (A2, an exception from the waiter code escaping into a commit): `waiter_gone` reads a
waiter record of this machine and calls `_pid_gone(pid)` -> os.kill(pid, 0). A pid outside
the C int range raises OverflowError, which neither `_pid_gone` (OSError) nor `waiter_gone`
(OSError, ValueError, UnicodeDecodeError) catches, nor post-commit maintenance
(AtomicCreateUnsupportedError, LeaseRecordError). docs/safety.md 5b: "no bad record ... fails
a commit: post-commit maintenance ... skips its turn with a warning". Here a one-shot commit
that published its snapshot raises OverflowError, and a streaming commit parks it: every
later commit of that TableCommit raises MaintenanceError.
Part b: the same through a lease record (`is_free` -> `_pid_gone(record.pid)`), which
`LeaseRecord.from_json` accepts (any int) and `_validate` does not bound."""
import json
import os
import time
import uuid

from common import new_table, write
from paimon_commit import lease as L

found = []


def latest_id(t):
    return max(int(n.split("-")[1]) for n in os.listdir(os.path.join(t.path, "snapshot"))
               if n.startswith("snapshot-"))


def waiter(t):
    ldir = os.path.join(t.path, ".maintenance")
    os.makedirs(ldir, exist_ok=True)
    with open(os.path.join(ldir, f"wait-{int(time.time() * 1000)}-{uuid.uuid4().hex}"), "w") as f:
        json.dump({"table": "x", "host": "h", "pid": 2 ** 70, "machine": L._MACHINE,
                   "operation": "remove-orphan-files", "sinceMillis": 1}, f)


def lease_record(t):
    ldir = os.path.join(t.path, ".maintenance")
    os.makedirs(ldir, exist_ok=True)
    now = int(time.time() * 1000)
    n = max([int(x[6:]) for x in os.listdir(ldir) if x.startswith("lease-")] + [0]) + 1
    rec = L.LeaseRecord(n, L.table_identity(t.store.io), "h", 2 ** 70, uuid.uuid4().hex,
                        "expire-snapshots", now, now + 60_000, False, "otherprocess", L._MACHINE)
    with open(os.path.join(ldir, f"lease-{n}"), "wb") as f:
        f.write(rec.to_json())


for label, damage in [("a: waiter record", waiter), ("b: lease record", lease_record)]:
    t = new_table()
    write(t, 0)
    damage(t)
    before = latest_id(t)
    try:
        write(t, 10)   # one-shot commit: maintenance inline
        print(f"{label}: one-shot commit returned normally")
    except Exception as e:  # noqa
        after = latest_id(t)
        print(f"{label}: one-shot commit raised {type(e).__name__}: {e}; snapshots {before} -> {after}")
        if after > before:
            found.append(f"{label}: published snapshot {after}, commit raised {type(e).__name__}")
    # streaming: identifier given
    w = t.new_writer()
    import pyarrow as pa
    from common import SCHEMA
    with t.new_commit(commit_user="s") as c:
        for ident in (1, 2):
            w.write_arrow(pa.table({"id": [ident], "v": ["x"]}, schema=SCHEMA))
            try:
                sid = c.commit(w.prepare_commit(), commit_identifier=ident)
                print(f"{label}: stream commit {ident} -> snapshot {sid}; parked error: {c._error!r}")
            except Exception as e:  # noqa
                print(f"{label}: stream commit {ident} raised {type(e).__name__}: {str(e)[:160]}")
                found.append(f"{label}: stream commit {ident} raised {type(e).__name__}")
if found:
    print("FINDING:", "; ".join(found))
else:
    print("OK")
