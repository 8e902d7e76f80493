"""Publishing a snapshot is safe on every storage: a commit that returns a snapshot id is in the
lineage later snapshots build on, no storage replaces another writer's snapshot silently, and
a publish whose outcome is unknown is settled from content, never published twice.

The rivals (other writers, an expiration) run at the exact storage call where a slow or unlucky
commit gives them room, on a real directory; pypaimon and our reader check every row."""
import os
import time

import pytest
from pyarrow import fs as pafs

from conftest import SCHEMA, make_rows, write
from invariants import assert_intact
from oracle import pp_read

from paimon_commit import ExpireConfig, ExpireSnapshots, Snapshot, Table
from paimon_commit.errors import AtomicCreateUnsupportedError, PublishOutcomeUnknownError
from paimon_commit.io.arrow import PyArrowFileIO
from paimon_commit.io.local import LocalFileIO
from paimon_commit.store import FileStore

SINGLE = {"commit.single-writer": "true"}


def snapshot_ids(table_path):
    d = table_path / "snapshot"
    return sorted(int(n.split("-")[1]) for n in os.listdir(d) if n.startswith("snapshot-")) \
        if d.exists() else []


def expire_keeping(table_path, keep):
    """A concurrent expiration (another process's view: its own Table) keeping `keep`."""
    cfg = ExpireConfig(retain_min=keep, retain_max=keep, time_retained_ms=0, max_deletes=100)
    return ExpireSnapshots(Table.open(str(table_path)).store, cfg).expire()


def ids_read(table_path):
    """Row ids as pypaimon and our reader see them (must agree), sorted, duplicates kept."""
    ours = sorted(Table.open(str(table_path)).read_arrow().column("id").to_pylist())
    theirs = sorted(pp_read(table_path).column("id").to_pylist())
    assert ours == theirs
    return ours


def _table_on(io, table_path):
    return Table(FileStore.open(str(table_path), io=io))


def _commit(t, ids, commit_user=None, identifier=None, options=None):
    w = t.new_writer()
    w.write_arrow(make_rows(ids))
    with t.new_commit(commit_user=commit_user, options=options) as c:
        return c.commit(w.prepare_commit(), identifier)


# --- HDFS / pyarrow.fs: no create-if-absent, so no second writer ---------------------------

def test_pyarrow_storage_refuses_to_commit_unless_a_single_writer_is_declared(table_path):
    # Regression (finding 1): pyarrow's move replaces an existing target, so two writers
    # through PyArrowFileIO both "published" one snapshot id and one commit vanished.
    io = PyArrowFileIO(pafs.LocalFileSystem(), str(table_path))
    t = Table.create(str(table_path), SCHEMA, ["dt", "hr"], file_io=io)
    with pytest.raises(AtomicCreateUnsupportedError) as e:
        write(t, make_rows([1]))
    msg = str(e.value)
    assert f"LocalFileSystem storage under {table_path} cannot create a file only if it is " \
           f"absent" in msg
    assert "'commit.single-writer' = 'true'" in msg
    assert snapshot_ids(table_path) == []
    assert not (table_path / "manifest").exists() or os.listdir(table_path / "manifest") == []
    # Declared per commit or in the table: one process commits, check-then-move is safe.
    assert _commit(t, [1], options=SINGLE) == 1
    assert ids_read(table_path) == [1]


class _MoveThenLoseTheReply:
    """pyarrow LocalFileSystem whose first move onto a snapshot name takes effect and then
    raises, as an HDFS rename whose answer is lost on the wire."""

    def __init__(self):
        self._fs = pafs.LocalFileSystem()
        self.failures = 1

    def __getattr__(self, name):
        return getattr(self._fs, name)

    def move(self, src, dest):
        self._fs.move(src, dest)
        if "/snapshot/snapshot-" in dest and self.failures:
            self.failures -= 1
            raise OSError("connection reset by peer after the rename")


def test_pyarrow_publish_whose_reply_is_lost_is_published_once(table_path):
    # Regression (finding 2): the lost reply was taken for a lost race. The commit deleted the
    # base manifest list its own snapshot 2 names and published the row again as snapshot 3.
    Table.create(str(table_path), SCHEMA, ["dt", "hr"], SINGLE)
    write(Table.open(str(table_path)), make_rows([1]))
    t = _table_on(PyArrowFileIO(_MoveThenLoseTheReply(), str(table_path)), table_path)
    assert _commit(t, [2]) == 2
    assert snapshot_ids(table_path) == [1, 2]
    assert ids_read(table_path) == [1, 2]
    assert_intact(table_path, {1: [1], 2: [1, 2]})


# --- a legitimate publish whose base is expired at once stays --------------------------------

def test_a_publish_followed_at_once_by_a_commit_and_an_expiration_is_kept(table, table_path,
                                                                          monkeypatch):
    # Regression: link times decided whether our snapshot was a re-created id. But the
    # unlink of the temp name after link(2) changes the inode's ctime again: a commit built on
    # ours in between looked older than ours, ours was removed as "re-created" although
    # snapshot 3 builds on it, and the retry committed row 2 a second time.
    write(table, make_rows([1]))
    real_link = os.link
    armed = [True]

    def link_then_others_move_on(src, dst, *args, **kwargs):
        real_link(src, dst, *args, **kwargs)
        if armed[0] and str(dst).endswith("/snapshot/snapshot-2"):
            armed[0] = False
            write(Table.open(str(table_path)), make_rows([3]))   # snapshot 3, on ours
            expire_keeping(table_path, 2)                         # snapshot 1, our base, goes
            time.sleep(0.03)                                      # ctime ticks coarsely
    monkeypatch.setattr(os, "link", link_then_others_move_on)
    assert write(table, make_rows([2])) == 2
    monkeypatch.setattr(os, "link", real_link)
    assert snapshot_ids(table_path) == [2, 3]
    assert ids_read(table_path) == [1, 2, 3]
    assert_intact(table_path, {2: [1, 2], 3: [1, 2, 3]})


# --- a publish whose outcome is unknown ------------------------------------------------------

class _LostReply(LocalFileIO):
    """The first publish of snapshot-`n`: `before` runs, then the create (if `lands`), then
    `after`, and the caller hears an I/O error either way."""

    def __init__(self, root, n, lands, before=None, after=None):
        super().__init__(root)
        self.n, self.lands, self.before, self.after = n, lands, before, after
        self.armed = True
        self.snapshot = None   # what the failed publish tried to publish

    def try_create_atomic(self, path, data, precondition=None, **kw):
        if not (self.armed and path.endswith(f"/snapshot/snapshot-{self.n}")):
            return super().try_create_atomic(path, data, precondition, **kw)
        self.armed = False
        self.snapshot = Snapshot.from_json(data, path)
        if self.before:
            self.before()
        if self.lands:
            assert super().try_create_atomic(path, data, precondition, **kw)
        if self.after:
            self.after()
        raise OSError("injected: the reply to the publish was lost")


def _others_commit(table_path, ids):
    def run():
        for i in ids:
            write(Table.open(str(table_path)), make_rows([i]))
    return run


def _then(*steps):
    def run():
        for s in steps:
            s()
    return run


def test_a_landed_publish_expired_before_the_retry_looks_is_not_published_again(table,
                                                                                 table_path):
    # Regression (finding 8c): the retry looked for its snapshot among the ones still there;
    # snapshot 2 had been expired, so it published the same delta list again (row 2 twice).
    write(table, make_rows([1]))
    io = _LostReply(str(table_path), 2, lands=True,
                    after=_then(_others_commit(table_path, [3, 4]),
                                lambda: expire_keeping(table_path, 2)))
    t = _table_on(io, table_path)
    with t.new_commit(commit_user="job") as c:
        w = t.new_writer()
        w.write_arrow(make_rows([2]))
        assert c.commit(w.prepare_commit(), 7) == 2
        assert c.last_result.attempts == 2
    assert snapshot_ids(table_path) == [3, 4]
    assert ids_read(table_path) == [1, 2, 3, 4]
    assert_intact(table_path, {3: [1, 2, 3], 4: [1, 2, 3, 4]})


@pytest.mark.parametrize("lands", [True, False], ids=["landed", "not-landed"])
def test_a_publish_that_cannot_be_settled_fails_and_keeps_its_files(table, table_path, lands):
    # The id of our failed publish and the snapshot after it, the one that would tell, are
    # both expired before the retry looks: the commit fails with "outcome unknown" instead of
    # publishing row 2 (again), and deletes nothing its snapshot named.
    write(table, make_rows([1]))
    others = _others_commit(table_path, [3, 4] if lands else [3, 4, 5])
    expire = lambda: expire_keeping(table_path, 1)  # noqa: E731
    io = _LostReply(str(table_path), 2, lands=lands, before=None if lands else others,
                    after=_then(others, expire) if lands else expire)
    t = _table_on(io, table_path)
    with pytest.raises(PublishOutcomeUnknownError,
                       match=r"publishing snapshot 2 failed with an I/O error.*cannot be "
                             r"decided\. Every file it names is kept"):
        _commit(t, [2])
    assert snapshot_ids(table_path) == [4]
    assert ids_read(table_path) == ([1, 2, 3, 4] if lands else [1, 3, 4, 5])
    if not lands:   # (had it landed, the expiration deleted its lists with it: its right)
        ours, mio = io.snapshot, t.store.manifests
        named = [ours.base_manifest_list, ours.delta_manifest_list] + \
            [m.file_name for m in mio.read_list(ours.delta_manifest_list)]
        assert all((table_path / "manifest" / n).exists() for n in named)


def test_a_publish_that_did_not_land_is_published_after_its_id_was_expired(table, table_path):
    # The id our failed publish aimed at was taken by another writer and expired before the
    # retry looks: snapshot 3 was built on theirs, so ours did not land and is published now
    # (a guard: settling from content must not take someone else's snapshot for ours).
    write(table, make_rows([1]))
    io = _LostReply(str(table_path), 2, lands=False,
                    before=_then(_others_commit(table_path, [3, 4, 5]),
                                 lambda: expire_keeping(table_path, 2)))
    t = _table_on(io, table_path)
    assert _commit(t, [2]) == 5
    assert snapshot_ids(table_path) == [3, 4, 5]
    assert ids_read(table_path) == [1, 2, 3, 4, 5]
    assert_intact(table_path, {5: [1, 2, 3, 4, 5]})


# --- local disk without hard links --------------------------------------------------------

def test_local_disk_without_hard_links_is_an_error_unless_single_writer(table, table_path,
                                                                        monkeypatch):
    # A file system without link(2) (some FUSE and SMB mounts) used to fall back to
    # check-then-rename with a warning: two writers could both publish one id.
    import errno

    def no_links(src, dst, *a, **kw):
        raise OSError(errno.EPERM, "Operation not permitted")
    monkeypatch.setattr(os, "link", no_links)
    with pytest.raises(AtomicCreateUnsupportedError,
                       match=r"has no hard links.*'commit.single-writer' = 'true'"):
        write(table, make_rows([1]))
    assert snapshot_ids(table_path) == []
    assert _commit(table, [1], options=SINGLE) == 1
    monkeypatch.undo()
    assert ids_read(table_path) == [1]
