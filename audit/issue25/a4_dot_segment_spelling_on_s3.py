"""Idea: commit_record.table_identity keys an object-store table by its key prefix as
spelled ("`a/./b` and `a/b` are two prefixes there"). If the store client resolves dot
segments in the request path (RFC 3986), s3://b/db.db/./t reaches the very objects of
s3://b/db.db/t: the same CommitMessages committed once through each spelling (a retry with
another spelling of the same table) are published twice."""
import os
import tempfile

import boto3
import pyarrow as pa

from common import SCHEMA
from tests.objectstore.moto_server import MotoServer, aws_env
from paimon_commit import Table

server = MotoServer(os.path.join(tempfile.mkdtemp(), "moto.log"))
verdict = "NO FINDING"
try:
    os.environ.update(aws_env(server.url))
    c = boto3.client("s3", endpoint_url=server.url, region_name="us-east-1")
    c.create_bucket(Bucket="bkt-audit25")
    a = Table.create("s3://bkt-audit25/db.db/t", SCHEMA)
    try:
        b = Table.open("s3://bkt-audit25/db.db/./t")
    except Exception as e:  # noqa
        b = None
        print("open via ./ spelling:", type(e).__name__, str(e)[:200])
    keys = sorted(o["Key"] for o in c.list_objects_v2(Bucket="bkt-audit25").get("Contents", []))
    print("keys:", [k for k in keys if "schema" in k])
    if b is not None:
        w = a.new_writer()
        w.write_arrow(pa.table({"id": [1, 2], "v": ["a", "b"]}, schema=SCHEMA))
        msgs = w.prepare_commit()
        with a.new_commit(commit_user="job") as cm:
            s1 = cm.commit(msgs, commit_identifier=1)
        try:
            with b.new_commit(commit_user="job") as cm:
                s2 = cm.commit(msgs, commit_identifier=1)
        except Exception as e:  # noqa
            s2 = f"{type(e).__name__}: {e}"
        rows = Table.open("s3://bkt-audit25/db.db/t").read_arrow().num_rows
        print("first commit:", s1, "repeat via ./:", s2, "rows now:", rows)
        if rows > 2:
            verdict = "FINDING (duplicate): the same messages published twice via a ./ spelling"
finally:
    server.stop()
print(verdict)
