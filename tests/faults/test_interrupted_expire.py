"""An expiration killed at an exact storage call inside a chunk, then rerun (issue 19).

A SIGKILL in the middle of a parallel delete step leaves whatever subset of the step's files
the threads had reached: the batches of a step run in any order, so a later snapshot's
manifest lists can be gone while an earlier one's are still there. The soak run of
tests/faults/test_kill.py hit this by timing (trial 27: 8 manifest lists left behind);
here the order of the batches is fixed (an executor that runs them last first, an order a
thread pool can take; or, as local disk runs a step, its directory slices one after the other) and the process "dies" (`Crash`, a BaseException) at the exact
unlink, so the same state is reached every time.

The rerun starts a chunk at the earliest snapshot still there, so the first snapshots it
keeps *for that chunk* are ones the killed run had half deleted (their lists gone). It must
still finish the job: the table ends exactly as after an unkilled run, with nothing left
behind and every retained snapshot intact.
"""
import os
import shutil
from concurrent.futures import Executor, Future

import pytest

from faults.faulty_io import Crash, FaultyIO
from invariants import assert_intact
from operations.test_changelog import add_index_and_statistics

from benchmarks.scale_tables import build_overwrite_table
from paimon_commit import Table
from paimon_commit.operations import expire as expire_mod
from paimon_commit.operations.expire import ExpireConfig, ExpireSnapshots
from paimon_commit.store import FileStore

PER_SNAPSHOT = 2
SNAPSHOTS = 60
RETAIN = 3
KEPT = SNAPSHOTS - RETAIN + 1   # the unkilled run keeps 58..60 and the tag
TAG = 30
FIRST_CHUNK = 7     # chunk 1 expires 1..7; chunk 2 the rest, 8..57 (100 lists: parallel)


def cfg(max_deletes=1 << 30):
    return ExpireConfig(retain_min=RETAIN, time_retained_ms=0, max_deletes=max_deletes)


class LastBatchFirst(Executor):
    """Runs the batches of a parallel step one after the other, the last one first: a pool
    whose first worker was descheduled while the others went on does the same."""
    _max_workers = 2

    def map(self, fn, *iterables, timeout=None, chunksize=1):
        args = list(zip(*iterables))
        out = [fn(*a) for a in reversed(args)]
        return iter(reversed(out))

    def submit(self, fn, *args, **kwargs):   # (unused by the deletion steps: _Batched)
        raise NotImplementedError


class _Batched(FaultyIO):
    """Local disk whose parallel steps go in batches through the executor's `map` (last
    first, above), as object stores' do; real local disk submits a slice per directory
    (io.deletion.run_deletions: "dir-slices" below)."""
    unlinks_recheck_dirs = False


class InTurn(Executor):
    """Runs each task as it is submitted, its outcome (a Crash included) in its future: the
    slices of one `delete_files` call one after the other, the order a pool can take."""
    _max_workers = 2

    def submit(self, fn, *args, **kwargs):
        f = Future()
        try:
            f.set_result(fn(*args, **kwargs))
        except BaseException as e:   # (the process "dies" in a worker: its future says so)
            f.set_exception(e)
        return f


# How a parallel step runs: its batches through map, last first, or local disk's slices of
# one directory each, submitted in turn.
ORDERS = {"last-batch-first": (_Batched, LastBatchFirst), "dir-slices": (FaultyIO, InTurn)}


@pytest.fixture(scope="module", params=sorted(ORDERS))
def order(request):
    return request.param


@pytest.fixture
def chunks(monkeypatch):
    monkeypatch.setattr(expire_mod, "FIRST_CHUNK", FIRST_CHUNK)
    monkeypatch.setattr(expire_mod, "FIRST_CHUNK_FILES", 0)   # (a fixed first chunk)


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    """An overwrite table (each snapshot replaces the last one's files), each snapshot with
    an index manifest naming two index files of its own, and a statistics file; a tag."""
    path = str(tmp_path_factory.mktemp("tpl") / "wh" / "db.db" / "t")
    build_overwrite_table(path, SNAPSHOTS * PER_SNAPSHOT, PER_SNAPSHOT)
    t = Table.open(path)
    for sid in range(1, SNAPSHOTS + 1):
        add_index_and_statistics(t, sid, [f"index-{sid}-a", f"index-{sid}-b"], f"stat-{sid}")
    t = Table.open(path)
    t.create_tag(f"t{TAG}", TAG)
    return path


def files(root):
    # (not the maintenance lease's records: bookkeeping, not the table; a killed run leaves
    # its record unreleased)
    return {os.path.relpath(os.path.join(d, f), root)
            for d, _, fs in os.walk(root) for f in fs
            if not os.path.relpath(d, root).startswith(".maintenance")}


def clone(template, tmp_path, name):
    path = str(tmp_path / name / "db.db" / "t")
    shutil.copytree(template, path)
    return path


@pytest.fixture(scope="module")
def unkilled(template, tmp_path_factory, order):
    """The files of the table after an unkilled run, and the steps of its unlinks in order
    (parallel steps run as `order` says)."""
    first = expire_mod.FIRST_CHUNK, expire_mod.FIRST_CHUNK_FILES
    expire_mod.FIRST_CHUNK, expire_mod.FIRST_CHUNK_FILES = FIRST_CHUNK, 0   # (a fixed one)
    io_class, executor = ORDERS[order]
    try:
        path = clone(template, tmp_path_factory.mktemp("ref"), "ref")
        count = io_class(path, kinds={"_unlink"})
        r = ExpireSnapshots(FileStore.open(path, io=count), cfg(),
                            executor=executor()).expire()
    finally:
        expire_mod.FIRST_CHUNK, expire_mod.FIRST_CHUNK_FILES = first
    assert r.expired_ids == list(range(1, KEPT)) and not r.skipped
    return files(path), [step_of(os.path.relpath(p, path)) for _, p in count.log]


def step_of(rel):
    """The deletion step a path belongs to."""
    if "/bucket-" in rel:
        return "data"
    if rel.startswith("index/"):
        return "index-file"
    if rel.startswith("statistics/"):
        return "statistics"
    if rel.startswith("snapshot/"):
        return "snapshot"
    if rel.startswith(".maintenance/expiring-"):
        return "mark"   # (removed once the range is gone: expiring.py)
    name = os.path.basename(rel)
    for prefix, step in (("manifest-list-", "manifest-list"), ("index-manifest-", "index"),
                         ("manifest-", "manifest")):
        if name.startswith(prefix):
            return step
    raise AssertionError(rel)


def kill_in_step(path, step, steps, order):
    """Run the expiration with parallel steps run as `order` says (batches last first, or
    local disk's directory slices in turn), and die at the unlink halfway through `step` of
    the last chunk (`steps`: those of the unlinks of an identical run): later batches of the
    step are then done, earlier ones not (dir-slices: the slices before, not those after)."""
    last = max(i for i, s in enumerate(steps) if s == step)
    first = last
    while first > 0 and steps[first - 1] == step:
        first -= 1
    k = (first + last) // 2 + 1
    io_class, executor = ORDERS[order]
    io = io_class(path, fail_at=k, kinds={"_unlink"})
    with pytest.raises(Crash):
        ExpireSnapshots(FileStore.open(path, io=io), cfg(), executor=executor()).expire()
    return last - first + 1


STEPS = ["data", "manifest", "index-file", "index", "statistics", "manifest-list", "snapshot"]


@pytest.mark.parametrize("rerun_limit", [None, 10], ids=["same-run", "limit-10"])
@pytest.mark.parametrize("step", STEPS)
def test_killed_in_any_delete_step_the_rerun_finishes_the_job(template, unkilled, tmp_path,
                                                              chunks, step, rerun_limit, order):
    """Killed halfway through any delete step of a chunk, then rerun, either as the same
    command or as expiration after each commit does (`snapshot.expire.limit` 10): the table
    ends exactly as after an unkilled run. Retained snapshots and the tag stay intact
    throughout."""
    want, steps = unkilled
    path = clone(template, tmp_path, "killed")
    kill_in_step(path, step, steps, order)
    assert_intact(path, min_snapshot=KEPT)
    runs = 0
    while True:
        r = ExpireSnapshots(FileStore.open(path), cfg(rerun_limit or (1 << 30))).expire()
        runs += 1
        if not r.expired_ids:
            break
    assert runs < 10
    assert [s.id for s in Table.open(path).snapshots()] == list(range(KEPT, SNAPSHOTS + 1))
    extra = sorted(files(path) - want)
    assert not extra, f"left behind: {extra}"
    assert files(path) == want
    assert_intact(path)


def test_a_damaged_tag_keeps_every_manifest_and_loses_only_unnamed_lists(template, tmp_path):
    """What a retained root uses cannot be read for another reason than a kill: the tag's
    base list is gone (damage). The expiring snapshots still go, and with them the lists,
    index manifests and statistics files that no retained snapshot or tag names; every
    manifest, index file and data file stays (the tag may use them). Restoring the tag's
    list from a backup gives back a tag that reads."""
    path = clone(template, tmp_path, "damaged")
    t = Table.open(path)
    tag_base = t.store.manifests.path(t.store.snapshots.snapshot(TAG).base_manifest_list)
    with open(tag_base, "rb") as f:
        backup = f.read()
    os.unlink(tag_base)
    expiring = [t.store.snapshots.snapshot(i) for i in range(1, KEPT)]
    before = files(path)
    r = ExpireSnapshots(FileStore.open(path), cfg()).expire()
    assert r.expired_ids == list(range(1, KEPT))
    assert any(f"tag-t{TAG}" in s and s.endswith(
        "; no manifest or index file is deleted (left for orphan cleanup): only the expiring "
        "snapshots' changelog files and their lists, index manifests and statistics files "
        "that no retained snapshot, tag or changelog names") for s in r.skipped), r.skipped
    gone = before - files(path)
    tagged = {n for n in expiring[TAG - 1].manifest_lists()} | {
        expiring[TAG - 1].index_manifest, expiring[TAG - 1].statistics}
    named = {f"manifest/{n}" for s in expiring for n in s.manifest_lists() if n not in tagged}
    named |= {f"manifest/{s.index_manifest}" for s in expiring if s.index_manifest not in tagged}
    named |= {f"statistics/{s.statistics}" for s in expiring if s.statistics not in tagged}
    snapshot_files = {f"snapshot/snapshot-{i}" for i in range(1, KEPT)}
    assert gone == named | snapshot_files, sorted(gone ^ (named | snapshot_files))[:6]
    with open(tag_base, "wb") as f:
        f.write(backup)
    assert_intact(path)
