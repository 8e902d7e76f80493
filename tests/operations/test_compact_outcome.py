"""A compaction deletes the files it wrote only on its commit's verdict that the snapshot did
not land, and then through the one abort; an unknown outcome keeps them; a snapshot outside
the lineage is never reported as the compaction's.

The rivals (appends, an expiration) run at the exact storage call of the compaction's publish,
on a real directory (a LocalFileIO that pauses there, runs them and, if asked, loses the
reply); every retained snapshot is read back with our reader and pypaimon."""
import os
import time

import pytest

from conftest import SCHEMA, make_rows, write
from invariants import assert_intact
from oracle import pp_read, rows

from paimon_commit import ExpireConfig, ExpireSnapshots, Table
from paimon_commit.errors import CommitFailedError, PublishOutcomeUnknownError
from paimon_commit.io.local import LocalFileIO
from paimon_commit.operations.compact import AppendCompaction, CompactionConflictError
from paimon_commit.operations.orphan import CleanContext, OrphanFilesCleaner
from paimon_commit.store import FileStore

OPTS = {"target-file-size": "64 kb", "source.split.open-file-cost": "1 b"}
HR1 = "dt=19723/hr=1/bucket-0"


def _snapshot_ids(table_path):
    d = table_path / "snapshot"
    return sorted(int(n.split("-")[1]) for n in os.listdir(d) if n.startswith("snapshot-"))


def _expire_keeping(table_path, keep):
    cfg = ExpireConfig(retain_min=keep, retain_max=keep, time_retained_ms=0, max_deletes=100)
    return ExpireSnapshots(Table.open(str(table_path)).store, cfg).expire()


def _append(table_path, ids, hr=2):
    """Another writer's commit (its own Table: another process's view)."""
    return write(Table.open(str(table_path)), make_rows(ids, hr=hr))


def _filled(table_path, n=6, **options):
    """n small appends of 10 rows to dt=D1/hr=1; returns the ids."""
    t = Table.create(str(table_path), SCHEMA, partition_keys=["dt", "hr"],
                     options={**OPTS, **options})
    ids = []
    for i in range(n):
        write(t, make_rows(range(i * 10, i * 10 + 10)))
        ids.extend(range(i * 10, i * 10 + 10))
    return ids


def _ids(table_path, snapshot_id=None):
    """Row ids of a snapshot as our reader and pypaimon read it (they must agree)."""
    ours = rows(Table.open(str(table_path)).read_arrow(snapshot_id=snapshot_id))
    assert rows(pp_read(table_path, snapshot_id=snapshot_id)) == ours
    return sorted(r["id"] for r in ours)


class _AtPublish(LocalFileIO):
    """Local storage whose first publish of snapshot-`n`: runs `before` (after the base
    check passed, right before the create), creates the file unless `lands` is False, runs
    `after`, and then, if `lose_reply`, raises an I/O error as a lost reply would."""

    def __init__(self, root, n, lands=True, before=None, after=None, lose_reply=True):
        super().__init__(root)
        self.n, self.lands, self.before, self.after = n, lands, before, after
        self.lose_reply, self.armed = lose_reply, True

    def try_create_atomic(self, path, data, precondition=None, **kw):
        if not (self.armed and path.endswith(f"/snapshot/snapshot-{self.n}")):
            return super().try_create_atomic(path, data, precondition, **kw)
        self.armed = False
        if self.before is not None:
            def check():
                ok = precondition is None or precondition()
                if ok:
                    self.before()
                return ok
        else:
            check = precondition
        if self.lands:
            created = super().try_create_atomic(path, data, check, **kw)
        else:
            if check is not None:
                check()   # the base check (and the rivals) only: nothing is created
            created = False
        if self.after is not None:
            self.after()
        if self.lose_reply:
            raise OSError("injected: the reply to the publish was lost")
        return created


def _written(table_path, before):
    return sorted(set(os.listdir(table_path / HR1)) - set(before))


def test_a_landed_compaction_expired_before_its_retry_looks_keeps_its_files(table_path):
    # Regression (audit F1): the publish of snapshot 7 took effect, its reply was lost, two
    # appends (8, 9) and an expiration keeping 1 removed 7 and 8 before the retry looked. The
    # commit could not settle the outcome (PublishOutcomeUnknownError) and the compaction took
    # that for "did not land": it deleted its new file, which snapshot 9 reads.
    ids = _filled(table_path)
    small = sorted(os.listdir(table_path / HR1))

    def others():
        _append(table_path, [1000])
        _append(table_path, [1001])
        _expire_keeping(table_path, 1)

    job = AppendCompaction(FileStore.open(str(table_path),
                                          io=_AtPublish(str(table_path), 7, after=others)))
    with pytest.raises(PublishOutcomeUnknownError) as e:
        job.run()
    assert _snapshot_ids(table_path) == [9]
    t = Table.open(str(table_path))
    (new,) = [f.file_name for f in t.live_files()
              if f.partition["hr"] == 1 and f.file_name not in small]
    assert os.path.exists(table_path / HR1 / new)          # snapshot 9 reads it
    assert _ids(table_path) == sorted(ids + [1000, 1001])
    assert_intact(table_path)
    assert str(e.value).startswith(
        f"compaction of {table_path}: its 1 new file(s) are kept, as its snapshot may have "
        f"landed (orphan cleanup removes them if no snapshot uses them): publishing snapshot "
        f"7 failed with an I/O error")


def test_a_compaction_whose_outcome_is_unknown_keeps_its_files_for_orphan_cleanup(table_path):
    # The publish did NOT land, and everything that would tell was expired before the retry
    # looked: the new file is kept (unknown is not "did not land") and the error says so;
    # orphan cleanup later removes it, as no snapshot uses it, and the table stays intact.
    ids = _filled(table_path)
    small = sorted(os.listdir(table_path / HR1))

    def others():
        for i in (1000, 1001, 1002):
            _append(table_path, [i])
        _expire_keeping(table_path, 1)

    job = AppendCompaction(FileStore.open(
        str(table_path), io=_AtPublish(str(table_path), 7, lands=False, before=others)))
    with pytest.raises(PublishOutcomeUnknownError, match=r"its 1 new file\(s\) are kept"):
        job.run()
    new = _written(table_path, small)
    assert len(new) == 1
    assert _snapshot_ids(table_path) == [9]
    assert new[0] not in {f.file_name for f in Table.open(str(table_path)).live_files()}
    assert _ids(table_path) == sorted(ids + [1000, 1001, 1002])

    # An hour later (the test's clock): the file is older than the threshold.
    later = time.time() + 3600
    OrphanFilesCleaner(CleanContext(str(table_path), older_than_ms=int((later - 60) * 1000),
                                    clock=lambda: later, allow_recent_cutoff=True)).clean()
    assert not os.path.exists(table_path / HR1 / new[0])
    assert _ids(table_path) == sorted(ids + [1000, 1001, 1002])
    assert_intact(table_path)


def test_a_conflict_never_deletes_a_file_a_snapshot_of_its_user_names(table_path):
    # Belt and braces: were a conflict verdict wrong (a publish of this compaction landed
    # after all), the abort finds the compaction user's snapshot and deletes nothing.
    ids = _filled(table_path, n=5)
    t = Table.open(str(table_path))
    job = AppendCompaction(t.store)
    plan = job.plan()
    rewritten = job.rewrite(plan)
    first = job.commit(plan, rewritten)            # landed as snapshot 6
    assert first.snapshot_id == 6
    # The same rewrite committed again conflicts (its inputs are gone) -> abort -> kept.
    with pytest.raises(CompactionConflictError,
                       match=r"deleted 0 of the 1 file\(s\) it wrote \(the others are named "
                             r"by the table or could not be checked: kept\)$"):
        job.commit(plan, rewritten)
    assert all(os.path.exists(p) for r in rewritten for p in r.paths)
    assert _ids(table_path) == sorted(ids)
    assert_intact(table_path)


class _FailsToRemove(_AtPublish):
    """_AtPublish without a lost reply, whose first delete of `victim` fails (the gate's
    primitive answers "not deleted", as a transient storage error would)."""

    def __init__(self, root, n, before, victim):
        super().__init__(root, n, before=before, lose_reply=False)
        self.victim = victim

    def _unlink(self, norm):
        if self.victim is not None and norm.endswith(self.victim):
            self.victim = None
            return False
        return super()._unlink(norm)


def test_a_recreated_snapshot_id_is_not_reported_as_the_compaction(table_path):
    # Regression (audit F3): right after the compaction's base check passed, others published
    # 7 and 8 and an expiration removed 6 and 7, so the compaction's create of snapshot-7
    # re-created an expired id. The commit saw that 8 was not built on it and failed because
    # removing the copy failed; the compaction overrode that verdict ("a COMPACT snapshot of
    # my user exists") and reported snapshot 7, which no later snapshot builds on.
    ids = _filled(table_path)
    small = sorted(os.listdir(table_path / HR1))

    def others():
        _append(table_path, [1000])
        _append(table_path, [1001])
        _expire_keeping(table_path, 1)

    io = _FailsToRemove(str(table_path), 7, others, "/snapshot/snapshot-7")
    job = AppendCompaction(FileStore.open(str(table_path), io=io))
    with pytest.raises(CommitFailedError,
                       match=r"^compaction of .*: its 1 new file\(s\) are kept.*snapshot-7 "
                             r"re-creates a snapshot id that was already published and "
                             r"expired, and could not be removed") as e:
        job.run()
    t = Table.open(str(table_path))
    assert _snapshot_ids(table_path) == [7, 8]
    assert t.snapshot(7).commit_user == job.commit_user          # the stray copy ...
    assert t.latest_snapshot().commit_kind == "APPEND"           # ... no one builds on
    # The table is as the rivals left it: the small files are still live, every row once.
    assert sorted(f.file_name for f in t.live_files() if f.partition["hr"] == 1) == small
    assert _ids(table_path) == sorted(ids + [1000, 1001])
    # The copy names the new file: kept, so that the stray snapshot still reads.
    assert len(_written(table_path, small)) == 1
    assert_intact(table_path)
    assert "is in the table" not in str(e.value)


@pytest.mark.parametrize("then", ["nothing", "an append on it"])
def test_a_landed_compaction_whose_budget_ran_out_is_reported(table_path, then):
    # Guard for the lineage check: the publish of snapshot 7 landed, its reply was lost and
    # commit.timeout ran out before a retry could look. The compaction finds its snapshot and
    # checks that it is in the lineage (the latest, or the one snapshot 8 was built on).
    ids = _filled(table_path, **{"commit.timeout": "1 ms"})
    after = None if then == "nothing" else (lambda: _append(table_path, [1000]))
    job = AppendCompaction(FileStore.open(str(table_path),
                                          io=_AtPublish(str(table_path), 7, after=after)))
    r = job.run()
    assert r.snapshot_id == 7 and r.rewritten_files == 6 and r.written_files == 1
    t = Table.open(str(table_path))
    assert len([f for f in t.live_files() if f.partition["hr"] == 1]) == 1
    assert _ids(table_path) == sorted(ids + ([] if then == "nothing" else [1000]))
    assert_intact(table_path)
