"""An expiration killed at an exact storage call inside a chunk, then rerun (issue 19).

A SIGKILL in the middle of a parallel delete step leaves whatever subset of the step's files
the threads had reached: the batches of a step run in any order, so a later snapshot's
manifest lists can be gone while an earlier one's are still there. The soak run of
tests/faults/test_kill.py hit this by timing (trial 27: 8 manifest lists left behind);
here the order of the batches is fixed (an executor that runs them last first, an order a
thread pool can take) and the process "dies" (`Crash`, a BaseException) at the exact
unlink, so the same state is reached every time.

The rerun starts a chunk at the earliest snapshot still there, so the first snapshots it
keeps *for that chunk* are ones the killed run had half deleted (their lists gone). It must
still finish the job: the table ends exactly as after an unkilled run, with nothing left
behind and every retained snapshot intact.
"""
import os
import shutil
from concurrent.futures import Executor

import pytest

from faults.faulty_io import Crash, FaultyIO
from invariants import assert_intact

from benchmarks.scale_tables import build_overwrite_table
from paimon_commit import Table
from paimon_commit.operations import expire as expire_mod
from paimon_commit.operations.expire import ExpireConfig, ExpireSnapshots
from paimon_commit.store import FileStore

PER_SNAPSHOT = 2
SNAPSHOTS = 60
RETAIN = 3
FIRST_CHUNK = 7     # chunk 1 expires 1..7; chunk 2 the rest, 8..57 (100 lists: parallel)


def cfg(max_deletes=1 << 30, retain=RETAIN):
    return ExpireConfig(retain_min=retain, time_retained_ms=0, max_deletes=max_deletes)


class LastBatchFirst(Executor):
    """Runs the batches of a parallel step one after the other, the last one first: a pool
    whose first worker was descheduled while the others went on does the same."""
    _max_workers = 2

    def map(self, fn, *iterables, timeout=None, chunksize=1):
        args = list(zip(*iterables))
        out = [fn(*a) for a in reversed(args)]
        return iter(reversed(out))

    def submit(self, fn, *args, **kwargs):   # (unused by the deletion steps)
        raise NotImplementedError


@pytest.fixture
def chunks(monkeypatch):
    monkeypatch.setattr(expire_mod, "FIRST_CHUNK", FIRST_CHUNK)


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("tpl") / "wh" / "db.db" / "t")
    build_overwrite_table(path, SNAPSHOTS * PER_SNAPSHOT, PER_SNAPSHOT)
    return path


def files(root):
    return {os.path.relpath(os.path.join(d, f), root)
            for d, _, fs in os.walk(root) for f in fs}


def clone(template, tmp_path, name):
    path = str(tmp_path / name / "db.db" / "t")
    shutil.copytree(template, path)
    return path


def unkilled(template, tmp_path):
    path = clone(template, tmp_path, "ref")
    r = ExpireSnapshots(FileStore.open(path), cfg()).expire()
    assert r.expired_ids == list(range(1, SNAPSHOTS - RETAIN + 1)) and not r.skipped
    return files(path)


def kill_in_list_step(path, at_snapshot):
    """Run the expiration with the list step's batches last first and die as the base list
    of `at_snapshot` is about to be unlinked (the k-th unlink of an identical run, counted on
    a copy first). Returns the lists the kill left on disk."""
    base = FileStore.open(path).snapshots.snapshot(at_snapshot).base_manifest_list
    probe = path + "-probe"
    shutil.copytree(path, probe)
    count = FaultyIO(probe, kinds={"_unlink"})
    ExpireSnapshots(FileStore.open(probe, io=count), cfg(), executor=LastBatchFirst()).expire()
    k = [os.path.basename(p) for _, p in count.log].index(base) + 1
    shutil.rmtree(probe)
    io = FaultyIO(path, fail_at=k, kinds={"_unlink"})
    with pytest.raises(Crash):
        ExpireSnapshots(FileStore.open(path, io=io), cfg(), executor=LastBatchFirst()).expire()
    return {f for f in files(path) if f.startswith("manifest/manifest-list-")}


def test_kill_in_a_parallel_list_step_then_rerun_leaves_nothing_behind(template, tmp_path,
                                                                        chunks):
    want = unkilled(template, tmp_path)
    path = clone(template, tmp_path, "killed")
    left = kill_in_list_step(path, at_snapshot=8)
    # The state of the soak failure: snapshot files 8..57 are all there; the lists of the
    # first ones are too, those of later ones were deleted before the kill.
    t = Table.open(path)
    assert [s.id for s in t.snapshots()] == list(range(8, SNAPSHOTS + 1))
    gone = [sid for sid in range(8, SNAPSHOTS - RETAIN + 1)
            if t.store.manifests.path(t.store.snapshots.snapshot(sid).base_manifest_list)
            not in {os.path.join(path, f) for f in left}]
    assert gone and gone[0] > 8 + FIRST_CHUNK, gone
    assert_intact(path, min_snapshot=SNAPSHOTS - RETAIN + 1)
    r = ExpireSnapshots(FileStore.open(path), cfg()).expire()
    assert r.expired_ids == list(range(8, SNAPSHOTS - RETAIN + 1))
    extra = sorted(files(path) - want)
    assert not extra, f"left behind: {extra}"
    assert files(path) == want
    assert_intact(path)
