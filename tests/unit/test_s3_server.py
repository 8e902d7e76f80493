"""benchmarks/s3_server.py (bench_latency's default S3 server): what obstore, boto3 and
delta-rs ask of it, answered as S3 answers: listings by prefix and delimiter, paged with
continuation tokens, conditional creates that exactly one of many racing writers wins, ranged
reads, copies, multi-object deletes, multipart uploads; and a request it does not know gets
501, not a wrong answer."""
import concurrent.futures as cf
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

from s3_server import S3Server, S3ServerProcess  # noqa: E402

# boto3 is a benchmark dependency (setup.cfg [bench]): the main venv runs these tests; the
# other Python versions' venvs (make test-versions: [test] only) skip them.
pytest.importorskip("boto3", reason="boto3 (setup.cfg [bench]) is not installed")


@pytest.fixture(scope="module")
def server():
    s = S3Server()
    yield s
    s.stop()


def _clients(url, bucket):
    import boto3
    from obstore.store import S3Store
    s3 = boto3.client("s3", endpoint_url=url, region_name="us-east-1",
                      aws_access_key_id="k", aws_secret_access_key="s")
    s3.create_bucket(Bucket=bucket)
    st = S3Store(bucket, endpoint=url, access_key_id="k", secret_access_key="s",
                 region="us-east-1", client_options={"allow_http": True})
    return s3, st


def test_listing_pages_by_prefix_and_delimiter(server):
    s3, st = _clients(server.url, "lists")
    import obstore
    keys = [f"t/p={i % 3}/bucket-0/data {i:04d}.parquet" for i in range(2300)] + ["t/x", "u"]
    with cf.ThreadPoolExecutor(16) as ex:
        list(ex.map(lambda k: obstore.put(st, k, b"v"), keys))
    listed = [o["Key"] for page in s3.get_paginator("list_objects_v2").paginate(
        Bucket="lists", Prefix="t/") for o in page.get("Contents", [])]
    assert listed == sorted(k for k in keys if k.startswith("t/"))   # 3 pages, url-encoded
    assert sorted(o["path"] for o in obstore.list(st, "t/p=1").collect()) == \
        sorted(k for k in keys if k.startswith("t/p=1/"))
    top = obstore.list_with_delimiter(st, "t")
    assert (top["common_prefixes"], [o["path"] for o in top["objects"]]) == \
        (["t/p=0", "t/p=1", "t/p=2"], ["t/x"])
    # One common prefix per page: the token after a prefix skips its keys.
    seen, token = [], None
    while True:
        kw = {"ContinuationToken": token} if token else {}
        r = s3.list_objects_v2(Bucket="lists", Prefix="t/", Delimiter="/", MaxKeys=1, **kw)
        seen += [p["Prefix"] for p in r.get("CommonPrefixes", [])] + \
            [o["Key"] for o in r.get("Contents", [])]
        if not r["IsTruncated"]:
            break
        token = r["NextContinuationToken"]
    assert seen == ["t/p=0/", "t/p=1/", "t/p=2/", "t/x"]


def test_one_of_many_racing_creates_wins_and_reads_are_ranged(server):
    import obstore
    s3, st = _clients(server.url, "conds")

    def create(i):
        try:
            obstore.put(st, "lease-1", f"writer {i}".encode(), mode="create")
            return i
        except Exception as e:   # obstore's AlreadyExistsError: 412
            assert "AlreadyExists" in type(e).__name__, e
            return None

    with cf.ThreadPoolExecutor(16) as ex:
        won = [i for i in ex.map(create, range(64)) if i is not None]
    assert len(won) == 1
    assert bytes(obstore.get(st, "lease-1").bytes()) == f"writer {won[0]}".encode()
    obstore.put(st, "r", bytes(range(100)))
    assert bytes(obstore.get(st, "r", options={"range": (10, 20)}).bytes()) == bytes(range(10, 20))
    assert s3.get_object(Bucket="conds", Key="r", Range="bytes=-5")["Body"].read() == \
        bytes(range(95, 100))
    head = obstore.head(st, "r")
    assert head["size"] == 100 and head["e_tag"]
    with pytest.raises(FileNotFoundError):
        obstore.get(st, "absent").bytes()


def test_copy_delete_many_multipart_and_unknown_requests(server):
    import obstore
    s3, st = _clients(server.url, "misc")
    obstore.put(st, "a", b"payload")
    s3.copy_object(Bucket="misc", Key="b", CopySource={"Bucket": "misc", "Key": "a"})
    assert s3.get_object(Bucket="misc", Key="b")["Body"].read() == b"payload"
    r = s3.delete_objects(Bucket="misc", Delete={"Objects": [{"Key": "a"}, {"Key": "b"}]})
    assert sorted(d["Key"] for d in r["Deleted"]) == ["a", "b"]
    assert s3.list_objects_v2(Bucket="misc")["KeyCount"] == 0
    up = s3.create_multipart_upload(Bucket="misc", Key="big")["UploadId"]
    parts = [s3.upload_part(Bucket="misc", Key="big", UploadId=up, PartNumber=n,
                            Body=bytes([n]) * (5 << 20 if n == 1 else 10))["ETag"]
             for n in (1, 2)]
    s3.complete_multipart_upload(Bucket="misc", Key="big", UploadId=up, MultipartUpload={
        "Parts": [{"ETag": e, "PartNumber": n} for n, e in zip((1, 2), parts)]})
    assert s3.get_object(Bucket="misc", Key="big")["Body"].read() == \
        b"\x01" * (5 << 20) + b"\x02" * 10
    import botocore.exceptions
    with pytest.raises(botocore.exceptions.ClientError, match="NotImplemented"):
        s3.get_bucket_versioning(Bucket="misc")


def test_the_server_in_its_own_process():
    import obstore
    p = S3ServerProcess()
    try:
        _, st = _clients(p.url, "proc")
        obstore.put(st, "k", b"v")
        assert bytes(obstore.get(st, "k").bytes()) == b"v"
    finally:
        p.stop()
    assert p.proc.poll() is not None
