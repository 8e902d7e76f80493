"""Both storage implementations: the os fast path and pyarrow.fs (HDFS/S3 code path)."""
import os

import pytest
from pyarrow import fs as pafs

from conftest import SCHEMA, make_rows, write
from oracle import pp_read, rows

from paimon_commit import Table, UnsafePathError
from paimon_commit.fileio import LocalFileIO, PyArrowFileIO


def test_pyarrow_filesystem_round_trip(table_path):
    io = PyArrowFileIO(pafs.LocalFileSystem(), str(table_path))
    t = Table.create(str(table_path), SCHEMA, ["dt", "hr"], file_io=io)
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
