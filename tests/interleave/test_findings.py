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

from .ops import (start_abort_committed, start_append, start_compact, start_etl,
                  start_expire, start_overwrite, start_repeat, start_retag, start_retry,
                  start_rollback, start_tag)
from .scheduler import Fault, RandomPolicy
from .sim import InvariantViolation, Sim
from .test_interleavings import VARIANTS, simulate



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
    simulate(tmp_path, "local", 3, extras=False)


@pytest.mark.parametrize("storage", ["local", "memory"])
def test_finding_0_duplicate_commit_scripted(tmp_path, storage):
    with _Script(tmp_path, storage) as s:
        s.finish(start_retry(s.sim, "a"))
        s.check("after commit(msgs, i) twice and commit(next, i + 1)")


# --- finding 1: PyArrowFileIO's check-then-move create replaces a published snapshot -------

def test_finding_1_pyarrow_move_replaces_snapshot_seed_3_arrow(tmp_path):
    # No faults at all: round 0, an overwrite and an append interleaved on the pyarrow
    # storage both return snapshot 1.
    simulate(tmp_path, "arrow", 3, exclude=("retry", "abort_committed"), rate=0.0, extras=False)


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
             faults=(Fault.AFTER,), max_ops=1, single_writer=True, extras=False)


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
             storms=True, extras=False)


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
             faults=(Fault.UNSUPPORTED,), extras=False)


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
    simulate(tmp_path, "local", 36, exclude=("retry",), rate=0.0, extras=False)


def test_finding_5_abort_deletes_retained_files_scripted(tmp_path):
    with _Script(tmp_path, "local") as s:
        first = s.finish(start_append(s.sim, "a"))  # snapshot 1
        s.finish(start_tag(s.sim))                  # a tag on snapshot 1
        s.finish(start_overwrite(s.sim, "a"))       # snapshot 2 replaces partition a
        s.finish(start_abort_committed(s.sim, first))
        s.check("after abort() of messages committed in snapshot 1")


# === issue 25 (item 7): rollback, tag replacement and repeats racing maintenance ============
#
# Each failed on the code before the fixes of issue 25 (expiration's content re-checks, the
# maintenance lease, exactly-once repeats) with the InvariantViolation quoted; each passes
# with them. The seeds run the whole random mix (extras: rollback racing expirations, tag
# replacement, consumers, etl commits and repeats; Ctrl-C between two FileIO calls).

def _before_deleting(s, op):
    """Park an expiration right after it planned: at its second listing of the tag
    directory (the re-check of today's code) or its first delete, whichever comes first."""
    listings = []

    def pred(c):
        if c.method.startswith("delete"):
            return True
        if c.level == "io" and c.method in ("list_status", "list_names") \
                and c.path.rstrip("/").endswith("/tag"):
            listings.append(c)
            return len(listings) == 2
        return False
    return s.sched.run_until(op.name, pred)


# --- finding 1: a rollback during an expiration leaves the table with no snapshot ------------

def test_i25_finding_1_rollback_during_expiration_seed_141_local(tmp_path):
    # The budget's local variant. Today's code, round 2 (expire#5, rollback#6, consume#7):
    # "the table has no snapshot any more (it had snapshots up to 4): every row is gone".
    simulate(tmp_path, seed=141, **VARIANTS["local"])


@pytest.mark.parametrize("storage", ["local", "memory"])
def test_i25_finding_1_rollback_during_expiration_scripted(tmp_path, storage):
    # Today's code: "the table has no snapshot any more (it had snapshots up to 8): every row
    # is gone" -- the expiration planned 1..7 (keeping 8), the rollback to 5 deleted 6..8,
    # the expiration deleted 1..5.
    with _Script(tmp_path, storage) as s:
        for _ in range(8):
            s.finish(start_append(s.sim, "a"))       # snapshots 1..8
        s.sim.check("after 8 appends")
        e = start_expire(s.sim, retain_max=1)       # plans 1..7
        _before_deleting(s, e)
        s.finish(start_rollback(s.sim, 5))          # another handle: 6..8 deleted
        s.finish(e)
        s.check("after a rollback to 5 during an expiration of 1..7")


# --- finding 2: a tag replaced during an expiration loses its files ---------------------------

def test_i25_finding_2_tag_replaced_during_expiration_seed_258_local(tmp_path):
    # The budget's local variant. Today's code, round 2 (expire#5, retag#6 moving tag2,
    # repeat#7): "tag tag2 (snapshot 1) does not read completely: FileNotFoundError: ...
    # manifest-list-..." and "tag tag2 (snapshot 1) no longer reads the 3 rows its snapshot
    # had when the tag was created".
    simulate(tmp_path, seed=258, **VARIANTS["local"])


@pytest.mark.parametrize("storage", ["local", "memory"])
def test_i25_finding_2_tag_replaced_during_expiration_scripted(tmp_path, storage):
    # Today's code: "tag tag9 (snapshot 4) does not read completely: FileNotFoundError: ...
    # manifest-list-..." and "tag tag9 (snapshot 4) no longer reads the 8 rows its snapshot
    # had when the tag was created" --
    # the expiration planned with the tag on 9; its re-check compared tag names only, and
    # the tag, deleted and created again on 4, kept its name.
    with _Script(tmp_path, storage) as s:
        for _ in range(4):
            s.finish(start_append(s.sim, "a"))       # snapshots 1..4
        s.finish(start_overwrite(s.sim, "a"))       # 5: the files of 1..4 only 4 and older read
        for _ in range(4):
            s.finish(start_append(s.sim, "b"))       # 6..9
        tag = s.finish(start_tag(s.sim, 9))
        s.sim.check("after 9 commits and a tag on 9")
        e = start_expire(s.sim, retain_max=1)       # plans 1..8 (the tag keeps 9)
        _before_deleting(s, e)
        s.finish(start_retag(s.sim, tag.detail, 4))  # the tag, deleted and created on 4
        s.finish(e)
        s.check("after the tag was moved to 4 during an expiration of 1..8")


# --- finding 3: a repeat after a rollback is a false no-op ------------------------------------

def test_i25_finding_3_repeat_after_rollback_seed_56_local(tmp_path):
    # The budget's local variant. etl#3 published snapshot 2, rollback#7 went back to 1,
    # etl#8 got id 2 again; today's code, round 5 (repeat#10 of etl#3, overwrite#11):
    # "repeat#10 returned snapshot(s) [2], but the latest snapshot 3 lacks its rows [2]".
    simulate(tmp_path, seed=56, **VARIANTS["local"])


@pytest.mark.parametrize("storage", ["local", "memory"])
def test_i25_finding_3_repeat_after_rollback_scripted(tmp_path, storage):
    # Today's code: "repeat#4 returned snapshot(s) [2], but the latest snapshot 2 lacks its
    # rows [2, 3]" -- A of commit user etl was snapshot 2, rolled back; B of etl got id 2
    # again; the repeat of A took snapshot 2 (same user, batch identifier, kind) for A's.
    with _Script(tmp_path, storage) as s:
        s.finish(start_append(s.sim, "a"))          # 1
        a = s.finish(start_etl(s.sim, "a"))         # 2: A, commit user etl
        s.sim.check("after A")
        s.finish(start_rollback(s.sim, 1))
        s.finish(start_etl(s.sim, "b"))             # 2 again: B, commit user etl
        s.finish(start_repeat(s.sim, a))            # A again
        s.check("after A, a rollback, B (same id) and A again")


# --- finding 6: a repeat of an interrupted commit after a compaction publishes it twice ------

def test_i25_finding_6_duplicate_after_compaction_seed_95_local(tmp_path):
    # Only Ctrl-C faults, 5 % of the FileIO writes: append#2 is interrupted writing the LATEST
    # hint of the snapshot it published, a compaction rewrites its file; today's code, round 4
    # (repeat#11 of append#2, overwrite#10): "snapshot 6 has rows more than once: ids [4, 5]".
    simulate(tmp_path, "local", 95, faults=(Fault.INTERRUPT,), rate=0.05, storms=True)


@pytest.mark.parametrize("storage", ["local", "memory"])
def test_i25_finding_6_duplicate_after_compaction_scripted(tmp_path, storage):
    # Today's code: "snapshot 5 has rows more than once: ids [4, 5]" -- the commit published
    # snapshot 3 and was interrupted (Ctrl-C) writing the LATEST hint; the compaction rewrote
    # its file; the repeat found it not live and published it again.
    with _Script(tmp_path, storage) as s:
        s.finish(start_append(s.sim, "a"))          # 1
        s.finish(start_append(s.sim, "a"))          # 2
        a = start_append(s.sim, "a")
        s.until(a, "io", "overwrite_atomic", "LATEST", fault=Fault.INTERRUPT)
        s.finish(a)                                 # published 3, then interrupted
        assert a.outcome == "unknown" and "interrupted" in a.detail, a
        s.finish(start_compact(s.sim, "a"))         # 4: rewrites the files of 1..3
        s.finish(start_repeat(s.sim, a))
        s.check("after an interrupted commit, a compaction and the commit again")


# --- the maintenance lease: a holder paused past its lease is taken over -----------------------

def _before_check_or_delete(s, op):
    """Park a maintainer at its first lease check (the HEAD of the record after its own,
    before a delete step) or, on code without the lease, its first delete."""
    return s.sched.run_until(op.name, lambda c: c.method.startswith("delete") or (
        ".maintenance/lease-" in c.path and c.method in ("exists", "file_size", "head")))


@pytest.mark.parametrize("storage", ["local", "memory"])
def test_i25_lease_expired_while_paused_is_taken_over_scripted(tmp_path, storage):
    # An expiration that planned 1..7 holds the lease and is paused past it (the lease clock
    # jumps); a rollback to 5 takes the lease over, and is refused: the expiration's mark
    # (expiring.py, written before its re-check) covers 5, whose files it may have deleted;
    # the expiration resumes, finds a newer lease record at its check and deletes nothing.
    # Without the lease and the mark this is finding 1: "the table has no snapshot any more
    # (it had snapshots up to 8)". A rollback to 8, outside the mark, takes the lease over
    # and finishes.
    with _Script(tmp_path, storage) as s:
        for _ in range(9):
            s.finish(start_append(s.sim, "a"))       # snapshots 1..9
        s.sim.check("after 9 appends")
        e = start_expire(s.sim, retain_max=2)       # plans 1..7
        _before_check_or_delete(s, e)
        s.sim.expire_leases(" (the expiration is paused)")
        r = s.finish(start_rollback(s.sim, 5))
        assert r.outcome == "unknown" and "an expiration of snapshots 1..7 started" in r.error, r
        r = s.finish(start_rollback(s.sim, 8))
        assert r.outcome == "ok", r                 # it took the lease over
        s.finish(e)
        s.check("after a rollback took over the lease of a paused expiration")


# --- a repeat that runs while the first call is still in flight -------------------------------
# Found by the issue-25 mix (and left out of it since): a repeat of a commit whose first call
# is still in flight (a retry after a client-side timeout) was screened before the first call
# recorded its files, and both published them. Today's code before the fix: "snapshot 3
# publishes a data file twice: file data-....parquet is added twice (it is already live)".
# Now calls of one process committing the same files serialise (commit_record.InFlight): the
# repeat waits at a scheduling point (`sim.wait`) until the first call returned, then screens.

@pytest.mark.parametrize("storage", ["local", "memory"])
def test_i25_a_repeat_racing_its_first_call_waits_for_it_scripted(tmp_path, storage):
    with _Script(tmp_path, storage) as s:
        s.finish(start_append(s.sim, "a"))          # 1
        a = start_append(s.sim, "a")
        s.until(a, "io", "try_create_atomic", "snapshot-2")   # about to publish
        r = start_repeat(s.sim, a)                  # the retry, the same messages
        waited = s.until(r, "sim", "wait", "")      # (before the fix: it published 2 here)
        s.finish(a)                                 # the first call publishes 2
        s.finish(r)                                 # the repeat: a no-op returning 2
        s.check("after a commit and its repeat raced")
        assert waited is not None
        assert (a.outcome, a.sids, r.outcome, r.sids) == ("ok", [2], "ok", [2]), (a, r)


@pytest.mark.parametrize("storage", ["local", "memory"])
def test_i25_a_repeat_waiting_for_an_interrupted_first_call_finds_its_snapshot_scripted(
        tmp_path, storage):
    # The first call publishes 2 and is interrupted (Ctrl-C) writing the LATEST hint while
    # the repeat waits: the repeat finds snapshot 2 in the table's history and returns it.
    with _Script(tmp_path, storage) as s:
        s.finish(start_append(s.sim, "a"))          # 1
        a = start_append(s.sim, "a")
        s.until(a, "io", "try_create_atomic", "snapshot-2")
        r = start_repeat(s.sim, a)
        waited = s.until(r, "sim", "wait", "")
        s.until(a, "io", "overwrite_atomic", "LATEST", fault=Fault.INTERRUPT)
        s.finish(a)                                 # published 2, then interrupted
        s.finish(r)
        s.check("after an interrupted commit and its waiting repeat")
        assert waited is not None
        assert a.outcome == "unknown" and "interrupted" in a.detail, a
        assert (r.outcome, r.sids) == ("ok", [2]), r


# --- a batch commit reported a refusal after its snapshot landed (found on the merged lease,
# budget seeds 3 and 12 on memory): a one-shot commit runs post-commit maintenance inline, and
# a 501 to the lease's conditional create (taking or releasing it) raised
# AtomicCreateUnsupportedError, a CommitFailedError, from commit() after the snapshot was
# published: 'row 2 of etl#1 (refused) is in the latest snapshot, though that operation
# committed nothing'. Now the turn is skipped (taking) or the record left to expire (releasing).

@pytest.mark.parametrize("lease_create", ["take", "release"])
def test_i25_open_a_501_to_the_lease_after_a_batch_commit_reads_as_a_refusal_scripted(
        tmp_path, lease_create):
    with _Script(tmp_path, "memory") as s:
        s.finish(start_append(s.sim, "a"))          # 1
        e = start_etl(s.sim, "b")                   # 2, then post-commit maintenance
        if lease_create == "release":
            s.until(e, "obj", "put", ".maintenance/lease-", create=True)
            s.sched.grant(e.name)
        s.until(e, "obj", "put", ".maintenance/lease-", create=True, fault=Fault.UNSUPPORTED)
        s.finish(e)
        s.check("after a 501 to the lease's create in a batch commit's maintenance")


# --- a rollback between an interrupted expiration and its rerun ---------------------------------
# Found by the soak (local, 20 rounds at rate 0.03), round 7 (expire#26, expire#28, rollback#27,
# retag#29): "snapshot 3 does not read completely: FileNotFoundError: .../manifest-list-...".
# expire#28 (retain-max 3 over snapshots 2..6) planned 2..3 (end 4; tag9 on 2 kept 2's lists),
# deleted snapshot 3's base and delta lists in its list step, then its lease check before the
# snapshot-file step failed (an injected fault; a kill does the same) and it stopped, leaving the
# half-expired snapshot files 2 and 3 for the rerun -- by design (docs/safety.md, "Crashes").
# rollback#27 to 5 (lease taken after expire#28 released it) deleted snapshot 6; retag#29 moved
# tag9 to 4. The rerun, again with retain-max 3, computed its first kept snapshot from the new
# latest (5): 3, so it expired 2 only and kept snapshot 3, whose lists were gone. Fixed in
# ExpireSnapshots._past_half_expired: a run moves its first kept snapshot past half-expired
# snapshots (a manifest list absent) at the head of the history, never past the latest.

def test_i25_rollback_between_an_interrupted_expiration_and_its_rerun_seed_892431_local(
        tmp_path):
    simulate(tmp_path, seed=892431, rounds=20, rate=0.03, **VARIANTS["local"])


@pytest.mark.parametrize("storage", ["local", "memory"])
def test_i25_rollback_between_an_interrupted_expiration_and_its_rerun_scripted(tmp_path,
                                                                                storage):
    # Before the fix: "snapshot 3 does not read completely: FileNotFoundError: ...
    # manifest-list-..." -- the expiration (retain-max 3 over 1..6) deleted the lists of 1..3
    # and failed to delete snapshot-1 (the snapshot files stay); the rollback to 5 deleted 6;
    # the rerun (retain-max 3 over 1..5) kept 3, 4, 5.
    with _Script(tmp_path, storage) as s:
        for _ in range(6):
            s.finish(start_append(s.sim, "a"))       # snapshots 1..6
        s.sim.check("after 6 appends")
        e = start_expire(s.sim, retain_max=3)       # plans 1..3 (keeps 4..6)
        call = s.sched.run_until(e.name, lambda c: c.method.startswith("delete")
                                 and c.path.endswith("snapshot/snapshot-1"), Fault.BEFORE)
        assert call is not None, "the expiration never reached its snapshot-file step"
        s.finish(e)                                 # stops there: lists of 1..3 are gone
        r = s.finish(start_rollback(s.sim, 5))      # 6 deleted: the latest is 5
        assert r.outcome == "ok", r
        s.check("after a rollback between an interrupted expiration and its rerun")


# --- ... and a rerun whose retention keeps everything ---------------------------------------
# The fix above ran in ExpireSnapshots._plan_until, which _plan skipped when the retention
# kept every snapshot (end <= earliest): after a rollback far back (the latest moved back to
# the first kept snapshot) or with a larger retain-max, the rerun returned early and the
# half-expired head snapshots stayed, unreadable (FileNotFoundError on their lists).

@pytest.mark.parametrize("storage", ["local", "memory"])
@pytest.mark.parametrize("why", ["rollback", "retain-max"])
def test_i25_rerun_whose_retention_keeps_everything_finishes_half_expired_snapshots(
        tmp_path, storage, why):
    with _Script(tmp_path, storage) as s:
        for _ in range(5):
            s.finish(start_append(s.sim, "a"))       # snapshots 1..5
        e = start_expire(s.sim, retain_max=3)       # plans 1..2 (keeps 3..5)
        call = s.sched.run_until(e.name, lambda c: c.method.startswith("delete")
                                 and c.path.endswith("snapshot/snapshot-1"), Fault.BEFORE)
        assert call is not None, "the expiration never reached its snapshot-file step"
        s.finish(e)                                 # stops there: lists of 1..2 are gone
        assert "unfinished" in e.detail, e
        if why == "rollback":
            r = s.finish(start_rollback(s.sim, 3))  # 4, 5 deleted: the latest is 3, and
            assert r.outcome == "ok", r            # retain-max 3 keeps 1..3
        else:
            e.target = 10                           # the rerun keeps up to 10: all of 1..5
        s.check(f"after an interrupted expiration and a rerun whose retention keeps "
                f"everything ({why})")
