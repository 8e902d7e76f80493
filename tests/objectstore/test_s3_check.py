"""`check` on an S3-protocol server: a lost object names the snapshots it breaks, and the
request bill is one LIST per directory and one GET per metadata file, nothing else."""
from conftest import SCHEMA, make_rows, write

from paimon_commit import Table
from paimon_commit.cli import main


def test_check_on_s3_lists_each_directory_once_and_writes_nothing(s3, capsys):
    t = Table.create(s3.table_uri(), SCHEMA, ["dt", "hr"],
                     {"write-only": "true"})
    for i in range(1, 5):
        write(t, make_rows([i], hr=i % 2))
    t.create_tag("t2", 2)
    with t.new_commit() as c:
        c.drop_partitions([{"hr": 0}])
    assert main(["check", s3.table_uri()]) == 0
    capsys.readouterr()
    (f,) = [f for f in t.live_files(2) if f.partition["hr"] == 0]
    key = f.path.split("/", 1)[1]   # bucket/key -> key
    s3.client.delete_object(Bucket=s3.name, Key=key)

    fresh = Table.open(s3.table_uri())
    mark = s3.mark()
    r = fresh.check()
    reqs = s3.requests_since(mark)
    assert r.broken == ("snapshot 2", "snapshot 3", "snapshot 4", "tag t2")
    (p,) = r.problems
    assert (p.path, p.kind, p.state, p.expected_size) == (
        key[len("db.db/t/"):], "data", "missing", f.file_size)
    lists = [q for m, q, _ in reqs if m == "GET" and "list-type=2" in q]
    gets = [q for m, q, _ in reqs if m == "GET" and "list-type=2" not in q]
    # branch, snapshot, tag, changelog, schema, manifest and 2 bucket directories
    assert len(lists) == r.listings == 8
    # Each metadata file once; the 4 broken roots once more (still there, unchanged?).
    again = [g for g in set(gets) if gets.count(g) == 2]
    assert len(again) == 4 and len(gets) == len(set(gets)) + 4
    assert len(gets) == r.reads
    assert not [q for q in gets if q.endswith(".parquet")]   # data files: listed, never read
    assert {m for m, _, _ in reqs} == {"GET"}                # no HEAD, no PUT, no DELETE
    # The result's request bill is the server's.
    size = {g: s3.client.head_object(Bucket=s3.name, Key=g.split("/", 2)[2])["ContentLength"]
            for g in set(gets)}
    assert r.requests == {"LIST": len(lists), "GET": len(gets), "HEAD": 0, "PUT": 0,
                          "DELETE": 0, "bytes_written": 0,
                          "bytes_read": sum(size[g] for g in gets)}
    assert main(["check", s3.table_uri(), "--json"]) == 1
