"""Crash at every file operation of an orphan cleanup, then rerun."""
import shutil
import time

import pytest

from conftest import SCHEMA, make_rows, write
from faults.faulty_io import Crash, FaultyIO
from invariants import assert_intact, referenced_files
from operations.test_orphan import age, plant

from paimon_commit import Table
from paimon_commit.operations.orphan import CleanContext, OrphanFilesCleaner


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    path = tmp_path_factory.mktemp("tpl") / "wh" / "db.db" / "t"
    path.parent.mkdir(parents=True)
    t = Table.create(str(path), SCHEMA, ["dt", "hr"])
    for i in range(1, 6):
        write(t, make_rows([i], hr=i % 3))
    t.create_tag("t2", 2)
    with t.new_commit() as c:
        c.drop_partitions([{"hr": 0}])
        c.expire_snapshots(retain_min=2, time_retained_ms=0)
    plant(path)
    age(path)
    return path


def clean(path, io=None):
    return OrphanFilesCleaner(CleanContext(str(path), file_io=io)).clean()


def test_crash_at_every_operation_then_rerun(template, tmp_path):
    probe = tmp_path / "probe" / "db.db" / "t"
    shutil.copytree(template, probe)
    counter = FaultyIO(str(probe))
    clean(probe, counter)
    n = counter.count
    assert n > 20
    for k in range(1, n + 1):
        path = tmp_path / f"k{k}" / "db.db" / "t"
        shutil.copytree(template, path)
        with pytest.raises(Crash):
            clean(path, FaultyIO(str(path), fail_at=k))
        assert_intact(path, expected_by_tag={"t2": [1, 2]})
        clean(path)
        t = assert_intact(path, expected_by_tag={"t2": [1, 2]})
        # No orphan older than the threshold is left behind.
        used = {p.rsplit("/", 1)[-1] for p in referenced_files(t)}
        leftovers = [p for p in path.rglob("*") if p.is_file()
                     and p.parent.name in ("manifest", "index", "statistics", "bucket-0")
                     and p.name not in used and p.stat().st_mtime < time.time() - 86400]
        assert not leftovers, f"k={k}: {leftovers}"
        shutil.rmtree(path.parent.parent)
