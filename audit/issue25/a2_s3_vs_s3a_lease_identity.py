"""Idea: the lease record names its table by `lease.table_identity`, which on object stores
is `io.uri(root)` = the scheme as spelled. commit_record.table_identity folds s3/s3a/s3n into
one family, the lease does not. One table maintained through s3a:// (Spark/Hadoop spelling)
while a writer or a CLI run uses s3:// sees a live lease record that "belongs to another table
(a copied or moved table?)" and is told to `lease --break` it: the advice breaks a live lease."""
import os
import sys
import tempfile
import threading

from common import SCHEMA, write
from tests.objectstore.moto_server import MotoServer, aws_env
import boto3

from paimon_commit import Table
from paimon_commit.errors import LeaseRecordError, LeaseHeldError
from paimon_commit.lease import maintenance_lease, lease_settings

server = MotoServer(os.path.join(tempfile.mkdtemp(), "moto.log"))
try:
    os.environ.update(aws_env(server.url))
    c = boto3.client("s3", endpoint_url=server.url, region_name="us-east-1")
    c.create_bucket(Bucket="bkt-audit25")
    t = Table.create("s3://bkt-audit25/db.db/t", SCHEMA, options={"snapshot.num-retained.min": "10"})
    for i in range(4):
        write(t, i * 3)
    taken, done = threading.Event(), threading.Event()

    def hold():
        with maintenance_lease(Table.open("s3a://bkt-audit25/db.db/t").store, "held-via-s3a"):
            taken.set()
            done.wait(60)
    th = threading.Thread(target=hold, daemon=True)
    th.start()
    assert taken.wait(60)
    outcome = None
    try:
        with lease_settings(wait_s=0.3):
            Table.open("s3://bkt-audit25/db.db/t").expire_snapshots(retain_max=1, retain_min=1)
        outcome = "expired (no exclusion!)"
    except LeaseHeldError as e:
        outcome = f"LeaseHeldError (correct): {e}"
    except LeaseRecordError as e:
        outcome = f"LeaseRecordError: {e}"
    print("explicit expire via s3:// while s3a:// holds:", outcome)
    # a writer through s3:// : its post-commit maintenance
    t2 = Table.open("s3://bkt-audit25/db.db/t")
    before = t2.latest_snapshot().id
    w = t2.new_writer()
    import pyarrow as pa
    w.write_arrow(pa.table({"id": [100], "v": ["x"]}, schema=SCHEMA))
    msgs = w.prepare_commit()
    commit_raised = None
    try:
        with t2.new_commit(commit_user="w") as cm:
            cm.commit(msgs, commit_identifier=1)
    except Exception as e:  # noqa
        commit_raised = e
        print("commit via s3:// raised:", type(e).__name__, str(e)[:120])
    after = Table.open("s3://bkt-audit25/db.db/t").latest_snapshot().id
    print(f"latest snapshot before commit {before}, after {after} "
          f"(published although commit() raised: {commit_raised is not None and after > before})")
    # the same with the helper's default identifier (a batch commit)
    before2 = after
    try:
        write(Table.open("s3://bkt-audit25/db.db/t"), 200, commit_user="w2")
        print("batch commit via s3:// returned normally")
    except Exception as e:  # noqa
        after2 = Table.open("s3://bkt-audit25/db.db/t").latest_snapshot().id
        print(f"batch commit via s3:// RAISED {type(e).__name__} although snapshot "
              f"{after2} was published (before: {before2})")
    done.set()
    th.join(60)
finally:
    server.stop()
if outcome and outcome.startswith("LeaseRecordError"):
    print("FINDING (wrong message): one table reached as s3:// and s3a:// is called 'another "
          "table' and the user is told to --break a live lease")
else:
    print("NO FINDING")
