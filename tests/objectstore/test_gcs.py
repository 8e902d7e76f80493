"""GCS (gs://) against a real GCS-protocol emulator, fake-gcs-server, started by the tests (see
gcs_server.py for what runs and the one request the adapter in front of it translates).
obstore is configured as a user points it at an emulator: a service-account JSON with
`gcs_base_url` and `disable_oauth`, named by GOOGLE_SERVICE_ACCOUNT or by our options. What a
user notices is checked in the bucket itself and by reading the rows back, with our reader and
with pypaimon (pyarrow's GCS client, JSON API, straight to the emulator)."""
import json
import logging
import os
import subprocess
import sys
import threading
import time

import pytest

from conftest import D1, D2, SCHEMA, make_rows, write
from paimon_commit import (CleanContext, ExpireConfig, ExpireSnapshots, OrphanFilesCleaner, Table,
                           TableNotFoundError)
from paimon_commit.objectstore import (AtomicCreateUnsupportedError, ObjectStoreError,
                                       ObjectStoreFileIO)
from tests.objectstore.gcs_server import XmlPutAdapter, free_port, service_account_file

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PRIVATE_KEY = "-----BEGIN PRIVATE KEY-----\nGCS-TEST-KEY-NEVER-SHOWN\n-----END PRIVATE KEY-----"


def _create(gcs, rel="db.db/t", **options):
    return Table.create(gcs.table_uri(rel), SCHEMA, partition_keys=["dt", "hr"],
                        options={"snapshot.num-retained.min": "100", **options})


def _ids(t, **kw):
    return sorted(t.read_arrow(**kw).column("id").to_pylist())


def _pp_ids(gcs, **kw):
    return sorted(gcs.pp_read(**kw).column("id").to_pylist())


def _user_service_account(tmp_path, base_url, name="sa.json"):
    """A service-account file as a user writes one for an emulator, with a private key that
    must never show anywhere (with disable_oauth nothing is signed with it)."""
    path = tmp_path / name
    path.write_text(json.dumps({"type": "service_account", "gcs_base_url": base_url,
                                "disable_oauth": True, "client_email": "tests@example.invalid",
                                "private_key_id": "k1", "private_key": PRIVATE_KEY}))
    return str(path)


# --- the conditional create ------------------------------------------------------------------

def test_conditional_create_is_refused_the_second_time_on_the_wire(gcs):
    import obstore
    from obstore.exceptions import AlreadyExistsError
    io = ObjectStoreFileIO.from_uri(gcs.table_uri())
    assert io.description == f"gcs store at {gcs.url}"
    obstore.put(io.store, "db.db/t/k", b"first", mode="create")
    with pytest.raises(AlreadyExistsError):
        obstore.put(io.store, "db.db/t/k", b"second", mode="create")
    assert gcs.get("db.db/t/k") == b"first"
    mark = gcs.adapter.mark()
    io.check_atomic_create()                         # the probe: GCS honours ifGenerationMatch=0
    probe = [(m, status, cond) for m, path, status, cond in gcs.adapter.requests_since(mark)
             if m == "PUT"]
    assert probe == [("PUT", 200, "0"), ("PUT", 412, "0")]
    assert gcs.keys() == ["db.db/t/k"], "probe object left behind"


def test_two_racing_creates_of_one_snapshot_name_exactly_one_wins(gcs):
    ios = [ObjectStoreFileIO.from_uri(gcs.table_uri()) for _ in range(2)]  # two clients
    root = ios[0].root
    mark = gcs.adapter.mark()
    for i in range(1, 11):
        path = f"{root}/snapshot/snapshot-{i}"
        barrier = threading.Barrier(2)
        won = [None, None]

        def create(w):
            barrier.wait()
            won[w] = ios[w].try_create_atomic(path, f'{{"writer": {w}, "id": {i}}}'.encode())

        threads = [threading.Thread(target=create, args=(w,)) for w in range(2)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        assert sorted(won) == [False, True], f"snapshot-{i}: {won}"
        winner = won.index(True)
        assert json.loads(gcs.get(f"db.db/t/snapshot/snapshot-{i}")) == {"writer": winner,
                                                                         "id": i}
    puts = [(status, cond) for m, path, status, cond in gcs.adapter.requests_since(mark)
            if m == "PUT"]
    assert sorted(puts) == [(200, "0")] * 10 + [(412, "0")] * 10


def test_a_store_that_ignores_the_condition_is_refused_unless_single_writer(gcs, tmp_path,
                                                                            monkeypatch):
    # The same emulator behind an adapter that drops the condition: a store ignoring it.
    careless = XmlPutAdapter(gcs.server, lambda method, path, headers: "drop-condition")
    try:
        monkeypatch.setenv("GOOGLE_SERVICE_ACCOUNT",
                           service_account_file(str(tmp_path / "careless.json"), careless.url))
        t = _create(gcs)
        with pytest.raises(AtomicCreateUnsupportedError) as e:
            write(t, make_rows([1]))
        msg = str(e.value)
        assert f"gcs store at {careless.url}" in msg and gcs.table_uri() in msg
        assert "commit.single-writer" in msg
        assert not [k for k in gcs.keys() if "/snapshot/" in k], "something was published"
        assert not [k for k in gcs.keys() if "probe" in k], "probe object left behind"
        with t.new_commit(options={"commit.single-writer": "true"}) as c:
            w = t.new_writer()
            w.write_arrow(make_rows([1, 2]))
            assert c.commit(w.prepare_commit()) == 1
    finally:
        careless.stop()
    monkeypatch.setenv("GOOGLE_SERVICE_ACCOUNT", gcs.service_account)
    assert _ids(Table.open(gcs.table_uri())) == [1, 2]


# --- operations --------------------------------------------------------------------------------

def test_commit_writes_no_markers_no_temp_files_and_reads_back(gcs):
    t = _create(gcs)
    assert isinstance(t.store.io, ObjectStoreFileIO)
    mark = gcs.adapter.mark()
    assert write(t, make_rows([1, 2])) == 1
    assert write(t, make_rows([3], dt=D2, hr=5)) == 2
    reqs = gcs.adapter.requests_since(mark)
    assert len([r for r in reqs if "atomic-create-probe" in r[1]]) == 3   # once per process
    publishes = [(status, cond) for m, path, status, cond in reqs
                 if m == "PUT" and "/snapshot/snapshot-" in path]
    assert publishes == [(200, "0"), (200, "0")]           # snapshot-N: create-if-absent
    keys = gcs.keys()
    assert not [k for k in keys if k.endswith("/")], "directory markers written"
    assert not [k for k in keys if k.rsplit("/", 1)[-1].startswith(".")], \
        "temp or probe objects left"
    assert "db.db/t/snapshot/snapshot-2" in keys and "db.db/t/schema/schema-0" in keys
    assert gcs.get("db.db/t/snapshot/LATEST") == b"2"
    assert _ids(Table.open(gcs.table_uri())) == [1, 2, 3]
    assert _ids(Table.open(gcs.table_uri(), options=gcs.options)) == [1, 2, 3]
    assert _pp_ids(gcs) == [1, 2, 3] and _pp_ids(gcs, snapshot_id=1) == [1, 2]


def test_overwrite_and_drop_partition(gcs):
    t = _create(gcs)
    write(t, make_rows([1, 2]))
    write(t, make_rows([3], dt=D2))
    w = t.new_writer()
    w.write_arrow(make_rows([10, 11]))
    with t.new_commit() as c:
        c.overwrite(w.prepare_commit())          # replaces dt=D1/hr=1 only
    assert _ids(t) == [3, 10, 11]
    with t.new_commit() as c:
        c.drop_partitions([{"dt": D2}])
    assert _ids(t) == [10, 11] and _pp_ids(gcs) == [10, 11]
    assert [s.commit_kind for s in t.snapshots()] == ["APPEND", "APPEND", "OVERWRITE",
                                                      "OVERWRITE"]


def test_expire_snapshots_deletes_the_objects_only_they_used(gcs):
    t = _create(gcs)
    for i in range(6):
        w = t.new_writer()
        w.write_arrow(make_rows([i]))
        with t.new_commit() as c:
            c.overwrite(w.prepare_commit())      # each snapshot replaces the last file
    assert len([k for k in gcs.keys() if k.endswith(".parquet")]) == 6
    r = ExpireSnapshots(Table.open(gcs.table_uri()).store,
                        ExpireConfig(retain_min=2, time_retained_ms=0)).expire()
    assert r.expired_ids == [1, 2, 3, 4]
    keys = gcs.keys()
    assert [k for k in keys if "/snapshot/snapshot-" in k] == [
        "db.db/t/snapshot/snapshot-5", "db.db/t/snapshot/snapshot-6"]
    assert len([k for k in keys if k.endswith(".parquet")]) == 2
    assert _ids(t) == [5] and _ids(t, snapshot_id=5) == [4]
    assert _pp_ids(gcs) == [5] and _pp_ids(gcs, snapshot_id=5) == [4]
    assert gcs.get("db.db/t/snapshot/EARLIEST") == b"5"


def test_tags_and_rollback(gcs):
    t = _create(gcs)
    for i in range(1, 5):
        write(t, make_rows([i]))
    t.create_tag("v2", 2)
    assert "db.db/t/tag/tag-v2" in gcs.keys()
    assert _pp_ids(gcs, tag="v2") == [1, 2]
    t.rollback_to(snapshot_id=3)
    assert t.latest_snapshot().id == 3 and _ids(t) == [1, 2, 3]
    assert "db.db/t/snapshot/snapshot-4" not in gcs.keys()
    assert gcs.get("db.db/t/snapshot/LATEST") == b"3"
    ExpireSnapshots(t.store, ExpireConfig(retain_min=1, time_retained_ms=0)).expire()
    assert _ids(t, tag="v2") == [1, 2] and _pp_ids(gcs, tag="v2") == [1, 2]
    t.delete_tag("v2")
    assert not [k for k in gcs.keys() if "/tag/" in k]
    assert _ids(t) == [1, 2, 3] and _pp_ids(gcs) == [1, 2, 3]


def test_orphan_cleanup_uses_the_stores_last_modified(gcs):
    t = _create(gcs)
    write(t, make_rows([1, 2]))
    write(t, make_rows([3], dt=D2))
    old = ["db.db/t/dt=2024-01-01/hr=1/bucket-0/data-orphan-old.parquet",
           "db.db/t/manifest/manifest-orphan-old"]
    for k in old:
        gcs.put(k)
    time.sleep(2.2)                              # the XML listing's times have 1 s resolution
    cutoff = int(time.time() * 1000) - 1000
    young = "db.db/t/dt=2024-01-02/hr=1/bucket-0/data-orphan-young.parquet"
    gcs.put(young)
    dry = OrphanFilesCleaner(CleanContext(gcs.table_uri(), older_than_ms=cutoff,
                                          dry_run=True)).clean()
    assert sorted(dry.deleted_paths) == sorted(k[len("db.db/t/"):] for k in old)
    assert all(k in gcs.keys() for k in old)
    r = OrphanFilesCleaner(CleanContext(gcs.table_uri(), older_than_ms=cutoff)).clean()
    assert r.deleted_files == 2
    keys = gcs.keys()
    assert not any(k in keys for k in old) and young in keys
    assert _ids(t) == [1, 2, 3] and _pp_ids(gcs) == [1, 2, 3]


# --- configuration, credentials, bad input ------------------------------------------------------

def test_option_names_configure_the_store_and_are_never_stored(gcs, tmp_path, monkeypatch,
                                                               caplog):
    monkeypatch.delenv("GOOGLE_SERVICE_ACCOUNT")
    caplog.set_level(logging.DEBUG)
    sa = _user_service_account(tmp_path, gcs.url)
    t = Table.create(gcs.table_uri(), SCHEMA, partition_keys=["dt", "hr"],
                     storage_options={"gcs.service-account-file": sa})
    assert write(t, make_rows([1])) == 1
    for opts in ({"fs.gs.auth.service.account.json.keyfile": sa},      # Paimon's / Hadoop's
                 {"gcs.service-account-key": open(sa).read()},          # the JSON itself
                 {"google_service_account": sa}):                       # obstore's own key
        again = Table.open(gcs.table_uri(), options=opts)
        assert again.store.io.description == f"gcs store at {gcs.url}"
        assert _ids(again) == [1]
        shown = [again.path, repr(again), repr(again.store.io)]
        assert not any(PRIVATE_KEY in s or "GCS-TEST-KEY" in s for s in shown)
    assert write(again, make_rows([2])) == 2
    assert _ids(again) == [1, 2]
    assert _ids(Table.open(f"gcs://{gcs.name}/db.db/t", options=gcs.options)) == [1, 2]
    for key in gcs.keys():
        if "/schema/" in key or "/snapshot/" in key:
            body = gcs.get(key).decode()
            assert sa not in body and "GCS-TEST-KEY" not in body and "gcs." not in body
    assert not any(k.startswith(("gcs.", "fs.gs.", "google_")) for k in again.options)
    assert "GCS-TEST-KEY" not in caplog.text


def test_missing_bucket_and_not_a_table(gcs):
    uri = "gs://no-such-bucket-x/db.db/t"
    with pytest.raises(ObjectStoreError) as e:
        Table.open(uri)
    msg = str(e.value)
    # fake-gcs-server answers a listing of a missing bucket with 500 "no bucket named ..."
    # (GCS itself: 404 NoSuchBucket, which becomes "bucket ... does not exist").
    assert f"gcs store at {gcs.url}" in msg and uri in msg and "no-such-bucket-x" in msg, msg
    with pytest.raises(ObjectStoreError):
        Table.create(uri, SCHEMA)
    with pytest.raises(TableNotFoundError, match=rf"gs://{gcs.name}/db.db/t is not a Paimon"):
        Table.open(gcs.table_uri())
    assert gcs.keys() == []


def test_unreachable_endpoint_is_one_clear_error_and_nothing_written(gcs, tmp_path, monkeypatch):
    port = free_port()  # nothing listens there
    monkeypatch.delenv("GOOGLE_SERVICE_ACCOUNT")
    sa = _user_service_account(tmp_path, f"http://127.0.0.1:{port}")
    start = time.monotonic()
    with pytest.raises(ObjectStoreError) as e:
        Table.open(gcs.table_uri(), options={"gcs.service-account-file": sa})
    msg = str(e.value)
    assert f"gcs store at http://127.0.0.1:{port}" in msg and gcs.table_uri() in msg, msg
    assert "cannot reach the endpoint" in msg and "GCS-TEST-KEY" not in msg
    assert time.monotonic() - start < 30
    with pytest.raises(ObjectStoreError):
        Table.create(gcs.table_uri(), SCHEMA, storage_options={"gcs.service-account-file": sa})
    assert gcs.keys() == []


def _cli(args, env):
    return subprocess.run([sys.executable, "-m", "paimon_commit", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)


def test_cli_on_the_store(gcs, tmp_path):
    t = _create(gcs)
    for i in range(4):
        write(t, make_rows([i], dt=D1))
    env = dict(os.environ)                        # GOOGLE_SERVICE_ACCOUNT names the emulator
    r = _cli(["snapshots", gcs.table_uri(), "--json"], env)
    assert r.returncode == 0, r.stderr
    assert [s["id"] for s in json.loads(r.stdout)["snapshots"]] == [1, 2, 3, 4]
    r = _cli(["expire-snapshots", gcs.table_uri(), "--retain-min", "2", "--time-retained",
              "0 ms", "--json"], env)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["expired_snapshots"] == 2
    assert [k for k in gcs.keys() if "/snapshot/snapshot-" in k] == [
        "db.db/t/snapshot/snapshot-3", "db.db/t/snapshot/snapshot-4"]
    r = _cli(["remove-orphan-files", gcs.table_uri(), "--dry-run", "--json"], env)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["deleted_files"] == 0
    # Our option names instead of the environment; the key nowhere in the output.
    bare = {k: v for k, v in env.items() if not k.startswith("GOOGLE_")}
    sa = _user_service_account(tmp_path, gcs.url)
    for option in (f"gcs.service-account-file={sa}",
                   f"gcs.service-account-key={open(sa).read()}"):
        r = _cli(["info", gcs.table_uri(), "--json", "--option", option], bare)
        assert r.returncode == 0, r.stderr
        assert json.loads(r.stdout)["latest"] == 4
        assert "GCS-TEST-KEY" not in r.stdout + r.stderr
    # Bad input: exit 2 for a path that is not a table, 1 for an unreachable store.
    r = _cli(["info", gcs.table_uri("db.db/none")], env)
    assert r.returncode == 2 and "is not a Paimon table" in r.stderr
    dead = _user_service_account(tmp_path, f"http://127.0.0.1:{free_port()}", "dead.json")
    r = _cli(["expire-snapshots", gcs.table_uri(), "--option",
              f"gcs.service-account-key={open(dead).read()}"], bare)
    assert r.returncode == 1 and "cannot reach the endpoint" in r.stderr, r.stderr
    assert "GCS-TEST-KEY" not in r.stdout + r.stderr
    assert [k for k in gcs.keys() if "/snapshot/snapshot-" in k] == [
        "db.db/t/snapshot/snapshot-3", "db.db/t/snapshot/snapshot-4"]


# --- several processes -------------------------------------------------------------------------

def test_writers_expirer_and_cleaner_lose_nothing(gcs, tmp_path):
    """3 writer processes x 6 commits, one expiring snapshots and one cleaning orphans, all on
    the emulator: the same run and checks as the S3 concurrency test."""
    from tests.objectstore.test_s3_concurrency import _run_writers
    mark = gcs.adapter.mark()
    _run_writers(gcs, tmp_path, writers=3, commits=6)
    publishes = [(status, cond) for m, path, status, cond in gcs.adapter.requests_since(mark)
                 if m == "PUT" and "/snapshot/snapshot-" in path]
    # Every publish was a create-if-absent; 18 won, every other one was refused (a lost race,
    # retried under the next id): typically 5-10 of them in this run.
    assert {cond for _, cond in publishes} == {"0"}
    assert sorted(publishes)[:18] == [(200, "0")] * 18
    assert all(status == 412 for status, _ in sorted(publishes)[18:])
    print(f"{len(publishes) - 18} lost races refused by the emulator")
