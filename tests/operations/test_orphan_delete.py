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


# --- one directory refused or failing, among several ----------------------------------------

@pytest.fixture
def two_buckets(strays, table_path):
    """The 300 strays of `strays` in hr=1, and 100 old strays in hr=2's bucket."""
    bucket1, names1 = strays
    bucket2 = table_path / "dt=19723" / "hr=2" / "bucket-0"
    names2 = [f"data-stray2-{i}.parquet" for i in range(100)]
    for n in names2:
        (bucket2 / n).write_bytes(b"y" * 5)
        _old(bucket2 / n)
    return (bucket1, names1), (bucket2, names2)


def _strays_left(bucket, prefix="data-stray"):
    return sorted(n for n in os.listdir(bucket) if n.startswith(prefix))


def test_a_parent_swapped_for_a_symlink_is_skipped_and_the_others_logged(
        two_buckets, table_path, tmp_path):
    (b1, n1), (b2, n2) = two_buckets
    outside = tmp_path / "outside"
    (outside / "bucket-0").mkdir(parents=True)
    for n in n2:
        (outside / "bucket-0" / n).write_bytes(b"precious")
    parent = b2.parent

    class SwapsParent(LocalFileIO):
        def _unlink_in(self, directory, norms):
            # hr=2 is reached after hr=1's first slice: its parent now leads out of the root
            if directory == str(b2) and not os.path.islink(parent):
                os.rename(parent, str(parent) + ".moved")
                os.symlink(outside, parent)
            return super()._unlink_in(directory, norms)

    io = SwapsParent(str(table_path))
    io.deletion_log = []
    paths = [str(b1 / n) for n in n1] + [str(b2 / n) for n in n2]
    with ThreadPoolExecutor(1) as pool:
        deleted = io.delete_files(paths, pool)
    # hr=2 is left (a warning, not an error), and what hr=1 lost is reported and logged.
    assert sorted(deleted) == sorted(io.deletion_log) == sorted(str(b1 / n) for n in n1)
    assert _strays_left(b1) == []
    assert _strays_left(str(parent) + ".moved/bucket-0") == sorted(n2)
    assert all((outside / "bucket-0" / n).read_bytes() == b"precious" for n in n2)


def test_a_failing_slice_waits_for_the_others_and_logs_them_before_raising(
        two_buckets, table_path):
    (b1, n1), (b2, n2) = two_buckets
    # An orphan replaced by a directory since it was selected: its slice raises.
    (b2 / n2[0]).unlink()
    (b2 / n2[0]).mkdir()

    class Slow(LocalFileIO):
        def _unlink(self, norm):
            if norm.startswith(str(b1)):
                time.sleep(0.001)   # hr=1's slices still run when hr=2's raises
            return super()._unlink(norm)

    io = Slow(str(table_path))
    io.deletion_log = []
    paths = [str(b1 / n) for n in n1] + [str(b2 / n) for n in n2]
    with ThreadPoolExecutor(4) as pool:
        with pytest.raises(UnsafePathError, match="refusing to delete directory"):
            io.delete_files(paths, pool)
        left = _strays_left(b1), _strays_left(b2)
        time.sleep(0.05)
        # nothing goes on unlinking after the call raised ...
        assert (_strays_left(b1), _strays_left(b2)) == left
    # ... every other slice finished, and all it deleted is in the deletion log
    assert left[0] == []
    gone = [str(b1 / n) for n in n1] + [str(b2 / n) for n in n2 if n not in left[1]]
    assert sorted(io.deletion_log) == sorted(gone)
    assert os.path.isdir(b2 / n2[0])


def test_the_cli_reports_a_failed_run_with_what_was_deleted(
        two_buckets, table_path, capsys, monkeypatch):
    import json

    from paimon_commit.cli import main
    (b1, n1), (b2, n2) = two_buckets
    orig = LocalFileIO._unlink_many

    def replaces_an_orphan_by_a_directory(self, norms):
        if norms and norms[0].startswith(str(b2)) and not os.path.isdir(b2 / n2[0]):
            (b2 / n2[0]).unlink()
            (b2 / n2[0]).mkdir()
        return orig(self, norms)

    monkeypatch.setattr(LocalFileIO, "_unlink_many", replaces_an_orphan_by_a_directory)
    code = main(["remove-orphan-files", str(table_path), "--older-than-duration", "1 d",
                 "--json"])
    report = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert code == 1   # a failed run after deletes, not "invalid input, nothing touched"
    assert "refusing to delete directory" in report["error"]
    assert _strays_left(b1) == []
    assert set(f"dt=19723/hr=1/bucket-0/{n}" for n in n1) <= set(report["files"])
    assert report["deleted_files"] == len(report["files"]) >= len(n1)
    gone = {f"dt=19723/hr=2/bucket-0/{n}" for n in n2 if not (b2 / n).exists()}
    assert {f for f in report["files"] if "hr=2" in f} == gone
    assert_intact(table_path)


def test_find_orphans_works_again_after_a_clean(two_buckets, table_path):
    (_, n1), (_, n2) = two_buckets
    cleaner = OrphanFilesCleaner(CleanContext(str(table_path), dry_run=True))
    first = cleaner.clean()
    from paimon_commit.operations.orphan_context import OrphanCleanResult
    found, _ = cleaner.find_orphans(None, OrphanCleanResult(True, cleaner.ctx.older_than_ms))
    # (the pool clean() used for statuses is shut down: not used again)
    assert sorted(found.rel_paths(str(table_path))) == first.deleted_paths
    assert len(first.deleted_paths) == len(n1) + len(n2)


# --- where /proc/self/fd cannot be read; a directory moved out mid-run ----------------------

class _NoProcOs:
    """`os` as paimon_commit.io.local sees it without /proc (macOS, BSDs, sandboxes)."""

    def __getattr__(self, name):
        return getattr(os, name)

    @staticmethod
    def readlink(p, *a, **k):
        if str(p).startswith("/proc/self/fd/"):
            raise FileNotFoundError(2, "No such file or directory", p)
        return os.readlink(p, *a, **k)


class _ChangesAtFirstUnlink(LocalFileIO):
    """At the first unlink (after the directory was opened and checked), the bucket
    directory is moved to `to`, and, if `symlink_to`, replaced by a symlink there."""

    def __init__(self, root, bucket, to, symlink_to=None):
        super().__init__(root)
        self.bucket, self.to, self.symlink_to, self.done = str(bucket), str(to), symlink_to, False

    def _unlink(self, norm):
        if not self.done:
            self.done = True
            os.rename(self.bucket, self.to)
            if self.symlink_to:
                os.symlink(self.symlink_to, self.bucket)
        return super()._unlink(norm)


@pytest.mark.parametrize("threads", [None, 4])
def test_without_proc_a_directory_swapped_after_the_open_is_not_followed(
        strays, table_path, tmp_path, monkeypatch, threads):
    import paimon_commit.io.local as local
    from paimon_commit.io.local import RECHECK_EVERY
    bucket, names = strays
    outside = tmp_path / "outside"
    outside.mkdir()
    for n in names:
        (outside / n).write_bytes(b"precious")
    moved = str(bucket) + ".moved"
    io = _ChangesAtFirstUnlink(str(table_path), bucket, moved, symlink_to=str(outside))
    monkeypatch.setattr(local, "os", _NoProcOs())
    pool = ThreadPoolExecutor(threads) if threads else None
    try:
        deleted = io.delete_files([str(bucket / n) for n in names], pool)
    finally:
        if pool:
            pool.shutdown()
    monkeypatch.undo()
    # Nothing outside is touched; the unlinks before the re-check were in the directory
    # opened (the table's own, moved within the table), and those are what is reported.
    assert sorted(os.listdir(outside)) == sorted(names)
    assert all((outside / n).read_bytes() == b"precious" for n in names)
    # (at most RECHECK_EVERY per slice opened before the swap: 300 files = 2 slices)
    assert 0 < len(deleted) <= 2 * RECHECK_EVERY
    assert sorted(_strays_left(moved)) == sorted(set(names) - {os.path.basename(p)
                                                              for p in deleted})


def test_without_proc_unlinks_are_relative_to_the_checked_directory(
        two_buckets, table_path, monkeypatch):
    import paimon_commit.io.local as local
    (b1, n1), (b2, n2) = two_buckets
    io = LocalFileIO(str(table_path))
    io.deletion_log = []
    seen = []
    real_unlink = os.unlink

    class Os(_NoProcOs):
        @staticmethod
        def unlink(p, *a, dir_fd=None, **k):
            seen.append((p, dir_fd))
            return real_unlink(p, *a, dir_fd=dir_fd, **k)

    monkeypatch.setattr(local, "os", Os())
    paths = [str(b1 / n) for n in n1] + [str(b2 / n) for n in n2]
    with ThreadPoolExecutor(4) as pool:
        deleted = io.delete_files(paths, pool)
    monkeypatch.undo()
    assert sorted(deleted) == sorted(paths) == sorted(io.deletion_log)
    assert _strays_left(b1) == _strays_left(b2) == []
    assert all(fd is not None and "/" not in p for p, fd in seen) and len(seen) == len(paths)


def test_a_directory_moved_out_mid_run_stops_losing_its_orphans(
        strays, table_path, tmp_path, caplog):
    from paimon_commit.io.local import RECHECK_EVERY
    bucket, names = strays
    moved = tmp_path / "moved-out-bucket"
    io = _ChangesAtFirstUnlink(str(table_path), bucket, moved)
    deleted = io.delete_files([str(bucket / n) for n in names])
    # Unlinks follow the directory opened: the ones before the next re-check are lost
    # (selected orphans only), then the directory is seen outside the root and left.
    assert len(deleted) == RECHECK_EVERY
    assert len(_strays_left(moved)) == len(names) - RECHECK_EVERY
    assert f"not deleting {len(names) - RECHECK_EVERY} files in {bucket}" in caplog.text
