"""Idea 3 (waiter line: an exception escaping into a commit), the p2 class by another way:
`waiter_gone` json.loads()s a waiter record of this process's neighbours and catches OSError,
ValueError, UnicodeDecodeError. A body nested deeper than the interpreter's recursion limit
(`[[[[...`, a damaged or hand-made record) raises RecursionError (a RuntimeError), which
post-commit maintenance does not catch (AtomicCreateUnsupportedError, LeaseRecordError): a
one-shot commit that published raises. Part b: the same through a lease record
(`LeaseRecord.from_json` catches ValueError, UnicodeDecodeError only)."""
import os
import time
import uuid

from common import Table, make_rows, new_path, snapshot_ids, write

DEEP = b"[" * 200_000
found = []


def waiter(path):
    d = os.path.join(path, ".maintenance")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, f"wait-{int(time.time() * 1000)}-{uuid.uuid4().hex}"), "wb") as f:
        f.write(DEEP)


def lease_record(path):
    d = os.path.join(path, ".maintenance")
    os.makedirs(d, exist_ok=True)
    n = max([int(x[6:]) for x in os.listdir(d) if x.startswith("lease-")] + [0]) + 1
    with open(os.path.join(d, f"lease-{n}"), "wb") as f:
        f.write(DEEP)


for label, damage in [("a: waiter record", waiter), ("b: lease record", lease_record)]:
    path = new_path()
    t = Table.create(path, make_rows([]).schema, partition_keys=["dt", "hr"],
                     options={"snapshot.num-retained.min": "1", "snapshot.time-retained": "1 ms"})
    write(t, make_rows([1]))
    damage(path)
    before = snapshot_ids(path)
    try:
        write(t, make_rows([2]))   # a one-shot commit: its post-commit maintenance inline
        print(f"{label}: the commit returned normally; snapshots {before} -> {snapshot_ids(path)}")
    except Exception as e:  # noqa
        after = snapshot_ids(path)
        print(f"{label}: the commit raised {type(e).__name__}: {str(e)[:120]}; snapshots "
              f"{before} -> {after}")
        if len(after) > len(before) or max(after) > max(before):
            found.append(f"{label}: snapshot {max(after)} published, the commit raised "
                         f"{type(e).__name__}")
print("FINDING: " + "; ".join(found) if found else "OK: no deeply nested record fails a commit")
