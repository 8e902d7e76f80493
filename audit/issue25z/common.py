"""Set-up for audit 25z scripts: loads issue25y's common.py (and through it 25x/25u/25t/25s:
fresh, prepared, LatePut, state, make_branch, branch_rows, copy_table, age_tree, ...) and
adds `moto_bucket()`: a moto S3 server on loopback (tests/objectstore/moto_server.py, as
tests/objectstore/conftest.py starts it), a fresh bucket, the AWS environment variables
pointing at it; returns (server, boto3 client, bucket)."""
import importlib.util
import os
import sys
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location(
    "common25y", os.path.join(os.path.dirname(HERE), "issue25y", "common.py"))
_c = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_c)
globals().update({k: v for k, v in vars(_c).items() if not k.startswith("__")})


def moto_bucket():
    import tempfile
    import boto3
    from tests.objectstore.moto_server import ACCESS_KEY, SECRET_KEY, MotoServer, aws_env
    log = os.path.join(tempfile.mkdtemp(prefix="audit25z-moto-"), "moto.log")
    server = MotoServer(log)
    for k in list(os.environ):
        if k.startswith("AWS_"):
            del os.environ[k]
    os.environ.update(aws_env(server.url))
    client = boto3.client("s3", endpoint_url=server.url, aws_access_key_id=ACCESS_KEY,
                          aws_secret_access_key=SECRET_KEY, region_name="us-east-1")
    bucket = f"t-{uuid.uuid4().hex[:12]}"
    client.create_bucket(Bucket=bucket)
    return server, client, bucket


def s3_keys(client, bucket, prefix=""):
    out = []
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        out.extend(o["Key"] for o in page.get("Contents", []))
    return out


def put_many(client, bucket, keys, data=b"x"):
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(16) as pool:
        list(pool.map(lambda k: client.put_object(Bucket=bucket, Key=k, Body=data), keys))
