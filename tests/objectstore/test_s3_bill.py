"""The request bill (io/metered.py) against the S3 server's own log: for commit, expiration,
orphan cleanup (dry and real) and compaction, the counts a result reports, kind by kind, are
the requests moto logged for that call. (The one documented difference, a request obstore
retried, does not happen here: nothing fails.)"""
import datetime
import json
import time

from conftest import SCHEMA, make_rows, write
from paimon_commit import Table
from paimon_commit.cli import main

KINDS = ("LIST", "GET", "HEAD", "PUT", "DELETE")


def billed_by_server(reqs, bucket):
    """The server's requests to `bucket` by the kind S3 bills them as: a GET with
    `list-type=2` is a LIST, a POST `?delete` a (batched) DELETE, a multipart POST a PUT."""
    out = dict.fromkeys(KINDS, 0)
    for method, path, _ in reqs:
        if not path.startswith(f"/{bucket}"):
            continue   # another test's bucket on the shared server
        if method == "GET":
            out["LIST" if "list-type=2" in path else "GET"] += 1
        elif method == "POST":
            out["DELETE" if "?delete" in path else "PUT"] += 1
        else:
            out[method] += 1
    return out


def counts(bill):
    return {k: bill[k] for k in KINDS}


def _history(s3, n, options=None, hrs=2):
    t = Table.create(s3.table_uri(), SCHEMA, partition_keys=["dt", "hr"],
                     options={"write-only": "true", **(options or {})})
    with t.new_commit() as c:
        for i in range(n):
            write(t, make_rows([i], hr=i % hrs), commit=c, identifier=i + 1)
    return t


def test_a_commit_reports_the_requests_the_server_logged(s3):
    t = _history(s3, 3)
    w = t.new_writer()
    w.write_arrow(make_rows([99]))
    msgs = w.prepare_commit()
    with t.new_commit() as c:
        mark = s3.server.mark()
        c.commit(msgs, 10)
        reqs = s3.server.requests_since(mark)
        r = c.last_result
    assert counts(r.requests) == billed_by_server(reqs, s3.name)
    assert r.requests["PUT"] >= 3 and r.requests["bytes_written"] > 0   # manifests, list, snapshot
    assert r.requests.storage == ("s3",)


def test_expiration_reports_the_requests_the_server_logged(s3):
    t = _history(s3, 6)
    with t.new_commit(options={"write-only": "true"}) as c:
        mark = s3.server.mark()
        r = c.expire_snapshots(retain_min=1, retain_max=2)
        reqs = s3.server.requests_since(mark)
    assert r.expired_snapshots == 4
    assert counts(r.requests) == billed_by_server(reqs, s3.name)
    assert r.requests["DELETE"] >= 1 and r.to_dict()["requests"]["total"] == len(
        [q for q in reqs if q[1].startswith(f"/{s3.name}")])


def _cli_json(capsys, argv):
    code = main(argv + ["--json"])
    out = capsys.readouterr().out
    return code, json.loads(out.strip().splitlines()[-1])


def test_orphan_cleanup_dry_and_real_report_the_requests_the_server_logged(s3, capsys):
    _history(s3, 3)
    for i in range(3):
        s3.put(f"db.db/t/dt=2024-01-01/hr=1/bucket-0/data-orphan-{i}.parquet")
    time.sleep(2.1)   # (--older-than has whole seconds)
    older = datetime.datetime.now().strftime("%Y-%m-%d %H:%M:%S")
    for dry in (["--dry-run"], []):
        mark = s3.server.mark()
        code, r = _cli_json(capsys, ["remove-orphan-files", s3.table_uri(), "--older-than",
                                     older, "--allow-recent-cutoff", *dry])
        reqs = s3.server.requests_since(mark)
        assert code == 0 and r["deleted_files"] == 3
        assert counts(r["requests"]) == billed_by_server(reqs, s3.name), dry
        assert r["requests"]["DELETE"] == (0 if dry else 1)   # 3 keys: one DeleteObjects
    assert not [k for k in s3.keys() if "orphan" in k]


def test_compaction_reports_the_requests_the_server_logged(s3, capsys):
    _history(s3, 6, hrs=1)
    mark = s3.server.mark()
    code, r = _cli_json(capsys, ["compact", s3.table_uri()])
    reqs = s3.server.requests_since(mark)
    assert code == 0 and r["snapshot_id"] == 7, r
    assert counts(r["requests"]) == billed_by_server(reqs, s3.name)
    assert r["requests"]["PUT"] >= 1 and r["requests"]["bytes_written"] > 0


def test_the_get_bytes_are_the_objects_read(s3):
    t = _history(s3, 2)
    fresh = Table.open(s3.table_uri())
    mark = s3.server.mark()
    r = fresh.check()
    reqs = s3.server.requests_since(mark)
    gets = [p for m, p, _ in reqs if m == "GET" and "list-type=2" not in p]
    size = {g: s3.client.head_object(Bucket=s3.name, Key=g.split("/", 2)[2])["ContentLength"]
            for g in set(gets)}
    assert r.requests["bytes_read"] == sum(size[g] for g in gets)
    assert counts(r.requests) == billed_by_server(reqs, s3.name)
    del t
