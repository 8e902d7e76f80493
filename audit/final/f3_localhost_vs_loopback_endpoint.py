"""Idea (c4 follow-up): the same moto/MinIO server reached as `http://127.0.0.1:PORT`
(AWS_ENDPOINT_URL) and `http://localhost:PORT` (s3.endpoint) - the way a second job is often
configured. normal_endpoint keeps the host as written, so the table has two identities. (1) A
holder through one spelling: an expiration through the other is told the live record is
another table's and to `lease --break` it. (2) The same messages committed through one
spelling and repeated through the other in one process: rows twice. (Script: c4 with the
other spelling.)"""
import os
import tempfile
import threading

import boto3
import pyarrow as pa

from common import SCHEMA
from tests.objectstore.moto_server import MotoServer, aws_env

from paimon_commit import Table
from paimon_commit.errors import LeaseHeldError, LeaseRecordError
from paimon_commit.lease import lease_settings, maintenance_lease

server = MotoServer(os.path.join(tempfile.mkdtemp(), "moto.log"))
findings = []
try:
    os.environ.update(aws_env(server.url))
    boto3.client("s3", endpoint_url=server.url, region_name="us-east-1") \
        .create_bucket(Bucket="bkt-f3")
    uri = "s3://bkt-f3/db.db/t"
    t = Table.create(uri, SCHEMA, options={"snapshot.num-retained.min": "10"})
    other = {"s3.endpoint": server.url.replace("127.0.0.1", "localhost")}
    t2 = Table.open(uri, storage_options=other)
    print("identities:", t.store.io._identity, t2.store.io._identity)

    # (2) exactly-once across the two spellings
    w = t.new_writer()
    w.write_arrow(pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"]}, schema=SCHEMA))
    msgs = w.prepare_commit()
    with t.new_commit(commit_user="job") as c:
        s1 = c.commit(msgs)
    try:
        with t2.new_commit(commit_user="job") as c:
            s2 = c.commit(msgs)
        fresh = Table.open(uri).store
        names = [e.file.file_name for e in fresh.live_entries(fresh.snapshots.latest_snapshot())]
        n_rows = Table.open(uri).read_arrow().num_rows
        from paimon_commit.format.manifest import *  # noqa
        adds = sum(1 for m in fresh.manifests.read_list(fresh.snapshots.latest_snapshot().delta_manifest_list) for _ in [m]) if hasattr(fresh.manifests, "read_list") else "?"
        out = (f"repeat through the other spelling: snapshot {s2} (first {s1}); live entries "
               f"now {names}; rows read {n_rows} (3 written); delta manifests of {s2}: {adds}")
    except Exception as e:  # noqa
        s2, out = None, f"repeat refused/recognised: {type(e).__name__}: {str(e)[:120]}"
    print(out)
    if s2 is not None and s2 != s1:
        findings.append(f"duplicate: the same messages were published as snapshots {s1} and "
                        f"{s2} through two spellings of one endpoint")

    # (1) the lease across the two spellings
    taken, done = threading.Event(), threading.Event()

    def hold():
        with maintenance_lease(Table.open(uri, storage_options=other).store, "held-via-slash"):
            taken.set()
            done.wait(60)
    th = threading.Thread(target=hold, daemon=True)
    th.start()
    assert taken.wait(60)
    try:
        with lease_settings(wait_s=0.3):
            Table.open(uri).expire_snapshots(retain_max=1, retain_min=1)
        lease_out = "expired while the other spelling holds (no exclusion!)"
        findings.append("two holders: " + lease_out)
    except LeaseHeldError as e:
        lease_out = f"LeaseHeldError (correct): {str(e)[:100]}"
    except LeaseRecordError as e:
        lease_out = f"LeaseRecordError: {str(e)[:300]}"
        if "--break" in str(e):
            findings.append("wrong error: a live holder through another spelling of the "
                            "endpoint is called another table's, with the advice to --break it")
    print("expire through the env endpoint while the trailing-slash spelling holds:", lease_out)
    done.set()
    th.join(30)
finally:
    server.stop() if hasattr(server, "stop") else None
for f in findings:
    print("FINDING (" + f + ")")
if not findings:
    print("NO FINDING")
