"""Post-commit maintenance in TableCommit: SYNC, ASYNC, write-only, the error slot."""
import pytest

from conftest import SCHEMA, make_rows
from invariants import assert_intact

from paimon_commit import CorruptMetadataError, Table
from paimon_commit.operations.expire import ExpireSnapshots
from paimon_commit.table_commit import MaintenanceError

EAGER = {"snapshot.num-retained.min": "2", "snapshot.time-retained": "0 ms",
         "snapshot.expire.limit": "100"}


def commit_rows(table, commit, ids, identifier, hr=1):
    w = table.new_writer()
    w.write_arrow(make_rows(ids, hr=hr))
    return commit.commit(w.prepare_commit(), identifier)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_every_commit_expires_old_snapshots(table_path, mode):
    t = Table.create(str(table_path), SCHEMA, ["dt", "hr"],
                     dict(EAGER, **{"snapshot.expire.execution-mode": mode}))
    with t.new_commit(commit_user="job") as c:
        for i in range(1, 8):
            commit_rows(t, c, [i], i)
    # close() waited for the queued async runs.
    assert [s.id for s in t.snapshots()] == [6, 7]
    assert c.maintenance_error is None
    assert_intact(table_path, {7: list(range(1, 8))})


def test_write_only_skips_maintenance(table_path):
    t = Table.create(str(table_path), SCHEMA, ["dt", "hr"], dict(EAGER, **{"write-only": "true"}))
    with t.new_commit() as c:
        for i in range(1, 6):
            commit_rows(t, c, [i], i)
    assert len(t.snapshots()) == 5


def test_per_commit_options_override_table_options(table):
    with table.new_commit(options=EAGER) as c:
        for i in range(1, 6):
            commit_rows(table, c, [i], i)
    assert [s.id for s in table.snapshots()] == [4, 5]


def _break_maintenance(table, table_path):
    table.create_tag("bad")
    (table_path / "tag" / "tag-bad").write_text("{ not json")


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_failure_is_parked_and_raised_by_the_next_commit(table_path, mode):
    t = Table.create(str(table_path), SCHEMA, ["dt", "hr"],
                     dict(EAGER, **{"snapshot.expire.execution-mode": mode}))
    c = t.new_commit(commit_user="job")
    commit_rows(t, c, [1], 1)
    _break_maintenance(t, table_path)
    for i in (2, 3):
        assert commit_rows(t, c, [i], i) == i      # the commit itself succeeds
    assert c.wait_for_maintenance(timeout=30)
    assert isinstance(c.maintenance_error, CorruptMetadataError)
    with pytest.raises(MaintenanceError, match="tag-bad.*nothing was committed by this call"):
        commit_rows(t, c, [4], 4)
    assert t.latest_snapshot().id == 3                # ...before it published anything
    with pytest.raises(MaintenanceError):             # the slot stays set
        commit_rows(t, c, [5], 5)
    c.close()
    assert [r["id"] for r in t.read_arrow().to_pylist()] == [1, 2, 3]


def test_ctrl_c_during_sync_maintenance_stops_the_program_at_once(table_path, monkeypatch):
    t = Table.create(str(table_path), SCHEMA, ["dt", "hr"], EAGER)
    c = t.new_commit(commit_user="job")
    commit_rows(t, c, [1], 1)

    def interrupted(self, dry_run=False):
        raise KeyboardInterrupt

    monkeypatch.setattr(ExpireSnapshots, "expire", interrupted)
    with pytest.raises(KeyboardInterrupt):
        commit_rows(t, c, [2], 2)
    assert t.latest_snapshot().id == 2             # published before maintenance ran
    assert c.maintenance_error is None             # not parked for a later commit
    monkeypatch.undo()
    assert commit_rows(t, c, [3], 3) == 3
    c.close()


def test_batch_commit_runs_maintenance_inline_and_raises(table_path):
    t = Table.create(str(table_path), SCHEMA, ["dt", "hr"], EAGER)
    with t.new_commit() as c:
        for i in range(1, 4):
            commit_rows(t, c, [i], None)
    _break_maintenance(t, table_path)
    with t.new_commit() as c:
        with pytest.raises(CorruptMetadataError, match="tag-bad"):
            commit_rows(t, c, [9], None)
    assert t.latest_snapshot().total_record_count == 4


def test_expire_snapshots_on_demand(table):
    with table.new_commit(options={"write-only": "true"}) as c:
        for i in range(1, 6):
            commit_rows(table, c, [i], i)
        dry = c.expire_snapshots(dry_run=True, retain_min=1, time_retained_ms=0)
        assert dry.expired_ids == [1, 2, 3, 4] and len(table.snapshots()) == 5
        real = c.expire_snapshots(retain_min=1, time_retained_ms=0)
    assert real.expired_ids == [1, 2, 3, 4]
    assert [s.id for s in table.snapshots()] == [5]


def test_wait_for_maintenance_reports_a_timeout(table_path):
    # Regression: before Python 3.11 concurrent.futures.TimeoutError is not the builtin
    # TimeoutError, and a timeout was reported as "finished".
    import threading
    t = Table.create(str(table_path), SCHEMA, ["dt", "hr"],
                     dict(EAGER, **{"snapshot.expire.execution-mode": "async"}))
    gate = threading.Event()
    c = t.new_commit()
    c._executor = __import__("concurrent.futures").futures.ThreadPoolExecutor(1)
    c._last_future = c._executor.submit(gate.wait)
    try:
        assert c.wait_for_maintenance(timeout=0.05) is False
    finally:
        gate.set()
    assert c.wait_for_maintenance(timeout=5) is True
    c.close()
