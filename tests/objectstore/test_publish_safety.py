"""Publishing on S3 (moto): a re-created snapshot id is never reported as a commit, and a store
that stops honouring conditional writes is an error, not a silent switch to check-then-put.
pypaimon reads every table back."""
import pytest

from conftest import SCHEMA, make_rows
from paimon_commit import ExpireConfig, ExpireSnapshots, Table
from paimon_commit.errors import AtomicCreateUnsupportedError
from paimon_commit.io.object_store import ObjectStoreFileIO
from paimon_commit.store import FileStore
from tests.objectstore.moto_server import ACCESS_KEY, SECRET_KEY, Proxy


def _commit(t, ids, options=None):
    w = t.new_writer()
    w.write_arrow(make_rows(ids))
    with t.new_commit(options=options) as c:
        return c.commit(w.prepare_commit())


def _ids(s3, t):
    """Row ids as our reader and pypaimon see them (they must agree), sorted."""
    ours = sorted(t.read_arrow().column("id").to_pylist())
    assert sorted(s3.pp_read().column("id").to_pylist()) == ours
    return ours


def _snapshot_keys(s3):
    return sorted(k.rsplit("/", 1)[1] for k in s3.keys("db.db/t/snapshot/snapshot-"))


class _SlowPublisher(ObjectStoreFileIO):
    """A commit descheduled between its base check and its conditional PUT of snapshot-2:
    meanwhile other writers publish 2 and 3 and an expiration removes 1 and 2, so the name
    snapshot-2 is free again when the PUT arrives."""
    meanwhile = None

    def try_create_atomic(self, path, data, precondition=None, **kw):
        if path.endswith("/snapshot/snapshot-2") and precondition is not None \
                and self.meanwhile is not None:
            run, self.meanwhile = self.meanwhile, None

            def check_then_wait():
                ok = precondition()
                run()
                return ok
            return super().try_create_atomic(path, data, check_then_wait, **kw)
        return super().try_create_atomic(path, data, precondition, **kw)


def test_a_recreated_snapshot_id_is_not_reported_as_a_commit(s3):
    # Regression (finding 3): the conditional PUT of the free name succeeded, the code logged
    # "this storage cannot tell whether 2 is in the lineage" and returned 2: latest was 3,
    # without row 2, and the commit was lost.
    uri = s3.table_uri()
    t0 = Table.create(uri, SCHEMA, ["dt", "hr"])
    _commit(t0, [1])

    def others():
        _commit(Table.open(uri), [3])
        _commit(Table.open(uri), [4])
        ExpireSnapshots(Table.open(uri).store, ExpireConfig(
            retain_min=1, retain_max=1, time_retained_ms=0)).expire()
        assert _snapshot_keys(s3) == ["snapshot-3"]
    io = _SlowPublisher.from_uri(uri)
    io.meanwhile = others
    t = Table(FileStore.open(uri, io=io))
    assert _commit(t, [2]) == 4                 # the copy of 2 was removed; landed on top of 3
    assert _snapshot_keys(s3) == ["snapshot-3", "snapshot-4"]
    assert _ids(s3, Table.open(uri)) == [1, 2, 3, 4]
    assert s3.pp_read(snapshot_id=4).num_rows == 4


class _NotImplementedProxy(Proxy):
    """moto behind a proxy that, while armed, answers a conditional PUT of a snapshot with
    S3's 501 NotImplemented (a store, or a gateway in front of it, that stops honouring
    If-None-Match); it records whether each snapshot PUT carried the condition."""

    def __init__(self, port):
        self.armed = False
        self.snapshot_puts = []   # (key, conditional)
        super().__init__(port, lambda method, path, headers: None)

    def answer(self, method, path, headers, body):
        if method == "PUT" and ("/snapshot/snapshot-" in path or "/tag/tag-" in path):
            conditional = any(k.lower() == "if-none-match" for k in headers)
            self.snapshot_puts.append((path.rsplit("/", 1)[1].split("?")[0], conditional))
            if conditional and self.armed:
                return 501, [], (b"<Error><Code>NotImplemented</Code><Message>A header you "
                                 b"provided implies functionality that is not implemented"
                                 b"</Message></Error>")
        return super().answer(method, path, headers, body)


@pytest.fixture
def not_implemented(s3):
    proxy = _NotImplementedProxy(s3.server.port)
    yield proxy
    proxy.stop()


def test_a_not_implemented_reply_is_an_error_and_never_turns_the_condition_off(s3,
                                                                              not_implemented):
    # Regression (finding 4): one 501 to a create switched the FileIO to check-then-put for
    # the rest of its life, although the probe had proved the store atomic and no single
    # writer was declared: two writers could then both publish one snapshot id.
    proxy = not_implemented
    opts = {"s3.endpoint": proxy.url, "s3.access-key": ACCESS_KEY, "s3.secret-key": SECRET_KEY,
            "s3.region": "us-east-1", "object-store.max-retries": "0"}
    uri = s3.table_uri()
    t = Table.create(uri, SCHEMA, ["dt", "hr"], storage_options=opts)
    assert _commit(t, [1]) == 1
    proxy.armed = True
    with pytest.raises(AtomicCreateUnsupportedError) as e:
        _commit(t, [2])
    msg = str(e.value)
    assert f"rejected the conditional create of {uri}/snapshot/snapshot-2" in msg
    assert "NotImplemented" in msg and "'commit.single-writer' = 'true'" in msg
    assert _snapshot_keys(s3) == ["snapshot-1"]
    # The same FileIO asks the store again next time: conditional, as before.
    proxy.armed = False
    assert _commit(t, [2]) == 2
    assert proxy.snapshot_puts == [("snapshot-1", True), ("snapshot-2", True),
                                   ("snapshot-2", True)]
    # A declared single writer may go on through check-then-put while the store refuses.
    proxy.armed = True
    assert _commit(t, [3], options={"commit.single-writer": "true"}) == 3
    assert proxy.snapshot_puts[-2:] == [("snapshot-3", True), ("snapshot-3", False)]
    proxy.armed = False
    assert _ids(s3, Table.open(uri)) == [1, 2, 3]


def test_tags_on_a_not_implemented_store_honour_commit_single_writer(s3, not_implemented):
    # A tag is created the way a snapshot is published: on a store that answers 501 to the
    # conditional PUT, an error unless the table declares a single writer (it used to be an
    # error even then: the tag manager never saw the option).
    proxy = not_implemented
    opts = {"s3.endpoint": proxy.url, "s3.access-key": ACCESS_KEY, "s3.secret-key": SECRET_KEY,
            "s3.region": "us-east-1", "object-store.max-retries": "0"}
    shared = Table.create(s3.table_uri("db.db/shared"), SCHEMA, ["dt", "hr"], storage_options=opts)
    single = Table.create(s3.table_uri("db.db/single"), SCHEMA, ["dt", "hr"], storage_options=opts,
                          options={"commit.single-writer": "true"})
    for t in (shared, single):
        _commit(t, [1])
    proxy.armed = True
    with pytest.raises(AtomicCreateUnsupportedError) as e:
        shared.create_tag("t1")
    assert "tag/tag-t1" in str(e.value) and "'commit.single-writer' = 'true'" in str(e.value)
    assert shared.tags() == []
    assert single.create_tag("t1").id == 1
    assert [t.name for t in single.tags()] == ["t1"]
    assert proxy.snapshot_puts[-2:] == [("tag-t1", True), ("tag-t1", False)]
