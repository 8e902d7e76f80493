"""z2: audit 25u's late-landing matrix (audit/issue25u/matrix.py: a PUT of snapshot 3 lost on
the client, landing later as a raw create-if-absent, with an event by other users, then a
retry by the same user, a new user, or filter_and_commit) run on moto S3 instead of local
disk: `fresh` makes the table on s3://, the landing is the store's real conditional PUT
(If-None-Match), snapshot ids are listed through the store. Read back with our reader
(pypaimon is not pointed at the bucket here). Timings: the PUT lands after the call
returned ('after-call'), or right before the retry's first create ('in-retry')."""
import importlib.util
import os
import sys
import time
import uuid

from common import moto_bucket  # noqa: E402  (also puts tests/ on sys.path)

HERE = os.path.dirname(os.path.abspath(__file__))
U = os.path.join(os.path.dirname(HERE), "issue25u")


def load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m


mine = sys.modules["common"]
cu = load("common25u_z2", os.path.join(U, "common.py"))
sys.modules["common"] = cu
try:
    matrix = load("matrix25u_z2", os.path.join(U, "matrix.py"))
finally:
    sys.modules["common"] = mine

from conftest import SCHEMA  # noqa: E402
from paimon_commit import Table  # noqa: E402

t0 = time.time()
server, client, bucket = moto_bucket()


def fresh(options=None):
    uri = f"s3://{bucket}/db.db/t{uuid.uuid4().hex[:8]}"
    return uri, Table.create(uri, SCHEMA, ["dt", "hr"],
                             dict({"compaction.min.file-num": "2"}, **(options or {})))


def snapshot_ids(uri):
    return sorted(s.id for s in Table.open(uri).snapshots())


def ids_read(uri, snapshot_id=None):
    ours = sorted(Table.open(uri).read_arrow(snapshot_id=snapshot_id).column("id").to_pylist())
    return ours, ours


matrix.fresh, matrix.snapshot_ids, matrix.ids_read = fresh, snapshot_ids, ids_read
findings, held = [], 0
try:
    for timing in ("after-call", "in-retry"):
        for event in (("none", "other", "expire", "recreate", "rollback", "drop")
                      if timing == "after-call" else ("none", "recreate")):
            for ru in ("same", "new", "fac"):
                bad, info = matrix.run(timing, event, ru)
                if bad:
                    findings.append(bad)
                    print("  " + bad)
                else:
                    held += 1
                    print("   " + info[:200])
finally:
    server.stop()
print(f"{held} runs held, {len(findings)} findings, {time.time() - t0:.1f} s")
print("FINDING: " + findings[0] if findings else "OK")
