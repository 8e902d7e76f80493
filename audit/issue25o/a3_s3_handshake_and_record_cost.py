"""A3. The abort handshake on S3 (moto server, storage options as Spark .option()s): the
driver's abort writes `.maintenance/spark-aborted-<marker>` on the bucket, a task finishing
its file after the whole abort finds it, deletes its file and fails. Also measured: what the check costs per task (the
record's name is not one `exists` knows to be a file: a HEAD, then a LIST), and what the
records left by failed writes cost the maintenance lease, which lists `.maintenance/` on
every take (post-commit expiration after every commit): 1,200 records left by failed writes
(the docs: "a few bytes per failed write"; nothing ever removes them)."""
import os, sys, tempfile
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import *  # noqa
import boto3
from tests.objectstore.moto_server import ACCESS_KEY, SECRET_KEY, MotoServer
from paimon_commit.spark import datasource

for k in list(os.environ):
    if k.startswith("AWS_"):
        del os.environ[k]
server = MotoServer(os.path.join(tempfile.mkdtemp(), "moto.log"))
try:
    client = boto3.client("s3", endpoint_url=server.url, aws_access_key_id=ACCESS_KEY,
                          aws_secret_access_key=SECRET_KEY, region_name="us-east-1")
    client.create_bucket(Bucket="bkt-audit")
    opts = {"s3.endpoint": server.url, "s3.access-key": ACCESS_KEY, "s3.secret-key": SECRET_KEY,
            "s3.region": "us-east-1"}
    uri = "s3://bkt-audit/db.db/t"

    def keys(prefix="db.db/t/"):
        out = []
        for page in client.get_paginator("list_objects_v2").paginate(Bucket="bkt-audit", Prefix=prefix):
            out += [o["Key"] for o in page.get("Contents", [])]
        return out

    Table.create(uri, SCHEMA, options=KEEP, storage_options=opts)
    write(Table.open(uri, storage_options=opts), 0)
    w = batch_writer(uri, **opts)
    w.abort([])
    recs = [k for k in keys() if "spark-aborted-" in k]
    print("records on the bucket:", recs)
    m = server.mark()
    try:
        w.write(iter(batches([10, 11])))
        late = "returned its files"
    except datasource.RunAbortedError as e:
        late = "RunAbortedError"
    reqs = server.requests_since(m)
    check = [r for r in reqs if "spark-aborted" in r[1] or "prefix=db.db%2Ft%2F.maintenance" in r[1]]
    left = [k for k in keys() if w.marker in k and "/.maintenance/" not in k]
    print("late task:", late, "| its files left:", left)
    print("requests of the task's record check:", [(r[0], r[1][:90], r[2]) for r in check])
    w2 = batch_writer(uri, **opts)              # a write that is not aborted: record absent
    m = server.mark()
    w2.write(iter(batches([30])))
    absent = [(r[0], r[2]) for r in server.requests_since(m)
              if "spark-aborted" in r[1] or ".maintenance" in r[1]]
    print("requests of a task's check when no abort began:", absent)
    rows_ok = sorted(Table.open(uri, storage_options=opts).read_arrow()
                     .column("id").to_pylist()) == [0, 1, 2]

    def lists_of_a_commit(start):
        t = Table.open(uri, storage_options=opts)
        m = server.mark()
        write(t, start)                            # a commit, then post-commit maintenance
        reqs = server.requests_since(m)
        return len([r for r in reqs if r[0] == "GET" and "list-type=2" in r[1]
                    and ".maintenance" in r[1]]), len(reqs)
    base = lists_of_a_commit(50)
    # Records accumulate: 1,200 failed writes' records (written directly, as the aborts would).
    for i in range(1200):
        client.put_object(Bucket="bkt-audit", Key=f"db.db/t/.maintenance/spark-aborted-data-spark-"
                                          f"{i:016x}-", Body=b"aborted 0\n")
    many = lists_of_a_commit(100)
    print(f"LIST requests on .maintenance/ (of all requests) by one commit with its post-commit "
          f"maintenance: {base} with 1 record, {many} with 1,201")
    ok = late == "RunAbortedError" and not left and rows_ok
    print("OK: on S3 the record is written, a late task deletes its files and fails; the check "
          "costs a HEAD per task, and a LIST too when no abort began; the records are listed (1,000 per page) by every "
          "take of the maintenance lease" if ok else "FINDING: the handshake failed on S3")
finally:
    server.stop()
