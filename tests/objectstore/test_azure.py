"""Azure Blob (`az://`, `abfs[s]://`) against Azurite, the Azure Blob emulator, which the tests
install (npm, into <venv>/azurite) and start themselves (`azurite` fixture): the conditional
create, every operation, the CLI, several writer processes at once, and bad input.

What a user notices is checked in the container itself (through an independent Shared-Key REST
client, not through obstore) and by reading the rows back. pypaimon 2.1 cannot read `az://`
(its file IO knows local, HDFS, S3, OSS and GCS only: "Unrecognized filesystem type in URI:
az"), so pypaimon reads a local copy of the table's blobs: the bytes our code put in the
container make a table an independent reader accepts.

The `azure` fixture configures the store as a user would with the standard environment
(`AZURE_STORAGE_ACCOUNT_NAME`, `AZURE_STORAGE_ACCOUNT_KEY`, `AZURE_STORAGE_ENDPOINT`); other
tests use Paimon's option names, obstore's own keys and the emulator switch instead."""
import base64
import json
import os
import subprocess
import sys
import threading
import time
import uuid

import pytest

from conftest import D2, SCHEMA, make_rows, write
from invariants import referenced_files
from paimon_commit import (CleanContext, ExpireConfig, ExpireSnapshots, OptionError,
                           OrphanFilesCleaner, Table, TableNotFoundError)
from paimon_commit.objectstore import ObjectStoreError, ObjectStoreFileIO
from tests.objectstore.azurite_server import ACCOUNT, ACCOUNT_KEY, pp_read
from tests.objectstore.moto_server import free_port
from tests.objectstore.s3_worker import SCHEMA as WORKER_SCHEMA

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WRONG_KEY = base64.b64encode(b"not the key of this account, but well-formed" * 2).decode()


def _create(azure, **options):
    return Table.create(azure.table_uri(), SCHEMA, partition_keys=["dt", "hr"],
                        options={"snapshot.num-retained.min": "100", **options})


def _ids(t, **kw):
    return sorted(t.read_arrow(**kw).column("id").to_pylist())


def _pp_ids(pp_table, **kw):
    return sorted(pp_read(pp_table, **kw).column("id").to_pylist())


def _no_azure_env(monkeypatch):
    for k in list(os.environ):
        if k.startswith(("AZURE_", "AZURITE_")):
            monkeypatch.delenv(k)


# --- the conditional create ----------------------------------------------------------------

def test_azurite_honours_the_conditional_create(azure):
    t = _create(azure)
    io = t.store.io
    assert isinstance(io, ObjectStoreFileIO) and io.description.startswith("azure store at ")
    mark = azure.server.mark()
    io.check_atomic_create()   # raises AtomicCreateUnsupportedError if If-None-Match is ignored
    probe = [(m, st) for m, url, st in azure.server.requests_since(mark)
             if "atomic-create-probe" in url]
    assert probe[:2] == [("PUT", 201), ("PUT", 409)], probe   # 409 BlobAlreadyExists
    assert not [k for k in azure.keys() if "probe" in k], "probe object left behind"
    # Two writers creating one snapshot name at the same moment: exactly one wins, and the
    # object holds the winner's bytes. Each round on a fresh name, two stores (two clients).
    ios = [ObjectStoreFileIO.from_uri(azure.table_uri()) for _ in range(2)]
    for rnd in range(12):
        path = f"{azure.name}/db.db/t/snapshot/snapshot-{100 + rnd}"
        barrier, won = threading.Barrier(2), [None, None]
        payloads = [f"writer-{i} {uuid.uuid4()}".encode() for i in range(2)]

        def create(i):
            barrier.wait()
            won[i] = ios[i].try_create_atomic(path, payloads[i])

        threads = [threading.Thread(target=create, args=(i,)) for i in range(2)]
        for th in threads:
            th.start()
        for th in threads:
            th.join(30)
        assert sorted(won) == [False, True], f"round {rnd}: {won}"
        assert azure.get(f"db.db/t/snapshot/snapshot-{100 + rnd}") == payloads[won.index(True)]


def test_the_probe_runs_once_per_table_root_and_process(azure):
    t = _create(azure)
    mark = azure.server.mark()
    for i in range(3):
        write(t, make_rows([i]))
    write(Table.open(azure.table_uri()), make_rows([9]))
    reqs = azure.server.requests_since(mark)
    probes = [(m, st) for m, url, st in reqs if "atomic-create-probe" in url]
    assert probes == [("PUT", 201), ("PUT", 409)], probes
    # ... and one request deleting the probe object (obstore deletes through a blob batch).
    assert [(m, st) for m, url, st in reqs if m in ("DELETE", "POST")] == [("POST", 202)], reqs
    assert not [k for k in azure.keys() if "probe" in k]


# --- operations ----------------------------------------------------------------------------

def test_commit_writes_no_markers_no_temp_files_and_reads_back(azure, tmp_path):
    t = _create(azure)
    assert write(t, make_rows([1, 2])) == 1
    assert write(t, make_rows([3], dt=D2, hr=5)) == 2
    keys = azure.keys()
    assert not [k for k in keys if k.endswith("/")], "directory markers written"
    assert not [k for k in keys if k.rsplit("/", 1)[-1].startswith(".")], \
        "temp or probe objects left"
    assert "db.db/t/snapshot/snapshot-2" in keys and "db.db/t/schema/schema-0" in keys
    assert len([k for k in keys if k.endswith(".parquet")]) == 2
    assert azure.get("db.db/t/snapshot/LATEST") == b"2"
    assert _ids(Table.open(azure.table_uri())) == [1, 2, 3]
    pp = azure.pp_table(tmp_path)
    assert _pp_ids(pp) == [1, 2, 3] and _pp_ids(pp, snapshot_id=1) == [1, 2]


def test_overwrite_and_drop_partition(azure, tmp_path):
    t = _create(azure)
    write(t, make_rows([1, 2]))
    write(t, make_rows([3], dt=D2))
    w = t.new_writer()
    w.write_arrow(make_rows([10, 11]))
    with t.new_commit() as c:
        c.overwrite(w.prepare_commit())          # replaces dt=D1/hr=1 only
    assert _ids(t) == [3, 10, 11]
    with t.new_commit() as c:
        c.drop_partitions([{"dt": D2}])
    assert _ids(t) == [10, 11]
    assert [s.commit_kind for s in t.snapshots()] == ["APPEND", "APPEND", "OVERWRITE",
                                                      "OVERWRITE"]
    # Nothing is deleted by an overwrite or a drop: the files stay for older snapshots.
    assert len([k for k in azure.keys() if k.endswith(".parquet")]) == 3
    pp = azure.pp_table(tmp_path)
    assert _pp_ids(pp) == [10, 11] and _pp_ids(pp, snapshot_id=2) == [1, 2, 3]


def test_expire_snapshots_deletes_the_blobs_only_they_used(azure, tmp_path):
    t = _create(azure)
    for i in range(6):
        w = t.new_writer()
        w.write_arrow(make_rows([i]))
        with t.new_commit() as c:
            c.overwrite(w.prepare_commit())      # each snapshot replaces the last file
    assert len([k for k in azure.keys() if k.endswith(".parquet")]) == 6
    r = ExpireSnapshots(Table.open(azure.table_uri()).store,
                        ExpireConfig(retain_min=2, time_retained_ms=0)).expire()
    assert r.expired_ids == [1, 2, 3, 4]
    keys = azure.keys()
    assert [k for k in keys if "/snapshot/snapshot-" in k] == [
        "db.db/t/snapshot/snapshot-5", "db.db/t/snapshot/snapshot-6"]
    assert len([k for k in keys if k.endswith(".parquet")]) == 2   # snapshots 5 and 6
    assert not set(referenced_files(t)) - {f"{azure.name}/{k}" for k in keys}
    assert azure.get("db.db/t/snapshot/EARLIEST") == b"5"
    assert _ids(t) == [5] and _ids(t, snapshot_id=5) == [4]
    pp = azure.pp_table(tmp_path)
    assert _pp_ids(pp) == [5] and _pp_ids(pp, snapshot_id=5) == [4]


def test_tags_and_rollback(azure, tmp_path):
    t = _create(azure)
    for i in range(1, 5):
        write(t, make_rows([i]))
    t.create_tag("v2", 2)
    assert "db.db/t/tag/tag-v2" in azure.keys()
    t.rollback_to(snapshot_id=3)
    assert t.latest_snapshot().id == 3 and _ids(t) == [1, 2, 3]
    assert "db.db/t/snapshot/snapshot-4" not in azure.keys()
    assert azure.get("db.db/t/snapshot/LATEST") == b"3"
    ExpireSnapshots(t.store, ExpireConfig(retain_min=1, time_retained_ms=0)).expire()
    assert [k for k in azure.keys() if "/snapshot/snapshot-" in k] == [
        "db.db/t/snapshot/snapshot-3"]
    assert _ids(t, tag="v2") == [1, 2]            # the tag keeps snapshot 2's files
    pp = azure.pp_table(tmp_path)
    assert _pp_ids(pp, tag="v2") == [1, 2] and _pp_ids(pp) == [1, 2, 3]
    t.delete_tag("v2")
    assert not [k for k in azure.keys() if "/tag/" in k]
    assert _ids(t) == [1, 2, 3]


def test_orphan_cleanup_uses_the_stores_last_modified(azure, tmp_path):
    t = _create(azure)
    write(t, make_rows([1, 2]))
    write(t, make_rows([3], dt=D2))
    old = ["db.db/t/dt=2024-01-01/hr=1/bucket-0/data-orphan-old.parquet",
           "db.db/t/manifest/manifest-orphan-old"]
    for k in old:
        azure.put(k)
    time.sleep(2.2)    # Azure's Last-Modified has second resolution
    cutoff = int(time.time() * 1000) - 1000
    young = "db.db/t/dt=2024-01-02/hr=1/bucket-0/data-orphan-young.parquet"
    azure.put(young)
    modified = azure.blobs("db.db/t/")
    assert all(modified[k].timestamp() * 1000 < cutoff for k in old)
    assert modified[young].timestamp() * 1000 > cutoff
    dry = OrphanFilesCleaner(CleanContext(azure.table_uri(), older_than_ms=cutoff,
                                          dry_run=True)).clean()
    assert sorted(dry.deleted_paths) == sorted(k[len("db.db/t/"):] for k in old)
    assert all(k in azure.keys() for k in old)
    r = OrphanFilesCleaner(CleanContext(azure.table_uri(), older_than_ms=cutoff)).clean()
    assert r.deleted_files == 2
    keys = azure.keys()
    assert not any(k in keys for k in old) and young in keys
    assert _ids(t) == [1, 2, 3] and _pp_ids(azure.pp_table(tmp_path)) == [1, 2, 3]


# --- configuration a user knows ------------------------------------------------------------

def test_paimon_option_names_and_obstore_keys_configure_the_store(azure, monkeypatch):
    _no_azure_env(monkeypatch)
    t = Table.create(azure.table_uri(), SCHEMA, partition_keys=["dt", "hr"],
                     storage_options=azure.options)
    assert write(t, make_rows([1])) == 1
    # Hadoop ABFS's key name, on an abfss:// path (container@account.dfs.core.windows.net).
    hadoop = {f"fs.azure.account.key.{ACCOUNT}.dfs.core.windows.net": ACCOUNT_KEY,
              "azure.endpoint": azure.endpoint}
    abfss = f"abfss://{azure.name}@{ACCOUNT}.dfs.core.windows.net/db.db/t"
    assert write(Table.open(abfss, options=hadoop), make_rows([2])) == 2
    # obstore's own keys (an http:// endpoint under any of its names needs no allow_http).
    native = {"azure_storage_account_name": ACCOUNT, "azure_storage_account_key": ACCOUNT_KEY,
              "azure_storage_endpoint": azure.endpoint}
    again = Table.open(azure.table_uri(), options=native)
    assert write(again, make_rows([3])) == 3
    assert _ids(again) == [1, 2, 3]
    for key in azure.keys():
        if "/schema/" in key or "/snapshot/" in key:
            body = azure.get(key).decode()
            assert ACCOUNT_KEY not in body and "azure" not in body, key
    assert not any(k.startswith(("azure", "fs.azure")) for k in again.options)


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
    assert _ids(Table.open(azure.table_uri(), options={"azure_storage_use_emulator": "true"})) \
        == [1, 2]
    mark = azure.server.mark()
    with pytest.raises(OptionError, match="ignores the endpoint") as e:
        Table.open(azure.table_uri(), options={"azure_storage_use_emulator": "true",
                                               "azure.endpoint": azure.endpoint})
    assert "AZURITE_BLOB_STORAGE_URL" in str(e.value)
    assert azure.server.requests_since(mark) == []


# --- the CLI -------------------------------------------------------------------------------

def _cli(args, env):
    return subprocess.run([sys.executable, "-m", "paimon_commit", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)


def test_cli_on_az_never_shows_the_key(azure):
    t = _create(azure, **{"snapshot.num-retained.min": "1"})
    for i in range(4):
        write(t, make_rows([i]))
    bare = {k: v for k, v in os.environ.items() if not k.startswith(("AZURE_", "AZURITE_"))}
    opts = [f"--option=azure.account-name={ACCOUNT}", f"--option=azure.account-key={ACCOUNT_KEY}",
            f"--option=azure.endpoint={azure.endpoint}"]
    outputs = []

    def run(args, env=bare, code=0):
        r = _cli(args, env)
        outputs.append(r.stdout + r.stderr)
        assert r.returncode == code, r.stderr
        return r

    r = run(["snapshots", azure.table_uri(), "--json", *opts])
    assert [s["id"] for s in json.loads(r.stdout)["snapshots"]] == [1, 2, 3, 4]
    r = run(["expire-snapshots", azure.table_uri(), "--retain-min", "2", "--time-retained",
             "0 ms", "--json", *opts])
    assert json.loads(r.stdout)["expired_snapshots"] == 2
    assert [k for k in azure.keys() if "/snapshot/snapshot-" in k] == [
        "db.db/t/snapshot/snapshot-3", "db.db/t/snapshot/snapshot-4"]
    r = run(["remove-orphan-files", azure.table_uri(), "--dry-run", "--json", *opts])
    assert json.loads(r.stdout)["deleted_files"] == 0
    run(["-v", "info", azure.table_uri()] + opts)           # text output and INFO logs
    r = run(["info", azure.table_uri(), "--json"], env=dict(os.environ))   # the environment
    assert json.loads(r.stdout)["latest"] == 4
    # Failures: the key is refused, the table is missing; still no key anywhere.
    wrong = [o.replace(ACCOUNT_KEY, WRONG_KEY) for o in opts]
    r = run(["expire-snapshots", azure.table_uri(), "--json", *wrong], code=1)
    assert "access denied" in r.stderr and azure.table_uri() in r.stderr
    assert "access denied" in json.loads(r.stdout)["error"]
    r = run(["info", azure.table_uri("db.db/none"), *opts], code=2)
    assert "is not a Paimon table" in r.stderr
    for text in outputs:
        assert ACCOUNT_KEY not in text and WRONG_KEY not in text, text
    assert len([k for k in azure.keys() if "/snapshot/snapshot-" in k]) == 2


# --- several processes at once -------------------------------------------------------------

def _spawn(*args):
    return subprocess.Popen([sys.executable, "-m", "tests.objectstore.s3_worker",
                             *map(str, args)], cwd=ROOT, env=dict(os.environ),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _run_writers(azure, tmp_path, writers: int, commits: int):
    """`writers` processes x `commits` commits, one process expiring snapshots and one cleaning
    orphans, all on one az:// table (tests/objectstore/s3_worker.py takes any table URI; the
    processes find the account through the environment)."""
    uri = azure.table_uri()
    Table.create(uri, WORKER_SCHEMA)
    planted = [f"db.db/t/bucket-0/data-planted-orphan-{i}.parquet" for i in range(3)]
    for k in planted:
        azure.put(k)
    time.sleep(2.2)
    cutoff_ms = int(time.time() * 1000) - 1000   # after the orphans, before any writer's file
    procs = [_spawn("writer", uri, w, commits, "{}") for w in range(writers)]
    stop = tmp_path / "writers-done"
    side = [_spawn("expirer", uri, stop), _spawn("cleaner", uri, stop, cutoff_ms)]
    outs = []
    for i, p in enumerate(procs + side):
        if i == writers:
            stop.write_text("done")   # expirer and cleaner: one more run each, then stop
        out, err = p.communicate(timeout=900)
        assert p.returncode == 0, err[-3000:]
        outs.append(json.loads(out.strip().splitlines()[-1]))
    given = [sid for o in outs[:writers] for sid in o]
    assert len(given) == writers * commits, "a commit returned no snapshot"
    assert len(set(given)) == len(given), "two commits were told the same snapshot id"
    assert outs[writers]["runs"] > 0 and outs[writers + 1]["runs"] > 0
    t = Table.open(uri)
    assert t.latest_snapshot().id == max(given) == writers * commits
    expected = sorted(w * 100000 + i for w in range(writers) for i in range(commits))
    assert sorted(t.read_arrow().column("id").to_pylist()) == expected, "lost or duplicated rows"
    if not set(outs[writers + 1]["deleted"]) >= {k[len("db.db/t/"):] for k in planted}:
        # Every run of the cleaner met a concurrent expiration (it then deletes nothing):
        # a run on the quiet table must finish the job.
        OrphanFilesCleaner(CleanContext(uri, older_than_ms=cutoff_ms)).clean()
    keys = azure.keys()
    assert not set(planted) & set(keys), "planted orphans were not cleaned"
    missing = referenced_files(t) - {f"{azure.name}/{k}" for k in keys}
    assert not missing, f"files the table uses are gone: {sorted(missing)[:3]}"
    assert outs[writers]["expired"] > 0
    pp = azure.pp_table(tmp_path)
    for s in t.snapshots()[-4:]:     # each commit added one row: a snapshot's rows = its id
        assert pp_read(pp, snapshot_id=s.id).num_rows == s.id, f"snapshot {s.id}"


def test_writers_expirer_and_cleaner_lose_nothing(azure, tmp_path):
    _run_writers(azure, tmp_path, writers=3, commits=6)


@pytest.mark.slow
@pytest.mark.skipif(os.environ.get("PAIMON_COMMIT_FULL_FAULTS") != "1",
                    reason="the 8 x 50 soak runs with PAIMON_COMMIT_FULL_FAULTS=1")
def test_soak_8_writers_50_commits_each(azure, tmp_path):
    _run_writers(azure, tmp_path, writers=8, commits=50)


# --- bad input -----------------------------------------------------------------------------

def _assert_one_clear_error(e, where, path):
    msg = str(e.value)
    assert f"azure store at {where}" in msg and path in msg, msg
    assert ACCOUNT_KEY not in msg and WRONG_KEY not in msg, msg
    assert "\n" not in msg and "Debug source" not in msg, msg
    return msg


def test_wrong_account_key(azure, monkeypatch):
    t = _create(azure)
    write(t, make_rows([1]))
    before = azure.keys()
    monkeypatch.setenv("AZURE_STORAGE_ACCOUNT_KEY", WRONG_KEY)
    for act in (lambda: Table.open(azure.table_uri()),
                lambda: Table.create(azure.table_uri("db.db/t2"), SCHEMA)):
        with pytest.raises(ObjectStoreError) as e:
            act()
        msg = _assert_one_clear_error(e, azure.endpoint, f"az://{azure.name}/db.db/t")
        assert "access denied (check the credentials)" in msg
    # Not base64 at all (a key pasted wrongly): refused before any request.
    mark = azure.server.mark()
    with pytest.raises(OptionError, match="not base64") as e:
        Table.open(azure.table_uri(), options={"azure.account-key": "not-a-key!"})
    assert "not-a-key" not in str(e.value)
    assert azure.server.requests_since(mark) == []
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
    read_only = Table.open(azure.table_uri(), options={
        "azure.account-name": ACCOUNT, "azure.sas-token": sas, "azure.endpoint": azure.endpoint})
    assert _ids(read_only) == [1]
    with pytest.raises(ObjectStoreError) as e:
        with read_only.new_commit() as c:
            c.commit(msgs)
    msg = _assert_one_clear_error(e, azure.endpoint, azure.table_uri())
    assert "access denied" in msg and sas not in msg and sas.split("sig=")[1] not in msg
    assert azure.keys() == before, "a manifest or snapshot was written"
    assert Table.open(azure.table_uri(), options=azure.options).latest_snapshot().id == 1


def test_missing_container(azure):
    uri = f"az://no-such-{azure.name}/db.db/t"
    for act in (lambda: Table.open(uri), lambda: Table.create(uri, SCHEMA)):
        with pytest.raises(ObjectStoreError) as e:
            act()
        msg = _assert_one_clear_error(e, azure.endpoint, uri)
        assert f"container 'no-such-{azure.name}' does not exist" in msg
    status, _, _ = azure.server.request("GET", f"no-such-{azure.name}", {"restype": "container"})
    assert status == 404, "the container was created"
    with pytest.raises(TableNotFoundError, match=rf"{azure.table_uri()} is not a Paimon"):
        Table.open(azure.table_uri())
    assert azure.keys() == []


def test_unreachable_endpoint(azure, monkeypatch):
    dead = f"http://127.0.0.1:{free_port()}/{ACCOUNT}"   # nothing listens there
    monkeypatch.setenv("AZURE_STORAGE_ENDPOINT", dead)
    start = time.monotonic()
    for act in (lambda: Table.open(azure.table_uri()),
                lambda: Table.create(azure.table_uri(), SCHEMA)):
        with pytest.raises(ObjectStoreError) as e:
            act()
        msg = _assert_one_clear_error(e, dead, azure.table_uri())
        assert "cannot reach the endpoint" in msg
    assert time.monotonic() - start < 30
    assert azure.keys() == []
