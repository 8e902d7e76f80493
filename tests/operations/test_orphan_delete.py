"""Orphan cleanup's local fast paths: deletes relative to a directory descriptor, checked
against the root when opened; the pool only unlinking paths the gate checked; the listing
held per directory as one string; statuses read in plain tuples."""
import os
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from conftest import make_rows, write
from invariants import assert_intact

from paimon_commit import UnsafePathError
from paimon_commit.io.local import LocalFileIO
from paimon_commit.operations.orphan import CleanContext, OrphanFilesCleaner
from paimon_commit.operations.orphan_select import Listed

OLD = time.time() - 3 * 86400


def _old(path):
    os.utime(path, (OLD, OLD), follow_symlinks=False)


@pytest.fixture
def strays(table, table_path):
    """A table with two commits, and 300 old strays in a bucket directory of its own."""
    write(table, make_rows([1], hr=1))
    write(table, make_rows([2], hr=2))
    bucket = table_path / "dt=19723" / "hr=1" / "bucket-0"
    names = [f"data-stray-{i}.parquet" for i in range(300)]
    for n in names:
        (bucket / n).write_bytes(b"x" * 7)
        _old(bucket / n)
    return bucket, names


class _SwapsAfterCheck(LocalFileIO):
    """Between the gate's check of the paths and their unlinks, the bucket directory is
    moved away and replaced by a symlink to a directory outside the table holding files of
    the same names."""

    def __init__(self, root, bucket, outside):
        super().__init__(root)
        self.bucket, self.outside, self.swapped = str(bucket), str(outside), False

    def _unlink_many(self, norms):
        if not self.swapped:
            self.swapped = True
            os.rename(self.bucket, self.bucket + ".moved")
            os.symlink(self.outside, self.bucket)
        return super()._unlink_many(norms)


@pytest.mark.parametrize("threads", [None, 4])
def test_a_directory_turned_symlink_after_the_check_is_not_followed(
        strays, table_path, tmp_path, threads):
    bucket, names = strays
    outside = tmp_path / "outside"
    outside.mkdir()
    for n in names:
        (outside / n).write_bytes(b"precious")
    io = _SwapsAfterCheck(str(table_path), bucket, outside)
    paths = [str(bucket / n) for n in names]
    pool = ThreadPoolExecutor(threads) if threads else None
    try:
        deleted = io.delete_files(paths, pool)
    finally:
        if pool:
            pool.shutdown()
    # A path-by-path unlink would have followed the new symlink: every file outside is kept.
    assert deleted == []
    assert sorted(os.listdir(outside)) == sorted(names)
    assert all((outside / n).read_bytes() == b"precious" for n in names)


def test_the_pool_unlinks_only_what_the_gate_checked(strays, table_path, tmp_path):
    bucket, names = strays
    io = LocalFileIO(str(table_path))
    outside = tmp_path / "outside.parquet"
    outside.write_bytes(b"precious")
    paths = [str(bucket / n) for n in names]
    with ThreadPoolExecutor(4) as pool:
        # One path outside the root: refused before the first unlink, nothing deleted.
        with pytest.raises(UnsafePathError, match="outside the table root"):
            io.delete_files(paths[:150] + [str(outside)] + paths[150:], pool)
        assert sorted(n for n in os.listdir(bucket) if n.startswith("data-stray")) == \
            sorted(names)
        io.deletion_log = []
        deleted = io.delete_files(paths, pool)
    assert sorted(deleted) == sorted(paths) == sorted(io.deletion_log)
    assert not [n for n in os.listdir(bucket) if n.startswith("data-stray")]
    assert outside.read_bytes() == b"precious"


def test_a_real_clean_on_the_pool_deletes_exactly_the_strays(strays, table_path):
    bucket, names = strays
    io = LocalFileIO(str(table_path))
    io.deletion_log = []
    r = OrphanFilesCleaner(CleanContext(str(table_path), file_io=io)).clean()
    expected = sorted(f"dt=19723/hr=1/bucket-0/{n}" for n in names)
    assert r.deleted_paths == expected
    assert r.by_kind == {"data": {"files": 300, "bytes": 2100}}
    assert sorted(os.path.relpath(p, str(table_path)) for p in io.deletion_log) == expected
    assert not [n for n in os.listdir(bucket) if n.startswith("data-stray")]
    assert_intact(table_path)


def test_the_listing_is_held_as_one_string_per_directory(strays, table_path):
    bucket, names = strays
    cleaner = OrphanFilesCleaner(CleanContext(str(table_path), dry_run=True))
    listed, _ = cleaner.list_candidates()
    assert all(isinstance(d, Listed) and isinstance(d.joined, str) for d in listed)
    (held,) = [d for d in listed if d.directory == str(bucket)]
    assert held.count == len(held.names()) and set(names) <= set(held.names())
    # ... and what it selects from them is the same as a clean reports
    r = cleaner.clean()
    assert r.deleted_paths == sorted(f"dt=19723/hr=1/bucket-0/{n}" for n in names)
