"""Every operation, the conditional create, bad input and the CLI on each object store the tests
start (the `store` fixture: S3 on moto, Azure Blob on Azurite, GCS on fake-gcs-server). What a
user notices is checked in the bucket itself (through an independent client: keys present or
gone, their bytes, their last-modified times) and by reading the rows back, with our reader and
with pypaimon. Where the stores answer differently on the wire, the expectation is spelled out
per store below. What only one store has is in test_s3_*.py, test_azure.py, test_gcs.py."""
import datetime
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
from paimon_commit import (CleanContext, ExpireConfig, ExpireSnapshots, OrphanFilesCleaner, Table,
                           TableNotFoundError, UnsafePathError)
from paimon_commit.errors import AtomicCreateUnsupportedError, ObjectStoreError
from paimon_commit.io.object_store import ObjectStoreFileIO
from paimon_commit.tags import ConsumerManager
from tests.objectstore.servers import free_port
from tests.objectstore.stores import CREATED, REFUSED, apply_env, assert_one_clear_error

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# The one request removing the probe object: (method, status, whether its URL names the probe).
# S3 and Azure delete through a batch POST, which names the objects in its body.
PROBE_DELETE = {"s3": [("POST", 200, False)], "azure": [("POST", 202, False)],
                "gcs": [("DELETE", 200, True)]}
# A bucket that does not exist: GCS says 404 NoSuchBucket (-> "bucket ... does not exist"), but
# fake-gcs-server answers the listing with 500 "no bucket named ...".
MISSING = {"s3": "bucket '{}' does not exist", "azure": "container '{}' does not exist",
           "gcs": "no bucket named {}"}


def _create(store, rel="db.db/t", **options):
    return Table.create(store.table_uri(rel), SCHEMA, partition_keys=["dt", "hr"],
                        options={"snapshot.num-retained.min": "100", **options})


def _ids(t, **kw):
    return sorted(t.read_arrow(**kw).column("id").to_pylist())


def _pp_ids(store, **kw):
    return sorted(store.pp_read(**kw).column("id").to_pylist())


def _parquet(keys):
    return [k for k in keys if k.endswith(".parquet")]


# --- the conditional create ------------------------------------------------------------------

def test_conditional_create_is_refused_the_second_time_on_the_wire(store):
    import obstore
    from obstore.exceptions import AlreadyExistsError
    io = ObjectStoreFileIO.from_uri(store.table_uri())
    assert io.description == f"{store.kind} store at {store.url}"
    obstore.put(io.store, "db.db/t/k", b"first", mode="create")
    with pytest.raises(AlreadyExistsError):
        obstore.put(io.store, "db.db/t/k", b"second", mode="create")
    assert store.get("db.db/t/k") == b"first"
    mark = store.mark()
    io.check_atomic_create()          # raises AtomicCreateUnsupportedError if it is ignored
    probe = [store.wire(r) for r in store.requests_since(mark) if r[0] == "PUT"]
    assert probe == [CREATED[store.kind], REFUSED[store.kind]], probe
    assert store.keys() == ["db.db/t/k"], "probe object left behind"


def test_two_racing_creates_of_one_snapshot_name_exactly_one_wins(store):
    """Two writers creating one snapshot name at the same moment, each through its own client:
    exactly one wins, and the object holds the winner's bytes."""
    ios = [ObjectStoreFileIO.from_uri(store.table_uri()) for _ in range(2)]
    root = ios[0].root
    mark = store.mark()
    rounds = 12
    for i in range(1, rounds + 1):
        path = f"{root}/snapshot/snapshot-{i}"
        barrier, won = threading.Barrier(2), [None, None]
        payloads = [json.dumps({"writer": w, "id": i, "nonce": str(uuid.uuid4())}).encode()
                    for w in range(2)]

        def create(w):
            barrier.wait()
            won[w] = ios[w].try_create_atomic(path, payloads[w])

        threads = [threading.Thread(target=create, args=(w,)) for w in range(2)]
        for th in threads:
            th.start()
        for th in threads:
            th.join(30)
        assert sorted(won) == [False, True], f"snapshot-{i}: {won}"
        assert store.get(f"db.db/t/snapshot/snapshot-{i}") == payloads[won.index(True)]
    puts = [store.wire(r) for r in store.requests_since(mark) if r[0] == "PUT"]
    assert sorted(puts) == sorted([CREATED[store.kind]] * rounds + [REFUSED[store.kind]] * rounds)


# Azurite cannot be put behind such a proxy: Shared Key signs If-None-Match, so a request
# without it is refused as forged.
@pytest.mark.parametrize("store", ["s3", "gcs"], indirect=True)
def test_a_store_that_ignores_the_condition_is_refused_unless_single_writer(store, monkeypatch):
    with store.ignoring_the_condition() as (careless, env):
        for k, v in env.items():
            monkeypatch.setenv(k, v)
        t = _create(store)
        with pytest.raises(AtomicCreateUnsupportedError) as e:
            write(t, make_rows([1]))
        msg = str(e.value)
        assert f"{store.kind} store at {careless}" in msg and store.table_uri() in msg
        assert "commit.single-writer" in msg and "ignores If-None-Match" in msg
        assert not [k for k in store.keys() if "/snapshot/" in k], "something was published"
        assert not [k for k in store.keys() if "probe" in k], "probe object left behind"
        # A declared single writer may commit: one process, no race to lose.
        with t.new_commit(options={"commit.single-writer": "true"}) as c:
            w = t.new_writer()
            w.write_arrow(make_rows([1, 2]))
            assert c.commit(w.prepare_commit()) == 1
        single = Table.create(store.table_uri("db.db/single"), SCHEMA,
                              options={"commit.single-writer": "true"})
        assert write(single, make_rows([3])) == 1
    for k, v in store.env.items():
        monkeypatch.setenv(k, v)
    assert _ids(Table.open(store.table_uri())) == [1, 2]


def test_the_probe_runs_once_per_table_root_and_process(store):
    t = _create(store)
    assert isinstance(t.store.io, ObjectStoreFileIO)
    assert t.store.io.description == f"{store.kind} store at {store.url}"
    mark = store.mark()
    for i in range(3):
        write(t, make_rows([i]))
    write(Table.open(store.table_uri()), make_rows([9]))
    reqs = store.requests_since(mark)
    probes = [store.wire(r) for r in reqs if r[0] == "PUT" and "atomic-create-probe" in r[1]]
    assert probes == [CREATED[store.kind], REFUSED[store.kind]], reqs
    # ... and one request deleting the probe object, the only delete of these commits.
    assert [(r[0], r[2], "atomic-create-probe" in r[1]) for r in reqs
            if r[0] in ("DELETE", "POST")] == PROBE_DELETE[store.kind], reqs
    # Every snapshot-N was published with a create-if-absent.
    publishes = [store.wire(r) for r in reqs if r[0] == "PUT" and "/snapshot/snapshot-" in r[1]]
    assert publishes == [CREATED[store.kind]] * 4
    assert not [k for k in store.keys() if "probe" in k]


# --- operations ------------------------------------------------------------------------------

def test_commit_writes_no_markers_no_temp_files_and_reads_back(store):
    t = _create(store)
    assert isinstance(t.store.io, ObjectStoreFileIO)
    assert write(t, make_rows([1, 2])) == 1
    assert write(t, make_rows([3], dt=D2, hr=5)) == 2
    keys = store.keys()
    assert not [k for k in keys if k.endswith("/")], "directory markers written"
    assert not [k for k in keys if k.rsplit("/", 1)[-1].startswith(".")], \
        "temp or probe objects left"
    assert "db.db/t/snapshot/snapshot-2" in keys and "db.db/t/schema/schema-0" in keys
    assert len(_parquet(keys)) == 2
    assert store.get("db.db/t/snapshot/LATEST") == b"2"
    assert _ids(Table.open(store.table_uri())) == [1, 2, 3]
    assert _ids(Table.open(store.table_uri(), storage_options=store.options)) == [1, 2, 3]
    assert _pp_ids(store) == [1, 2, 3] and _pp_ids(store, snapshot_id=1) == [1, 2]


def test_overwrite_and_drop_partition(store):
    t = _create(store)
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
    assert len(_parquet(store.keys())) == 3
    assert _pp_ids(store) == [10, 11] and _pp_ids(store, snapshot_id=2) == [1, 2, 3]


def test_expire_snapshots_deletes_the_objects_only_they_used(store):
    t = _create(store)
    for i in range(6):
        w = t.new_writer()
        w.write_arrow(make_rows([i]))
        with t.new_commit() as c:
            c.overwrite(w.prepare_commit())      # each snapshot replaces the last file
    assert len(_parquet(store.keys())) == 6
    r = ExpireSnapshots(Table.open(store.table_uri()).store,
                        ExpireConfig(retain_min=2, time_retained_ms=0)).expire()
    assert r.expired_ids == [1, 2, 3, 4]
    keys = store.keys()
    assert [k for k in keys if "/snapshot/snapshot-" in k] == [
        "db.db/t/snapshot/snapshot-5", "db.db/t/snapshot/snapshot-6"]
    assert len(_parquet(keys)) == 2          # the files of snapshots 5 and 6
    assert not set(referenced_files(t)) - {f"{store.name}/{k}" for k in keys}
    assert store.get("db.db/t/snapshot/EARLIEST") == b"5"
    assert _ids(t) == [5] and _ids(t, snapshot_id=5) == [4]
    assert _pp_ids(store) == [5] and _pp_ids(store, snapshot_id=5) == [4]


def test_post_commit_maintenance_expires_snapshots_partitions_and_consumers(store):
    t = _create(store)
    old_day = "2000-01-01"
    write(t, make_rows([1], dt=datetime.date(2000, 1, 1)))
    cm = ConsumerManager(t.store.io, t.store.root)
    cm.write("reader-1", 1)
    time.sleep(1.1)   # the stores' last-modified times have second resolution
    opts = {"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "2",
            "snapshot.time-retained": "0 ms", "partition.expiration-time": "1 d",
            "partition.expiration-check-interval": "0 ms", "consumer.expiration-time": "1 s",
            "partition.timestamp-formatter": "yyyy-MM-dd"}
    for i in range(2, 6):
        write(t, make_rows([i], dt=datetime.date.today()), commit=t.new_commit(options=opts))
    assert t.consumers() == []
    assert not [k for k in store.keys() if "/consumer/" in k]
    assert not [k for k in store.keys() if f"dt={old_day}" in k], "expired partition's files"
    assert _ids(t) == [2, 3, 4, 5]
    assert len(t.snapshots()) <= 2
    assert _pp_ids(store) == [2, 3, 4, 5]


def test_tags_and_rollback(store):
    t = _create(store)
    for i in range(1, 5):
        write(t, make_rows([i]))
    t.create_tag("v2", 2)
    assert "db.db/t/tag/tag-v2" in store.keys()
    assert _pp_ids(store, tag="v2") == [1, 2]
    r = t.rollback_to(snapshot_id=3)
    assert r is not None
    assert t.latest_snapshot().id == 3 and _ids(t) == [1, 2, 3]
    assert "db.db/t/snapshot/snapshot-4" not in store.keys()
    assert store.get("db.db/t/snapshot/LATEST") == b"3"
    ExpireSnapshots(t.store, ExpireConfig(retain_min=1, time_retained_ms=0)).expire()
    assert [k for k in store.keys() if "/snapshot/snapshot-" in k] == [
        "db.db/t/snapshot/snapshot-3"]
    assert _ids(t, tag="v2") == [1, 2]            # the tag keeps snapshot 2's files
    assert _pp_ids(store, tag="v2") == [1, 2] and _pp_ids(store) == [1, 2, 3]
    t.delete_tag("v2")
    assert not [k for k in store.keys() if "/tag/" in k]
    assert _ids(t) == [1, 2, 3] and _pp_ids(store) == [1, 2, 3]


def test_orphan_cleanup_uses_the_stores_last_modified(store):
    t = _create(store)
    write(t, make_rows([1, 2]))
    write(t, make_rows([3], dt=D2))
    old = ["db.db/t/dt=2024-01-01/hr=1/bucket-0/data-orphan-old.parquet",
           "db.db/t/manifest/manifest-orphan-old"]
    for k in old:
        store.put(k)
    time.sleep(2.2)    # last-modified times (S3, Azure, GCS's XML listing) have 1 s resolution
    cutoff = int(time.time() * 1000) - 1000
    young = "db.db/t/dt=2024-01-02/hr=1/bucket-0/data-orphan-young.parquet"
    store.put(young)
    modified = store.last_modified("db.db/t/")
    assert all(modified[k].timestamp() * 1000 < cutoff for k in old)
    assert modified[young].timestamp() * 1000 > cutoff
    dry = OrphanFilesCleaner(CleanContext(store.table_uri(), older_than_ms=cutoff,
                                          dry_run=True, allow_recent_cutoff=True)).clean()
    assert sorted(dry.deleted_paths) == sorted(k[len("db.db/t/"):] for k in old)
    assert all(k in store.keys() for k in old)
    r = OrphanFilesCleaner(CleanContext(store.table_uri(), older_than_ms=cutoff,
                                        allow_recent_cutoff=True)).clean()
    assert r.deleted_files == 2
    keys = store.keys()
    assert not any(k in keys for k in old) and young in keys
    assert _ids(t) == [1, 2, 3] and _pp_ids(store) == [1, 2, 3]


def test_a_second_table_in_the_bucket_is_out_of_reach(store):
    t = _create(store)
    write(t, make_rows([1]))
    store.put("db.db/t2/snapshot/snapshot-1", b"{}")
    store.put("db.db/t-sibling.parquet")
    io, b = t.store.io, store.name
    for bad in (f"{b}/db.db/t2/snapshot/snapshot-1", f"{b}/db.db/t-sibling.parquet",
                f"{b}/db.db/t/../t2/snapshot/snapshot-1", f"{b}/db.db/t",
                f"{b}/db.db/t//x", "other-bucket/db.db/t/x"):
        with pytest.raises(UnsafePathError):
            io.delete_files([f"{b}/db.db/t/manifest/x", bad])
    assert "db.db/t2/snapshot/snapshot-1" in store.keys()
    assert _ids(t) == [1]


def test_exists_sees_files_and_directories(store):
    t = _create(store)
    write(t, make_rows([1]))
    io, root = t.store.io, f"{store.name}/db.db/t"
    assert io.exists(f"{root}/snapshot/snapshot-1") and not io.exists(f"{root}/snapshot/snapshot-2")
    partition_dir = t.live_files()[0].path.split("/hr=")[0]     # .../dt=<day number>
    assert io.exists(f"{root}/snapshot") and io.exists(partition_dir)
    assert not io.exists(f"{root}/changelog") and not io.exists(f"{root}/tag/tag-x")
    assert io.exists(root) and not io.exists(f"{store.name}/db.db/nothing")
    assert store.keys("db.db/t/snapshot/") == ["db.db/t/snapshot/LATEST",
                                               "db.db/t/snapshot/snapshot-1"]


# --- bad input -------------------------------------------------------------------------------

def test_missing_bucket_and_not_a_table(store):
    missing = f"no-such-{store.name}"
    uri = f"{store.scheme}://{missing}/db.db/t"
    for act in (lambda: Table.open(uri), lambda: Table.create(uri, SCHEMA)):
        with pytest.raises(ObjectStoreError) as e:
            act()
        msg = assert_one_clear_error(e, store, store.url, uri)
        assert MISSING[store.kind].format(missing) in msg, msg
    assert not store.bucket_exists(missing), "the bucket was created"
    with pytest.raises(TableNotFoundError, match=rf"{store.table_uri()} is not a Paimon"):
        Table.open(store.table_uri())
    assert store.keys() == []


def test_unreachable_endpoint_is_one_clear_error_and_nothing_written(store, monkeypatch):
    where, env, options = store.unreachable(free_port())   # nothing listens there
    for k, v in env.items():
        if v is None:
            monkeypatch.delenv(k)
        else:
            monkeypatch.setenv(k, v)
    start = time.monotonic()
    for act in (lambda: Table.open(store.table_uri(), storage_options=options),
                lambda: Table.create(store.table_uri(), SCHEMA, storage_options=options)):
        with pytest.raises(ObjectStoreError) as e:
            act()
        msg = assert_one_clear_error(e, store, where, store.table_uri())
        assert "cannot reach the endpoint" in msg
    assert time.monotonic() - start < 30
    assert store.keys() == []


# --- the CLI ---------------------------------------------------------------------------------

def _cli(args, env):
    return subprocess.run([sys.executable, "-m", "paimon_commit", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)


def _option_args(options):
    return [f"--option={k}={v}" for k, v in options.items()]


def test_cli_on_the_store_never_shows_credentials(store):
    t = _create(store)
    for i in range(4):
        write(t, make_rows([i]))
    uri = store.table_uri()
    env = dict(os.environ)                 # the store's usual environment variables
    bare = {k: v for k, v in env.items() if not k.startswith(store.env_prefixes)}
    opts = _option_args(store.option_sets()[0])
    outputs = []

    def run(args, env, code=0):
        r = _cli(args, env)
        outputs.append(r.stdout + r.stderr)
        assert r.returncode == code, r.stderr
        return r

    r = run(["snapshots", uri, "--json"], env)
    assert [s["id"] for s in json.loads(r.stdout)["snapshots"]] == [1, 2, 3, 4]
    # Paimon's option names instead of the environment, for writes too.
    r = run(["expire-snapshots", uri, "--retain-min", "2", "--time-retained", "0 ms", "--json",
             *opts], bare)
    assert json.loads(r.stdout)["expired_snapshots"] == 2
    assert [k for k in store.keys() if "/snapshot/snapshot-" in k] == [
        "db.db/t/snapshot/snapshot-3", "db.db/t/snapshot/snapshot-4"]
    r = run(["remove-orphan-files", uri, "--dry-run", "--json", *opts], bare)
    assert json.loads(r.stdout)["deleted_files"] == 0
    r = run(["info", uri, "--json"], env)
    assert json.loads(r.stdout)["latest"] == 4
    for options in store.option_sets():
        r = run(["info", uri, "--json", *_option_args(options)], bare)
        assert json.loads(r.stdout)["latest"] == 4
        run(["-v", "info", uri, *_option_args(options)], bare)   # text output and INFO logs
    # Bad input: exit 2 for a path that is not a table, 1 for an unreachable store.
    r = run(["info", store.table_uri("db.db/none")], env, code=2)
    assert "is not a Paimon table" in r.stderr
    _, dead_env, dead_options = store.unreachable(free_port())
    r = run(["expire-snapshots", uri, *_option_args(dead_options)], apply_env(env, dead_env),
            code=1)
    assert "cannot reach the endpoint" in r.stderr, r.stderr
    for text in outputs:
        assert not [s for s in store.secrets if s in text], text
    assert [k for k in store.keys() if "/snapshot/snapshot-" in k] == [
        "db.db/t/snapshot/snapshot-3", "db.db/t/snapshot/snapshot-4"]
