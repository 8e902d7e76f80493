"""The bucket (Azure: container) of one test, with one interface on every store: the fixtures
`s3`, `azure` and `gcs` (conftest.py) each return one, and the fixture `store` is each of them
in turn.

What a test looks at in the bucket goes through an independent client (boto3 on moto, the
Shared-Key REST client of azurite_server.py, fake-gcs-server's JSON API), never through
paimon_commit or obstore; pypaimon reads tables back as a second, independent reader."""
from __future__ import annotations

import contextlib
import datetime
import email.utils
import json
import os
import tempfile
import xml.etree.ElementTree as ET
from typing import Dict, List, Optional, Tuple
from urllib.parse import quote

from paimon_commit.format.python_values import parse_iso_datetime   # 3.10: a Z, 5 digits

# A private key that must never show anywhere (with disable_oauth nothing is signed with it).
PRIVATE_KEY = "-----BEGIN PRIVATE KEY-----\nGCS-TEST-KEY-NEVER-SHOWN\n-----END PRIVATE KEY-----"

# A create-if-absent on the wire as each store's request log shows it (Store.wire): method and
# status and, where the GCS adapter sees it, the generation condition (0: only if absent).
CREATED = {"s3": ("PUT", 200), "azure": ("PUT", 201), "gcs": ("PUT", 200, "0")}
REFUSED = {"s3": ("PUT", 412), "azure": ("PUT", 409), "gcs": ("PUT", 412, "0")}

Env = Dict[str, Optional[str]]   # environment changes: None unsets the variable


class Store:
    #: The first word of ObjectStoreFileIO.description ("<kind> store at <url>") and the
    #: fixture's name.
    kind = ""
    #: Of table URIs: <scheme>://<bucket>/<path>.
    scheme = ""
    #: The environment variables that configure the store: a "bare" environment has none.
    env_prefixes: Tuple[str, ...] = ()
    #: Strings that must never show in any output, message, log or stored file.
    secrets: Tuple[str, ...] = ()

    def __init__(self, name: str, url: str, workdir: str, requests):
        self.name = name
        #: The endpoint obstore talks to, as its description names it.
        self.url = url
        self.workdir = str(workdir)
        #: What counts the requests obstore makes: mark() and requests_since(mark).
        self.requests = requests
        #: The environment the fixture sets (as a user would), which subprocesses inherit.
        self.env: Dict[str, str] = {}
        #: The same configuration as Paimon option names.
        self.options: Dict[str, str] = {}

    def __repr__(self) -> str:
        return f"<{self.kind} {self.name} at {self.url}>"

    # --- configuration ---------------------------------------------------------------------
    def option_sets(self) -> List[Dict[str, str]]:
        """Each way to configure the store by option names alone (no environment)."""
        return [self.options]

    def unreachable(self, port: int) -> Tuple[str, Env, Dict[str, str]]:
        """(endpoint, environment changes, options) that send this store's requests to
        127.0.0.1:`port`, where nothing listens."""
        raise NotImplementedError

    @contextlib.contextmanager
    def ignoring_the_condition(self):
        """The same server behind a proxy that drops the create-if-absent condition from every
        request (a store that ignores it): yields (endpoint, environment changes) that send
        obstore there."""
        raise NotImplementedError(f"no condition-dropping proxy for {self.kind}")
        yield

    # --- the bucket, seen through the independent client -----------------------------------
    def table_uri(self, rel: str = "db.db/t") -> str:
        return f"{self.scheme}://{self.name}/{rel}"

    def last_modified(self, prefix: str = "") -> Dict[str, datetime.datetime]:
        """key -> the store's last-modified time of every object under `prefix`."""
        raise NotImplementedError

    def keys(self, prefix: str = "") -> List[str]:
        return sorted(self.last_modified(prefix))

    def put(self, key: str, data: bytes = b"x") -> None:
        raise NotImplementedError

    def get(self, key: str) -> bytes:
        raise NotImplementedError

    def bucket_exists(self, name: str) -> bool:
        raise NotImplementedError

    # --- the requests obstore made ----------------------------------------------------------
    def mark(self) -> int:
        return self.requests.mark()

    def requests_since(self, mark: int) -> List[tuple]:
        """(method, path or URL, status[, more]) of each request after `mark`."""
        return self.requests.requests_since(mark)

    @staticmethod
    def wire(request: tuple) -> tuple:
        """A request without its path: (method, status[, what else the log records])."""
        return (request[0],) + tuple(request[2:])

    # --- pypaimon, the independent reader ---------------------------------------------------
    def pp_table(self, rel: str = "db.db/t"):
        raise NotImplementedError

    def pp_read(self, rel: str = "db.db/t", snapshot_id=None, tag=None):
        return pp_read(self.pp_table(rel), snapshot_id=snapshot_id, tag=tag)


def pp_read(table, snapshot_id=None, tag=None):
    """Rows of a pypaimon table (at a snapshot or tag)."""
    opts = {}
    if snapshot_id is not None:
        opts["scan.snapshot-id"] = str(snapshot_id)
    if tag is not None:
        opts["scan.tag-name"] = tag
    if opts:
        table = table.copy(opts)
    rb = table.new_read_builder()
    return rb.new_read().to_arrow(rb.new_scan().plan().splits())


def _identifier(rel: str) -> str:
    """pypaimon's table name for a path under the warehouse: db.db/t -> db.t"""
    db, table = rel.split("/")[-2:]
    return f"{db[:-len('.db')]}.{table}"


# --- S3: moto --------------------------------------------------------------------------------

class S3Store(Store):
    kind, scheme = "s3", "s3"
    env_prefixes = ("AWS_",)

    def __init__(self, server, client, name: str, workdir: str):
        from tests.objectstore.moto_server import ACCESS_KEY, SECRET_KEY, aws_env
        super().__init__(name, server.url, workdir, server)
        self.server = server
        self.client = client
        self.env = aws_env(server.url)
        self.options = {"s3.endpoint": server.url, "s3.access-key": ACCESS_KEY,
                        "s3.secret-key": SECRET_KEY, "s3.region": "us-east-1"}
        self.secrets = (ACCESS_KEY, SECRET_KEY)

    def unreachable(self, port):
        url = f"http://127.0.0.1:{port}"
        return url, {"AWS_ENDPOINT_URL": url}, {}

    @contextlib.contextmanager
    def ignoring_the_condition(self):
        from tests.objectstore.moto_server import Proxy
        proxy = Proxy(self.server.port, lambda method, path, headers: "drop-condition")
        try:
            yield proxy.url, {"AWS_ENDPOINT_URL": proxy.url}
        finally:
            proxy.stop()

    def last_modified(self, prefix=""):
        out = {}
        for page in self.client.get_paginator("list_objects_v2").paginate(
                Bucket=self.name, Prefix=prefix):
            out.update((o["Key"], o["LastModified"]) for o in page.get("Contents", []))
        return out

    def put(self, key, data=b"x"):
        self.client.put_object(Bucket=self.name, Key=key, Body=data)

    def get(self, key):
        return self.client.get_object(Bucket=self.name, Key=key)["Body"].read()

    def bucket_exists(self, name):
        return name in [b["Name"] for b in self.client.list_buckets()["Buckets"]]

    def pp_table(self, rel="db.db/t"):
        """pypaimon through its own S3 options."""
        from pypaimon import CatalogFactory
        return CatalogFactory.create({
            "warehouse": f"s3://{self.name}", "s3.endpoint": self.url,
            "s3.access-key": self.options["s3.access-key"],
            "s3.secret-key": self.options["s3.secret-key"], "s3.region": "us-east-1",
            "s3.path.style.access": "true"}).get_table(_identifier(rel))


# --- Azure Blob: Azurite -----------------------------------------------------------------------

class AzureStore(Store):
    kind, scheme = "azure", "az"
    env_prefixes = ("AZURE_", "AZURITE_")

    def __init__(self, server, name: str, workdir: str):
        from tests.objectstore.azurite_server import ACCOUNT, ACCOUNT_KEY
        super().__init__(name, server.endpoint, workdir, server)
        self.server = server
        #: What a user passes as `azure.endpoint`: the account's blob endpoint (path style).
        self.endpoint = server.endpoint
        self.env = {"AZURE_STORAGE_ACCOUNT_NAME": ACCOUNT,
                    "AZURE_STORAGE_ACCOUNT_KEY": ACCOUNT_KEY,
                    "AZURE_STORAGE_ENDPOINT": server.endpoint}
        self.options = {"azure.account-name": ACCOUNT, "azure.account-key": ACCOUNT_KEY,
                        "azure.endpoint": server.endpoint}
        self.secrets = (ACCOUNT_KEY,)

    def unreachable(self, port):
        from tests.objectstore.azurite_server import ACCOUNT
        url = f"http://127.0.0.1:{port}/{ACCOUNT}"
        return url, {"AZURE_STORAGE_ENDPOINT": url}, {}

    def last_modified(self, prefix=""):
        out: Dict[str, datetime.datetime] = {}
        marker = ""
        while True:
            q = {"restype": "container", "comp": "list", "prefix": prefix}
            if marker:
                q["marker"] = marker
            status, _, data = self.server.request("GET", self.name, q)
            if status != 200:
                raise RuntimeError(f"list {self.name}: {status} {data[:300]!r}")
            root = ET.fromstring(data)
            for b in root.iter("Blob"):
                lm = b.find("Properties/Last-Modified").text
                out[b.find("Name").text] = email.utils.parsedate_to_datetime(lm)
            marker = root.findtext("NextMarker") or ""
            if not marker:
                return out

    def put(self, key, data=b"x"):
        status, _, body = self.server.request("PUT", f"{self.name}/{key}", body=data,
                                              headers={"x-ms-blob-type": "BlockBlob"})
        if status != 201:
            raise RuntimeError(f"put {key}: {status} {body[:300]!r}")

    def get(self, key):
        status, _, body = self.server.request("GET", f"{self.name}/{key}")
        if status != 200:
            raise FileNotFoundError(f"{key}: {status}")
        return body

    def bucket_exists(self, name):
        status, _, _ = self.server.request("GET", name, {"restype": "container"})
        return status == 200

    def pp_table(self, rel="db.db/t"):
        """pypaimon on a local copy of the table's blobs, made now: pypaimon 2.1 has no Azure
        file system (`az://` is "Unrecognized filesystem type in URI")."""
        from pypaimon import CatalogFactory
        wh = tempfile.mkdtemp(dir=self.workdir)
        prefix = rel.rstrip("/") + "/"
        for key in self.keys(prefix):
            path = os.path.join(wh, rel, key[len(prefix):])
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as f:
                f.write(self.get(key))
        return CatalogFactory.create({"warehouse": wh}).get_table(_identifier(rel))


# --- GCS: fake-gcs-server behind the XML-PUT adapter -------------------------------------------

def user_service_account(path: str, base_url: str) -> str:
    """A service-account file as a user writes one for an emulator, with a private key that
    must never show anywhere."""
    with open(path, "w") as f:
        json.dump({"type": "service_account", "gcs_base_url": base_url, "disable_oauth": True,
                   "client_email": "tests@example.invalid", "private_key_id": "k1",
                   "private_key": PRIVATE_KEY}, f)
    return path


class GcsStore(Store):
    """`url` is where obstore goes (the adapter, which counts the requests), `server` the
    emulator itself (the independent client and pypaimon talk to it directly)."""
    kind, scheme = "gcs", "gs"
    env_prefixes = ("GOOGLE_",)
    secrets = ("GCS-TEST-KEY",)

    def __init__(self, server, adapter, name: str, service_account: str, workdir: str):
        super().__init__(name, adapter.url, workdir, adapter)
        self.server = server
        self.adapter = adapter
        self.service_account = service_account
        self.env = {"GOOGLE_SERVICE_ACCOUNT": service_account}
        #: The same as an option (instead of GOOGLE_SERVICE_ACCOUNT).
        self.options = {"gcs.service-account-file": service_account}

    def option_sets(self):
        """Our option names, with a service-account file as a user writes one (its private
        key must never show): the file, and the JSON itself."""
        sa = user_service_account(os.path.join(self.workdir, "sa.json"), self.url)
        return [{"gcs.service-account-file": sa},
                {"gcs.service-account-key": open(sa).read()}]

    def unreachable(self, port):
        url = f"http://127.0.0.1:{port}"
        sa = user_service_account(os.path.join(self.workdir, f"dead-{port}.json"), url)
        return url, {"GOOGLE_SERVICE_ACCOUNT": None}, {"gcs.service-account-key": open(sa).read()}

    @contextlib.contextmanager
    def ignoring_the_condition(self):
        from tests.objectstore.gcs_server import XmlPutAdapter, service_account_file
        careless = XmlPutAdapter(self.server, lambda method, path, headers: "drop-condition")
        try:
            sa = service_account_file(os.path.join(self.workdir, "careless.json"), careless.url)
            yield careless.url, {"GOOGLE_SERVICE_ACCOUNT": sa}
        finally:
            careless.stop()

    def _json(self, method, path, body=None, headers=None):
        from tests.objectstore.gcs_server import http_request
        status, data = http_request(method, f"{self.server.url}{path}", body, headers)
        return status, data

    def last_modified(self, prefix=""):
        out, token = {}, None
        while True:
            q = f"prefix={quote(prefix, safe='')}" + (f"&pageToken={quote(token)}" if token else "")
            status, body = self._json("GET", f"/storage/v1/b/{self.name}/o?{q}")
            assert status == 200, (status, body[:300])
            page = json.loads(body)
            out.update((o["name"], parse_iso_datetime(o["updated"]))
                       for o in page.get("items", []))
            token = page.get("nextPageToken")
            if not token:
                return out

    def put(self, key, data=b"x"):
        status, body = self._json(
            "POST", f"/upload/storage/v1/b/{self.name}/o?uploadType=media"
                    f"&name={quote(key, safe='')}", data,
            {"Content-Type": "application/octet-stream"})
        assert status == 200, (status, body[:300])

    def get(self, key):
        status, body = self._json("GET", f"/download/storage/v1/b/{self.name}/o/"
                                          f"{quote(key, safe='')}?alt=media")
        assert status == 200, (status, body[:300])
        return body

    def bucket_exists(self, name):
        status, body = self._json("GET", f"/storage/v1/b/{quote(name, safe='')}")
        assert status in (200, 404), (status, body[:300])
        return status == 200

    def pp_table(self, rel="db.db/t"):
        """pypaimon through pyarrow's GCS client (JSON API, straight to the emulator, which
        CLOUD_STORAGE_EMULATOR_ENDPOINT names); a dummy token so that no credential lookup
        happens."""
        from pypaimon import CatalogFactory
        assert os.environ.get("CLOUD_STORAGE_EMULATOR_ENDPOINT") == self.server.url
        return CatalogFactory.create({"warehouse": f"gs://{self.name}",
                                      "gcs.access-token": "emulator"}
                                     ).get_table(_identifier(rel))


# --- checks every store's tests make -----------------------------------------------------------

def apply_env(environ: Dict[str, str], changes: Env) -> Dict[str, str]:
    """`environ` with `changes` (None: unset)."""
    out = dict(environ)
    for k, v in changes.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = v
    return out


def assert_one_clear_error(e, store: Store, where: str, path: str) -> str:
    """The message of an ObjectStoreError: one line naming the store, its endpoint and the
    path, and no credential."""
    msg = str(e.value)
    assert f"{store.kind} store at {where}" in msg and path in msg, msg
    assert not [s for s in store.secrets if s in msg], msg
    assert "\n" not in msg and "Debug source" not in msg, msg
    return msg


def assert_never_stored(store: Store, table, texts, option_prefixes) -> None:
    """No credential or storage option in the table's schema and snapshot files nor in its
    options."""
    for key in store.keys():
        if "/schema/" in key or "/snapshot/" in key:
            body = store.get(key).decode()
            assert not [s for s in texts if s in body], key
    assert not any(k.startswith(tuple(option_prefixes)) for k in table.options)
