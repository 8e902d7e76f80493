import uuid

import pytest

from tests.objectstore.moto_server import ACCESS_KEY, SECRET_KEY, Bucket, MotoServer, aws_env


@pytest.fixture(scope="session")
def moto(tmp_path_factory):
    server = MotoServer(str(tmp_path_factory.mktemp("moto") / "moto.log"))
    yield server
    server.stop()


@pytest.fixture
def s3(moto, monkeypatch):
    """A fresh bucket; the usual AWS environment variables point at the moto server."""
    import boto3
    for k in ("AWS_PROFILE", "AWS_DEFAULT_REGION", "AWS_SESSION_TOKEN", "AWS_ENDPOINT",
              "AWS_ALLOW_HTTP"):
        monkeypatch.delenv(k, raising=False)
    for k, v in aws_env(moto.url).items():
        monkeypatch.setenv(k, v)
    bucket = f"t-{uuid.uuid4().hex[:12]}"
    client = boto3.client("s3", endpoint_url=moto.url, aws_access_key_id=ACCESS_KEY,
                          aws_secret_access_key=SECRET_KEY, region_name="us-east-1")
    client.create_bucket(Bucket=bucket)
    return Bucket(moto, client, bucket)
