"""Compaction in the interleaving harness (issue 18, item 2): scripted schedules that pin the
interleavings the random runs of test_interleavings.py reach only now and then. Each lets the
checker judge the table (every retained snapshot reads, no commit lost, no row twice, no row
surviving an overwrite or drop of its partition, a compaction that failed before publishing
left none of its data files), and asserts the compaction's own outcome.
"""
from __future__ import annotations

import pytest

from paimon_commit import Table
import paimon_commit.operations.commit as commit_module
import paimon_commit.operations.compact.job as compact_module

from .ops import (start_append, start_compact, start_drop, start_expire, start_orphan,
                  start_overwrite)
from .scheduler import Fault
from .sim import InvariantViolation
from .test_findings import _Script

STORAGES = ["local", "memory"]


def _data_files_left(sim, op):
    return [p for p in op.written if p.endswith(".parquet") and sim.plain.exists(p)]


def _three_appends(s, partition="a"):
    return [s.finish(start_append(s.sim, partition)) for _ in range(3)]


RIVALS = {
    "overwrite": lambda sim: start_overwrite(sim, "a"),
    "drop": lambda sim: start_drop(sim, "a"),
    "compaction": lambda sim: start_compact(sim, "a"),
}


@pytest.mark.parametrize("storage", STORAGES)
@pytest.mark.parametrize("rival", sorted(RIVALS))
def test_a_compaction_whose_inputs_were_removed_is_refused_and_leaves_nothing(
        tmp_path, storage, rival):
    with _Script(tmp_path, storage) as s:
        _three_appends(s)
        c = start_compact(s.sim, "a")
        # Planned, rewritten and about to publish snapshot 4 when the rival publishes it.
        s.until(c, "io", "try_create_atomic", "snapshot-4")
        r = s.finish(RIVALS[rival](s.sim))
        assert (r.outcome, r.sids) == ("ok", [4]), r
        s.finish(c)
        assert c.outcome == "refused" and c.error.startswith("CompactionConflictError"), c
        assert "3 of its 3 input files are no longer live in snapshot 4" in c.error
        assert any(p.endswith(".parquet") for p in c.written)
        assert _data_files_left(s.sim, c) == []
        s.check(f"after a compaction lost its inputs to a {rival}")


@pytest.mark.parametrize("storage", STORAGES)
def test_a_compaction_whose_inputs_were_expired_during_its_rewrite_is_refused(
        tmp_path, storage):
    with _Script(tmp_path, storage) as s:
        _three_appends(s)
        c = start_compact(s.sim, "a")
        s.until(c, "io", "read_bytes", ".parquet")   # planned; no input read yet
        s.finish(start_overwrite(s.sim, "a"))       # snapshot 4 replaces the inputs
        e = s.finish(start_expire(s.sim, 1))        # and expiring 1-3 deletes them
        assert e.outcome == "ok" and "expired=[1, 2, 3]" in e.detail, e
        s.finish(c)
        assert c.outcome == "refused" and "disappeared while being rewritten" in c.error, c
        assert _data_files_left(s.sim, c) == []
        s.check("after expiration removed a compaction's inputs during its rewrite")


@pytest.mark.parametrize("storage", STORAGES)
def test_an_append_and_an_orphan_cleanup_during_a_compaction(tmp_path, storage):
    with _Script(tmp_path, storage) as s:
        ids = [r for o in _three_appends(s) for r in o.rows]
        c = start_compact(s.sim, "a")
        s.until(c, "io", "try_create_atomic", "snapshot-4")
        a = s.finish(start_append(s.sim, "a"))      # same partition: snapshot 4
        o = s.finish(start_orphan(s.sim))           # must not take the compaction's files
        assert o.outcome == "ok" and "deleted=0" in o.detail, o
        s.finish(c)
        assert (a.sids, c.outcome, c.sids) == ([4], "ok", [5]), c
        t = Table.open(s.sim.path, file_io=s.sim.plain)
        assert t.latest_snapshot().commit_kind == "COMPACT"
        assert sorted(t.read_arrow().column("id").to_pylist()) == sorted(ids + a.rows)
        s.check("after an append and an orphan cleanup ran inside a compaction")


@pytest.mark.parametrize("storage", STORAGES)
def test_a_lost_reply_on_the_compaction_snapshot_is_its_success(tmp_path, storage):
    with _Script(tmp_path, storage) as s:
        _three_appends(s)
        c = start_compact(s.sim, "a")
        s.until(c, "io", "try_create_atomic", "snapshot-4", fault=Fault.AFTER)
        s.finish(c)
        assert (c.outcome, c.sids) == ("ok", [4]), c
        s.check("after the compaction's publish lost its reply")


@pytest.mark.parametrize("storage", STORAGES)
def test_compactions_of_two_partitions_interleaved_both_land(tmp_path, storage):
    with _Script(tmp_path, storage) as s:
        _three_appends(s, "a")
        _three_appends(s, "b")
        ca, cb = start_compact(s.sim, "a"), start_compact(s.sim, "b")
        s.until(ca, "io", "try_create_atomic", "snapshot-7")
        s.until(cb, "io", "try_create_atomic", "snapshot-7")
        s.finish(ca)
        s.finish(cb)
        assert sorted(ca.sids + cb.sids) == [7, 8] and ca.outcome == cb.outcome == "ok"
        s.check("after two compactions of different partitions raced")


# --- the checker sees a compaction that breaks its promises -----------------------------------

def test_the_checker_sees_a_refused_compaction_that_left_its_files(tmp_path, monkeypatch):
    monkeypatch.setattr(compact_module.AppendCompaction, "abort",
                        lambda self, rewritten, committed_on=None: 0)
    with _Script(tmp_path, "local") as s:
        _three_appends(s)
        c = start_compact(s.sim, "a")
        s.until(c, "io", "try_create_atomic", "snapshot-4")
        s.finish(start_drop(s.sim, "a"))
        s.finish(c)
        assert c.outcome == "refused"
        with pytest.raises(InvariantViolation, match=r"compact#\d+ \(refused: Compaction"
                                                     r"ConflictError.*\) left 1 data file"):
            s.check("after a refused compaction kept its files")


def test_the_checker_sees_a_compaction_committed_over_removed_inputs(tmp_path, monkeypatch):
    # Both conflict checks off: the compaction believes its base is the latest snapshot, and
    # FileStoreCommit does not check the DELETEs.
    monkeypatch.setattr(compact_module, "_lists_of", lambda snapshot: ("same",))
    monkeypatch.setattr(commit_module.FileStoreCommit, "_check_conflicts",
                        lambda self, latest, entries: False)
    with _Script(tmp_path, "local") as s:
        _three_appends(s)
        c = start_compact(s.sim, "a")
        s.until(c, "io", "try_create_atomic", "snapshot-4")
        s.finish(start_overwrite(s.sim, "a"))
        s.finish(c)
        assert (c.outcome, c.sids) == ("ok", [5])
        with pytest.raises(InvariantViolation, match=r"survived overwrite#\d+"):
            s.check("after a compaction committed over an overwrite")
