"""Orphan cleanup's delete phase keeps what a commit published after the plan (audit a5).

A rolled-back commit's files are old (as old as the commit) and no snapshot uses them, so
orphan cleanup selects them. A job retried after the rollback in another process (its commit
record is empty: in this process a repeat after a rollback is refused, commit_record) publishes
them again. Orphan cleanup's lease excludes maintenance, not commits: before, a run that had
planned them deleted them after the commit, and the latest snapshot named missing files. Now
the delete phase reads the snapshots committed since its plan before each batch and keeps
what they publish. Real tables in tmp dirs, the commit made by a real second process at a
hook between the plan and the delete (or between two batches); both readers read back.

Every test runs twice (conftest.py, `orphan_read_ahead`): on local disk as it is
("sequential") and with the local FileIO given an object store's read-ahead ("concurrent":
the mark taken on the listing pool, the re-check's reads in one wave beside the lease check,
...). Each run must end as safely either way.
"""
import os
import pickle
import subprocess
import sys
import time

import pytest

from conftest import make_rows, write
from invariants import assert_intact
from oracle import pp_read

from paimon_commit import Table
from paimon_commit.errors import CommitConflictError
from paimon_commit.io.local import LocalFileIO
from paimon_commit.operations import orphan as orphan_module
from paimon_commit.operations.orphan import CleanContext, OrphanFilesCleaner

OLD = time.time() - 3 * 86400
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(autouse=True)
def both_ways(orphan_read_ahead):
    """Every test here takes a snapshot mark and re-checks before a batch, in its mode."""
    yield orphan_read_ahead
    assert orphan_read_ahead.marks_here and orphan_read_ahead.recheck_pools


def ids_read(table_path):
    ours = sorted(Table.open(str(table_path)).read_arrow().column("id").to_pylist())
    assert sorted(pp_read(table_path).column("id").to_pylist()) == ours
    return ours


def data_file(table_path, msgs):
    m = msgs[0]
    return os.path.join(str(table_path), f"dt=19723/hr=1/bucket-{m.bucket}",
                        m.new_files[0].file_name)


def age_everything(table_path):
    """The table's files as if written three days ago (older than the cleanup's cutoff)."""
    for d, _, names in os.walk(table_path):
        for n in names:
            os.utime(os.path.join(d, n), (OLD, OLD))


def commit_in_another_process(tmp_path, table_path, msgs, user, identifier):
    """The job, restarted in a new process, commits the same messages again: nothing in this
    process's commit record. Returns the snapshot id it published."""
    src = tmp_path / "msgs.pickle"
    src.write_bytes(pickle.dumps(msgs))
    out = tmp_path / "sid"
    code = ("import pickle, sys\n"
            "from paimon_commit import Table\n"
            "t = Table.open(sys.argv[1])\n"
            "c = t.new_commit(commit_user=sys.argv[3])\n"
            "sid = c.commit(pickle.load(open(sys.argv[2], 'rb')), int(sys.argv[4]))\n"
            "c.close()\n"
            "open(sys.argv[5], 'w').write(str(sid))\n")
    subprocess.run([sys.executable, "-c", code, str(table_path), str(src), user,
                    str(identifier), str(out)], check=True, env={**os.environ,
                                                                "PYTHONPATH": ROOT})
    return int(out.read_text())


@pytest.fixture
def rolled_back(table, table_path):
    """Snapshot 1 (row 1); the job's commit of row 2 (identifier 7) as snapshot 2, rolled
    back; everything aged: the job's data file is an old orphan now."""
    write(table, make_rows([1]))
    w = table.new_writer()
    w.write_arrow(make_rows([2]))
    msgs = w.prepare_commit()
    with table.new_commit(commit_user="job") as c:
        assert c.commit(msgs, 7) == 2
    Table.open(str(table_path)).rollback_to(snapshot_id=1)
    age_everything(table_path)
    return msgs


class _AfterPlan(OrphanFilesCleaner):
    """Runs `hook` between the plan (candidates, used files, selection) and the delete phase,
    and records what the plan selected."""

    def __init__(self, ctx, hook):
        super().__init__(ctx)
        self.hook, self.planned = hook, []

    def find_orphans(self, executor, result):
        orphans, dirs = super().find_orphans(executor, result)
        self.planned = orphans.paths()
        self.hook()
        return orphans, dirs


def _cutoff():
    return int((time.time() - 86400) * 1000)


def test_a_commit_between_the_plan_and_the_delete_keeps_the_old_file_it_publishes(
        table, table_path, tmp_path, rolled_back):
    # Regression (audit a5): the plan selected the rolled-back file F; the job, restarted,
    # published F again as snapshot 2; the delete phase deleted F: "FileNotFoundError: ...
    # data-....parquet" reading the latest snapshot.
    f = data_file(table_path, rolled_back)
    published = []
    cleaner = _AfterPlan(CleanContext(str(table_path), older_than_ms=_cutoff()), lambda:
                         published.append(commit_in_another_process(
                             tmp_path, table_path, rolled_back, "job", 7)))
    r = cleaner.clean()
    assert f in cleaner.planned        # it was an orphan when planned
    assert published == [2]
    assert os.path.exists(f)
    assert os.path.relpath(f, str(table_path)) not in r.deleted_paths
    assert r.complete
    assert ids_read(table_path) == [1, 2]
    assert_intact(table_path, {2: [1, 2]})
    # What the plan selected and no snapshot publishes is deleted: the rolled-back snapshot's
    # manifest list, for one.
    assert any(p.startswith("manifest/manifest-list-") for p in r.deleted_paths)


def test_a_commit_between_two_batches_keeps_the_old_file_it_publishes(
        table, table_path, tmp_path, rolled_back, monkeypatch):
    # The same commit landing while the delete phase runs (after its first batch, one file
    # a batch): the batches after it keep the file.
    monkeypatch.setattr(orphan_module, "FIRST_BATCH", 1)
    monkeypatch.setattr(orphan_module, "MIN_BATCH", 1)
    monkeypatch.setattr(orphan_module, "MAX_BATCH", 1)
    f = data_file(table_path, rolled_back)
    published = []

    class _CommitAfterFirstDelete(LocalFileIO):
        def delete_files(self, paths, executor=None):
            done = super().delete_files(paths, executor)
            if done and not published:
                published.append(commit_in_another_process(tmp_path, table_path,
                                                           rolled_back, "job", 7))
            return done

    r = OrphanFilesCleaner(CleanContext(str(table_path), older_than_ms=_cutoff(),
                                        file_io=_CommitAfterFirstDelete(str(table_path)))
                           ).clean()
    assert published == [2]
    assert os.path.exists(f)
    assert r.complete and len(r.deleted_paths) >= 1
    assert os.path.relpath(f, str(table_path)) not in r.deleted_paths
    assert ids_read(table_path) == [1, 2]
    assert_intact(table_path, {2: [1, 2]})


def test_the_same_repeat_in_this_process_is_refused_and_the_file_is_an_orphan(
        table, table_path, rolled_back):
    # In the process that committed it, the repeat is refused (commit_record): nothing
    # publishes the file, and orphan cleanup deletes it; the table reads.
    f = data_file(table_path, rolled_back)
    refused = []

    def repeat():
        with pytest.raises(CommitConflictError, match=r"as snapshot 2, which a rollback "
                           r"removed since; refusing to commit them again") as e:
            with Table.open(str(table_path)).new_commit(commit_user="job") as c:
                c.commit(rolled_back, 7)
        refused.append(e.value)

    r = _AfterPlan(CleanContext(str(table_path), older_than_ms=_cutoff()), repeat).clean()
    assert refused
    assert not os.path.exists(f)
    assert os.path.relpath(f, str(table_path)) in r.deleted_paths
    assert ids_read(table_path) == [1]
    assert_intact(table_path, {1: [1]})


def test_a_rollback_between_the_plan_and_the_delete_stops_the_run(table, table_path):
    # New behaviour with the re-check (not a regression): after a rollback, snapshot ids are
    # re-created and "committed since the plan" can no longer be told from the ids. The run
    # stops before its first delete; a rerun plans again.
    for i in (1, 2, 3):
        write(table, make_rows([i]))
    stray = table_path / "dt=19723" / "hr=1" / "bucket-0" / "data-stray.parquet"
    stray.write_bytes(b"x")
    age_everything(table_path)
    before = sorted(os.listdir(table_path / "dt=19723" / "hr=1" / "bucket-0"))
    r = _AfterPlan(CleanContext(str(table_path), older_than_ms=_cutoff()),
                   lambda: Table.open(str(table_path)).rollback_to(snapshot_id=2)).clean()
    assert not r.complete and r.stopped_by == "recheck"
    assert r.deleted_paths == []
    assert r.message.startswith(
        f"stopped before a batch of deletions: snapshot 3 of {table.path} changed or went "
        f"away since the orphan files were planned (a rollback or an expiration ran "
        f"meanwhile), so what commits published since cannot be told; nothing of this batch "
        f"was deleted, a rerun plans again; deleted 0 orphan file(s)")
    assert sorted(os.listdir(table_path / "dt=19723" / "hr=1" / "bucket-0")) == before
    again = OrphanFilesCleaner(CleanContext(str(table_path), older_than_ms=_cutoff())).clean()
    assert again.complete and "dt=19723/hr=1/bucket-0/data-stray.parquet" in again.deleted_paths
    assert ids_read(table_path) == [1, 2]


# --- audit issue25b b5: snapshots committed since the plan and expired before the re-check ----
# The re-check probes upwards from the newest id the plan saw and stopped at the first absent
# id. When the table had no snapshot at the plan nothing anchored that probe: snapshot 1,
# committed and expired meanwhile, ended it, the snapshots above it (whose base lists hold
# what it published) were never read, and the job's old file, live in the latest snapshot,
# was deleted. Any gap in the ids above the mark now stops the run before deleting.

def _expire_keeping(table_path, keep):
    from paimon_commit import ExpireConfig, ExpireSnapshots
    cfg = ExpireConfig(retain_min=keep, retain_max=keep, time_retained_ms=0, max_deletes=100)
    return ExpireSnapshots(Table.open(str(table_path)).store, cfg).expire()


def test_a_first_commit_expired_before_the_recheck_stops_the_run(table, table_path):
    # Regression (audit issue25b b5): no snapshot at the plan; the job commits its 3-day-old
    # file F as snapshot 1, others commit 2-4, an expiration removes 1-3. The probe stopped at
    # 1 and F was deleted: "FileNotFoundError ... data-....parquet" reading the table.
    w = table.new_writer()
    w.write_arrow(make_rows([1, 2]))
    msgs = w.prepare_commit()
    age_everything(table_path)
    f = data_file(table_path, msgs)

    def commit_and_expire():
        with Table.open(str(table_path)).new_commit(commit_user="job") as c:
            c.commit(msgs, 1)
        for i in (10, 11, 12):
            write(table, make_rows([i]))
        _expire_keeping(table_path, 1)

    cleaner = _AfterPlan(CleanContext(str(table_path), older_than_ms=_cutoff()),
                         commit_and_expire)
    r = cleaner.clean()
    assert f in cleaner.planned                      # an orphan when planned
    assert sorted(os.listdir(table_path / "snapshot")) == ["EARLIEST", "LATEST", "snapshot-4"]
    assert not r.complete and r.stopped_by == "recheck" and r.deleted_paths == []
    assert r.message.startswith(
        f"stopped before a batch of deletions: snapshots 1 to 3 of {table.path} are gone while "
        f"snapshot 4 exists (when the orphan files were planned it had no snapshot): expired "
        f"before this re-check read them, or a branch created since from a later snapshot, so "
        f"what commits published since the plan cannot be told; nothing of this batch was "
        f"deleted, a rerun plans again; deleted 0 orphan file(s)")
    assert os.path.exists(f)
    assert ids_read(table_path) == [1, 2, 10, 11, 12]
    assert_intact(table_path, {4: [1, 2, 10, 11, 12]})
    # A rerun plans from snapshot 4, which uses F: kept, and the run completes.
    again = OrphanFilesCleaner(CleanContext(str(table_path), older_than_ms=_cutoff())).clean()
    assert again.complete and os.path.exists(f)
    assert ids_read(table_path) == [1, 2, 10, 11, 12]


class _ExpiresWhileProbing(LocalFileIO):
    """Another process's expiration (Paimon Java's: it does not know our lease) removes
    snapshots 1-3 right after the delete phase's probe read snapshot 2."""

    def __init__(self, root, table_path):
        super().__init__(root)
        self.table_path, self.armed, self.fired = table_path, False, False

    def read_bytes(self, path):
        data = super().read_bytes(path)
        if self.armed and not self.fired and path.endswith("/snapshot/snapshot-2"):
            self.fired = True
            for sid in (1, 2, 3):
                os.remove(self.table_path / "snapshot" / f"snapshot-{sid}")
        return data


def test_an_expiration_while_the_recheck_probes_stops_the_run(table, table_path, both_ways):
    # The same gap with a mark (snapshot 1): the probe read 2, then 1-3 expired; 3 (the job's
    # commit of F) was gone when the probe reached it, and 4, whose base list holds F, was
    # never read: F was deleted.
    write(table, make_rows([1]))
    w = table.new_writer()
    w.write_arrow(make_rows([2]))
    msgs = w.prepare_commit()
    age_everything(table_path)
    f = data_file(table_path, msgs)
    io = _ExpiresWhileProbing(str(table_path), table_path)

    def commits():
        write(table, make_rows([10]))                                    # 2
        with Table.open(str(table_path)).new_commit(commit_user="job") as c:
            assert c.commit(msgs, 1) == 3
        write(table, make_rows([11]))                                    # 4
        io.armed = True

    cleaner = _AfterPlan(CleanContext(str(table_path), older_than_ms=_cutoff(), file_io=io),
                         commits)
    r = cleaner.clean()
    assert f in cleaner.planned and io.fired
    assert not r.complete and r.stopped_by == "recheck" and r.deleted_paths == []
    gap = (f"stopped before a batch of deletions: snapshot 3 of {table.path} is gone while "
           f"snapshot 4 exists (when the orphan files were planned snapshot 1 was the "
           f"newest): expired before this re-check read them")
    if not both_ways.concurrent:
        assert r.message.startswith(gap)
    else:
        # Concurrently the marked snapshot 1 is read beside snapshot 2 (the read that removes
        # 1-3): read after it, snapshot 1 is gone, and the mark itself stops the run (a
        # rollback or an expiration since the plan). As correct: with the mark gone, what
        # was committed since cannot be told either, and nothing is deleted.
        # (test_orphan_read_ahead.py forces that order.)
        assert r.message.startswith(gap) or r.message.startswith(
            f"stopped before a batch of deletions: snapshot 1 of {table.path} changed or "
            f"went away since the orphan files were planned (a rollback or an expiration "
            f"ran meanwhile), so what commits published since cannot be told; nothing of "
            f"this batch was deleted, a rerun plans again; deleted 0 orphan file(s)"), \
            r.message
    assert os.path.exists(f)
    assert ids_read(table_path) == [1, 2, 10, 11]


def test_a_branch_created_since_the_plan_stops_the_run(table, table_path):
    # The same for branches: a branch created between the plan and the delete from the job's
    # new snapshot 2 (a copy of it, as Paimon's createBranch makes), then main rolled back to
    # 1: only the branch names F. The branch was not in the mark, so its probe started at 1,
    # found nothing, and F was deleted; the branch named a missing file.
    import shutil
    write(table, make_rows([1]))
    w = table.new_writer()
    w.write_arrow(make_rows([2]))
    msgs = w.prepare_commit()
    age_everything(table_path)
    f = data_file(table_path, msgs)
    branch = table_path / "branch" / "branch-b1"

    def commit_branch_rollback():
        with Table.open(str(table_path)).new_commit(commit_user="job") as c:
            assert c.commit(msgs, 1) == 2
        (branch / "snapshot").mkdir(parents=True)
        shutil.copytree(table_path / "schema", branch / "schema")
        shutil.copy(table_path / "snapshot" / "snapshot-2", branch / "snapshot" / "snapshot-2")
        Table.open(str(table_path)).rollback_to(snapshot_id=1)

    cleaner = _AfterPlan(CleanContext(str(table_path), older_than_ms=_cutoff()),
                         commit_branch_rollback)
    r = cleaner.clean()
    assert f in cleaner.planned
    assert not r.complete and r.stopped_by == "recheck" and r.deleted_paths == []
    assert r.message.startswith(
        f"stopped before a batch of deletions: snapshot 1 of {branch} is gone while snapshot 2 "
        f"exists (when the orphan files were planned it had no snapshot): expired before this "
        f"re-check read them, or a branch created since from a later snapshot")
    assert os.path.exists(f)
    assert ids_read(table_path) == [1]
    # `check` reads every branch: the branch's snapshot 2 finds every file it names
    checked = Table.open(str(table_path)).check()
    assert checked.healthy, checked.problems
    # The rerun plans with the branch: it keeps F.
    again = OrphanFilesCleaner(CleanContext(str(table_path), older_than_ms=_cutoff())).clean()
    assert again.complete and os.path.exists(f)
    assert Table.open(str(table_path)).check().healthy


# --- audit issue25d d3: a file published since the plan by its external path ----------------
# The plan keeps a file by name (Paimon's rule, reachability.entry_names), external files'
# names included: a candidate named like the file a snapshot names through `_EXTERNAL_PATH` is
# kept. The delete phase's re-check of snapshots committed since the plan ignored external
# entries, so such a file published after the plan was deleted although the plan itself would
# have kept it. It now keeps by the same rule.

@pytest.mark.parametrize("scheme", ["file:", ""])
def test_a_file_published_since_the_plan_by_its_external_path_is_kept(table, table_path,
                                                                      scheme):
    # Snapshot 1 (row 1); a job's file F of row 2, written 3 days ago and not committed: an
    # orphan when planned. Right before the first batch is deleted, a writer (Paimon Java with
    # `data-file.external-paths` pointing at the table's own location) publishes F as
    # snapshot 2 through its external path. Before: F was deleted, and snapshot 2 named a
    # file that was gone ("No such file" reading the table).
    import dataclasses
    from paimon_commit.format.commit_message import CommitMessage
    write(table, make_rows([1]))
    w = table.new_writer()
    w.write_arrow(make_rows([2]))
    (m,) = w.prepare_commit()
    f = data_file(table_path, [m])
    stray = table_path / "dt=19723" / "hr=1" / "bucket-0" / "data-stray.parquet"
    stray.write_bytes(b"x")
    age_everything(table_path)
    published = []

    class _PublishedAtTheDelete(OrphanFilesCleaner):
        def _not_committed_since_plan(self, paths):
            if not published and f in paths:
                ext = dataclasses.replace(m.new_files[0], external_path=scheme + f)
                msg = CommitMessage(m.partition, m.partition_bytes, m.bucket, m.total_buckets,
                                    (ext,))
                with Table.open(str(table_path)).new_commit(commit_user="java-like") as c:
                    published.append(c.commit([msg]))
            return super()._not_committed_since_plan(paths)

    r = _PublishedAtTheDelete(CleanContext(str(table_path), older_than_ms=_cutoff())).clean()
    assert published == [2]
    assert r.complete, r.message
    assert os.path.exists(f)
    assert os.path.relpath(f, str(table_path)) not in r.deleted_paths
    # The plan's other orphans are deleted as before.
    assert not stray.exists()
    assert "dt=19723/hr=1/bucket-0/data-stray.parquet" in r.deleted_paths
    # Snapshot 2 names F through its external path, and F is read back.
    (ext_file,) = [x for x in Table.open(str(table_path)).live_files(2)
                   if x.file.external_path]
    assert ext_file.file.external_path == scheme + f
    assert open(f, "rb").read(4) == b"PAR1"
    if not scheme:
        assert ids_read(table_path) == [1, 2]
