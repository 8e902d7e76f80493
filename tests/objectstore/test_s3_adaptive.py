"""Requests in flight adapt to the store (io/adaptive.py): through a proxy that answers
503 SlowDown beyond a few requests in flight, orphan cleanup, a commit and an expiration finish
with the right result, draw few 503s per request served (counts, not times), and the store
sees fewer requests in flight once it has pushed back: the limit of the store, shared by the
process, was cut and stays cut for the next operation."""
import datetime
import os
import sys
import time

from conftest import SCHEMA, make_rows
from invariants import referenced_files
from paimon_commit import Table
from tests.objectstore.moto_server import ACCESS_KEY, SECRET_KEY

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "benchmarks"))
from latency_proxy import LatencyProxy  # noqa: E402

CAPACITY = 3
SNAPSHOTS = 12
ORPHANS = 6
START = 16   # the limit a store starts with (io/object_store._REQUESTS_IN_FLIGHT_START)


def _opts(url):
    return {"s3.endpoint": url, "s3.access-key": ACCESS_KEY, "s3.secret-key": SECRET_KEY,
            "s3.region": "us-east-1"}


def _table(s3, uri, snapshots=SNAPSHOTS):
    t = Table.create(uri, SCHEMA, storage_options=_opts(s3.server.url))
    with t.new_commit(options={"write-only": "true"}) as c:
        for i in range(snapshots):
            w = t.new_writer()
            w.write_arrow(make_rows([i]))
            c.commit(w.prepare_commit())
    return t


def _served(stats):
    return stats["requests"] - stats["throttled_503"]


def test_orphan_cleanup_cuts_the_requests_in_flight_and_keeps_them_cut(s3):
    uri = s3.table_uri("db.db/t")
    _table(s3, uri)
    prefix = uri.split("/", 3)[3]
    planted = {f"{prefix}/bucket-0/data-orphan-{i}.parquet" for i in range(ORPHANS)}
    for k in planted:
        s3.client.put_object(Bucket=s3.name, Key=k, Body=b"x")
    before = set(s3.keys())
    time.sleep(1.1)
    cutoff = datetime.datetime.now() - datetime.timedelta(seconds=1)
    proxy = LatencyProxy(s3.server.port, delay=0.02, capacity=CAPACITY)
    try:
        slow = Table.open(uri, storage_options=_opts(proxy.url))
        limit = slow.store.io.request_limit
        mark = proxy.mark()
        dry = slow.remove_orphan_files(older_than=cutoff, dry_run=True,
                                       allow_recent_cutoff=True)
        first = proxy.stats_since(mark)
        after_first = limit.state()
        mark = proxy.mark()
        real = slow.remove_orphan_files(older_than=cutoff, allow_recent_cutoff=True)
        second = proxy.stats_since(mark)
    finally:
        proxy.stop()
    # The right answer, both times, and exactly the planted files deleted.
    assert dry.deleted_files == ORPHANS and real.deleted_files == ORPHANS
    assert before - set(s3.keys()) == planted
    # The store pushed back, and the limit was cut well below where it started.
    assert first["throttled_503"] > 0, first
    assert after_first["cuts"] >= 1 and after_first["limit"] < START, after_first
    # The next operation starts from what was learned: the store sees at most half as many
    # in flight as the limit started with, and few refusals.
    assert second["max_in_flight"] <= START // 2, (first, second)
    assert second["throttled_503"] <= _served(second) // 5, second
    # Over both: well under one refusal per request served (a client retrying each 503 on
    # its own, 32 in flight, drew more than one).
    total_503 = first["throttled_503"] + second["throttled_503"]
    assert total_503 <= (_served(first) + _served(second)) // 2, (first, second)
    print(f"first: 503s {first['throttled_503']} / served {_served(first)}, most in flight "
          f"{first['max_in_flight']}; second: 503s {second['throttled_503']} / served "
          f"{_served(second)}, most in flight {second['max_in_flight']}; limit {limit.state()}")


def test_a_commit_and_an_expiration_finish_on_a_throttling_store(s3):
    uri = s3.table_uri("db.db/e")
    _table(s3, uri)
    proxy = LatencyProxy(s3.server.port, delay=0.02, capacity=1)
    try:
        slow = Table.open(uri, storage_options=_opts(proxy.url))
        mark = proxy.mark()
        with slow.new_commit(options={"write-only": "true"}) as c:
            for i in (100, 101):
                w = slow.new_writer()
                w.write_arrow(make_rows([i]))
                c.commit(w.prepare_commit())
        r = slow.expire_snapshots(retain_max=1, max_deletes=100)
        stats = proxy.stats_since(mark)
    finally:
        proxy.stop()
    direct = Table.open(uri, storage_options=_opts(s3.server.url))
    assert [s.id for s in direct.snapshots()] == [SNAPSHOTS + 2]
    assert r.expired_snapshots == SNAPSHOTS + 1
    assert sorted(direct.read_arrow().column("id").to_pylist()) == \
        list(range(SNAPSHOTS)) + [100, 101]
    keys = {f"{s3.name}/{k}" for k in s3.keys()}
    assert referenced_files(direct) <= keys
    assert stats["throttled_503"] <= _served(stats) // 2, stats
    print(f"503s {stats['throttled_503']} / served {_served(stats)}, most in flight "
          f"{stats['max_in_flight']}")
