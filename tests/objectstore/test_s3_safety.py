"""Never a silent loss, configuration users know, and no credential anywhere a user or a log
can see it. Against the moto server, directly or through a proxy that misbehaves on purpose."""
import json
import logging
import os
import subprocess
import sys
import time

import pytest

from conftest import SCHEMA, make_rows, write
from paimon_commit import Table, TableNotFoundError
from paimon_commit.objectstore import AtomicCreateUnsupportedError, ObjectStoreError
from tests.objectstore.moto_server import ACCESS_KEY, SECRET_KEY, MotoServer, Proxy, free_port

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _no_env_credentials(monkeypatch):
    for k in ("AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION",
              "AWS_DEFAULT_REGION", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(k, raising=False)


def test_a_store_that_ignores_the_condition_fails_the_commit_before_publishing(s3, monkeypatch):
    proxy = Proxy(s3.server.port, lambda method, path, headers: "drop-condition")
    try:
        monkeypatch.setenv("AWS_ENDPOINT_URL", proxy.url)
        t = Table.create(s3.table_uri(), SCHEMA, partition_keys=["dt", "hr"])
        with pytest.raises(AtomicCreateUnsupportedError) as e:
            write(t, make_rows([1]))
        msg = str(e.value)
        assert "commit.single-writer" in msg and s3.table_uri() in msg
        assert "ignores If-None-Match" in msg
        assert not [k for k in s3.keys() if "/snapshot/" in k], "something was published"
        assert not [k for k in s3.keys() if "probe" in k], "probe object left behind"
        # A declared single writer may commit: one process, no race to lose.
        with t.new_commit(options={"commit.single-writer": "true"}) as c:
            w = t.new_writer()
            w.write_arrow(make_rows([1, 2]))
            assert c.commit(w.prepare_commit()) == 1
        single = Table.create(s3.table_uri("db.db/single"), SCHEMA,
                              options={"commit.single-writer": "true"})
        assert write(single, make_rows([3])) == 1
    finally:
        proxy.stop()
    monkeypatch.setenv("AWS_ENDPOINT_URL", s3.url)
    assert sorted(Table.open(s3.table_uri()).read_arrow().column("id").to_pylist()) == [1, 2]


def test_the_probe_runs_once_per_table_root_and_process(s3):
    t = Table.create(s3.table_uri(), SCHEMA, partition_keys=["dt", "hr"])
    mark = s3.server.mark()
    for i in range(3):
        write(t, make_rows([i]))
    write(Table.open(s3.table_uri()), make_rows([9]))
    probes = [r for r in s3.server.requests_since(mark) if "atomic-create-probe" in r[1]]
    assert [(m, status) for m, _, status in probes] == [("PUT", 200), ("PUT", 412)]
    assert len([r for r in s3.server.requests_since(mark) if r[0] in ("DELETE", "POST")]) == 1
    assert not [k for k in s3.keys() if "probe" in k]


def test_paimon_option_names_configure_the_store_and_are_never_stored(s3, monkeypatch):
    _no_env_credentials(monkeypatch)
    paimon = {"s3.endpoint": s3.url, "s3.access-key": ACCESS_KEY, "s3.secret-key": SECRET_KEY,
              "s3.path.style.access": "true", "s3.region": "us-east-1"}
    t = Table.create(s3.table_uri(), SCHEMA, partition_keys=["dt", "hr"],
                     storage_options=paimon)
    assert write(t, make_rows([1])) == 1
    hadoop = {"fs.s3a.endpoint": s3.url, "fs.s3a.access.key": ACCESS_KEY,
              "fs.s3a.secret.key": SECRET_KEY, "fs.s3a.path.style.access": "true"}
    again = Table.open(s3.table_uri(), options=hadoop)
    assert write(again, make_rows([2])) == 2
    assert sorted(again.read_arrow().column("id").to_pylist()) == [1, 2]
    for key in s3.keys():
        if "/schema/" in key or "/snapshot/" in key:
            body = s3.get(key).decode()
            assert SECRET_KEY not in body and ACCESS_KEY not in body and "s3." not in body
    assert not any(k.startswith(("s3.", "fs.s3a.")) for k in again.options)


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
    for text in shown:
        assert SECRET_KEY not in text and ACCESS_KEY not in text, text


def test_unreachable_endpoint_is_one_clear_error_and_nothing_written(s3, monkeypatch):
    port = free_port()  # nothing listens there
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{port}")
    start = time.monotonic()
    with pytest.raises(ObjectStoreError) as e:
        Table.open(s3.table_uri())
    msg = str(e.value)
    assert f"s3 store at http://127.0.0.1:{port}" in msg and s3.table_uri() in msg, msg
    assert "cannot reach the endpoint" in msg and SECRET_KEY not in msg
    assert time.monotonic() - start < 30
    with pytest.raises(ObjectStoreError):
        Table.create(s3.table_uri(), SCHEMA)
    assert s3.keys() == []


def test_missing_bucket_and_not_a_table(s3):
    with pytest.raises(ObjectStoreError, match=r"bucket 'no-such-bucket-x' does not exist"):
        Table.open("s3://no-such-bucket-x/db.db/t")
    with pytest.raises(TableNotFoundError, match=rf"s3://{s3.name}/db.db/t is not a Paimon"):
        Table.open(s3.table_uri())
    assert s3.keys() == []


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


def _cli(args, env):
    return subprocess.run([sys.executable, "-m", "paimon_commit", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)


def test_cli_on_the_store(s3):
    t = Table.create(s3.table_uri(), SCHEMA, partition_keys=["dt", "hr"])
    for i in range(4):
        write(t, make_rows([i]))
    env = dict(os.environ)
    r = _cli(["snapshots", s3.table_uri(), "--json"], env)
    assert r.returncode == 0, r.stderr
    assert [s["id"] for s in json.loads(r.stdout)["snapshots"]] == [1, 2, 3, 4]
    r = _cli(["expire-snapshots", s3.table_uri(), "--retain-min", "2", "--time-retained",
              "0 ms", "--json"], env)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["expired_snapshots"] == 2
    assert [k for k in s3.keys() if "/snapshot/snapshot-" in k] == [
        "db.db/t/snapshot/snapshot-3", "db.db/t/snapshot/snapshot-4"]
    r = _cli(["remove-orphan-files", s3.table_uri(), "--dry-run", "--json"], env)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["deleted_files"] == 0
    # Paimon's option names instead of the environment, credentials nowhere in the output.
    bare = {k: v for k, v in env.items() if not k.startswith("AWS_")}
    opts = ["--option", f"s3.endpoint={s3.url}", "--option", f"s3.access-key={ACCESS_KEY}",
            "--option", f"s3.secret-key={SECRET_KEY}", "--option", "s3.region=us-east-1"]
    r = _cli(["info", s3.table_uri(), "--json", *opts], bare)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["latest"] == 4
    r = _cli(["info", f"s3://{ACCESS_KEY}:{SECRET_KEY}@{s3.name}/db.db/t", "--json",
              "--option", f"s3.endpoint={s3.url}"], bare)
    assert r.returncode == 0, r.stderr
    assert SECRET_KEY not in r.stdout + r.stderr and ACCESS_KEY not in r.stdout + r.stderr
    # Bad input: exit 2 for a path that is not a table, 1 for an unreachable store.
    r = _cli(["info", s3.table_uri("db.db/none")], env)
    assert r.returncode == 2 and "is not a Paimon table" in r.stderr
    dead = dict(env, AWS_ENDPOINT_URL=f"http://127.0.0.1:{free_port()}")
    r = _cli(["expire-snapshots", s3.table_uri()], dead)
    assert r.returncode == 1 and "cannot reach the endpoint" in r.stderr, r.stderr
    assert SECRET_KEY not in r.stderr
