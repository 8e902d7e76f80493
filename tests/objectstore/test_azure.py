"""What only Azure Blob has, against Azurite (which the tests install with npm into
<venv>/azurite and start themselves, `azurite` fixture): `abfss://` paths and Azure's option
names, the emulator switch, account keys (a wrong one, one that is not base64) and a read-only
SAS token. Every operation, the conditional create, the CLI, several writer processes and bad
input run on Azurite too: test_store_operations.py and test_store_concurrency.py.

pypaimon 2.1 cannot read `az://` (its file IO knows local, HDFS, S3, OSS and GCS only), so there
pypaimon reads a local copy of the table's blobs (stores.AzureStore.pp_table)."""
import base64
import json
import os
import subprocess
import sys

import pytest

from conftest import SCHEMA, make_rows, write
from paimon_commit import OptionError, Table
from paimon_commit.errors import ObjectStoreError
from tests.objectstore.azurite_server import ACCOUNT, ACCOUNT_KEY
from tests.objectstore.stores import assert_never_stored, assert_one_clear_error

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WRONG_KEY = base64.b64encode(b"not the key of this account, but well-formed" * 2).decode()


def _create(azure):
    return Table.create(azure.table_uri(), SCHEMA, partition_keys=["dt", "hr"],
                        options={"snapshot.num-retained.min": "100"})


def _ids(t, **kw):
    return sorted(t.read_arrow(**kw).column("id").to_pylist())


def _no_azure_env(monkeypatch):
    for k in list(os.environ):
        if k.startswith(("AZURE_", "AZURITE_")):
            monkeypatch.delenv(k)


def test_paimon_option_names_and_obstore_keys_configure_the_store(azure, monkeypatch):
    _no_azure_env(monkeypatch)
    t = Table.create(azure.table_uri(), SCHEMA, partition_keys=["dt", "hr"],
                     storage_options=azure.options)
    assert write(t, make_rows([1])) == 1
    # Hadoop ABFS's key name, on an abfss:// path (container@account.dfs.core.windows.net).
    hadoop = {f"fs.azure.account.key.{ACCOUNT}.dfs.core.windows.net": ACCOUNT_KEY,
              "azure.endpoint": azure.endpoint}
    abfss = f"abfss://{azure.name}@{ACCOUNT}.dfs.core.windows.net/db.db/t"
    assert write(Table.open(abfss, storage_options=hadoop), make_rows([2])) == 2
    # obstore's own keys (an http:// endpoint under any of its names needs no allow_http).
    native = {"azure_storage_account_name": ACCOUNT, "azure_storage_account_key": ACCOUNT_KEY,
              "azure_storage_endpoint": azure.endpoint}
    again = Table.open(azure.table_uri(), storage_options=native)
    assert write(again, make_rows([3])) == 3
    assert _ids(again) == [1, 2, 3]
    assert_never_stored(azure, again, (ACCOUNT_KEY, "azure"), ("azure", "fs.azure"))


def test_the_emulator_switch(azure, monkeypatch):
    """AZURE_STORAGE_USE_EMULATOR: obstore's defaults (devstoreaccount1 and its published key)
    at AZURITE_BLOB_STORAGE_URL. An endpoint given as well would be ignored by obstore, so it is
    refused before any request instead of silently going to another emulator."""
    _no_azure_env(monkeypatch)
    monkeypatch.setenv("AZURE_STORAGE_USE_EMULATOR", "true")
    monkeypatch.setenv("AZURITE_BLOB_STORAGE_URL", azure.server.url)
    t = _create(azure)
    assert write(t, make_rows([1, 2])) == 1
    assert f"azure store at {azure.server.url}" in repr(t.store.io)
    monkeypatch.delenv("AZURE_STORAGE_USE_EMULATOR")
    emulator = {"azure_storage_use_emulator": "true"}
    assert _ids(Table.open(azure.table_uri(), storage_options=emulator)) == [1, 2]
    mark = azure.mark()
    with pytest.raises(OptionError, match="ignores the endpoint") as e:
        Table.open(azure.table_uri(), storage_options={"azure_storage_use_emulator": "true",
                                                       "azure.endpoint": azure.endpoint})
    assert "AZURITE_BLOB_STORAGE_URL" in str(e.value)
    assert azure.requests_since(mark) == []


def test_wrong_account_key(azure, monkeypatch):
    t = _create(azure)
    write(t, make_rows([1]))
    before = azure.keys()
    # In the CLI: the key is refused (exit 1, the error in the JSON too), and shown nowhere.
    bare = {k: v for k, v in os.environ.items() if not k.startswith(("AZURE_", "AZURITE_"))}
    wrong = [f"--option=azure.{k}={v}" for k, v in (("account-name", ACCOUNT),
                                                    ("account-key", WRONG_KEY),
                                                    ("endpoint", azure.endpoint))]
    r = subprocess.run([sys.executable, "-m", "paimon_commit", "expire-snapshots",
                        azure.table_uri(), "--json", *wrong], cwd=ROOT, env=bare,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 1, r.stderr
    assert "access denied" in r.stderr and azure.table_uri() in r.stderr
    assert "access denied" in json.loads(r.stdout)["error"]
    assert WRONG_KEY not in r.stdout + r.stderr and ACCOUNT_KEY not in r.stdout + r.stderr
    # In the environment.
    monkeypatch.setenv("AZURE_STORAGE_ACCOUNT_KEY", WRONG_KEY)
    for act in (lambda: Table.open(azure.table_uri()),
                lambda: Table.create(azure.table_uri("db.db/t2"), SCHEMA)):
        with pytest.raises(ObjectStoreError) as e:
            act()
        msg = assert_one_clear_error(e, azure, azure.endpoint, f"az://{azure.name}/db.db/t")
        assert "access denied (check the credentials)" in msg and WRONG_KEY not in msg
    # Not base64 at all (a key pasted wrongly): refused before any request.
    mark = azure.mark()
    with pytest.raises(OptionError, match="not base64") as e:
        Table.open(azure.table_uri(), storage_options={"azure.account-key": "not-a-key!"})
    assert "not-a-key" not in str(e.value)
    assert azure.requests_since(mark) == []
    assert azure.keys() == before, "something was written"


def test_a_commit_whose_writes_are_refused_publishes_nothing(azure, monkeypatch):
    """A read-only SAS token (`azure.sas-token`): the table opens and reads, the commit is
    refused at its first write, and nothing of it lands in the container."""
    t = _create(azure)
    write(t, make_rows([1]))
    w = t.new_writer()
    w.write_arrow(make_rows([2]))
    msgs = w.prepare_commit()          # the data file, written with the account key
    before = azure.keys()
    _no_azure_env(monkeypatch)
    sas = azure.server.account_sas("rl")
    read_only = Table.open(azure.table_uri(), storage_options={
        "azure.account-name": ACCOUNT, "azure.sas-token": sas, "azure.endpoint": azure.endpoint})
    assert _ids(read_only) == [1]
    with pytest.raises(ObjectStoreError) as e:
        with read_only.new_commit() as c:
            c.commit(msgs)
    msg = assert_one_clear_error(e, azure, azure.endpoint, azure.table_uri())
    assert "access denied" in msg and sas not in msg and sas.split("sig=")[1] not in msg
    assert azure.keys() == before, "a manifest or snapshot was written"
    assert Table.open(azure.table_uri(), storage_options=azure.options).latest_snapshot().id == 1
