"""A snapshot create that failed on the client can land later (audit issue25u): on an object
store the PUT whose reply timed out is completed by the store whenever `snapshot-N` is free,
whatever the base is by then. Whatever happens in between (another writer, a compaction, an
expiration, the id taken by others and expired), a commit publishes its rows once or refuses;
it never publishes them twice, never reports success without them, and never deletes a row
committed after it. Real tables in tmp dirs; our reader and pypaimon read the latest back."""
import pytest

from conftest import D1, make_rows, write
from oracle import pp_read

from paimon_commit import Table
from paimon_commit.errors import (CommitConflictError, CommitFailedError, PaimonCommitError,
                                  PublishOutcomeUnknownError)
from paimon_commit.operations import commit_record
from paimon_commit.snapshots import SnapshotManager

OPTS = {"commit.max-retries": "5", "commit.min-retry-wait": "1 ms",
        "commit.max-retry-wait": "2 ms", "snapshot.num-retained.min": "1",
        "compaction.min.file-num": "2"}
ALL_LOST = {i: "lost" for i in range(1, 7)}   # every attempt of one call (max-retries 5)


@pytest.fixture(autouse=True)
def fresh_record(monkeypatch):
    """This process's commit record, empty for each test."""
    monkeypatch.setattr(commit_record, "RECORD", commit_record.CommitRecord())


class LatePut:
    """SnapshotManager.try_commit of snapshots by commit user `user`: the n-th such call (from
    `calls` + 1) does `plan[n]`: "lost" raises OSError and creates nothing, but the PUT is
    held (its reply timed out; the store may still complete it); a callable runs first
    (something between the attempt's look and its create). Others' commits pass through.
    `land()` completes the held PUT as the store would: create-if-absent, no base check."""

    def __init__(self, monkeypatch, user, plan):
        self.plan, self.calls, self.held = dict(plan), 0, []
        real = SnapshotManager.try_commit

        def try_commit(sm, snapshot, *a, **k):
            if snapshot.commit_user != user:
                return real(sm, snapshot, *a, **k)
            self.calls += 1
            act = self.plan.get(self.calls)
            if act == "lost":
                self.held.append((sm, snapshot))
                raise OSError("injected: read timeout, the conditional PUT may still land")
            if act is not None:
                act()
            return real(sm, snapshot, *a, **k)
        monkeypatch.setattr(SnapshotManager, "try_commit", try_commit)

    def land(self):
        sm, s = self.held[0]
        assert sm.io.try_create_atomic(sm.snapshot_path(s.id), s.to_json())


def base(table_path):
    """Rows 10 (snapshot 1) and 20 (snapshot 2), and F: a new file with row 11."""
    t = Table.create(str(table_path), make_rows([]).schema, partition_keys=["dt", "hr"],
                     options=OPTS)
    write(t, make_rows([10]))
    write(t, make_rows([20]))
    w = t.new_writer()
    w.write_arrow(make_rows([11]))
    return t, w.prepare_commit()


def latest_rows(table_path):
    """The latest snapshot's row ids as our reader and pypaimon see them (they must agree)."""
    ours = sorted(Table.open(str(table_path)).read_arrow().column("id").to_pylist())
    assert sorted(pp_read(table_path).column("id").to_pylist()) == ours
    return ours


def expire_all_but_latest(t):
    t.expire_snapshots(retain_min=1, retain_max=1)


def outcome(fn):
    """fn()'s result, or the PaimonCommitError it raised (the rows are checked first)."""
    try:
        return fn()
    except PaimonCommitError as e:
        return e


def refused(r, error, head):
    assert isinstance(r, error), r
    assert str(r).startswith(head), str(r)


@pytest.mark.parametrize("tagged", [False, True], ids=["untagged", "tagged"])
def test_a_late_landing_built_on_compacted_and_expired_within_the_call_is_not_republished(
        table_path, monkeypatch, tagged):
    # Regression (audit issue25u u1): attempt 1's PUT of snapshot 3 (F) timed out; attempt 2
    # settled it "not landed" and built 3 again. Before its create the PUT landed, a
    # compaction (4) rewrote 10, 11, 20 and expiration removed 1-3; attempt 3 missed the
    # expired 3 and published F again as 5. (a) reusing attempt 1's delta list, which the
    # expiration had deleted with F's file: the latest snapshot did not read; (b) a tag on 3
    # kept them: row 11 read twice. Now snapshot 4's base decides: 3 landed, the call
    # returns it.
    t, F = base(table_path)

    def landed_compacted_expired():
        late.land()
        if tagged:
            t.create_tag("keep", 3)
        t.compact()
        expire_all_but_latest(t)
    late = LatePut(monkeypatch, "job", {1: "lost", 2: landed_compacted_expired})
    with t.new_commit(commit_user="job") as c:
        r = outcome(lambda: c.commit(F))
    assert latest_rows(table_path) == [10, 11, 20]
    assert t.latest_snapshot().id == 4
    assert r == 3


def test_a_late_landing_that_recreates_an_expired_id_is_not_taken_for_the_commit(
        table_path, monkeypatch):
    # Regression (audit issue25u u2): attempt 1's PUT of snapshot 3 (F) timed out; others
    # published 3 (row 30) and 4 (row 40), expiration removed 3, and only then the PUT landed,
    # re-creating snapshot-3 below the latest. Attempt 3 took that copy for its snapshot: the
    # call returned 3 (and its repeat too) while row 11 was in no snapshot the latest builds
    # on. Now the copy is removed and F published once.
    t, F = base(table_path)

    def others_then_landing():
        write(t, make_rows([30]))
        write(t, make_rows([40]))
        expire_all_but_latest(t)
        late.land()
    late = LatePut(monkeypatch, "job", {1: "lost", 2: others_then_landing})
    with t.new_commit(commit_user="job") as c:
        r = outcome(lambda: c.commit(F))
        assert latest_rows(table_path) == [10, 11, 20, 30, 40]
        assert t.latest_snapshot().id == 5
        assert r == 5
        assert c.commit(F) == 5   # the exact repeat: a no-op
        assert c.last_result.already_committed
    assert not (table_path / "snapshot" / "snapshot-3").exists()   # the copy, removed
    assert latest_rows(table_path) == [10, 11, 20, 30, 40]


def _failed_then_recreated(t, F, monkeypatch, identifier=None):
    """Every publish of `job`'s commit(F) times out (the PUTs of snapshot 3 are held); others
    publish 3 (row 30) and 4 (row 40), expiration removes 3, then the first PUT lands,
    re-creating snapshot-3 below the latest."""
    late = LatePut(monkeypatch, "job", ALL_LOST)
    with pytest.raises(CommitFailedError, match="publishing snapshot 3 failed: OSError"):
        with t.new_commit(commit_user="job") as c:
            c.commit(F, identifier)
    late.plan = {}
    write(t, make_rows([30]))
    write(t, make_rows([40]))
    expire_all_but_latest(t)
    late.land()


def test_the_repeat_of_a_failed_call_whose_late_put_recreated_an_expired_id_is_refused(
        table_path, monkeypatch):
    # Regression (audit issue25u u3 a): the same user's exact repeat found the re-created
    # snapshot 3 (its user, identifier, files) and returned it, "already committed", while
    # the latest did not hold row 11. Now the copy does not count: refused.
    t, F = base(table_path)
    _failed_then_recreated(t, F, monkeypatch)
    with t.new_commit(commit_user="job") as c:
        r = outcome(lambda: c.commit(F))
    assert latest_rows(table_path) == [10, 20, 30, 40]   # row 11 is not in the table ...
    assert t.latest_snapshot().id == 4
    refused(r, CommitConflictError,                     # ... and the call does not say it is
            f"an earlier call of commit user 'job' with these files (a batch commit) raised "
            f"after it may have published them to {t.path}; no snapshot of the table holds "
            f"them now")


def test_filter_and_commit_after_a_late_put_recreated_an_expired_id_is_refused(
        table_path, monkeypatch):
    # Regression (audit issue25u u3/u6 after-call/recreate/fac): filter_and_commit({7: F}) by
    # the same user took the re-created snapshot 3 (identifier 7) for the user's latest:
    # nothing pending, row 11 lost without a word. Now the copy does not count, and the
    # table cannot tell: refused.
    t, F = base(table_path)
    _failed_then_recreated(t, F, monkeypatch, identifier=7)
    with t.new_commit(commit_user="job") as c:
        r = outcome(lambda: c.filter_and_commit({7: F}))
    assert latest_rows(table_path) == [10, 20, 30, 40]   # row 11 is not in the table ...
    assert t.latest_snapshot().id == 4
    refused(r, CommitConflictError,                     # ... and nothing says it is
            f"cannot re-commit identifier 7: commit user 'job' has no snapshot left in "
            f"{t.path}")


def test_a_forgotten_failed_call_whose_put_lands_during_its_retry_is_not_published_twice(
        table_path, monkeypatch):
    # Regression (audit issue25u u7): every publish of commit(F) timed out; the bounded record
    # then forgot F (capacity 2 here). The exact repeat found no snapshot with F and went on
    # to publish; right before its create the first PUT landed (3 ADDs F) and a compaction
    # (4) replaced F; the create lost the race and attempt 2 published F again as 5: row 11
    # read twice. Now the retry looks for the call's snapshot and returns 3.
    monkeypatch.setattr(commit_record, "RECORD", commit_record.CommitRecord(capacity=2))
    t, F = base(table_path)
    late = LatePut(monkeypatch, "job", ALL_LOST)
    with pytest.raises(CommitFailedError):
        with t.new_commit(commit_user="job") as c:
            c.commit(F)
    other = Table.create(str(table_path.parent / "other"), make_rows([]).schema)
    write(other, make_rows([1]))
    write(other, make_rows([2]))   # F is evicted from the record

    def landed_then_compacted():
        late.land()
        t.compact()
    late.plan, late.calls = {1: landed_then_compacted}, 0
    with t.new_commit(commit_user="job") as c:
        r = outcome(lambda: c.commit(F))
    assert latest_rows(table_path) == [10, 11, 20]
    assert t.latest_snapshot().id == 4
    assert r == 3


def test_an_overwrite_landed_late_and_expired_is_not_published_again_over_a_later_row(
        table_path, monkeypatch):
    # Regression (audit issue25u u10 a): the overwrite's PUT of snapshot 3 (10, 20 -> 11)
    # timed out and landed later; another writer appended row 30 (4, reported committed), a
    # compaction (5) rewrote 11 and 30, expiration removed 3 (a tag kept its files). The
    # overwrite's attempt 3 missed 3 and published again (6), deleting the compacted file:
    # row 30 was gone. Now the outcome that cannot be decided is reported, nothing deleted.
    t, F = base(table_path)

    def landed_then_others():
        late.land()
        t.create_tag("keep", 3)
        write(t, make_rows([30]))
        t.compact()
        expire_all_but_latest(t)
    late = LatePut(monkeypatch, "ow", {1: "lost", 2: landed_then_others})
    with t.new_commit(commit_user="ow") as c:
        r = outcome(lambda: c.overwrite(F, partition={"dt": D1, "hr": 1}))
    assert latest_rows(table_path) == [11, 30]
    assert t.latest_snapshot().id == 5
    refused(r, PublishOutcomeUnknownError,
            "publishing snapshot 3 failed with an I/O error, and by the time the commit looked "
            "again snapshot 3 and the snapshot after it had been expired: whether this commit "
            "is in the table cannot be decided")
