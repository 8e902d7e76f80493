"""A store that throttles: beyond a few requests in flight it answers 503 SlowDown (S3's reply
to too high a request rate). Orphan cleanup keeps up to 32 metadata reads and listings in
flight on an object store (io/read_ahead.py); against such a store it must back off and finish
with the right answer, not fail, stall, or storm the store with retries."""
import datetime
import os
import sys
import time

from conftest import SCHEMA, make_rows
from paimon_commit import Table
from tests.objectstore.moto_server import ACCESS_KEY, SECRET_KEY

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "benchmarks"))
from latency_proxy import LatencyProxy  # noqa: E402

CAPACITY = 3
SNAPSHOTS = 12
ORPHANS = 5


def _opts(url):
    return {"s3.endpoint": url, "s3.access-key": ACCESS_KEY, "s3.secret-key": SECRET_KEY,
            "s3.region": "us-east-1"}


def test_orphan_cleanup_backs_off_from_a_slow_down_storm(s3):
    uri = s3.table_uri("db.db/t")
    t = Table.create(uri, SCHEMA, storage_options=_opts(s3.server.url))
    with t.new_commit(options={"write-only": "true"}) as c:
        for i in range(SNAPSHOTS):
            w = t.new_writer()
            w.write_arrow(make_rows([i]))
            c.commit(w.prepare_commit())
    prefix = uri.split("/", 3)[3]
    planted = [f"{prefix}/bucket-0/data-orphan-{i}.parquet" for i in range(ORPHANS)]
    for k in planted:
        s3.client.put_object(Bucket=s3.name, Key=k, Body=b"x")
    time.sleep(1.1)
    cutoff = datetime.datetime.now() - datetime.timedelta(seconds=1)
    proxy = LatencyProxy(s3.server.port, delay=0.02, capacity=CAPACITY)
    try:
        slow = Table.open(uri, storage_options=_opts(proxy.url))
        mark = proxy.mark()
        t0 = time.perf_counter()
        r = slow.remove_orphan_files(older_than=cutoff, dry_run=True, allow_recent_cutoff=True)
        secs = time.perf_counter() - t0
        stats = proxy.stats_since(mark)
    finally:
        proxy.stop()
    assert r.deleted_files == ORPHANS                    # the right answer
    assert stats["throttled_503"] > 0, stats             # the store did throttle
    ok = stats["by_status"].get("200", 0) + stats["by_status"].get("404", 0)
    # Backed off, not stormed: the throttled answers stay within a small multiple of the
    # requests that got through (each 503 is retried after an exponential backoff).
    assert stats["throttled_503"] <= 2 * ok, stats
    assert secs < 60, f"stalled: {secs:.1f} s"
    print(f"503s {stats['throttled_503']}, answered {ok}, {secs:.2f} s, most in flight "
          f"{stats['max_in_flight']}")
