"""Tags on a storage that cannot create a file only if it is absent (pyarrow.fs, HDFS): as
commits, refused unless commit.single-writer declares one writer; never a silent replacement.

The table is written through local disk; tags are then made through PyArrowFileIO over the
same directory (pyarrow's LocalFileSystem stands in for HDFS: its move replaces a target, as
HDFS's does). Two threads stand in for two processes, with a barrier before `move`."""
import os
import re
import threading

import pytest
from pyarrow import fs as pafs

from conftest import SCHEMA, make_rows, write
from invariants import assert_intact

from paimon_commit import ExpireConfig, ExpireSnapshots, Table
from paimon_commit.errors import AtomicCreateUnsupportedError
from paimon_commit.io.arrow import PyArrowFileIO
from paimon_commit.store import FileStore

REFUSED = (r"tag 'release' was not created: this storage cannot create a file only if it is "
           r"absent, so a second client creating the same name would silently replace it; "
           r"declare 'commit.single-writer' = 'true' in the table options if only one process "
           r"ever writes this table, tags included \(_SlowMove storage under ")


class _SlowMove:
    """pyarrow's LocalFileSystem; a move onto a tag name waits until both creators got there
    (both have checked "absent" by then), as two slow HDFS clients would."""

    def __init__(self):
        self._fs = pafs.LocalFileSystem()
        self.barrier = threading.Barrier(2, timeout=5)

    def __getattr__(self, name):
        return getattr(self._fs, name)

    def move(self, src, dest):
        if "/tag/tag-" in dest:
            self.barrier.wait()
        return self._fs.move(src, dest)


def _on_arrow(table_path, fs=None):
    io = PyArrowFileIO(fs or pafs.LocalFileSystem(), str(table_path))
    return Table(FileStore.open(str(table_path), io=io))


def _two_snapshots(table_path, **options):
    t = Table.create(str(table_path), SCHEMA, partition_keys=["dt", "hr"], options=options)
    write(t, make_rows([1]))
    write(t, make_rows([2]))


def _race(table_path):
    """Two clients create tag 'release', on snapshots 1 and 2; their results by snapshot."""
    fs, results = _SlowMove(), {}

    def create(sid):
        try:
            results[sid] = _on_arrow(table_path, fs).create_tag("release", sid)
        except Exception as e:  # noqa: BLE001 - the test looks at what each one got
            results[sid] = e
    threads = [threading.Thread(target=create, args=(i,)) for i in (1, 2)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    return results


def test_concurrent_tag_creations_on_pyarrow_storage_are_refused(table_path):
    # Regression (audit F6): both creators passed "absent", both moved, both were told they
    # created 'release'; the file named snapshot 1, and the tag on snapshot 2 was gone.
    _two_snapshots(table_path)
    results = _race(table_path)
    assert sorted(results) == [1, 2]
    for r in results.values():
        assert isinstance(r, AtomicCreateUnsupportedError)
        # (create_tag takes the maintenance lease, refused the same way first: audit
        # issue25l l5, docs/safety.md 5b.)
        assert re.match(r"the maintenance lease of " + re.escape(str(table_path)) +
                        r" cannot be taken: this storage cannot create a file only if it is "
                        r"absent", str(r)), str(r)
    assert not (table_path / "tag").exists() or os.listdir(table_path / "tag") == []
    assert Table.open(str(table_path)).tags() == []


def test_tags_on_pyarrow_storage_work_for_a_declared_single_writer(table_path):
    _two_snapshots(table_path, **{"commit.single-writer": "true"})
    t = _on_arrow(table_path)
    assert t.create_tag("release", 1).snapshot.id == 1
    assert [(x.name, x.snapshot.id) for x in Table.open(str(table_path)).tags()] == \
        [("release", 1)]
    assert_intact(table_path)


def test_deleting_a_tag_that_needs_a_deletion_marker_is_refused_the_same_way(table_path):
    # A tag whose snapshot expired owns files: its deletion writes a marker first (created
    # only if absent, like the tag). Refused before anything is deleted.
    _two_snapshots(table_path)
    Table.open(str(table_path)).create_tag("release", 1)       # through local disk
    write(Table.open(str(table_path)), make_rows([3]))
    cfg = ExpireConfig(retain_min=1, retain_max=1, time_retained_ms=0, max_deletes=100)
    ExpireSnapshots(Table.open(str(table_path)).store, cfg).expire()
    before = sorted(p for p, _, fs in os.walk(table_path) for p in [p] + fs)
    # (The maintenance lease, taken the same way, is refused first: docs/safety.md 5b.)
    with pytest.raises(AtomicCreateUnsupportedError,
                       match=r"^the maintenance lease of .* cannot be taken: this storage "
                             r"cannot create a file only if it is absent"):
        _on_arrow(table_path).delete_tag("release")
    assert sorted(p for p, _, fs in os.walk(table_path) for p in [p] + fs) == before
    assert [x.name for x in Table.open(str(table_path)).tags()] == ["release"]
    assert_intact(table_path)
