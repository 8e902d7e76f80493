"""What only S3 has: S3's and Hadoop's option names, credentials inside an s3:// URI, a server
that checks signatures. No credential anywhere a user or a log can see it. (What every store
does, and a store that ignores If-None-Match, are in test_store_operations.py.)"""
import json
import logging
import os
import subprocess
import sys

import pytest

from conftest import SCHEMA, make_rows, write
from paimon_commit import Table, TableNotFoundError
from paimon_commit.errors import ObjectStoreError
from tests.objectstore.moto_server import ACCESS_KEY, SECRET_KEY, MotoServer
from tests.objectstore.stores import assert_never_stored

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _no_env_credentials(monkeypatch):
    for k in ("AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION",
              "AWS_DEFAULT_REGION", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(k, raising=False)


def test_paimon_option_names_configure_the_store_and_are_never_stored(s3, monkeypatch):
    _no_env_credentials(monkeypatch)
    paimon = {"s3.endpoint": s3.url, "s3.access-key": ACCESS_KEY, "s3.secret-key": SECRET_KEY,
              "s3.path.style.access": "true", "s3.region": "us-east-1"}
    t = Table.create(s3.table_uri(), SCHEMA, partition_keys=["dt", "hr"],
                     storage_options=paimon)
    assert write(t, make_rows([1])) == 1
    hadoop = {"fs.s3a.endpoint": s3.url, "fs.s3a.access.key": ACCESS_KEY,
              "fs.s3a.secret.key": SECRET_KEY, "fs.s3a.path.style.access": "true"}
    again = Table.open(s3.table_uri(), storage_options=hadoop)
    assert write(again, make_rows([2])) == 2
    assert sorted(again.read_arrow().column("id").to_pylist()) == [1, 2]
    assert_never_stored(s3, again, (SECRET_KEY, ACCESS_KEY, "s3."), ("s3.", "fs.s3a."))


def test_credentials_in_the_uri_never_show(s3, monkeypatch, caplog):
    _no_env_credentials(monkeypatch)
    monkeypatch.setenv("AWS_ENDPOINT_URL", s3.url)
    uri = f"s3://{ACCESS_KEY}:{SECRET_KEY}@{s3.name}/db.db/t"
    caplog.set_level(logging.DEBUG)
    t = Table.create(uri, SCHEMA, partition_keys=["dt", "hr"])
    write(t, make_rows([1]))
    with t.new_commit() as c:
        shown = [t.path, repr(t), repr(t.store.io), repr(c.expire_snapshots(dry_run=True)),
                 json.dumps(c.expire_snapshots(dry_run=True).to_dict(), default=str)]
    assert t.path == s3.table_uri()
    with pytest.raises(TableNotFoundError) as e:
        Table.open(f"s3://{ACCESS_KEY}:{SECRET_KEY}@{s3.name}/db.db/nothing")
    shown.append(str(e.value))
    with pytest.raises(ObjectStoreError) as e:
        Table.open(f"s3://{ACCESS_KEY}:{SECRET_KEY}@no-such-bucket-{s3.name}/db.db/t")
    shown.append(str(e.value))
    shown.append(caplog.text)
    # ... nor in the CLI's output, with no AWS environment at all.
    bare = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    r = subprocess.run([sys.executable, "-m", "paimon_commit", "info", uri, "--json",
                        "--option", f"s3.endpoint={s3.url}"], cwd=ROOT, env=bare,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["latest"] == 1
    shown.append(r.stdout + r.stderr)
    for text in shown:
        assert SECRET_KEY not in text and ACCESS_KEY not in text, text


def test_wrong_credentials_are_refused_clearly(tmp_path, monkeypatch):
    # A second server that checks signatures: no key is known to it, so every key is wrong.
    server = MotoServer(str(tmp_path / "auth.log"), {"INITIAL_NO_AUTH_ACTION_COUNT": "0"})
    try:
        monkeypatch.setenv("AWS_ENDPOINT_URL", server.url)
        monkeypatch.setenv("AWS_ACCESS_KEY_ID", ACCESS_KEY)
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET_KEY)
        monkeypatch.setenv("AWS_REGION", "us-east-1")
        with pytest.raises(ObjectStoreError) as e:
            Table.open("s3://some-bucket/db.db/t")
        msg = str(e.value)
        assert "access denied" in msg and "s3://some-bucket/db.db/t" in msg
        assert SECRET_KEY not in msg
    finally:
        server.stop()
