"""The request bill on local disk (system calls by kind, io/metered.py), its metering across
threads and concurrent operations, and the CLI's `requests:` line, `--json` object and
`--price` estimate."""
import json
import threading

import pytest

from conftest import make_rows, write
from paimon_commit.cli import main
from paimon_commit.io.metered import (ContextExecutor, PRICE_TABLES, RequestBill,
                                      estimated_cost, format_bill, format_cost, load_prices,
                                      metering, note)


def test_expiring_one_snapshot_unlinks_exactly_its_files(table, table_path):
    for i in range(3):
        write(table, make_rows([i]))
    s1 = table.snapshot(1)
    with table.new_commit(options={"write-only": "true"}) as c:
        r = c.expire_snapshots(retain_min=1, retain_max=2)
    assert r.expired_snapshots == 1
    # snapshot-1 and its two manifest lists (its data file and manifest stay: snapshots 2
    # and 3 still read them): one unlink each, nothing else.
    assert sorted(r.deleted_paths) == sorted(
        [str(table_path / "snapshot" / "snapshot-1"),
         str(table_path / "manifest" / s1.base_manifest_list),
         str(table_path / "manifest" / s1.delta_manifest_list)])
    # ... and the mark of the expiration in progress (expiring.py), removed once it is done
    assert r.requests["DELETE"] == r.deleted_files + 1 == 4
    assert r.requests["PUT"] >= 1   # (the mark)
    assert r.requests.storage == ("local",)
    assert r.requests["LIST"] >= 1 and r.requests["GET"] >= 2 and r.requests["bytes_read"] > 0


def test_a_commit_counts_its_writes_and_bytes(table):
    write(table, make_rows([1]))
    w = table.new_writer()
    w.write_arrow(make_rows([2]))
    msgs = w.prepare_commit()
    with table.new_commit(options={"write-only": "true"}) as c:
        c.commit(msgs, 5)
        r = c.last_result
    # a manifest, the delta and base manifest lists, the snapshot, the LATEST hint
    assert r.requests["PUT"] == 5, r.requests
    assert r.requests["DELETE"] == 0
    assert r.requests["bytes_written"] > 0 and r.requests.storage == ("local",)


def test_worker_threads_count_for_the_operation_and_concurrent_ones_do_not_mix():
    seen = {}

    def operation(name, n):
        with metering() as m:
            with ContextExecutor(4) as pool:
                list(pool.map(lambda _: note("local", "GET", read=10), range(n)))
            seen[name] = m.bill()

    with metering() as outer:
        threads = [threading.Thread(target=operation, args=(name, n))
                   for name, n in (("a", 7), ("b", 30))]
        # (plain threads: no context carried, so neither counts in `outer`)
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        operation("c", 5)   # this thread: counted in its own meter and in `outer`
    assert seen["a"]["GET"] == 7 and seen["a"]["bytes_read"] == 70
    assert seen["b"]["GET"] == 30
    assert seen["c"]["GET"] == 5 and outer.bill()["GET"] == 5


def test_async_maintenance_is_not_in_the_commits_bill(table):
    write(table, make_rows([0]))
    opts = {"snapshot.expire.execution-mode": "async", "snapshot.num-retained.min": "1",
            "snapshot.num-retained.max": "1"}
    with metering() as outer:
        with table.new_commit(options=opts) as c:
            w = table.new_writer()
            w.write_arrow(make_rows([1]))
            c.commit(w.prepare_commit(), 1)
            assert c.wait_for_maintenance(30)
            commit_bill, maint_bill = c.last_result.requests, c.last_maintenance.requests
    assert commit_bill["DELETE"] == 0   # the expiration's deletes are the maintenance's
    assert maint_bill["DELETE"] >= 1
    total = outer.bill()
    assert total["DELETE"] == maint_bill["DELETE"]
    assert total["PUT"] >= commit_bill["PUT"] + maint_bill["PUT"]


# --- text, JSON, prices ------------------------------------------------------------------

def test_the_requests_line():
    bill = RequestBill({"LIST": 12, "GET": 340, "PUT": 3, "DELETE": 2,
                        "bytes_read": 5_100_000}, ["s3"])
    assert format_bill(bill) == "requests: 12 LIST, 340 GET (5.1 MB), 3 PUT, 2 DELETE"
    local = RequestBill({"LIST": 1, "GET": 2, "HEAD": 1, "PUT": 1, "DELETE": 3,
                         "bytes_read": 1000, "bytes_written": 12}, ["local"])
    assert format_bill(local) == ("requests: 1 listing, 2 reads (1.0 kB), 1 stat, 1 write "
                                  "(12 B), 3 unlinks (local disk)")
    assert format_bill(RequestBill()) == "requests: none"


def test_price_arithmetic():
    bill = RequestBill({"LIST": 1000, "GET": 2000, "HEAD": 500, "PUT": 100, "DELETE": 7})
    s3 = PRICE_TABLES["s3-standard"]
    # 1000 LIST x $0.005 + 2500 GET/HEAD x $0.0004 + 100 PUT x $0.005 per 1,000, DELETE free
    assert estimated_cost(bill, s3) == pytest.approx(0.005 + 0.001 + 0.0005)
    assert format_cost(0.0065) == "$0.0065" and format_cost(0) == "$0"
    assert format_cost(4e-7) == "$0.0000004"


def test_a_price_file(tmp_path):
    p = tmp_path / "prices.json"
    p.write_text(json.dumps({"name": "mine", "LIST": 1, "GET": 0.5, "HEAD": 0, "PUT": 2,
                             "DELETE": 0}))
    assert load_prices(str(p)) == ("mine", {"LIST": 1.0, "GET": 0.5, "HEAD": 0.0,
                                            "PUT": 2.0, "DELETE": 0.0})
    p.write_text(json.dumps({"LIST": 1, "GET": -1, "HEAD": 0, "PUT": 2, "DELETE": 0}))
    with pytest.raises(ValueError, match="GET must be a number >= 0"):
        load_prices(str(p))
    p.write_text(json.dumps({"LIST": 1, "GETS": 1}))
    with pytest.raises(ValueError, match="unknown key.*GETS.*missing GET, HEAD, PUT, DELETE"):
        load_prices(str(p))


def _table_with_history(table, n=3):
    for i in range(n):
        write(table, make_rows([i]))


def test_cli_text_has_one_requests_line_and_the_cost(table, table_path, capsys):
    _table_with_history(table)
    assert main(["expire-snapshots", str(table_path), "--retain-max", "2", "--price",
                 "s3-standard"]) == 0
    lines = capsys.readouterr().out.splitlines()
    bill = [ln for ln in lines if ln.startswith("requests: ")]
    # (3 files and the expiration's mark, expiring.py)
    assert len(bill) == 1 and bill[0].endswith("(local disk)") and "4 unlinks" in bill[0]
    assert lines[-1].startswith("estimated cost: $") and \
        lines[-1].endswith("(s3-standard prices)")


def test_cli_json_has_the_requests_object(table, table_path, capsys):
    _table_with_history(table)
    assert main(["expire-snapshots", str(table_path), "--retain-max", "2", "--json",
                 "--price", "gcs-standard"]) == 0
    r = json.loads(capsys.readouterr().out)
    req = r["requests"]
    assert set(req) == {"LIST", "GET", "HEAD", "PUT", "DELETE", "bytes_read", "bytes_written",
                        "total", "storage", "estimated_cost_usd", "prices"}
    assert req["DELETE"] == r["deleted_files"] + 1 == 4 and req["storage"] == ["local"] and req["prices"] == "gcs-standard"
    assert req["total"] == sum(req[k] for k in ("LIST", "GET", "HEAD", "PUT", "DELETE"))
    assert req["estimated_cost_usd"] == pytest.approx(
        estimated_cost(req, PRICE_TABLES["gcs-standard"]))


@pytest.mark.parametrize("price", ["s3-cheap", "missing-file.json"])
def test_a_bad_price_is_one_line_exit_2_before_any_io(table, table_path, capsys, price):
    _table_with_history(table)
    before = sorted(p.name for p in (table_path / "snapshot").iterdir())
    assert main(["expire-snapshots", str(table_path), "--retain-max", "1", "--price",
                 price]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.splitlines()) == 1 and err.startswith("error: --price ")
    assert sorted(p.name for p in (table_path / "snapshot").iterdir()) == before


def test_maintain_reports_each_table_and_the_total(tmp_path, capsys):
    from conftest import SCHEMA
    from paimon_commit import Table
    wh = tmp_path / "wh"
    for name in ("a", "b"):
        t = Table.create(str(wh / "db.db" / name), SCHEMA, partition_keys=["dt", "hr"],
                         options={"snapshot.num-retained.min": "1",
                                  "snapshot.num-retained.max": "1", "write-only": "true"})
        _table_with_history(t, 2)
    assert main(["maintain", str(wh), "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    per_table = [t["requests"] for t in r["tables"]]
    # (each table: its 3 files and its expiration's mark, expiring.py)
    assert [t["DELETE"] - 1 for t in per_table] == [t["deleted_files"] for t in r["tables"]] \
        == [3, 3]
    # the total: the tables' requests and the warehouse's own listings
    for k in ("GET", "PUT", "DELETE"):
        assert r["requests"][k] == sum(t[k] for t in per_table)
    assert r["requests"]["LIST"] > sum(t["LIST"] for t in per_table)
