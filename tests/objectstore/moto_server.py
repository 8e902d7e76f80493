"""A real S3-protocol server for the tests: moto's server mode on a free loopback port, plus an
optional HTTP proxy in front of it that can drop `If-None-Match` (a store that ignores
conditional writes) or fail chosen requests with 500/503 (faults on the store).

Requests are counted by parsing the server's log (`"METHOD /path HTTP/1.1" STATUS` per line)."""
from __future__ import annotations

import http.client
import os
import re
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable, List, Optional, Tuple

ACCESS_KEY = "AKIDTESTOBJECTSTORE"
SECRET_KEY = "s3cr3t-never-shown-anywhere"


def aws_env(url: str) -> dict:
    return {"AWS_ENDPOINT_URL": url, "AWS_ACCESS_KEY_ID": ACCESS_KEY,
            "AWS_SECRET_ACCESS_KEY": SECRET_KEY, "AWS_REGION": "us-east-1"}


_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_LINE = re.compile(r'"([A-Z]+) (\S+) HTTP/1\.[01]" (\d{3})')


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


class MotoServer:
    def __init__(self, log_path: str, extra_env: Optional[dict] = None):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = log_path
        exe = os.path.join(os.path.dirname(sys.executable), "moto_server")
        cmd = [exe] if os.path.exists(exe) else [sys.executable, "-m", "moto.server"]
        self._log = open(log_path, "ab")
        env = dict(os.environ, **(extra_env or {}))
        self.proc = subprocess.Popen(cmd + ["-H", "127.0.0.1", "-p", str(self.port)],
                                     stdout=self._log, stderr=self._log, env=env)
        try:
            wait_for_port(self.port)
        except Exception:
            self.stop()
            raise

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()

    # --- request counting ----------------------------------------------------------------
    def mark(self) -> int:
        self._log.flush()
        return os.path.getsize(self.log_path)

    def requests_since(self, mark: int, settle: float = 0.05) -> List[Tuple[str, str, int]]:
        """(method, path, status) of every request logged after `mark`."""
        time.sleep(settle)  # the server writes its log line after answering
        with open(self.log_path, "rb") as f:
            f.seek(mark)
            text = f.read().decode("utf-8", "replace")
        out = []
        for line in text.splitlines():
            m = _LINE.search(_ANSI.sub("", line))
            if m:
                out.append((m.group(1), m.group(2), int(m.group(3))))
        return out


# --- a proxy that misbehaves on purpose ---------------------------------------------------

Policy = Callable[[str, str, dict], Optional[str]]
"""(method, path, headers) -> None (forward), 'drop-condition' (forward without If-None-Match),
'drop' (forward, then close the connection without a reply: a timeout after the server applied
the request) or an HTTP status such as '503' to answer instead of forwarding."""


class Proxy:
    def __init__(self, upstream_port: int, policy: Policy):
        self.policy = policy
        self.upstream_port = upstream_port
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def setup(self):
                super().setup()
                # Headers and body go out in separate writes: without this, Nagle's
                # algorithm and delayed ACKs add 40 ms to every request.
                self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

            def _handle(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                headers = {k: v for k, v in self.headers.items()
                           if k.lower() not in ("host", "connection", "content-length")}
                action = proxy.policy(self.command, self.path, headers)
                if action and action.isdigit():
                    payload = b"<Error><Code>InternalError</Code></Error>"
                    self.send_response(int(action))
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                    return
                if action == "drop-condition":
                    headers = {k: v for k, v in headers.items()
                               if k.lower() != "if-none-match"}
                conn = http.client.HTTPConnection("127.0.0.1", proxy.upstream_port, timeout=60)
                conn.connect()
                conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                if body is not None:
                    headers["Content-Length"] = str(len(body))
                conn.request(self.command, self.path, body=body, headers=headers)
                resp = conn.getresponse()
                data = resp.read()
                if action == "drop":   # the server applied it, the client never hears back
                    conn.close()
                    self.close_connection = True
                    return
                self.send_response(resp.status)
                for k, v in resp.getheaders():
                    if k.lower() not in ("content-length", "connection", "transfer-encoding",
                                         "server", "date"):
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)
                conn.close()

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _handle

        self.server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class Bucket:
    def __init__(self, server, client, name):
        self.server = server
        self.client = client
        self.name = name
        self.url = server.url

    def table_uri(self, rel: str = "db.db/t") -> str:
        return f"s3://{self.name}/{rel}"

    def keys(self, prefix: str = "") -> list:
        out = []
        for page in self.client.get_paginator("list_objects_v2").paginate(
                Bucket=self.name, Prefix=prefix):
            out.extend(o["Key"] for o in page.get("Contents", []))
        return sorted(out)

    def put(self, key: str, data: bytes = b"x") -> None:
        self.client.put_object(Bucket=self.name, Key=key, Body=data)

    def get(self, key: str) -> bytes:
        return self.client.get_object(Bucket=self.name, Key=key)["Body"].read()

    def pp_catalog(self):
        """pypaimon reading through its own S3 options (an independent reader)."""
        from pypaimon import CatalogFactory
        ak, sk = ACCESS_KEY, SECRET_KEY
        return CatalogFactory.create({
            "warehouse": f"s3://{self.name}", "s3.endpoint": self.url, "s3.access-key": ak,
            "s3.secret-key": sk, "s3.region": "us-east-1", "s3.path.style.access": "true"})

    def pp_read(self, table: str = "db.t", snapshot_id=None, tag=None):
        t = self.pp_catalog().get_table(table)
        opts = {}
        if snapshot_id is not None:
            opts["scan.snapshot-id"] = str(snapshot_id)
        if tag is not None:
            opts["scan.tag-name"] = tag
        if opts:
            t = t.copy(opts)
        rb = t.new_read_builder()
        return rb.new_read().to_arrow(rb.new_scan().plan().splits())
