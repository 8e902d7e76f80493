"""A real Azure Blob emulator for the tests: Azurite's blob service (the npm package `azurite`,
installed into <venv>/azurite by `make test` or, if missing, by `ensure_azurite` here) on a free
loopback port, with a small independent REST client (Shared Key signing, stdlib only) to create
containers and look at blobs without going through `paimon_commit` or obstore.

Requests are counted by parsing Azurite's `--debug` log: each request logs a line
`<request id> info: BlobStorageContextMiddleware: RequestMethod=PUT RequestURL=...` when it
arrives and `<request id> info: EndMiddleware: End response. ... StatusCode=201` when answered.
The sub-requests of a blob batch (obstore deletes through `POST ?comp=batch`) are logged too,
with the port in their URL (twice each): they are not requests on the wire and are left out."""
from __future__ import annotations

import base64
import datetime
import email.utils
import hashlib
import hmac
import http.client
import os
import re
import shutil
import subprocess
import sys
from typing import Dict, List, Optional, Tuple
from urllib.parse import quote, urlencode

from tests.objectstore.servers import LoggedRequests, Request, ServerProcess

AZURITE_VERSION = "3.35.0"   # the last 3.x that runs on node 20 (3.36 wants node >= 21)
ACCOUNT = "devstoreaccount1"
# Azurite's well-known development account key (public, documented by Microsoft).
ACCOUNT_KEY = ("Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/"
               "KBHBeksoGMGw==")
API_VERSION = "2021-08-06"


class AzuriteUnavailable(RuntimeError):
    """node or npm is not on this machine."""


def default_prefix() -> str:
    """Where `make` installs Azurite: <venv>/azurite. `PAIMON_AZURITE_PREFIX` overrides it."""
    return os.environ.get("PAIMON_AZURITE_PREFIX") or os.path.join(sys.prefix, "azurite")


def ensure_azurite(prefix: Optional[str] = None) -> str:
    """The azurite-blob executable, installed with npm (what the Makefile step does) if it is
    missing. AzuriteUnavailable without node/npm; RuntimeError naming the command if npm fails."""
    prefix = prefix or default_prefix()
    exe = os.path.join(prefix, "node_modules", ".bin", "azurite-blob")
    if not shutil.which("node"):
        raise AzuriteUnavailable("node is not installed (Azurite, the Azure Blob emulator, "
                                 "runs on node)")
    if os.path.isfile(exe):
        return exe
    npm = shutil.which("npm")
    if not npm:
        raise AzuriteUnavailable("npm is not installed (needed once to install Azurite)")
    cmd = [npm, "install", "--prefix", prefix, "--no-audit", "--no-fund",
           f"azurite@{AZURITE_VERSION}"]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if proc.returncode != 0 or not os.path.isfile(exe):
        raise RuntimeError(f"cannot install Azurite: {' '.join(cmd)} exited {proc.returncode}:"
                           f"\n{proc.stdout[-3000:]}")
    return exe


_REQUEST = re.compile(r" ([0-9a-f-]{36}) info: BlobStorageContextMiddleware: "
                      r"RequestMethod=(\w+) RequestURL=(\S+)")
_SUB_REQUEST = re.compile(r"https?://[^/]*:\d+/")   # a batch's part: its URL has the port
_RESPONSE = re.compile(r" ([0-9a-f-]{36}) info: EndMiddleware: End response\..*? StatusCode=(\d+)")


class AzuriteServer(ServerProcess, LoggedRequests):
    settle = 0.2   # Azurite writes its log asynchronously

    def __init__(self, workdir: str):
        exe = ensure_azurite()
        super().__init__(os.path.join(workdir, "azurite.out"))
        #: What a user passes as `azure.endpoint`: the account's blob endpoint (path style).
        self.endpoint = f"{self.url}/{ACCOUNT}"
        self.workdir = workdir
        os.makedirs(os.path.join(workdir, "data"), exist_ok=True)
        self.debug_log = self.request_log = os.path.join(workdir, "debug.log")
        self.start([exe, "--blobHost", "127.0.0.1", "--blobPort", str(self.port),
                    "--location", os.path.join(workdir, "data"), "--silent",
                    "--disableTelemetry", "--skipApiVersionCheck", "--loose",
                    "--debug", self.debug_log], timeout=60)

    def parse_requests(self, text: str) -> List[Request]:
        """(method, url, status) of every request Azurite received (status 0: not answered
        yet)."""
        status = {m.group(1): int(m.group(2)) for m in _RESPONSE.finditer(text)}
        return [(m.group(2), m.group(3), status.get(m.group(1), 0))
                for m in _REQUEST.finditer(text) if not _SUB_REQUEST.match(m.group(3))]

    # --- an independent client -------------------------------------------------------------
    def request(self, method: str, path: str, query: Optional[Dict[str, str]] = None,
                body: bytes = b"", headers: Optional[Dict[str, str]] = None,
                key: str = ACCOUNT_KEY) -> Tuple[int, Dict[str, str], bytes]:
        """One Shared-Key-signed request to `/<account>/<path>`: (status, headers, body)."""
        query = query or {}
        headers = dict(headers or {})
        headers["x-ms-date"] = email.utils.formatdate(usegmt=True)
        headers["x-ms-version"] = API_VERSION
        if body:
            headers["Content-Length"] = str(len(body))
        url_path = "/" + ACCOUNT + "/" + quote(path)
        canon_headers = "".join(f"{k.lower()}:{v.strip()}\n" for k, v in
                                sorted(headers.items(), key=lambda kv: kv[0].lower())
                                if k.lower().startswith("x-ms-"))
        canon_resource = f"/{ACCOUNT}{url_path}" + "".join(
            f"\n{k.lower()}:{v}" for k, v in sorted(query.items()))
        h = {k.lower(): v for k, v in headers.items()}
        to_sign = "\n".join([method, h.get("content-encoding", ""), h.get("content-language", ""),
                             h.get("content-length", ""), h.get("content-md5", ""),
                             h.get("content-type", ""), "", h.get("if-modified-since", ""),
                             h.get("if-match", ""), h.get("if-none-match", ""),
                             h.get("if-unmodified-since", ""), h.get("range", "")]) + "\n" \
            + canon_headers + canon_resource
        sig = base64.b64encode(hmac.new(base64.b64decode(key), to_sign.encode("utf-8"),
                                        hashlib.sha256).digest()).decode()
        headers["Authorization"] = f"SharedKey {ACCOUNT}:{sig}"
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            conn.request(method, url_path + ("?" + urlencode(query) if query else ""),
                         body=body or None, headers=headers)
            resp = conn.getresponse()
            return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
        finally:
            conn.close()

    def account_sas(self, permissions: str = "rl", hours: float = 1.0) -> str:
        """An account SAS token (query string without '?') for the blob service: `rl` = read
        and list only."""
        expiry = (datetime.datetime.now(datetime.timezone.utc)
                  + datetime.timedelta(hours=hours)).strftime("%Y-%m-%dT%H:%M:%SZ")
        version = "2019-12-12"
        fields = {"sv": version, "ss": "b", "srt": "sco", "sp": permissions, "se": expiry,
                  "spr": "https,http"}
        to_sign = "\n".join([ACCOUNT, permissions, "b", "sco", "", expiry, "", "https,http",
                             version]) + "\n"
        fields["sig"] = base64.b64encode(hmac.new(base64.b64decode(ACCOUNT_KEY),
                                                  to_sign.encode(), hashlib.sha256).digest()
                                         ).decode()
        return urlencode(fields)

    def create_container(self, name: str) -> None:
        status, _, data = self.request("PUT", name, {"restype": "container"})
        if status != 201:
            raise RuntimeError(f"create container {name}: {status} {data[:300]!r}")
