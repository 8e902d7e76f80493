"""What the three test servers (moto_server.py, azurite_server.py, gcs_server.py) share: a free
loopback port, a server process started with its output in a file (and stopped), requests
counted from a log, and a small HTTP server in front of another one (moto's misbehaving proxy,
the GCS XML-PUT adapter) whose answers a subclass decides."""
from __future__ import annotations

import http.client
import os
import socket
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable, Dict, List, Optional, Sequence, Tuple

Request = Tuple  # (method, path or URL, status, ...): what a server saw


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port: int, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listens on 127.0.0.1:{port} after {timeout} s")


class ServerProcess:
    """A server process on 127.0.0.1:<free port>, its stdout and stderr appended to `out_path`.
    A subclass picks the command (which needs `self.port`) and calls `start`."""

    def __init__(self, out_path: str):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.out_path = out_path
        self.proc: Optional[subprocess.Popen] = None

    def start(self, cmd: Sequence[str], env: Optional[Dict[str, str]] = None,
              timeout: float = 30.0, ready: Optional[Callable[[], None]] = None) -> None:
        """Run `cmd`; return once the port accepts connections and `ready()` returned. On any
        failure the process is stopped before the error goes on."""
        self._out = open(self.out_path, "ab")
        self.proc = subprocess.Popen(list(cmd), stdout=self._out, stderr=self._out, env=env)
        try:
            wait_for_port(self.port, timeout)
            if ready is not None:
                ready()
        except Exception:
            self.stop()
            raise

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._out.close()


class LoggedRequests:
    """Requests counted from a log file the server appends to: `mark()` is where the log ends
    now, `requests_since(mark)` parses what was logged after it (`parse_requests`, per server)
    into (method, path or URL, status) tuples."""

    request_log: str
    settle: float = 0.05   # the server writes its log line after answering

    def parse_requests(self, text: str) -> List[Request]:
        raise NotImplementedError

    def mark(self) -> int:
        return os.path.getsize(self.request_log) if os.path.exists(self.request_log) else 0

    def requests_since(self, mark: int, settle: Optional[float] = None) -> List[Request]:
        time.sleep(self.settle if settle is None else settle)
        with open(self.request_log, "rb") as f:
            f.seek(mark)
            text = f.read().decode("utf-8", "replace")
        return self.parse_requests(text)


# --- a server in front of another one ------------------------------------------------------

_HOP_HEADERS = ("content-length", "connection", "transfer-encoding", "server", "date")


def passed_on(headers: List[Tuple[str, str]]) -> List[Tuple[str, str]]:
    """The headers of an upstream answer worth passing on (not the per-hop ones)."""
    return [(k, v) for k, v in headers if k.lower() not in _HOP_HEADERS]


def forward(port: int, method: str, path: str, headers: Dict[str, str], body: bytes,
            host: Optional[str] = None) -> Tuple[int, List[Tuple[str, str]], bytes]:
    """One request to 127.0.0.1:`port`: (status, headers, body) of its answer."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        conn.connect()
        # Headers and body go out in separate writes: without this, Nagle's algorithm and
        # delayed ACKs add 40 ms to every request.
        conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        headers = dict(headers)
        if host is not None:
            headers["Host"] = host
        headers["Content-Length"] = str(len(body))
        conn.request(method, path, body=body, headers=headers)
        resp = conn.getresponse()
        return resp.status, resp.getheaders(), resp.read()
    finally:
        conn.close()


Answer = Optional[Tuple[int, List[Tuple[str, str]], bytes]]


class HttpFront:
    """A threaded HTTP/1.1 server on a free loopback port. `answer(method, path, headers,
    body)` decides each reply: (status, headers, body), or None to close the connection
    without replying (a timeout the client sees)."""

    def __init__(self):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        front = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def setup(self):
                super().setup()
                self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

            def _handle(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                headers = {k: v for k, v in self.headers.items()
                           if k.lower() not in ("host", "connection", "content-length")}
                reply = front.answer(self.command, self.path, headers, body)
                if reply is None:
                    self.close_connection = True
                    return
                status, out_headers, data = reply
                self.send_response(status)
                for k, v in out_headers:
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _handle

        self.server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def answer(self, method: str, path: str, headers: Dict[str, str], body: bytes) -> Answer:
        raise NotImplementedError

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
