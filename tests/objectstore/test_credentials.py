"""Credentials given in a URI's user-info (`s3://KEY:SECRET@bucket/...`) reach the store and
are never shown: not by any CLI command (text and --json, results' `path` fields, pattern
expansions, error texts, log lines, the HTML report), not by warehouse maintenance's results
and errors. Against moto's S3 server, with no credentials in the environment: every command
that succeeds proves the URI's credentials were used."""
import json
import logging
import urllib.parse

import pytest

from conftest import SCHEMA, make_rows, write
from paimon_commit import Table, TableNotFoundError
from paimon_commit.cli import main
from paimon_commit.io.uri import parse_object_store_uri, redact_uri
from paimon_commit.warehouse import find_tables, maintain_warehouse, resolve_table_pattern
from tests.objectstore.moto_server import ACCESS_KEY
from tests.objectstore.servers import free_port

# AWS secrets hold '/' and '+', and users paste them into URIs without percent-encoding.
RAW_SECRET = "wJalrX/Utn+FEMI-never-shown"
PLAIN_SECRET = "s3cr3t-plain-never-shown"
EAGER = {"snapshot.num-retained.min": "1", "snapshot.time-retained": "0 ms"}


def _leaks(text, secret):
    forms = {ACCESS_KEY, secret, urllib.parse.quote(secret, safe=""),
             urllib.parse.quote(secret)}
    return [f for f in forms if f in text]


@pytest.fixture
def bare_s3(s3, monkeypatch):
    """The moto bucket, with the endpoint in the environment and no credentials anywhere but
    in the URIs the tests give."""
    for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    return s3


def _warehouse(s3, secret):
    """`wh` with db.t1 (4 snapshots, a tag, an orphan), db.t2 and db.broken (a damaged
    snapshot); returns the credentialed warehouse URI."""
    wh = f"s3://{ACCESS_KEY}:{secret}@{s3.name}/wh"
    t1 = Table.create(f"{wh}/db.db/t1", SCHEMA, partition_keys=["dt", "hr"],
                      options={"snapshot.num-retained.min": "100"})
    for i in range(4):
        write(t1, make_rows([i], hr=i % 2))
    t1.create_tag("release-1", 2)
    t2 = Table.create(f"{wh}/db.db/t2", SCHEMA, options=EAGER)
    write(t2, make_rows([10]))
    broken = Table.create(f"{wh}/db.db/broken", SCHEMA)
    write(broken, make_rows([20]))
    s3.put("wh/db.db/broken/snapshot/snapshot-1", b"{not json")
    s3.put("wh/db.db/t1/dt=2024-01-01/hr=1/bucket-0/data-orphan.parquet", b"orphan")
    return wh


def _log_everything(caplog):
    """Every log record at any level, except those of the test's own S3 client (boto3
    signs with the key and logs it at DEBUG)."""
    caplog.set_level(logging.DEBUG)
    for name in ("botocore", "boto3", "urllib3", "s3transfer"):
        caplog.set_level(logging.WARNING, logger=name)


class _Outputs:
    """Every text a run shows: stdout, stderr (this process and its workers) and every log
    record at any level."""

    def __init__(self, capfd, caplog):
        self.capfd, self.caplog, self.texts = capfd, caplog, []
        _log_everything(caplog)

    def run(self, *argv, code=0):
        self.caplog.clear()
        args = [str(a) for a in argv]
        if "-v" in args:   # a global flag: before the command
            args.remove("-v")
            args.insert(0, "-v")
        rc = main(args)
        out, err = self.capfd.readouterr()
        logs = "\n".join(f"{r.name} {r.getMessage()}" for r in self.caplog.records)
        self.texts.append((argv[0], out + err + logs))
        assert rc == code, (argv[0], rc, err)
        return out, err


@pytest.mark.parametrize("secret", [PLAIN_SECRET, RAW_SECRET], ids=["plain", "slash-plus"])
def test_no_cli_command_shows_the_uri_credentials(bare_s3, capfd, caplog, tmp_path, secret):
    s3 = bare_s3
    wh = _warehouse(s3, secret)
    t1, shown_wh = f"{wh}/db.db/t1", f"s3://{s3.name}/wh"
    o = _Outputs(capfd, caplog)

    out, _ = o.run("snapshots", t1, "--json", "-v")
    assert json.loads(out)["table"] == f"{shown_wh}/db.db/t1"
    assert [s["id"] for s in json.loads(out)["snapshots"]] == [1, 2, 3, 4]
    o.run("snapshots", t1)
    o.run("tags", t1, "--json")
    out, _ = o.run("info", t1, "-v")
    assert f"{shown_wh}/db.db/t1" in out
    o.run("info", t1, "--json")
    o.run("create-tag", t1, "release-2", "--snapshot", "3", "--json")
    o.run("delete-tag", t1, "release-2", "-v")
    o.run("expire-tags", t1, "--json", "--dry-run")
    o.run("drop-partition", t1, "dt=2024-01-01,hr=0", "--json", "-v")
    o.run("rollback-to", t1, "--snapshot", "4", "--json")
    out, _ = o.run("expire-partitions", t1, "--expiration-time", "1 d", "--dry-run", "--json",
                   "-v")
    assert [p["dt"] for p in json.loads(out)["expired_partitions"]] == ["2024-01-01"] * 2
    out, _ = o.run("report", t1, "--json", "--html", tmp_path / "r.html")
    assert json.loads(out)["table"] == f"{shown_wh}/db.db/t1"
    o.texts.append(("report html", (tmp_path / "r.html").read_text()))
    out, _ = o.run("expire-snapshots", t1, "--retain-min", "1", "--time-retained", "0 ms",
                   "--json", "-v")
    assert json.loads(out)["expired_snapshots"] == 3
    out, _ = o.run("remove-orphan-files", t1, "--older-than-duration", "1 ms",
                   "--allow-recent-cutoff", "--json", "-v")
    assert "dt=2024-01-01/hr=1/bucket-0/data-orphan.parquet" in json.loads(out)["files"]
    assert "wh/db.db/t1/dt=2024-01-01/hr=1/bucket-0/data-orphan.parquet" not in s3.keys()
    out, _ = o.run("check", t1, "--json", "-v")
    assert json.loads(out)["table"] == f"{shown_wh}/db.db/t1"
    o.run("check", t1)
    out, _ = o.run("repair", t1, "--json", "-v")
    assert json.loads(out)["message"] == (f"nothing to repair: snapshot 4 of "
                                          f"{shown_wh}/db.db/t1 names no missing data file")
    o.run("repair", t1, "--apply", "-v")

    # Patterns: every expansion is shown credential-free, failing tables too.
    for cmd, broken in (("expire-snapshots", "ok"), ("remove-orphan-files", "failed")):
        code = 1 if broken == "failed" else 0
        out, _ = o.run(cmd, f"{wh}/db.db/*", "--dry-run", "--json", "-v", code=code)
        r = json.loads(out)
        assert r["pattern"] == f"{shown_wh}/db.db/*"
        assert [(t["path"], t["status"]) for t in r["tables"]] == [
            (f"{shown_wh}/db.db/broken", broken), (f"{shown_wh}/db.db/t1", "ok"),
            (f"{shown_wh}/db.db/t2", "ok")]
        o.run(cmd, f"{wh}/db.db/*", "--dry-run", code=code)
    o.run("remove-orphan-files", f"{wh}/nodb.db/*", "--dry-run", code=2)

    # The warehouse: with and without --json, --dry-run, --orphans; one worker or two.
    for extra in (["--json"], [], ["--dry-run", "--orphans", "--json"],
                  ["--orphans", "--parallelism", "1", "-v"]):
        out, _ = o.run("maintain", wh, *extra, code=1)   # db.broken is skipped
        if "--json" in extra:
            r = json.loads(out)
            assert r["warehouse"] == shown_wh
            assert [(t["path"], t["status"]) for t in r["tables"]] == [
                (f"{shown_wh}/db.db/broken", "skipped"), (f"{shown_wh}/db.db/t1", "ok"),
                (f"{shown_wh}/db.db/t2", "ok")]

    # Error paths: arguments argparse refuses, a missing warehouse, a path that is not a
    # table, a table that is not partitioned, an endpoint where nothing listens.
    _, err = o.run("info", t1, f"{wh}/db.db/t2", code=2)
    assert f"unrecognized arguments: s3://{s3.name}/wh/db.db/t2" in err
    o.run("remove-orphan-files", t1, "--mode", t1, code=2)
    _, err = o.run("maintain", f"s3://{ACCESS_KEY}:{secret}@{s3.name}/nowhere", "--json",
                   code=2)
    assert f"warehouse s3://{s3.name}/nowhere does not exist" in err
    _, err = o.run("info", f"{wh}/db.db/none", code=2)
    assert f"s3://{s3.name}/wh/db.db/none" in err
    _, err = o.run("expire-partitions", f"{wh}/db.db/t2", "--expiration-time", "1 d",
                   code=2)
    assert f"table s3://{s3.name}/wh/db.db/t2 is not partitioned" in err
    _, err = o.run("expire-snapshots", t1, "--option", "object-store.max-retries=0",
                   "--option", f"s3.endpoint=http://127.0.0.1:{free_port()}", "--json",
                   code=1)
    assert "cannot reach the endpoint" in err

    leaks = [(what, _leaks(text, secret)) for what, text in o.texts if _leaks(text, secret)]
    assert leaks == []


def test_one_user_info_parser():
    assert redact_uri("s3://AKID:wJal/rX+Ut@bucket/wh/db.db/t") == "s3://bucket/wh/db.db/t"
    assert redact_uri("s3://AKID:a%2Fb@bucket/wh") == "s3://bucket/wh"
    assert redact_uri("s3a://AKID@bucket/wh") == "s3a://bucket/wh"
    assert redact_uri("s3://AKID:wJal/rX@bucket/wh/a@b") == "s3://bucket/wh/a@b"
    assert redact_uri("gs://key:secret@bucket/wh") == "gs://bucket/wh"
    assert redact_uri("hdfs://user:pw@namenode:8020/wh") == "hdfs://user@namenode:8020/wh"
    assert redact_uri("hdfs://namenode:8020/a@b/wh") == "hdfs://namenode:8020/a@b/wh"
    assert redact_uri("s3://bucket/a:b@c/wh") == "s3://bucket/a:b@c/wh"
    azure = "abfss://container@account.dfs.core.windows.net/wh"
    assert redact_uri(azure) == azure
    assert parse_object_store_uri(azure) == ("abfss", "container", "wh", "account", None)
    assert parse_object_store_uri("s3://AKID:wJal/rX+Ut@bucket/wh/") == \
        ("s3", "bucket", "wh", None, ("AKID", "wJal/rX+Ut"))
    assert parse_object_store_uri("s3://AKID:a%2Fb%40c@bucket/wh") == \
        ("s3", "bucket", "wh", None, ("AKID", "a/b@c"))
    assert parse_object_store_uri("s3://AKID:wJal/rX@bucket/wh/a@b") == \
        ("s3", "bucket", "wh/a@b", None, ("AKID", "wJal/rX"))
    from paimon_commit.io.uri import parse_uri
    assert parse_uri("/local/path").shown == "/local/path"


def test_warehouse_results_and_errors_carry_no_credentials(bare_s3, caplog):
    s3 = bare_s3
    _log_everything(caplog)
    wh = _warehouse(s3, RAW_SECRET)
    shown = f"s3://{s3.name}/wh"
    refs = find_tables(wh)
    assert [r.path for r in refs] == [f"{shown}/db.db/broken", f"{shown}/db.db/t1",
                                      f"{shown}/db.db/t2"]
    assert [r.path for r in resolve_table_pattern(f"{wh}/db.db/t*")] == \
        [f"{shown}/db.db/t1", f"{shown}/db.db/t2"]
    results = maintain_warehouse(wh, dry_run=True, workers="thread", parallelism=2)
    assert [(r.path, r.status) for r in results] == [
        (f"{shown}/db.db/broken", "skipped"), (f"{shown}/db.db/t1", "ok"),
        (f"{shown}/db.db/t2", "ok")]
    with pytest.raises(TableNotFoundError) as e:
        maintain_warehouse(f"s3://{ACCESS_KEY}:{RAW_SECRET}@{s3.name}/nowhere")
    assert str(e.value) == f"warehouse s3://{s3.name}/nowhere does not exist"
    with pytest.raises(ValueError) as e:
        resolve_table_pattern(f"{wh}/*")
    texts = [json.dumps([r.to_dict() for r in results]), str(e.value), caplog.text]
    assert [t for t in texts if _leaks(t, RAW_SECRET)] == []
