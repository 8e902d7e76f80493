"""A latency-injecting HTTP reverse proxy for benchmarks (stdlib only): every request takes a
fixed delay (plus optional uniform jitter) on its way to the upstream server on loopback, as if
the store were `delay` away.

How the delay is applied (`model`):
  * "pad" (the default): the request is forwarded after half the delay (its trip to the store)
    and answered no earlier than the whole delay after it arrived: a round trip of `delay`
    that includes the store's own work, as a real store's 30-100 ms do. The test server's time
    overlaps the wait, as a real store's does; only where it takes longer than the delay
    (moto serves one request at a time, ~2-3 ms each: 64 in flight queue for ~0.15 s) does
    the answer come later.
  * "add": the whole delay, then forwarded: the delay plus the test server's time, including
    its queue. A store serving one request at a time behind the latency; it charges each tool
    its request count times moto's per-request cost on top of the latency (the `server s`
    column of bench_latency), which no real store does. Requests are counted by method and by status, and
the requests in flight (arrived, not yet answered) are tracked: the most at once, and the
time-weighted mean while at least one was in flight.

Optionally the proxy plays a store that throttles: with `capacity` set, a request arriving
while `capacity` others are in flight is answered `503 SlowDown` (S3's throttling reply, after
the delay, without reaching the upstream); the 503s are counted. A client that adapts backs
off and retries; one that does not makes a storm of them.

    proxy = LatencyProxy(upstream_port, delay=0.030, jitter=0.005)
    ... point the client at proxy.url ...
    mark = proxy.mark(); ...; stats = proxy.stats_since(mark)
    proxy.stop()
"""
from __future__ import annotations

import argparse
import http.client
import json
import os
import subprocess
import sys
import random
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Dict, List, Optional, Tuple

__all__ = ["LatencyProxy", "ProxyProcess", "SLOW_DOWN_BODY", "CONTROL", "MODELS",
           "serve_http", "start_process", "stop_process"]

MODELS = ("pad", "add")
CONTROL = "/__latency_proxy__/"   # the counters over HTTP (not delayed, not counted)

SLOW_DOWN_BODY = (b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>SlowDown</Code>'
                  b'<Message>Please reduce your request rate.</Message></Error>')
_HOP = ("connection", "keep-alive", "transfer-encoding", "content-length", "server", "date",
        "proxy-connection", "te", "upgrade", "host")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve_http(port: int, handle, name: str) -> Tuple[ThreadingHTTPServer, threading.Thread]:
    """A threaded HTTP/1.1 server on 127.0.0.1:`port` that calls `handle(request_handler)`
    for every GET, PUT, POST, DELETE and HEAD, served on a daemon thread (started)."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def setup(self):
            super().setup()
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def _handle(self):
            handle(self)

        do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _handle

    class _Server(ThreadingHTTPServer):
        # Connections waiting to be accepted. socketserver's default of 5 dropped the SYNs of
        # a client opening dozens at once (delta-rs), which then retried after 0.2, 0.4, 0.8,
        # 1.6 s of backoff: stalls of the server, not of the client.
        request_queue_size = 1024
        daemon_threads = True

    server = _Server(("127.0.0.1", port), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True, name=name)
    thread.start()
    return server, thread


def start_process(cmd: List[str], port: int, what: str) -> subprocess.Popen:
    """Run `cmd` and wait until it accepts connections on 127.0.0.1:`port` (30 s at most)."""
    proc = subprocess.Popen(cmd)
    deadline = time.monotonic() + 30
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return proc
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                stop_process(proc)
                raise RuntimeError(f"{what} did not start") from None
            time.sleep(0.05)


def stop_process(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


class _Counters:
    """What the proxy saw: per-request log entries and the in-flight integral (guarded by
    the proxy's lock)."""

    def __init__(self) -> None:
        self.log: List[Tuple[float, str, str, int, float]] = []  # t_end, method, path, st, s
        self.in_flight = 0
        self.max_in_flight = 0
        self.area = 0.0          # integral of in-flight over time (request-seconds)
        self.busy = 0.0          # time with at least one request in flight
        self.last = time.perf_counter()
        self.throttled = 0


class LatencyProxy:
    """A threaded reverse proxy on 127.0.0.1:<free port> in front of 127.0.0.1:`upstream_port`.

    `delay` seconds (plus uniform [0, `jitter`]) are added to every request, as `model` says
    (module docstring: "pad" or "add"); `capacity` (None: unlimited) makes requests beyond that many in flight answer
    503 SlowDown instead. Connections to the upstream are kept alive, one per proxy thread."""

    def __init__(self, upstream_port: int, delay: float = 0.0, jitter: float = 0.0,
                 capacity: Optional[int] = None, seed: Optional[int] = None,
                 port: Optional[int] = None, model: str = "pad"):
        if model not in MODELS:
            raise ValueError(f"latency model {model!r}: one of {', '.join(MODELS)}")
        self.upstream_port = upstream_port
        self.delay, self.jitter, self.capacity = delay, jitter, capacity
        self.model = model
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self._c = _Counters()
        self._local = threading.local()
        self.port = port or _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.server, self._thread = serve_http(self.port, self._serve, "latency-proxy")

    # --- accounting ------------------------------------------------------------------
    def _advance(self, now: float) -> None:
        c = self._c
        dt = now - c.last
        c.area += c.in_flight * dt
        if c.in_flight:
            c.busy += dt
        c.last = now

    def _enter(self) -> bool:
        """Count a request in; False when it is over capacity (to be answered 503)."""
        with self._lock:
            self._advance(time.perf_counter())
            c = self._c
            if self.capacity is not None and c.in_flight >= self.capacity:
                c.throttled += 1
                admitted = False
            else:
                admitted = True
            c.in_flight += 1
            c.max_in_flight = max(c.max_in_flight, c.in_flight)
            return admitted

    def _leave(self, method: str, path: str, status: int, seconds: float) -> None:
        with self._lock:
            now = time.perf_counter()
            self._advance(now)
            self._c.in_flight -= 1
            self._c.log.append((now, method, path, status, seconds))

    # --- serving -----------------------------------------------------------------------
    def _upstream(self) -> http.client.HTTPConnection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = http.client.HTTPConnection("127.0.0.1", self.upstream_port, timeout=120)
            conn.connect()
            conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self._local.conn = conn
        return conn

    def _forward(self, method: str, path: str, headers: Dict[str, str], body: bytes
                 ) -> Tuple[int, List[Tuple[str, str]], bytes]:
        for attempt in (0, 1):   # a kept-alive connection the upstream closed: reconnect once
            conn = self._upstream()
            try:
                conn.request(method, path, body=body, headers=headers)
                resp = conn.getresponse()
                data = resp.read()
                if resp.will_close:
                    conn.close()
                    self._local.conn = None
                return resp.status, resp.getheaders(), data
            except (http.client.HTTPException, OSError):
                conn.close()
                self._local.conn = None
                if attempt:
                    raise
        raise AssertionError("unreachable")

    def _control(self, h: BaseHTTPRequestHandler) -> None:
        """The counters over HTTP, for a proxy in another process (`ProxyProcess`): GET
        .../mark, POST .../stats with a mark as the JSON body. Neither delayed nor counted."""
        length = int(h.headers.get("Content-Length") or 0)
        body = h.rfile.read(length) if length else b""
        what = h.path[len(CONTROL):]
        if what == "mark":
            data = json.dumps(self.mark()).encode()
        elif what == "stats":
            data = json.dumps(self.stats_since(json.loads(body))).encode()
        elif what == "entries":
            data = json.dumps(self.entries_since(json.loads(body))).encode()
        else:
            h.send_response(404)
            h.send_header("Content-Length", "0")
            h.end_headers()
            return
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        h.wfile.write(data)

    def _serve(self, h: BaseHTTPRequestHandler) -> None:
        if h.path.startswith(CONTROL):
            return self._control(h)
        t0 = time.perf_counter()
        admitted = self._enter()
        status = 502
        left = False
        try:
            length = int(h.headers.get("Content-Length") or 0)
            body = h.rfile.read(length) if length else b""
            headers = {k: v for k, v in h.headers.items() if k.lower() not in _HOP}
            headers["Host"] = h.headers.get("Host") or f"127.0.0.1:{self.upstream_port}"
            headers["Content-Length"] = str(len(body))
            wait = self.delay + (self._rng.uniform(0, self.jitter) if self.jitter else 0.0)
            pad = admitted and self.model == "pad"
            if wait > 0:
                time.sleep(wait / 2 if pad else wait)
            if admitted:
                try:
                    status, out_headers, data = self._forward(h.command, h.path, headers, body)
                except (http.client.HTTPException, OSError) as e:
                    status, out_headers, data = 502, [], f"upstream: {e}".encode()
            else:
                status, out_headers, data = 503, [("Content-Type", "application/xml")], \
                    SLOW_DOWN_BODY
            if pad:   # (the answer's trip: no earlier than the whole delay after arrival)
                rest = t0 + wait - time.perf_counter()
                if rest > 0:
                    time.sleep(rest)
            # Counted out before the answer goes: a client that has the answer (and sends its
            # next request, or reads the counters) finds this request done, not in flight.
            self._leave(h.command, h.path, status, time.perf_counter() - t0)
            left = True
            h.send_response(status)
            for k, v in out_headers:
                if k.lower() not in _HOP:
                    h.send_header(k, v)
            h.send_header("Content-Length", str(len(data)))
            h.end_headers()
            if h.command != "HEAD":
                h.wfile.write(data)
        finally:
            if not left:
                self._leave(h.command, h.path, status, time.perf_counter() - t0)

    # --- reading the counters ----------------------------------------------------------
    def mark(self) -> Dict[str, float]:
        """Where the counters are now: `stats_since(mark)` reports what came after. Resets
        the in-flight maximum (the window's maximum is what is reported)."""
        with self._lock:
            now = time.perf_counter()
            self._advance(now)
            c = self._c
            c.max_in_flight = c.in_flight
            return {"t": now, "n": len(c.log), "area": c.area, "busy": c.busy,
                    "throttled": c.throttled}

    def stats_since(self, mark: Dict[str, float], settle: float = 0.0) -> Dict[str, Any]:
        """Requests answered since `mark`: how many, by method and by status, the most in
        flight at once, the time-weighted mean in flight (over the time any was in flight,
        and over the whole window), and 503 SlowDown answers given (capacity)."""
        if settle:
            time.sleep(settle)
        with self._lock:
            now = time.perf_counter()
            self._advance(now)
            c = self._c
            entries = c.log[int(mark["n"]):]
            area, busy = c.area - mark["area"], c.busy - mark["busy"]
            window = now - mark["t"]
            out: Dict[str, Any] = {
                "requests": len(entries),
                "by_method": _count(e[1] for e in entries),
                "by_status": _count(str(e[3]) for e in entries),
                "max_in_flight": c.max_in_flight,
                "mean_in_flight_busy": round(area / busy, 2) if busy > 0 else 0.0,
                "mean_in_flight": round(area / window, 2) if window > 0 else 0.0,
                "throttled_503": c.throttled - int(mark["throttled"]),
            }
        return out

    def entries_since(self, mark: Dict[str, float]) -> List[Tuple[float, str, str, int, float]]:
        """(end time, method, path, status, seconds) of each request answered since `mark`."""
        with self._lock:
            return list(self._c.log[int(mark["n"]):])

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _count(items) -> Dict[str, int]:
    out: Dict[str, int] = {}
    for k in items:
        out[k] = out.get(k, 0) + 1
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))


class ProxyProcess:
    """A LatencyProxy in a process of its own (`python latency_proxy.py ...`): its threads
    then never wait for the interpreter lock of the process measured (a Python client would
    otherwise pay for the proxy's work, a native one would not). Same `url`, `delay`,
    `mark()`, `stats_since(mark)` and `stop()` as LatencyProxy."""

    def __init__(self, upstream_port: int, delay: float = 0.0, jitter: float = 0.0,
                 capacity: Optional[int] = None, seed: Optional[int] = None,
                 model: str = "pad"):
        if model not in MODELS:
            raise ValueError(f"latency model {model!r}: one of {', '.join(MODELS)}")
        self.delay, self.model = delay, model
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        cmd = [sys.executable, os.path.abspath(__file__), "--upstream", str(upstream_port),
               "--port", str(self.port), "--delay", str(delay), "--jitter", str(jitter),
               "--model", model]
        if capacity:
            cmd += ["--capacity", str(capacity)]
        if seed is not None:
            cmd += ["--seed", str(seed)]
        self.proc = start_process(cmd, self.port, "the latency proxy")

    def _call(self, method: str, what: str, body: Optional[dict] = None) -> dict:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            data = json.dumps(body).encode() if body is not None else None
            conn.request(method, CONTROL + what, body=data)
            resp = conn.getresponse()
            return json.loads(resp.read())
        finally:
            conn.close()

    def mark(self) -> Dict[str, float]:
        return self._call("GET", "mark")

    def stats_since(self, mark: Dict[str, float]) -> Dict[str, Any]:
        return self._call("POST", "stats", mark)

    def entries_since(self, mark: Dict[str, float]) -> List[Tuple[float, str, str, int, float]]:
        return [tuple(e) for e in self._call("POST", "entries", mark)]

    def stop(self) -> None:
        stop_process(self.proc)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description="a latency-injecting reverse proxy")
    ap.add_argument("--upstream", type=int, required=True)
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--delay", type=float, default=0.0)
    ap.add_argument("--jitter", type=float, default=0.0)
    ap.add_argument("--capacity", type=int, default=None)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--model", choices=MODELS, default="pad")
    a = ap.parse_args(argv)
    p = LatencyProxy(a.upstream, a.delay, a.jitter, a.capacity, a.seed, port=a.port,
                     model=a.model)
    try:
        p._thread.join()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
