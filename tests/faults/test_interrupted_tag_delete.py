"""A tag deletion (delete_tag, expire-tags) killed at an exact unlink, then rerun (issue 19).

The class of problem tests/faults/test_interrupted_expire.py pins for expiration: a kill in the
middle of a delete step leaves any subset of that step's files. A tag whose snapshot expired
owns files nothing else names; once its tag file is gone, its deletion marker (the tag's JSON)
is how a rerun finds them again, by reading the tag's manifest lists, the manifests they name
and its index manifest. So each step may only delete what no later step needs to find: a
list deleted before the manifests it names, or an index manifest before its index files,
leaves those for nobody (orphan cleanup at best).

As there, the batches of a parallel step run last first (an order a thread pool can take)
and the process "dies" (`Crash`) at the unlink halfway through a step, so the state reached
is the same every time. One rerun must finish the job: the files on disk are exactly those
of an unkilled run, no deletion is left unfinished, and every retained snapshot and tag
reads.
"""
import os
from concurrent.futures import Executor

import pytest

from faults.faulty_io import Crash, FaultyIO
from faults.test_interrupted_expire import LastBatchFirst, clone, files
from faults.test_interrupted_expire import step_of as metadata_step_of
from invariants import assert_intact
from operations.test_changelog import add_index_and_statistics

from benchmarks.scale_tables import build_overwrite_table
from paimon_commit import Table
from paimon_commit.io import deletion
from paimon_commit.operations.expire import ExpireConfig, ExpireSnapshots
from paimon_commit.operations.tag_expire import expire_tags
from paimon_commit.store import FileStore

SNAPSHOTS = 10
PER_SNAPSHOT = 64      # the tag's own data files: a parallel step (64 or more), 2 batches
RETAIN = 2             # snapshots 9 and 10 stay
TAG, TAGGED = "t5", 5  # deleted; its snapshot expired, so it owns its files
KEEP, KEPT = "keep", 3  # stays (no retention): what it uses is read on every run
INDEX_FILES = 4


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    """An overwrite table (each snapshot replaces the last one's files), each snapshot with
    an index manifest naming index files of its own and a statistics file; two tags on
    snapshots that then expire, so that each owns its files."""
    path = str(tmp_path_factory.mktemp("tpl") / "wh" / "db.db" / "t")
    build_overwrite_table(path, SNAPSHOTS * PER_SNAPSHOT, PER_SNAPSHOT)
    t = Table.open(path)
    for sid in range(1, SNAPSHOTS + 1):
        add_index_and_statistics(t, sid, [f"index-{sid}-{i}" for i in range(INDEX_FILES)],
                                 f"stat-{sid}")
    t = Table.open(path)
    t.create_tag(TAG, TAGGED, time_retained=1)   # due for expire-tags at once
    t.create_tag(KEEP, KEPT)
    r = ExpireSnapshots(FileStore.open(path), ExpireConfig(
        retain_min=RETAIN, time_retained_ms=0)).expire()
    assert r.expired_ids == list(range(1, SNAPSHOTS - RETAIN + 1))
    return path


class _Pool(Executor):
    """What the Deleter creates as its thread pool: LastBatchFirst, whatever the size."""

    def __new__(cls, *args, **kwargs):
        return LastBatchFirst()


def delete(op, path, io=None):
    """Delete the tag the way `op` does, with the batches of parallel steps last first."""
    store = FileStore.open(path, io=io) if io else FileStore.open(path)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(deletion, "ContextExecutor", _Pool)
        if op == "delete-tag":
            r = Table(store).delete_tag(TAG)
            assert not r.skipped, r.skipped
            return r.deleted_files
        r = expire_tags(store)
        assert r.expired_tags == [TAG] and not r.skipped and not r.errors, r.to_dict()
        return r.deleted_files


def step_of(rel):
    if rel.startswith("tag/"):
        return "tag"
    if rel.startswith(".tag-deletions/"):
        return "marker"
    return metadata_step_of(rel)


OPS = ["delete-tag", "expire-tags"]


@pytest.fixture(scope="module")
def unkilled(template, tmp_path_factory):
    """Per op: the files of the table after an unkilled run, and the steps of its unlinks in
    order (with the batches of parallel steps last first)."""
    out = {}
    for op in OPS:
        path = clone(template, tmp_path_factory.mktemp("ref"), op)
        count = FaultyIO(path, kinds={"_unlink"})
        assert delete(op, path, count) > PER_SNAPSHOT
        out[op] = files(path), [step_of(os.path.relpath(p, path)) for _, p in count.log]
    return out


def kill_in_step(op, path, step, steps):
    """Run `op` and die at the unlink halfway through `step` (`steps`: those of the unlinks
    of an identical run), rounded up: in a step of two or more, later batches are then done
    and the first one not."""
    last = max(i for i, s in enumerate(steps) if s == step)
    first = last
    while first > 0 and steps[first - 1] == step:
        first -= 1
    io = FaultyIO(path, fail_at=(first + last + 1) // 2 + 1, kinds={"_unlink"})
    with pytest.raises(Crash):
        delete(op, path, io)


# The steps of a tag deletion, in the order they must run: the tag file (the marker was
# written), data files, manifests, index files, index manifests, statistics, manifest lists,
# and the marker once nothing is left to find.
STEPS = ["tag", "data", "manifest", "index-file", "index", "statistics", "manifest-list",
         "marker"]


def test_the_steps_run_in_order(unkilled):
    """Each step completes before the next starts: a kill leaves at most one step partial."""
    for op in OPS:
        steps = unkilled[op][1]
        runs = [s for i, s in enumerate(steps) if i == 0 or steps[i - 1] != s]
        assert runs == STEPS, (op, runs)


@pytest.mark.parametrize("step", STEPS)
@pytest.mark.parametrize("op", OPS)
def test_killed_in_any_delete_step_one_rerun_finishes_the_job(template, unkilled, tmp_path,
                                                              op, step):
    """Killed halfway through any step of a tag deletion, then run again (delete_tag again,
    or the next expire-tags, which finishes unfinished deletions first): the table ends
    exactly as after an unkilled run, and the other tag and the retained snapshots read
    throughout."""
    want, steps = unkilled[op]
    path = clone(template, tmp_path, "killed")
    kill_in_step(op, path, step, steps)
    assert_intact(path)
    t = Table.open(path)
    if op == "delete-tag":
        t.delete_tag(TAG)
    else:
        r = expire_tags(t.store)
        assert not r.errors, r.errors
    t = Table.open(path)
    assert t.unfinished_tag_deletions() == []
    assert [x.name for x in t.tags()] == [KEEP]
    extra = sorted(files(path) - want)
    assert not extra, f"left behind: {extra}"
    assert files(path) == want
    assert_intact(path)
