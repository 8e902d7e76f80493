"""Warehouse maintenance on an S3-protocol server: tables found under the bucket, each
maintained, keys gone from the bucket, rows read back."""
from conftest import SCHEMA, make_rows, write

from paimon_commit import Table
from paimon_commit.cli import main
from paimon_commit.warehouse import find_tables, maintain_warehouse

EAGER = {"snapshot.num-retained.min": "1", "snapshot.time-retained": "0 ms",
         "write-only": "true"}


def test_maintain_a_bucket_warehouse(s3, capsys):
    for name in ("a", "b"):
        t = Table.create(s3.table_uri(f"db.db/{name}"), SCHEMA, ["dt", "hr"], EAGER)
        for i in range(1, 4):
            write(t, make_rows([i]))
    wh = f"s3://{s3.name}"
    assert [r.full_name for r in find_tables(wh)] == ["db.a", "db.b"]
    results = maintain_warehouse(wh, parallelism=2)       # worker processes
    assert [(r.table, r.status, r.snapshots_expired) for r in results] == \
        [("db.a", "ok", 2), ("db.b", "ok", 2)]
    keys = s3.keys()
    assert "db.db/a/snapshot/snapshot-1" not in keys and "db.db/a/snapshot/snapshot-3" in keys
    assert sorted(Table.open(s3.table_uri("db.db/b")).read_arrow().column("id")
                  .to_pylist()) == [1, 2, 3]
    assert main(["maintain", wh, "--parallelism", "1", "--json"]) == 0
    assert '"ok": 2' in capsys.readouterr().out
