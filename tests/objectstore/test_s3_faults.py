"""Faults on the store: one request of a commit, an expiration or an orphan cleanup fails
(HTTP 500, HTTP 503, or a timeout after the server applied it: the reply is dropped), at
every position, with obstore's own retries off so that our code sees it. Nothing is lost,
nothing is duplicated, and the next run finishes the job. `make test` rotates the kind of
fault over the positions; `make soak` (PAIMON_COMMIT_FULL_FAULTS=1) runs every kind at every
position."""
import os
import threading
import time

import pytest

from conftest import SCHEMA, make_rows
from invariants import referenced_files
from paimon_commit import (CleanContext, ExpireConfig, ExpireSnapshots, OrphanFilesCleaner,
                           PaimonCommitError, Table)
from tests.objectstore.moto_server import ACCESS_KEY, SECRET_KEY, Proxy

FULL = os.environ.get("PAIMON_COMMIT_FULL_FAULTS") == "1"
KINDS = ("500", "503", "drop")


class FaultAt:
    """Fails the n-th request after arm(); counts every request."""

    def __init__(self):
        self.lock = threading.Lock()
        self.target = None
        self.kind = None
        self.seen = 0
        self.fired = False

    def arm(self, position, kind):
        with self.lock:
            self.target, self.kind, self.seen, self.fired = position, kind, 0, False

    def disarm(self):
        with self.lock:
            self.target = None

    def __call__(self, method, path, headers):
        with self.lock:
            if self.target is None:
                return None
            self.seen += 1
            if self.seen != self.target:
                return None
            self.fired = True
            return self.kind


@pytest.fixture
def faulty(s3):
    fault = FaultAt()
    proxy = Proxy(s3.server.port, fault)
    yield s3, fault, proxy
    proxy.stop()


def _opts(url):
    return {"s3.endpoint": url, "s3.access-key": ACCESS_KEY, "s3.secret-key": SECRET_KEY,
            "s3.region": "us-east-1", "object-store.max-retries": "0"}


def _positions(n, stride=1):
    """(position, kind) pairs: every kind at every position in full mode; else every
    `stride`-th position (always the last), the kind rotating."""
    if FULL:
        return [(p, k) for p in range(1, n + 1) for k in KINDS]
    picked = sorted(set(range(1, n + 1, stride)) | {n})
    return [(p, KINDS[i % 3]) for i, p in enumerate(picked)]


def _commit(t, ids):
    w = t.new_writer()
    w.write_arrow(make_rows(ids))
    with t.new_commit() as c:
        return c.commit(w.prepare_commit())


def _check_intact(s3, uri):
    """Everything every snapshot references is in the bucket; pypaimon reads them all."""
    t = Table.open(uri)
    keys = {f"{s3.name}/{k}" for k in s3.keys()}
    missing = referenced_files(t) - keys
    assert not missing, f"referenced objects missing: {sorted(missing)[:3]}"
    rel = uri[len(s3.table_uri("")):]
    for s in t.snapshots():
        assert s3.pp_read(rel, snapshot_id=s.id).num_rows == s.total_record_count
    return t


def _count_requests(fault, fn):
    fault.arm(10 ** 9, None)
    fn()
    n = fault.seen
    fault.disarm()
    return n


def test_a_failed_request_anywhere_in_a_commit_loses_nothing(faulty):
    s3, fault, proxy = faulty
    opts = _opts(proxy.url)
    probe_uri = s3.table_uri("db.db/count")
    Table.create(probe_uri, SCHEMA, storage_options=opts)
    n = _count_requests(fault, lambda: _commit(Table.open(probe_uri, storage_options=opts), [1]))
    assert 8 <= n <= 40
    for i, (pos, kind) in enumerate(_positions(n, stride=3)):
        uri = s3.table_uri(f"db.db/c{i}")          # a fresh root: the probe is in the sequence
        t = Table.create(uri, SCHEMA, storage_options=opts)
        _commit(t, [1])
        fault.arm(pos, kind)
        try:
            _commit(Table.open(uri, storage_options=opts), [2])
            ok = True
        except (PaimonCommitError, OSError):
            ok = False
        fault.disarm()
        assert fault.fired
        _commit(Table.open(uri, storage_options=opts), [3])        # the next run goes on
        t = _check_intact(s3, uri)
        ids = sorted(t.read_arrow().column("id").to_pylist())
        assert ids in ([1, 2, 3], [1, 3]), (pos, kind, ids)
        if ok:
            assert ids == [1, 2, 3], f"a commit that returned was lost ({pos}, {kind})"
        assert not [k for k in s3.keys(f"db.db/c{i}/") if "probe" in k]


def _history(uri, opts, n=5):
    t = Table.create(uri, SCHEMA, partition_keys=["dt", "hr"], storage_options=opts)
    for i in range(n):
        w = t.new_writer()
        w.write_arrow(make_rows([i]))
        with t.new_commit() as c:
            c.overwrite(w.prepare_commit())   # each replaces the previous file
    return t


def test_a_failed_request_anywhere_in_an_expiration_is_finished_by_the_next_run(faulty):
    s3, fault, proxy = faulty
    opts = _opts(proxy.url)
    cfg = ExpireConfig(retain_min=2, time_retained_ms=0)
    _history(s3.table_uri("db.db/count"), opts)
    n = _count_requests(fault, lambda: ExpireSnapshots(
        Table.open(s3.table_uri("db.db/count"), storage_options=opts).store, cfg).expire())
    assert n > 5
    for i, (pos, kind) in enumerate(_positions(n, stride=8)):
        rel = f"db.db/e{i}/"
        uri = s3.table_uri(rel.rstrip("/"))
        _history(uri, opts)
        fault.arm(pos, kind)
        try:
            ExpireSnapshots(Table.open(uri, storage_options=opts).store, cfg).expire()
        except (PaimonCommitError, OSError):
            pass
        fault.disarm()
        ExpireSnapshots(Table.open(uri, storage_options=opts).store, cfg).expire()   # finishes
        t = _check_intact(s3, uri)
        assert [s.id for s in t.snapshots()] == [4, 5], (pos, kind)
        data = [k for k in s3.keys(rel) if k.endswith(".parquet")]
        assert len(data) == 2, (pos, kind, data)     # the files of snapshots 4 and 5 only
        assert sorted(t.read_arrow().column("id").to_pylist()) == [4]


def test_a_failed_request_anywhere_in_an_orphan_cleanup_is_finished_by_the_next_run(faulty):
    s3, fault, proxy = faulty
    opts = _opts(proxy.url)

    def plant(name):
        rel = f"db.db/{name}"
        _history(s3.table_uri(rel), opts, n=3)
        for j in range(3):
            s3.put(f"{rel}/dt=2024-01-01/hr=1/bucket-0/data-orphan-{j}.parquet")
        return rel

    def clean(rel, cutoff):
        uri = s3.table_uri(rel)
        io = Table.open(uri, storage_options=opts).store.io
        return OrphanFilesCleaner(CleanContext(uri, older_than_ms=cutoff, file_io=io,
                                                       allow_recent_cutoff=True)).clean()

    first = plant("count")
    time.sleep(2.2)
    n = _count_requests(fault, lambda: clean(first, int(time.time() * 1000) - 1000))
    positions = _positions(n, stride=8)
    roots = [first] + [plant(f"o{i}") for i in range(len(positions))]
    time.sleep(2.2)
    cutoff = int(time.time() * 1000) - 1000
    for rel, (pos, kind) in zip(roots[1:], positions):
        fault.arm(pos, kind)
        try:
            clean(rel, cutoff)
        except (PaimonCommitError, OSError):
            pass
        fault.disarm()
        clean(rel, cutoff)
        assert not [k for k in s3.keys(rel + "/") if "orphan" in k], (pos, kind)
        t = _check_intact(s3, s3.table_uri(rel))
        assert sorted(t.read_arrow().column("id").to_pylist()) == [2]
