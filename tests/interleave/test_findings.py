"""Findings 0-5, rediscovered by the interleaving harness: each as the seed that found it
(a whole random run: operations, interleaving and faults) and as a scripted schedule through
the same scheduler (the minimal interleaving, robust to changes of the call sequence).

Both kinds only run the operations and let the checker judge: a fix may refuse instead of
publishing (AtomicCreateUnsupportedError on storages without an atomic create-if-absent),
which is an acceptable outcome; losing a commit, an unreadable snapshot or tag, or a row
twice is not.
"""
from __future__ import annotations

import pytest

from .ops import (start_abort_committed, start_append, start_expire, start_overwrite,
                  start_retry, start_tag)
from .scheduler import Fault, RandomPolicy
from .sim import Sim
from .test_interleavings import simulate



class _Script:
    """A scripted run: operations started by hand, moved by hand (`sched.run_until`,
    `sched.finish`, `sched.grant`), then checked like a random run."""

    def __init__(self, tmp_path, storage: str, table_options=None):
        self.sim = Sim(storage, str(tmp_path), RandomPolicy(0, fault_rate=0.0), seed=0,
                       table_options=table_options)
        self.sim.replay = "a scripted schedule (tests/interleave/test_findings.py)"
        self.sched = self.sim.sched

    def __enter__(self):
        self._cm = self.sim.running()
        self._cm.__enter__()
        return self

    def __exit__(self, *exc):
        self._cm.__exit__(*exc)

    def finish(self, op):
        self.sched.finish(op.name)
        return op

    def until(self, op, level: str, method: str, path_part: str, fault=None, create=None):
        return self.sched.run_until(op.name, lambda c: c.level == level and c.method == method
                                    and path_part in c.path
                                    and (create is None or c.create == create), fault)

    def check(self, where: str) -> None:
        self.sched.run_all()
        self.sim.finish_unfinished()
        self.sim.check(where)
        self.sim.pypaimon_agrees()


# --- finding 0: the same messages committed twice on one commit object -----------------

def test_finding_0_duplicate_commit_seed_3_local(tmp_path):
    # Round 0 is one `retry` operation: commit(msgs, 7) twice, then commit(other, 8).
    simulate(tmp_path, "local", 3)


@pytest.mark.parametrize("storage", ["local", "memory"])
def test_finding_0_duplicate_commit_scripted(tmp_path, storage):
    with _Script(tmp_path, storage) as s:
        s.finish(start_retry(s.sim, "a"))
        s.check("after commit(msgs, i) twice and commit(next, i + 1)")


# --- finding 1: PyArrowFileIO's check-then-move create replaces a published snapshot -------

def test_finding_1_pyarrow_move_replaces_snapshot_seed_3_arrow(tmp_path):
    # No faults at all: round 0, an overwrite and an append interleaved on the pyarrow
    # storage both return snapshot 1.
    simulate(tmp_path, "arrow", 3, exclude=("retry", "abort_committed"), rate=0.0)


def test_finding_1_pyarrow_move_replaces_snapshot_scripted(tmp_path):
    with _Script(tmp_path, "arrow") as s:
        a = start_append(s.sim, "a")
        b = start_append(s.sim, "b")
        # A has checked that snapshot-1 is absent and written its temp file: the move is next.
        s.until(a, "fs", "move", "snapshot-1")
        s.finish(b)                       # B publishes snapshot-1 and returns 1
        s.finish(a)                       # A's move replaces it and returns 1 too
        s.check("after two appends raced on the pyarrow storage")


# --- finding 2: a move that renamed, then failed, taken as a lost race ---------------------

def test_finding_2_pyarrow_move_failed_after_rename_seed_11_arrow(tmp_path):
    # A declared single writer (commit.single-writer), one operation at a time, only
    # lost-reply faults: in round 2 fs.move(snapshot-2) fails after the rename (tick 95);
    # snapshot 2 loses its base list and snapshot 3 publishes the rows again.
    simulate(tmp_path, "arrow", 11, exclude=("retry", "abort_committed"), rate=0.08,
             faults=(Fault.AFTER,), max_ops=1, single_writer=True)


def test_finding_2_pyarrow_move_failed_after_rename_scripted(tmp_path):
    with _Script(tmp_path, "arrow", {"commit.single-writer": "true"}) as s:
        s.finish(start_append(s.sim, "a"))
        a = start_append(s.sim, "a")
        s.until(a, "fs", "move", "snapshot-2", fault=Fault.AFTER)
        s.finish(a)
        s.check("after a publish whose move renamed, then failed")


# --- finding 3: a slow commit re-creates an expired snapshot id on an object store ----------

def test_finding_3_recreated_snapshot_id_on_object_store_seed_9_memory(tmp_path):
    # No faults; round 1 is a commit storm: append#4, parked right before its conditional
    # PUT of snapshot-4, publishes it after append#3 and #5 published 4 and 5 and expire#6
    # removed 3 and 4; both append#3 and append#4 report snapshot 4.
    simulate(tmp_path, "memory", 9, exclude=("retry", "abort_committed"), rate=0.0,
             storms=True)


def test_finding_3_recreated_snapshot_id_on_object_store_scripted(tmp_path):
    with _Script(tmp_path, "memory") as s:
        s.finish(start_append(s.sim, "a"))          # snapshot 1
        slow = start_append(s.sim, "a")
        # Based on snapshot 1, its precondition (snapshot-1 exists) passed: the conditional
        # PUT of snapshot-2 is next.
        s.until(slow, "obj", "put", "snapshot/snapshot-2", create=True)
        s.finish(start_append(s.sim, "b"))          # snapshot 2
        s.finish(start_append(s.sim, "b"))          # snapshot 3
        s.finish(start_expire(s.sim, retain_max=1))  # expires 1 and 2
        s.finish(slow)   # PUT-if-absent of snapshot-2 succeeds: it is gone
        s.check("after a slow commit published an expired snapshot id")


# --- finding 4: check-then-put for good after one 501 reply ---------------------------------

def test_finding_4_check_then_put_after_one_501_seed_16_memory(tmp_path):
    # Only 501 replies to conditional creates (10 % of them): process 0 falls back to
    # check-then-put for good; in round 5 append#6, append#7 (process 0) and overwrite#8 all
    # return snapshot 3.
    simulate(tmp_path, "memory", 16, exclude=("retry", "abort_committed"), rate=0.1,
             faults=(Fault.UNSUPPORTED,))


def test_finding_4_check_then_put_after_one_501_scripted(tmp_path):
    with _Script(tmp_path, "memory") as s:
        a = start_append(s.sim, "a")
        b = start_append(s.sim, "b")
        # One 501 to A's conditional create: A falls back to HEAD, then an unconditional PUT.
        s.until(a, "obj", "put", "snapshot/snapshot-1", fault=Fault.UNSUPPORTED, create=True)
        s.until(a, "obj", "put", "snapshot/snapshot-1", create=False)
        s.finish(b)      # B's conditional create of snapshot-1 succeeds
        s.finish(a)      # A's PUT replaces it
        s.check("after one 501 reply to a conditional create and a concurrent writer")


# --- finding 5: abort deletes files of retained snapshots and tags --------------------------

def test_finding_5_abort_deletes_retained_files_seed_36_local(tmp_path):
    # No faults: in round 1, abort_committed#5 aborts the messages of a commit that a later
    # overwrite replaced in the latest snapshot; snapshot 1 loses a data file.
    simulate(tmp_path, "local", 36, exclude=("retry",), rate=0.0)


def test_finding_5_abort_deletes_retained_files_scripted(tmp_path):
    with _Script(tmp_path, "local") as s:
        first = s.finish(start_append(s.sim, "a"))  # snapshot 1
        s.finish(start_tag(s.sim))                  # a tag on snapshot 1
        s.finish(start_overwrite(s.sim, "a"))       # snapshot 2 replaces partition a
        s.finish(start_abort_committed(s.sim, first))
        s.check("after abort() of messages committed in snapshot 1")
