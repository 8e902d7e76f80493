"""A metadata delete that FAILS during expiration (EACCES on one unlink; on object stores a
per-key error of a batch delete), as opposed to a kill (audit f2): the run stops at that step
as it does for a failed data delete, keeps the lists, index manifests and snapshot files that
name what is left, says so in `skipped`, and the next run finishes: the table ends exactly as
after a run where nothing failed."""
import os
import shutil

import pytest

from faults.fault_io import FaultIO
from invariants import assert_intact
from operations.test_changelog import add_index_and_statistics

from benchmarks.scale_tables import build_overwrite_table
from paimon_commit import Table
from paimon_commit.operations.expire import ExpireConfig, ExpireSnapshots
from paimon_commit.store import FileStore

SNAPSHOTS = 12
CFG = ExpireConfig(retain_min=3, time_retained_ms=0)
EXPIRED = list(range(1, SNAPSHOTS - 2))


def files(root):
    # (not the maintenance lease's records: bookkeeping, not the table; a killed run leaves
    # its record unreleased)
    return {os.path.relpath(os.path.join(d, f), root)
            for d, _, fs in os.walk(root) for f in fs
            if not os.path.relpath(d, root).startswith(".maintenance")}


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("tpl") / "wh" / "db.db" / "t")
    build_overwrite_table(path, SNAPSHOTS * 2, 2)
    t = Table.open(path)
    for sid in range(1, SNAPSHOTS + 1):
        add_index_and_statistics(t, sid, [f"index-{sid}-a", f"index-{sid}-b"], f"stat-{sid}")
    return path


@pytest.fixture(scope="module")
def unfailed(template, tmp_path_factory):
    """The files after a run where nothing fails, and the paths it unlinked, in order."""
    path = str(tmp_path_factory.mktemp("ref") / "wh" / "db.db" / "t")
    shutil.copytree(template, path)
    io = FaultIO(path)
    r = ExpireSnapshots(FileStore.open(path, io=io), CFG).expire()
    assert r.expired_ids == EXPIRED and not r.skipped
    unlinks = [os.path.relpath(p, path) for kind, m, p in io.log
               if kind == "delete" and m == "_unlink"]
    return files(path), unlinks


STEPS = {
    "manifest": lambda rel: os.path.basename(rel).startswith("manifest-")
    and not os.path.basename(rel).startswith("manifest-list-"),
    "index-file": lambda rel: rel.startswith("index/"),
    "index-manifest": lambda rel: os.path.basename(rel).startswith("index-manifest-"),
    "statistics": lambda rel: rel.startswith("statistics/"),
    "manifest-list": lambda rel: os.path.basename(rel).startswith("manifest-list-"),
}


@pytest.mark.parametrize("step", list(STEPS))
def test_a_failed_metadata_delete_stops_the_run_and_the_next_run_finishes(template, unfailed,
                                                                          tmp_path, step):
    want, unlinks = unfailed
    at = next(i + 1 for i, rel in enumerate(unlinks) if STEPS[step](rel))
    path = str(tmp_path / "wh" / "db.db" / "t")
    shutil.copytree(template, path)
    io = FaultIO(path, kind="delete", at=at, mode="unlink")   # os.unlink: EACCES, once
    r = ExpireSnapshots(FileStore.open(path, io=io), CFG).expire()
    failed = io.fired[2]
    assert os.path.exists(failed)
    assert r.skipped == [f"1 metadata file(s) could not be deleted (e.g. {failed}); the files "
                         f"naming them and the snapshot files are kept for the next run"]
    assert r.expired_ids == []
    # Every expiring snapshot file is still there: the record of what is left.
    assert {f"snapshot/snapshot-{i}" for i in EXPIRED} <= files(path)
    assert_intact(path, min_snapshot=SNAPSHOTS - 2)
    r2 = ExpireSnapshots(FileStore.open(path), CFG).expire()
    assert r2.expired_ids == EXPIRED
    assert sorted(files(path) - want) == []
    assert files(path) == want
    assert_intact(path)
