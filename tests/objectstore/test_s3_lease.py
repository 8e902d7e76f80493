"""The maintenance lease on an S3-protocol server: taken with a conditional PUT, so a second
holder waits and fails naming the first, and nothing is deleted meanwhile."""
import threading

import pytest
from conftest import SCHEMA, make_rows, write

from paimon_commit import Table
from paimon_commit.errors import LeaseHeldError
from paimon_commit.lease import lease_settings, maintenance_lease

EAGER = {"snapshot.num-retained.min": "1", "write-only": "true"}


def test_the_lease_excludes_a_second_expiration_on_s3(s3):
    t = Table.create(s3.table_uri("db.db/t"), SCHEMA, ["dt", "hr"], EAGER)
    for i in range(1, 4):
        write(t, make_rows([i]))
    taken, done = threading.Event(), threading.Event()

    def hold():
        with maintenance_lease(Table.open(s3.table_uri("db.db/t")).store, "hold"):
            taken.set()
            done.wait(60)
    holder = threading.Thread(target=hold, daemon=True)
    holder.start()
    assert taken.wait(60)
    before = s3.keys()
    try:
        with lease_settings(wait_s=0.3), pytest.raises(LeaseHeldError,
                                                       match=r"is being maintained by .* \("
                                                             r"hold since "):
            t.expire_snapshots(retain_max=1, retain_min=1)
        assert s3.keys() == before                        # nothing deleted
    finally:
        done.set()
        holder.join(60)
    assert t.expire_snapshots(retain_max=1, retain_min=1).expired_snapshots == 2
    assert any(k.startswith("db.db/t/.maintenance/lease-") for k in s3.keys())


def test_one_table_reached_as_s3a_and_s3_has_one_lease(s3):
    # The lease names its table by the commit record's key (one per store, bucket and
    # prefix, s3/s3a/s3n alike). Keyed by the spelling, a live record written through s3a://
    # was "another table's" to a run through s3://, which was told to `lease --break` it.
    uri = s3.table_uri("db.db/t")
    assert uri.startswith("s3://")
    t = Table.create(uri, SCHEMA, ["dt", "hr"], {"snapshot.num-retained.min": "1"})
    for i in range(1, 4):
        write(t, make_rows([i]))
    taken, done = threading.Event(), threading.Event()

    def hold():
        with maintenance_lease(Table.open("s3a://" + uri[len("s3://"):]).store, "held-via-s3a"):
            taken.set()
            done.wait(60)
    holder = threading.Thread(target=hold, daemon=True)
    holder.start()
    assert taken.wait(60)
    try:
        before = s3.keys()
        with lease_settings(wait_s=0.3), pytest.raises(LeaseHeldError,
                                                       match=r"is being maintained by .* \("
                                                             r"held-via-s3a since "):
            t.expire_snapshots(retain_max=1, retain_min=1)
        assert s3.keys() == before                        # nothing deleted
        # A writer through s3:// skips its post-commit maintenance: the holder does it.
        with t.new_commit(options={"snapshot.num-retained.max": "1"}) as c:
            write(t, make_rows([4]), commit=c, identifier=1)
            assert c.last_maintenance.lease_skipped == (
                "the maintenance lease is held by another process; skipped this turn")
        assert [s.id for s in t.snapshots()] == [1, 2, 3, 4]
    finally:
        done.set()
        holder.join(60)
    assert t.expire_snapshots(retain_max=1, retain_min=1).expired_snapshots == 3


def test_a_live_record_of_an_earlier_version_spelled_s3a_is_honoured_through_s3(s3):
    # Records written before the lease used the commit record's key name the table by its
    # URI as spelled: still this table's, whichever spelling of its scheme family.
    import json
    import time
    uri = s3.table_uri("db.db/t")
    t = Table.create(uri, SCHEMA, ["dt", "hr"], {"snapshot.num-retained.min": "1"})
    for i in range(1, 3):
        write(t, make_rows([i]))
    now = int(time.time() * 1000)
    keys = sorted(k for k in s3.keys() if k.startswith("db.db/t/.maintenance/lease-"))
    n = max(int(k.rsplit("-", 1)[1]) for k in keys) + 1
    record = {"table": "s3a://" + uri[len("s3://"):], "host": "elsewhere", "pid": 1,
              "token": "t", "operation": "expire-snapshots", "startMillis": now,
              "expiryMillis": now + 60_000, "released": False}
    s3.put(f"db.db/t/.maintenance/lease-{n}", json.dumps(record).encode())
    with lease_settings(wait_s=0.3), pytest.raises(
            LeaseHeldError, match=r"is being maintained by elsewhere pid 1 \(expire-snapshots"):
        t.expire_snapshots(retain_max=1, retain_min=1)


def test_one_table_reached_through_two_spellings_of_its_endpoint_has_one_lease(s3):
    # Audit issue25c c4: the lease named its table by the endpoint as given. A holder whose
    # s3.endpoint ends in `/` wrote a live record that a run through AWS_ENDPOINT_URL (no `/`)
    # called another table's, with the advice to `lease --break` it.
    uri = s3.table_uri("db.db/t")
    t = Table.create(uri, SCHEMA, ["dt", "hr"], {"snapshot.num-retained.min": "1"})
    for i in range(1, 4):
        write(t, make_rows([i]))
    taken, done = threading.Event(), threading.Event()

    def hold():
        other = Table.open(uri, storage_options={"s3.endpoint": s3.server.url + "/"})
        with maintenance_lease(other.store, "held-via-slash"):
            taken.set()
            done.wait(60)
    holder = threading.Thread(target=hold, daemon=True)
    holder.start()
    assert taken.wait(60)
    try:
        before = s3.keys()
        with lease_settings(wait_s=0.3), pytest.raises(LeaseHeldError,
                                                       match=r"is being maintained by .* \("
                                                             r"held-via-slash since "):
            t.expire_snapshots(retain_max=1, retain_min=1)
        assert s3.keys() == before                        # nothing deleted
    finally:
        done.set()
        holder.join(60)
    assert t.expire_snapshots(retain_max=1, retain_min=1).expired_snapshots == 2


def test_a_live_record_of_an_earlier_version_naming_another_endpoint_spelling_is_honoured(s3):
    # A record written before the endpoint was spelled one way names the endpoint as that
    # holder was given it (here with a trailing `/` and in upper case): still this table's.
    import json
    import time
    uri = s3.table_uri("db.db/t")
    t = Table.create(uri, SCHEMA, ["dt", "hr"], {"snapshot.num-retained.min": "1"})
    for i in range(1, 3):
        write(t, make_rows([i]))
    now = int(time.time() * 1000)
    keys = sorted(k for k in s3.keys() if k.startswith("db.db/t/.maintenance/lease-"))
    n = max(int(k.rsplit("-", 1)[1]) for k in keys) + 1
    record = {"table": f"s3://{s3.server.url.upper()}/|{s3.name}|{s3.name}/db.db/t",
              "host": "elsewhere", "pid": 1, "token": "t", "operation": "expire-snapshots",
              "startMillis": now, "expiryMillis": now + 60_000, "released": False}
    s3.put(f"db.db/t/.maintenance/lease-{n}", json.dumps(record).encode())
    with lease_settings(wait_s=0.3), pytest.raises(
            LeaseHeldError, match=r"is being maintained by elsewhere pid 1 \(expire-snapshots"):
        t.expire_snapshots(retain_max=1, retain_min=1)


def test_a_waiting_command_is_not_starved_on_s3(s3):
    # The object-store soak's failure: a looping expiration re-took the lease right after
    # each release while an orphan cleanup waited in vain. The waiter's record is in line
    # on the store (its LastModified is its heartbeat).
    from tests.operations.test_lease_line import Looper
    uri = s3.table_uri("db.db/t")
    t = Table.create(uri, SCHEMA, ["dt", "hr"], EAGER)
    for i in range(1, 6):
        write(t, make_rows([i]))
    looper = Looper(Table.open(uri))
    try:
        with lease_settings(wait_s=20):
            r = t.expire_snapshots(retain_max=1, retain_min=1)
    finally:
        looper.end()
    assert r.complete and r.expired_snapshots == 4
    assert looper.turns >= 2
    assert not any(k.startswith("db.db/t/.maintenance/wait-") for k in s3.keys())


def test_a_table_committed_often_keeps_its_lease_records_few_on_every_store(store):
    # Post-commit maintenance writes two lease records per commit and every take lists them:
    # kept 2 h whatever their number, a stream's every commit listed more of them (on S3 a
    # LIST page per 1,000). Past the newest KEEP_RECENT, young ones are deleted too, lowest
    # first, through each store's delete.
    from paimon_commit.lease import KEEP_RECENT, PRUNE_AT
    t = Table.create(store.table_uri("db.db/t"), SCHEMA, ["dt", "hr"], {})
    commits = (KEEP_RECENT + PRUNE_AT) // 2 + 5
    with t.new_commit() as c:
        for i in range(commits):
            write(t, make_rows([i]), commit=c, identifier=i)
    prefix = "db.db/t/.maintenance/lease-"
    numbers = sorted(int(k[len(prefix):]) for k in store.keys() if k.startswith(prefix))
    assert numbers == list(range(numbers[0], 2 * commits + 1))   # the lowest went first
    assert len(numbers) <= KEEP_RECENT + PRUNE_AT + 1, numbers
    assert sorted(r["id"] for r in t.read_arrow().to_pylist()) == list(range(commits))
