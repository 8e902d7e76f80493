"""An S3 endpoint and no credentials: a clear "no credentials found" before any request, never
a request to the cloud instance-metadata address (169.254.169.254) for a local server."""
import pytest

from tests.conftest import SCHEMA
from tests.objectstore.moto_server import ACCESS_KEY, SECRET_KEY

from paimon_commit import OptionError, Table
from paimon_commit.cli import main


@pytest.fixture
def no_credentials(s3, monkeypatch):
    """The moto bucket with no credentials anywhere (the endpoint is given as an option)."""
    for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
              "AWS_ENDPOINT_URL"):
        monkeypatch.delenv(k, raising=False)
    return s3


def test_no_credentials_is_said_before_any_request(no_credentials, tmp_path):
    s3 = no_credentials
    uri = f"s3://{s3.name}/db.db/t"
    with pytest.raises(OptionError) as e:
        Table.create(uri, SCHEMA, storage_options={"s3.endpoint": s3.url})
    assert str(e.value) == (
        f"no credentials found for s3://{s3.name} (endpoint {s3.url}): give them with --option "
        f"s3.access-key=... --option s3.secret-key=... (in Python: storage options of those "
        f"names), in the URI (s3://KEY:SECRET@{s3.name}/...) or as AWS_ACCESS_KEY_ID and "
        f"AWS_SECRET_ACCESS_KEY; for a bucket that needs none, aws_skip_signature=true")
    assert s3.keys() == []


def test_cli_no_credentials_exit_2_one_line(no_credentials, capsys):
    s3 = no_credentials
    code = main(["info", f"s3://{s3.name}/db.db/t", "--option", f"s3.endpoint={s3.url}"])
    _, err = capsys.readouterr()
    assert code == 2
    assert err.splitlines() == [f"error: no credentials found for s3://{s3.name} (endpoint "
                                f"{s3.url}): give them with --option s3.access-key=... --option "
                                f"s3.secret-key=... (in Python: storage options of those "
                                f"names), in the URI (s3://KEY:SECRET@{s3.name}/...) or as "
                                f"AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY; for a bucket that "
                                f"needs none, aws_skip_signature=true"]


@pytest.mark.parametrize("how", ["options", "uri", "env"])
def test_credentials_given_any_way_are_used(no_credentials, monkeypatch, how):
    s3 = no_credentials
    options = {"s3.endpoint": s3.url, "s3.region": "us-east-1"}
    uri = f"s3://{s3.name}/db.db/t"
    if how == "options":
        options.update({"s3.access-key": ACCESS_KEY, "s3.secret-key": SECRET_KEY})
    elif how == "uri":
        uri = f"s3://{ACCESS_KEY}:{SECRET_KEY}@{s3.name}/db.db/t"
    else:
        monkeypatch.setenv("AWS_ACCESS_KEY_ID", ACCESS_KEY)
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET_KEY)
    Table.create(uri, SCHEMA, storage_options=options)
    assert "db.db/t/schema/schema-0" in s3.keys()
