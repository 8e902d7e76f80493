"""rollback_to and create_tag refuse a half-expired target (audit f5): an expiration killed in
its list step leaves snapshot files whose lists are gone, listed until a rerun deletes them.
Rolling back to one deleted the intact newer snapshots and left a table that did not read; a
tag on one did not read either."""
import os

import pytest

from invariants import assert_intact
from operations.test_changelog import add_index_and_statistics

from benchmarks.scale_tables import build_overwrite_table
from paimon_commit import Table

SNAPSHOTS = 6
TARGET = 3


def files(root):
    # (not the maintenance lease's records: bookkeeping, not the table)
    return {os.path.relpath(os.path.join(d, f), root): os.path.getsize(os.path.join(d, f))
            for d, _, fs in os.walk(root) for f in fs
            if not os.path.relpath(d, root).startswith(".maintenance")}


@pytest.fixture
def table(tmp_path):
    path = str(tmp_path / "wh" / "db.db" / "t")
    build_overwrite_table(path, SNAPSHOTS * 2, 2)
    add_index_and_statistics(Table.open(path), TARGET, ["index-a"], "stat-a")
    return path


def half_expire(path, field):
    """Delete what an interrupted expiration deletes last: one list or the index manifest of
    the target snapshot. Returns the deleted file's path."""
    t = Table.open(path)
    victim = t.store.manifests.path(getattr(t.store.snapshots.snapshot(TARGET), field))
    os.unlink(victim)
    return victim


@pytest.mark.parametrize("field", ["base_manifest_list", "delta_manifest_list",
                                   "index_manifest"])
def test_rollback_to_a_half_expired_snapshot_is_refused_and_changes_nothing(table, field):
    victim = half_expire(table, field)
    before = files(table)
    with pytest.raises(ValueError) as e:
        Table.open(table).rollback_to(snapshot_id=TARGET)
    assert str(e.value) == (
        f"cannot roll back to snapshot {TARGET}: its metadata file {victim} does not exist (a "
        f"half-expired snapshot: an interrupted expiration is deleting it); nothing was changed")
    assert files(table) == before
    assert_intact(table, min_snapshot=TARGET + 1)


@pytest.mark.parametrize("field", ["base_manifest_list", "delta_manifest_list",
                                   "index_manifest"])
def test_create_tag_on_a_half_expired_snapshot_is_refused(table, field):
    victim = half_expire(table, field)
    before = files(table)
    with pytest.raises(ValueError) as e:
        Table.open(table).create_tag("oops", TARGET)
    assert str(e.value).startswith(
        f"cannot create tag 'oops' on snapshot {TARGET}: its metadata file {victim} does not "
        f"exist")
    assert files(table) == before
    assert Table.open(table).tags() == []


def test_rollback_to_a_tag_whose_list_is_gone_is_refused(table):
    Table.open(table).create_tag("t3", TARGET)
    victim = half_expire(table, "base_manifest_list")
    before = files(table)
    with pytest.raises(ValueError, match=f"cannot roll back to tag 't3': its metadata file "
                                         f"{victim} does not exist"):
        Table.open(table).rollback_to(tag="t3")
    assert files(table) == before


def test_rollback_to_and_create_tag_on_a_readable_snapshot_still_work(table):
    t = Table.open(table)
    t.create_tag("t3", TARGET)
    r = t.rollback_to(snapshot_id=TARGET + 1)
    assert r.deleted_snapshots == list(range(TARGET + 2, SNAPSHOTS + 1))
    assert_intact(table)
