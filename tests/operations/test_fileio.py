"""Both storage implementations: the os fast path and pyarrow.fs (HDFS/S3 code path)."""
import os

import pytest
from pyarrow import fs as pafs

from conftest import SCHEMA, make_rows, write
from oracle import pp_read, rows

from paimon_commit import Table, UnsafePathError
from paimon_commit.io.local import LocalFileIO
from paimon_commit.io.arrow import PyArrowFileIO


def test_pyarrow_filesystem_round_trip(table_path):
    # pyarrow.fs cannot create a file only if absent: one committer, declared.
    io = PyArrowFileIO(pafs.LocalFileSystem(), str(table_path))
    t = Table.create(str(table_path), SCHEMA, ["dt", "hr"], {"commit.single-writer": "true"},
                     file_io=io)
    write(t, make_rows([1, 2]))
    write(t, make_rows([3], hr=2))
    with t.new_commit() as c:
        c.drop_partitions([{"hr": 2}])
    assert [r["id"] for r in rows(pp_read(table_path))] == [1, 2]
    again = Table.open(str(table_path), file_io=PyArrowFileIO(pafs.LocalFileSystem(),
                                                              str(table_path)))
    assert rows(again.read_arrow()) == rows(pp_read(table_path))
    assert again.latest_snapshot().id == 3


@pytest.mark.parametrize("make_io", [
    lambda root: LocalFileIO(root),
    lambda root: PyArrowFileIO(pafs.LocalFileSystem(), root),
], ids=["local", "pyarrow"])
def test_deletion_gate(tmp_path, make_io):
    root = tmp_path / "t"
    (root / "bucket-0").mkdir(parents=True)
    outside = tmp_path / "precious"
    outside.write_text("keep")
    (root / "bucket-0" / "f").write_text("x")
    io = make_io(str(root))
    for bad in [str(outside), str(root / ".." / "precious"), str(root), str(tmp_path)]:
        with pytest.raises(UnsafePathError):
            io.delete_quietly(bad)
    with pytest.raises(UnsafePathError, match="directory"):
        io.delete_quietly(str(root / "bucket-0"))
    assert io.delete_quietly(str(root / "bucket-0" / "f")) is True
    assert io.delete_quietly(str(root / "bucket-0" / "f")) is False  # already gone is fine
    assert outside.read_text() == "keep"
    with pytest.raises(UnsafePathError):
        io.delete_empty_dir(str(root))


def test_local_gate_refuses_symlinked_directories(tmp_path):
    root = tmp_path / "t"
    root.mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "data.parquet").write_text("precious")
    os.symlink(elsewhere, root / "dt=1")
    io = LocalFileIO(str(root))
    with pytest.raises(UnsafePathError, match="symlink"):
        io.delete_quietly(str(root / "dt=1" / "data.parquet"))
    with pytest.raises(UnsafePathError, match="symlink"):
        io.delete_empty_dir(str(root / "dt=1"))
    assert (elsewhere / "data.parquet").read_text() == "precious"


def test_create_if_absent_is_exclusive(tmp_path):
    io = LocalFileIO(str(tmp_path))
    p = str(tmp_path / "snapshot" / "snapshot-1")
    assert io.try_create_atomic(p, b"first") is True
    assert io.try_create_atomic(p, b"second") is False
    assert open(p, "rb").read() == b"first"
    assert [n for n in os.listdir(tmp_path / "snapshot")] == ["snapshot-1"]  # no temp left


class _StaleListingFS:
    """pyarrow LocalFileSystem whose directory listings come back empty: the view of a
    listing taken just before another writer put a file into the directory."""

    def __init__(self):
        self._fs = pafs.LocalFileSystem()

    def __getattr__(self, name):
        return getattr(self._fs, name)

    def get_file_info(self, what):
        if isinstance(what, pafs.FileSelector):
            return []
        return self._fs.get_file_info(what)


def test_pyarrow_storage_never_removes_a_directory_recursively(tmp_path):
    # Regression: delete_empty_dir listed the directory, then called the recursive
    # fs.delete_dir; a data file written in between was deleted with it.
    root = tmp_path / "t"
    (root / "dt=1" / "bucket-0").mkdir(parents=True)
    (root / "dt=1" / "bucket-0" / "data-new.parquet").write_text("just written")
    io = PyArrowFileIO(_StaleListingFS(), str(root))
    assert io.delete_empty_dir(str(root / "dt=1" / "bucket-0")) is False
    assert (root / "dt=1" / "bucket-0" / "data-new.parquet").read_text() == "just written"


def test_every_storage_goes_through_the_gate():
    # The gate is in the base class: a FileIO subclass implements _unlink/_rmdir and cannot
    # override the checked entry points by accident without tests noticing.
    from paimon_commit.io import FileIO
    for cls in (LocalFileIO, PyArrowFileIO):
        assert cls.delete_quietly is FileIO.delete_quietly
        assert cls.delete_empty_dir is FileIO.delete_empty_dir
        assert cls.delete_files is FileIO.delete_files
    from paimon_commit.io.object_store import ObjectStoreFileIO
    assert ObjectStoreFileIO.delete_files is FileIO.delete_files
    assert ObjectStoreFileIO.delete_quietly is FileIO.delete_quietly


def _memory_store_io(tmp_path):
    from obstore.store import MemoryStore
    from paimon_commit.io.object_store import ObjectStoreFileIO
    return ObjectStoreFileIO(MemoryStore(), "s3", "bucket", "db.db/t", "a memory store")


@pytest.mark.parametrize("make_io", [
    lambda tmp: LocalFileIO(str(tmp / "t")),
    lambda tmp: PyArrowFileIO(pafs.LocalFileSystem(), str(tmp / "t")),
    _memory_store_io,
], ids=["local", "pyarrow", "object-store"])
def test_one_path_check_for_every_storage(tmp_path, make_io):
    # Regression: three versions of the check with different rules; the pyarrow one
    # normalised `.` and `//` away (and the local one `.`), so a path the library never
    # builds was deleted as whatever it normalised to.
    (tmp_path / "t").mkdir()
    io = make_io(tmp_path)
    root = io.root
    victim = f"{root}/bucket-0/data.parquet"
    io.write_new(victim, b"precious")
    sibling = f"{root}-sibling/data.parquet"
    bad = {
        "outside": sibling,
        "the root": root,
        "the root/": root + "/",
        "..": f"{root}/bucket-0/../bucket-0/data.parquet",
        ".": f"{root}/bucket-0/./data.parquet",
        "//": f"{root}/bucket-0//data.parquet",
        "leading .": f"{root}/./bucket-0/data.parquet",
        "trailing /": f"{root}/bucket-0/",
        "empty": "",
    }
    for what, path in bad.items():
        with pytest.raises(UnsafePathError):
            io.delete_quietly(path)
        with pytest.raises(UnsafePathError):
            io.delete_files([path])
        assert io.deletion_refused(path), what
    with pytest.raises(UnsafePathError, match="empty segment"):
        io.delete_quietly(bad["."])
    with pytest.raises(UnsafePathError, match="table root"):
        io.delete_empty_dir(root)
    assert io.read_bytes(victim) == b"precious"      # nothing above touched it
    assert io.delete_quietly(victim) is True
    assert not io.exists(victim)


@pytest.mark.parametrize("make_io", [
    lambda root: LocalFileIO(root),
    lambda root: PyArrowFileIO(pafs.LocalFileSystem(), root),
], ids=["local", "pyarrow"])
def test_symlinked_directories_are_refused_by_every_local_storage(tmp_path, make_io):
    # Regression: only LocalFileIO resolved symlinks; pyarrow's LocalFileSystem followed a
    # symlinked partition directory out of the table root and deleted the target's files.
    root = tmp_path / "t"
    root.mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "data.parquet").write_text("precious")
    os.symlink(elsewhere, root / "dt=1")
    io = make_io(str(root))
    with pytest.raises(UnsafePathError, match="symlink"):
        io.delete_quietly(str(root / "dt=1" / "data.parquet"))
    with pytest.raises(UnsafePathError, match="symlink"):
        io.delete_files([str(root / "dt=1" / "data.parquet")])
    assert (elsewhere / "data.parquet").read_text() == "precious"


def test_temp_files_of_the_storages_are_removed_inside_the_root_only(tmp_path):
    # A storage removes its own temp files itself; even that goes through the gate's rules.
    for io in (LocalFileIO(str(tmp_path / "a")),
               PyArrowFileIO(pafs.LocalFileSystem(), str(tmp_path / "b"))):
        os.makedirs(io.root)
        path = io.join(io.root, "tag", "tag-x")
        io.overwrite_atomic(path, b"1")
        assert io.try_create_atomic(path, b"2") is False
        assert io.try_create_atomic(io.join(io.root, "tag", "tag-y"), b"3") is True
        assert sorted(os.listdir(os.path.join(io.root, "tag"))) == ["tag-x", "tag-y"]


@pytest.mark.parametrize("make_io", [
    lambda root: LocalFileIO(root),
    lambda root: PyArrowFileIO(pafs.LocalFileSystem(), root),
], ids=["local", "pyarrow"])
def test_list_files_is_regular_files_with_their_status(tmp_path, make_io):
    # Orphan cleanup lists each directory once, with the status: directories never come back
    # as files, nor (on local disk) symlinks, to a file, to a directory or dangling.
    root = tmp_path / "t"
    d = root / "bucket-0"
    (d / "sub").mkdir(parents=True)
    (d / "a").write_text("aaa")
    (d / ".b.tmp").write_text("b")
    (tmp_path / "outside").write_text("precious")
    (tmp_path / "outside-dir").mkdir()
    (tmp_path / "outside-dir" / "f").write_text("precious")
    os.symlink(tmp_path / "outside", d / "link")
    os.symlink(tmp_path / "outside-dir", d / "dlink")
    os.symlink(tmp_path / "nowhere", d / "dangling")
    io = make_io(str(root))
    got = io.list_files(str(d))
    entries = sorted(zip(got.names, got.sizes, got.mtimes_ms))
    if isinstance(io, LocalFileIO):
        assert [e[0] for e in entries] == [".b.tmp", "a"]
    else:   # pyarrow.fs's local listing stats through symlinks: the link shows as its file
        assert [e[0] for e in entries] == [".b.tmp", "a", "link"]
    a = entries[1]
    assert a[1] == 3 and abs(a[2] - os.stat(d / "a").st_mtime_ns // 1_000_000) <= 1
    assert got.directory == str(d)
    assert io.list_files(str(root / "missing")).names == []
    if isinstance(io, LocalFileIO):   # a symlinked directory is never listed
        os.symlink(tmp_path / "outside-dir", root / "bucket-1")
        assert io.list_files(str(root / "bucket-1")).names == []


def test_local_read_bytes_reads_whole_files_of_any_size(tmp_path):
    from paimon_commit.io.local import _READ_CHUNK, LocalFileIO
    io = LocalFileIO(str(tmp_path))
    for size in (0, 1, _READ_CHUNK - 1, _READ_CHUNK, _READ_CHUNK + 1, 3 * _READ_CHUNK + 5):
        p = tmp_path / f"f{size}"
        data = os.urandom(size)
        p.write_bytes(data)
        assert io.read_bytes(str(p)) == data
    with pytest.raises(FileNotFoundError):
        io.read_bytes(str(tmp_path / "absent"))
    with pytest.raises(IsADirectoryError):
        io.read_bytes(str(tmp_path))
