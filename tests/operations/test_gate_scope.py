"""The deletion gate's symlink check never reuses a resolution of an earlier operation.

A FileIO lives as long as its Table, commit object or writer. Its gate caches where each
directory resolves, for speed (an orphan cleanup deletes many files per directory): the cache
must end with the operation that filled it, or a later delete goes through a directory that
has become a symlink since (an operator moving a partition to another volume and leaving a
symlink behind). Real directories and real symlinks throughout."""
import os
import shutil
import threading

import pytest
from pyarrow import fs as pafs

from conftest import SCHEMA, make_rows, write

from paimon_commit import ExpireConfig, ExpireSnapshots, Table
from paimon_commit.errors import UnsafePathError
from paimon_commit.io.arrow import PyArrowFileIO
from paimon_commit.io.deletion import Deleter
from paimon_commit.io.local import LocalFileIO
from paimon_commit.lease import maintenance_lease
from paimon_commit.store import FileStore

BUCKET = "dt=19723/hr=1/bucket-0"


def _move_out(table_path, tmp_path, rel=BUCKET):
    """Move a directory of the table elsewhere and leave a symlink to it in its place."""
    inside = table_path / rel
    outside = tmp_path / "other-volume" / os.path.basename(rel)
    outside.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(str(inside), str(outside))
    os.symlink(outside, inside)
    return outside


def test_a_long_lived_commit_object_never_deletes_through_a_new_symlink(table_path, tmp_path):
    # Regression (audit F4): the first abort cached "bucket-0 resolves inside the root"; the
    # bucket then became a symlink to another volume, and a second abort on the same commit
    # object deleted the file there (a fresh commit object refused).
    t = Table.create(str(table_path), SCHEMA, partition_keys=["dt", "hr"])
    c = t.new_commit()
    wa, wb = t.new_writer(), t.new_writer()
    wa.write_arrow(make_rows([1]))
    wb.write_arrow(make_rows([2]))
    ma, mb = wa.prepare_commit(), wb.prepare_commit()
    assert c.abort(ma) == 1
    outside = _move_out(table_path, tmp_path)
    (name,) = os.listdir(outside)
    with pytest.raises(UnsafePathError, match=f"its directory resolves to {outside}, outside "
                                              f"the table root"):
        c.abort(mb)
    assert os.listdir(outside) == [name]


@pytest.mark.parametrize("storage", ["local", "pyarrow-local"])
def test_every_delete_outside_an_operation_resolves_afresh(table_path, tmp_path, storage):
    # The same at the gate: a single delete, a batch and an empty directory, each after an
    # earlier one (and an earlier operation's scope) resolved the directory inside the root.
    bucket = table_path / BUCKET
    bucket.mkdir(parents=True)
    for n in ("a", "b", "c", "d"):
        (bucket / n).write_bytes(b"x")
    (bucket / "empty").mkdir()
    io = LocalFileIO(str(table_path)) if storage == "local" else \
        PyArrowFileIO(pafs.LocalFileSystem(), str(table_path))
    assert io.delete_quietly(str(bucket / "a"))
    with Deleter(io) as d:                       # one operation, cached while it runs
        d.files("data", [str(bucket / "b")])
    outside = _move_out(table_path, tmp_path)
    for delete in (lambda: io.delete_quietly(str(bucket / "c")),
                   lambda: io.delete_files([str(bucket / "d")]),
                   lambda: io.delete_empty_dir(str(bucket / "empty"))):
        with pytest.raises(UnsafePathError, match="outside the table root"):
            delete()
    assert sorted(os.listdir(outside)) == ["c", "d", "empty"]


def test_an_operation_s_cache_is_not_another_thread_s(table_path, tmp_path):
    # An expiration running on one thread (its scope, its cache) and an abort on another
    # thread of the same FileIO (an ASYNC post-commit maintenance): the abort resolves afresh.
    bucket = table_path / BUCKET
    bucket.mkdir(parents=True)
    for n in ("a", "b"):
        (bucket / n).write_bytes(b"x")
    io = LocalFileIO(str(table_path))
    errors = []
    with io.resolution_scope():
        assert io.delete_quietly(str(bucket / "a"))      # cached on this thread
        outside = _move_out(table_path, tmp_path)

        def other_operation():
            try:
                io.delete_quietly(str(bucket / "b"))
            except UnsafePathError as e:
                errors.append(e)
        th = threading.Thread(target=other_operation)
        th.start()
        th.join()
    assert len(errors) == 1 and os.listdir(outside) == ["b"]


def test_an_operation_resolves_each_directory_once(table_path, monkeypatch):
    # The cost side: an expiration deleting many files resolves each distinct directory
    # once (plus the root), not once per file.
    t = Table.create(str(table_path), SCHEMA, partition_keys=["dt", "hr"])
    for i in range(6):
        write(t, make_rows([i], hr=i % 2))
    calls = []
    real = os.path.realpath

    def counting(p, *a, **kw):
        calls.append(p)
        return real(p, *a, **kw)
    store = FileStore.open(str(table_path))
    # (The maintenance lease taken outside: its records are written outside the gate's
    # scope, and the expiration joins it.)
    with maintenance_lease(store, "test"):
        monkeypatch.setattr(os.path, "realpath", counting)
        r = ExpireSnapshots(store, ExpireConfig(retain_min=1, retain_max=1,
                                                time_retained_ms=0, max_deletes=100)).expire()
        monkeypatch.undo()
    assert r.deleted_files >= 10
    assert len(calls) == len(set(calls)) <= 6   # root, snapshot/, manifest/, ...
