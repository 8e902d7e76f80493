"""benchmarks/latency_proxy.py (bench_latency's proxy): every request takes the delay on its way
to and from the upstream (half before it reaches it: "pad"; all of it: "add"), is counted by
method and status, the requests in flight are tracked, and beyond `capacity` in flight the
answer is 503 SlowDown without reaching the upstream."""
import http.client
import os
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

from latency_proxy import LatencyProxy, ProxyProcess  # noqa: E402

DELAY = 0.05


@pytest.fixture
def upstream():
    """A stdlib HTTP server answering every request at once; counts what reached it."""
    seen = []

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def _any(self):
            n = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(n) if n else b""
            seen.append((self.command, self.path, body))
            data = b"ok:" + self.path.encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(data)

        do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _any

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1], seen
    server.shutdown()
    server.server_close()


def _request(port, method, path, body=None):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        t0 = time.perf_counter()
        conn.request(method, path, body=body)
        resp = conn.getresponse()
        return resp.status, resp.read(), time.perf_counter() - t0
    finally:
        conn.close()


def test_each_request_waits_the_delay_and_is_counted(upstream):
    port, seen = upstream
    proxy = LatencyProxy(port, delay=DELAY)
    try:
        mark = proxy.mark()
        status, body, secs = _request(proxy.port, "GET", "/b/key?x=1")
        assert (status, body) == (200, b"ok:/b/key?x=1")
        assert secs >= DELAY
        status, _, secs = _request(proxy.port, "PUT", "/b/other", body=b"payload")
        assert status == 200 and secs >= DELAY
        assert seen[-1] == ("PUT", "/b/other", b"payload")
        stats = proxy.stats_since(mark)
        assert stats["requests"] == 2
        assert stats["by_method"] == {"GET": 1, "PUT": 1}
        assert stats["by_status"] == {"200": 2}
        assert stats["max_in_flight"] == 1
        assert stats["throttled_503"] == 0
    finally:
        proxy.stop()


def test_requests_in_flight_overlap_and_are_tracked(upstream):
    port, _ = upstream
    proxy = LatencyProxy(port, delay=0.2)
    try:
        mark = proxy.mark()
        with ThreadPoolExecutor(8) as pool:
            out = list(pool.map(lambda i: _request(proxy.port, "GET", f"/b/{i}"), range(8)))
        assert all(s == 200 for s, _, _ in out)
        # In flight together, not one after another: the proxy's own count says so (a
        # wall-clock bound would measure the machine's load, not the proxy).
        stats = proxy.stats_since(mark)
        assert stats["requests"] == 8
        assert 4 <= stats["max_in_flight"] <= 8
        assert stats["mean_in_flight_busy"] > 2
    finally:
        proxy.stop()


def test_beyond_capacity_the_answer_is_slow_down(upstream):
    port, seen = upstream
    proxy = LatencyProxy(port, delay=0.2, capacity=2)
    try:
        mark = proxy.mark()
        before = len(seen)
        with ThreadPoolExecutor(6) as pool:
            out = list(pool.map(lambda i: _request(proxy.port, "GET", f"/b/{i}"), range(6)))
        statuses = sorted(s for s, _, _ in out)
        assert statuses.count(200) >= 2 and statuses.count(503) >= 1
        assert all(b"SlowDown" in body for s, body, _ in out if s == 503)
        stats = proxy.stats_since(mark)
        assert stats["throttled_503"] == statuses.count(503)
        assert len(seen) - before == statuses.count(200)   # a 503 never reached upstream
    finally:
        proxy.stop()


def test_the_proxy_in_its_own_process_reports_the_same(upstream):
    port, _ = upstream
    proxy = ProxyProcess(port, delay=DELAY)
    try:
        mark = proxy.mark()
        status, _, secs = _request(proxy.port, "DELETE", "/b/k")
        assert status == 200 and secs >= DELAY
        stats = proxy.stats_since(mark)
        assert stats["requests"] == 1 and stats["by_method"] == {"DELETE": 1}
    finally:
        proxy.stop()


def test_the_proxy_accepts_a_burst_of_connections_and_lists_what_it_served(upstream):
    # socketserver's listen backlog of 5 dropped the connections of a client opening dozens
    # at once (delta-rs): it retried after 0.2-1.6 s of backoff, stalls that were the
    # proxy's, counted against delta-rs in bench_latency.
    port, _ = upstream
    proxy = LatencyProxy(port, delay=0.0)
    try:
        assert proxy.server.request_queue_size >= 256
    finally:
        proxy.stop()
    # The per-request log over HTTP, for a proxy in its own process (wave traces).
    proxy = ProxyProcess(port, delay=DELAY)
    try:
        mark = proxy.mark()
        _request(proxy.port, "GET", "/b/one")
        _request(proxy.port, "PUT", "/b/two", body=b"x")
        got = proxy.entries_since(mark)
        assert [(e[1], e[2], e[3]) for e in got] == [("GET", "/b/one", 200),
                                                     ("PUT", "/b/two", 200)]
        assert all(e[4] >= DELAY for e in got)
    finally:
        proxy.stop()


def test_pad_forwards_at_half_the_delay_and_answers_after_all_of_it_add_after_it():
    # "pad" (the default): the store's own time is part of the round trip, as a real
    # store's is: the request reaches the upstream after half the delay, and the answer
    # comes no earlier than the whole delay, or when the upstream answered if that is later.
    # "add": the whole delay, then the upstream's time on top.
    arrivals, work = [], {"s": 0.0}

    class Slow(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def do_GET(self):
            arrivals.append(time.perf_counter())
            time.sleep(work["s"])
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

    server = ThreadingHTTPServer(("127.0.0.1", 0), Slow)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    delay = 0.4
    try:
        with pytest.raises(ValueError, match="latency model 'x'"):
            LatencyProxy(port, delay=delay, model="x")
        pad, add = LatencyProxy(port, delay=delay), LatencyProxy(port, delay=delay, model="add")
        try:
            assert pad.model == "pad"
            for proxy, reach, total in ((pad, (delay / 2, delay - 0.05), delay),
                                        (add, (delay, None), delay)):
                t0 = time.perf_counter()
                status, body, secs = _request(proxy.port, "GET", "/b/k")
                assert (status, body) == (200, b"ok")
                at = arrivals[-1] - t0
                assert at >= reach[0] and (reach[1] is None or at < reach[1]), (proxy.model, at)
                assert secs >= total
            work["s"] = 0.3   # an upstream slower than the answer's half of the delay
            _, _, secs = _request(pad.port, "GET", "/b/k")
            assert delay / 2 + 0.3 <= secs < delay + 0.3 - 0.05
            _, _, secs = _request(add.port, "GET", "/b/k")
            assert secs >= delay + 0.3
        finally:
            pad.stop()
            add.stop()
    finally:
        server.shutdown()
        server.server_close()
