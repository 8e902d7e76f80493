"""Crash at every file operation of drop-partition + expire, then rerun."""
import shutil

import pytest

from conftest import SCHEMA, make_rows, write
from faults.faulty_io import Crash, FaultyIO
from invariants import assert_intact, referenced_files

from paimon_commit import Table
from paimon_commit.store import FileStore

EXPIRE = dict(retain_min=2, time_retained_ms=0, max_deletes=100)


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    path = tmp_path_factory.mktemp("tpl") / "wh" / "db.db" / "t"
    path.parent.mkdir(parents=True)
    t = Table.create(str(path), SCHEMA, ["dt", "hr"], {"snapshot.clean-empty-directories": "true"})
    for i in range(1, 9):
        write(t, make_rows([i, 100 + i], hr=i % 3))
    t.create_tag("t4", 4)
    return path


def drop_and_expire(path, io=None):
    t = Table(FileStore.open(str(path), io=io)) if io else Table.open(str(path))
    with t.new_commit(commit_user="ops", options={"write-only": "true"}) as c:
        if not any(s.commit_kind == "OVERWRITE" for s in t.snapshots()):
            c.drop_partitions([{"hr": 0}], commit_identifier=1)
        return c.expire_snapshots(**EXPIRE)


def count_ops(template, tmp_path):
    path = tmp_path / "count" / "db.db" / "t"
    shutil.copytree(template, path)
    io = FaultyIO(str(path))
    drop_and_expire(path, io)
    return io.count


def test_crash_at_every_operation_then_rerun(template, tmp_path):
    n = count_ops(template, tmp_path)
    assert n > 30
    expected_rows = sorted(x for i in range(1, 9) if i % 3 != 0 for x in (i, 100 + i))
    for k in range(1, n + 1):
        path = tmp_path / f"k{k}" / "db.db" / "t"
        shutil.copytree(template, path)
        with pytest.raises(Crash):
            drop_and_expire(path, FaultyIO(str(path), fail_at=k))
        # Retained snapshots (8 and the drop's 9) and the tag stay readable through the
        # crash; snapshots that were being expired may be half gone until the rerun...
        assert_intact(path, min_snapshot=8)
        # ...and a rerun finishes the job.
        drop_and_expire(path)
        t = assert_intact(path, expected_by_tag={"t4": [1, 2, 3, 4, 101, 102, 103, 104]})
        assert [s.id for s in t.snapshots()] == [8, 9], f"k={k}"
        assert sorted(r["id"] for r in t.read_arrow().to_pylist()) == expected_rows
        # Data files on disk are exactly those retained snapshots and the tag reference:
        # the rerun deleted everything the crash left behind, and nothing more.
        on_disk = {str(p) for p in path.rglob("*.parquet")}
        assert on_disk == {p for p in referenced_files(t) if p.endswith(".parquet")}, f"k={k}"
        shutil.rmtree(path.parent.parent)
