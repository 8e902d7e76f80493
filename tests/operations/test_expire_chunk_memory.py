"""Expiration memory follows the chunk, not the range (issue 26 item 3). A long backlog is
planned and deleted chunk by chunk in the crash-safe order; what a chunk holds is its own
plan, the ADD positions of the range (one int per file) and the deltas the next run reads
again; the deltas a later chunk expires are read again then instead of being held. Every
chunk re-checks what it rests on before its first delete, and a crash at any chunk boundary
leaves every snapshot from the crashed chunk's end on readable; a rerun finishes.

The tables are bench_scale's overwrite tables (each snapshot replaces every file)."""
import os
import shutil
import tracemalloc

import pytest

from invariants import assert_intact

from benchmarks.scale_tables import build_overwrite_table, count_data_files
from faults.faulty_io import Crash, FaultyIO
from paimon_commit import Table
from paimon_commit import reachability
from paimon_commit.operations import expire as expire_mod
from paimon_commit.operations.expire import ExpireConfig, ExpireSnapshots
from paimon_commit.store import FileStore
from paimon_commit.tags import ConsumerManager
from tests.chunks import deleted, note_chunks
from tests.tablefiles import table_walk

PER_SNAPSHOT = 5
RETAIN = 3


def cfg():
    return ExpireConfig(retain_min=RETAIN, retain_max=RETAIN, time_retained_ms=0,
                        max_deletes=1 << 30)


def build(tmp_path, name, snapshots, per_snapshot=PER_SNAPSHOT):
    path = str(tmp_path / "wh" / "db.db" / name)
    build_overwrite_table(path, snapshots * per_snapshot, per_snapshot)
    return path


def rel_files(root):
    return {os.path.relpath(os.path.join(d, f), root)
            for d, _, fs in table_walk(root) for f in fs}


@pytest.fixture
def small_chunks(monkeypatch):
    monkeypatch.setattr(expire_mod, "FIRST_CHUNK", 5)
    monkeypatch.setattr(expire_mod, "FIRST_CHUNK_FILES", 0)   # (a fixed first chunk)
    monkeypatch.setattr(expire_mod, "CHUNK_FILES", 40)
    monkeypatch.setattr(reachability.Reachability, "LATER_REFS", 30)


def test_each_chunk_holds_its_own_files_not_the_backlog(tmp_path, small_chunks, monkeypatch):
    snapshots = 80
    path = build(tmp_path, "ov", snapshots)
    held = []   # per chunk: (data files planned, cached entries of deltas still to expire)
    execute = ExpireSnapshots._execute

    def probing(self, plan):
        if plan.end is not None:
            lists = {s.delta_manifest_list for s in self.store.snapshots.snapshots()
                     if plan.end < s.id < snapshots - RETAIN + 1}
            later = sum(len(v) for k, v in self.reach._entries.items() if k in lists)
            held.append((len(plan.files["data"]), later))
        return execute(self, plan)
    monkeypatch.setattr(ExpireSnapshots, "_execute", probing)
    r = ExpireSnapshots(FileStore.open(path), cfg()).expire()
    assert r.expired_ids == list(range(1, snapshots - RETAIN + 1)) and not r.skipped
    assert len(held) >= 8                                     # many chunks...
    # ...each about CHUNK_FILES, or a share of the backlog where that is more (next_chunk)
    share = max(40, snapshots // expire_mod.HELD_PER_EXPIRED * PER_SNAPSHOT)
    assert max(n for n, _ in held) <= share + 2 * PER_SNAPSHOT
    assert max(k for _, k in held) <= 30                      # the backlog is not held
    assert count_data_files(path) == RETAIN * PER_SNAPSHOT
    assert_intact(path)


def _peak(path):
    tracemalloc.start()
    try:
        r = ExpireSnapshots(FileStore.open(path), cfg()).expire()
        return tracemalloc.get_traced_memory()[1], r.deleted_files
    finally:
        tracemalloc.stop()


def test_peak_memory_per_file_of_backlog_is_small(tmp_path, monkeypatch):
    # Chunks as large as in production relative to the tables (a tenth of the backlog).
    monkeypatch.setattr(expire_mod, "FIRST_CHUNK", 10)
    monkeypatch.setattr(expire_mod, "CHUNK_FILES", 400)
    monkeypatch.setattr(reachability.Reachability, "LATER_REFS", 400)
    small = build(tmp_path, "small", 100, 20)
    large = build(tmp_path, "large", 500, 20)
    _peak(build(tmp_path, "warm", 20, 20))   # first-call allocations (imports, caches)
    p_small, f_small = _peak(small)
    p_large, f_large = _peak(large)
    assert f_large > 4 * f_small
    # What grows with the backlog is the result's paths and one ADD position per file
    # (about 350 B traced); the backlog's deltas held as decoded entries cost over 750 B.
    per_file = (p_large - p_small) / (f_large - f_small)
    assert per_file < 550, f"{per_file:.0f} B per file of backlog"


def _run(path, io=None):
    return ExpireSnapshots(FileStore.open(path, io=io), cfg()).expire()


def test_a_crash_at_every_chunk_boundary_leaves_a_readable_table(tmp_path, small_chunks,
                                                                 monkeypatch):
    snapshots = 30
    template = build(tmp_path, "tpl", snapshots)
    reference = str(tmp_path / "wh" / "db.db" / "ref")
    shutil.copytree(template, reference)
    _run(reference)
    expected = rel_files(reference)

    # Count the operations once, noting each chunk's boundaries: where it starts (its
    # re-check), its first delete, and its EARLIEST hint.
    execute = ExpireSnapshots._execute
    chunks = note_chunks(monkeypatch, lambda run, plan: (plan.end, run.store.io.count),
                         planned_only=True)
    counted = str(tmp_path / "wh" / "db.db" / "count")
    shutil.copytree(template, counted)
    io = FaultyIO(counted)
    _run(counted, io)
    monkeypatch.setattr(ExpireSnapshots, "_execute", execute)
    assert len(chunks) >= 4
    starts = [start for _, start in chunks] + [io.count]
    trials = []
    for (end, start), stop in zip(chunks, starts[1:]):
        ops = io.log[start:stop]
        first_delete = next(i for i, (name, _) in enumerate(ops) if name == "_unlink")
        hint = max(i for i, (name, p) in enumerate(ops) if p.endswith("EARLIEST"))
        trials += [(end, start + 1), (end, start + first_delete + 1),
                   (end, start + hint + 1), (end, start + hint + 2)]
    for end, k in trials:
        path = str(tmp_path / "wh" / "db.db" / f"k{k}")
        shutil.copytree(template, path)
        with pytest.raises(Crash):
            _run(path, FaultyIO(path, fail_at=k))
        # Every snapshot from the crashed chunk's end on reads, the ones later chunks
        # would have expired included...
        assert_intact(path, min_snapshot=end)
        # ...and a rerun finishes the job, to the same files as a run never interrupted.
        r = _run(path)
        assert not r.skipped, (k, r.skipped)
        assert rel_files(path) == expected, f"crash at op {k}"
        assert_intact(path)
        shutil.rmtree(path)


def test_each_chunk_rechecks_before_its_deletes(tmp_path, small_chunks, monkeypatch):
    # A consumer registered below the second chunk's end between its plan and its deletes:
    # that chunk's re-check sees it and stops, deleting nothing of it.
    path = build(tmp_path, "ov", 40)
    execute = ExpireSnapshots._execute
    plans = []

    def consumer_before_second_chunk(self, plan):
        plans.append((plan.begin, plan.end))
        if len(plans) == 2:
            ConsumerManager(self.store.io, self.store.root).write("reader", plan.begin + 1)
        return execute(self, plan)
    monkeypatch.setattr(ExpireSnapshots, "_execute", consumer_before_second_chunk)
    r = ExpireSnapshots(FileStore.open(path), cfg()).expire()
    (_, first_end), (begin, end) = plans[:2]
    assert begin == first_end
    assert r.skipped == [f"the table changed while planning (consumer reader is at snapshot "
                         f"{begin + 1}, below the plan's first kept snapshot {end}); nothing "
                         f"is deleted, the next run plans again"]
    assert Table.open(path).snapshots()[0].id == first_end   # the first chunk only
    assert r.expired_ids == list(range(1, first_end))
    assert_intact(path, min_snapshot=first_end)


def _chunks(monkeypatch):
    """Per chunk executed: (snapshots it expires, files it deleted)."""
    return note_chunks(monkeypatch, lambda run, plan: (len(plan.expiring), deleted(plan)),
                       after=True, planned_only=True)


@pytest.mark.parametrize("per_snapshot", [5, 20])
def test_the_first_chunk_is_sized_by_what_its_deltas_delete(tmp_path, monkeypatch,
                                                            per_snapshot):
    # Before anything is known of the rates, the first chunk is sized as the later ones
    # are: about CHUNK_FILES files, counted from its snapshots' delta lists (each snapshot
    # of these tables deletes `per_snapshot` data files and about 4 metadata files), not a
    # fixed FIRST_CHUNK snapshots whatever they hold.
    monkeypatch.setattr(expire_mod, "FIRST_CHUNK", 3)
    monkeypatch.setattr(expire_mod, "CHUNK_FILES", 120)
    snapshots = 60
    path = build(tmp_path, "ov", snapshots, per_snapshot)
    chunks = _chunks(monkeypatch)
    r = ExpireSnapshots(FileStore.open(path), cfg()).expire()
    assert r.expired_ids == list(range(1, snapshots - RETAIN + 1)) and not r.skipped
    first, files = chunks[0]
    assert first > 3, chunks
    assert 120 - 2 * (per_snapshot + 5) <= files <= 120, chunks   # about CHUNK_FILES
    assert count_data_files(path) == RETAIN * per_snapshot
    assert_intact(path)


def test_a_small_backlog_expires_in_one_chunk_as_in_several(tmp_path, monkeypatch):
    # 40 snapshots of a few files each fit one chunk of CHUNK_FILES: one plan, one re-check,
    # one deletion (two of each with a fixed first chunk of 5), and the same files deleted.
    monkeypatch.setattr(expire_mod, "FIRST_CHUNK", 5)
    template = build(tmp_path, "tpl", 40)
    results = {}
    for fixed in (False, True):
        path = str(tmp_path / "wh" / "db.db" / f"fixed{fixed}")
        shutil.copytree(template, path)
        monkeypatch.setattr(expire_mod, "FIRST_CHUNK_FILES", 0 if fixed else None)
        chunks = _chunks(monkeypatch)
        r = ExpireSnapshots(FileStore.open(path), cfg()).expire()
        monkeypatch.undo()
        monkeypatch.setattr(expire_mod, "FIRST_CHUNK", 5)
        assert not r.skipped
        results[fixed] = (r.expired_ids, sorted(os.path.relpath(p, path)
                                                for p in r.deleted_paths), rel_files(path))
        assert len(chunks) == (2 if fixed else 1), chunks
        assert_intact(path)
    assert results[False] == results[True]


@pytest.mark.parametrize("extra", ["changelog", "index"])
def test_a_first_chunk_whose_snapshots_delete_more_than_their_deltas_count_is_not_sized(
        tmp_path, monkeypatch, extra):
    # Audit issue26h F2: changelog files (a changelog producer, the lifecycle not decoupled)
    # and index files (deletion vectors, a hash index) go with their snapshot, and no delta
    # list counts them: a count that left them out sized a first chunk of 11,600 files where
    # CHUNK_FILES was 2,000. From the first such snapshot on, the first chunk is not sized.
    from operations.test_changelog import add_changelog, add_index_and_statistics
    monkeypatch.setattr(expire_mod, "FIRST_CHUNK", 3)
    monkeypatch.setattr(expire_mod, "CHUNK_FILES", 120)
    snapshots, marked = 40, 6   # snapshots from 6 on have a changelog list / an index
    path = build(tmp_path, "ov", snapshots)
    t = Table.open(path)
    for sid in range(marked, snapshots + 1):
        if extra == "changelog":
            add_changelog(t, sid)
        else:
            add_index_and_statistics(t, sid, [f"index-{sid}-{i}" for i in range(50)])
    chunks = _chunks(monkeypatch)
    r = ExpireSnapshots(FileStore.open(path), cfg()).expire()
    assert r.expired_ids == list(range(1, snapshots - RETAIN + 1)) and not r.skipped
    # (sized over snapshots 1..5, unmarked: 10 files each by their deltas' counts; the
    # count alone would have taken about 12)
    assert chunks[0][0] == marked - 1, chunks
    assert_intact(path)
    # Marked from the first snapshot: FIRST_CHUNK snapshots, as before.
    path = build(tmp_path, "ov2", snapshots)
    t = Table.open(path)
    for sid in range(1, snapshots + 1):
        if extra == "changelog":
            add_changelog(t, sid)
        else:
            add_index_and_statistics(t, sid, [f"index-{sid}-{i}" for i in range(50)])
    chunks[:] = []
    ExpireSnapshots(FileStore.open(path), cfg()).expire()
    assert chunks[0][0] == 3, chunks
    assert_intact(path)


def test_a_time_limited_run_keeps_the_fixed_first_chunk(tmp_path, monkeypatch):
    # Audit issue26h F4: the first chunk runs whatever the time limit; under one it stays
    # FIRST_CHUNK snapshots (a sized one held the lease longer than the limit asked).
    monkeypatch.setattr(expire_mod, "FIRST_CHUNK", 3)
    path = build(tmp_path, "ov", 40)
    chunks = _chunks(monkeypatch)
    r = ExpireSnapshots(FileStore.open(path), cfg()).expire(max_duration_ms=3_600_000)
    assert r.expired_ids == list(range(1, 40 - RETAIN + 1)) and not r.skipped
    assert chunks[0][0] == 3 and len(chunks) > 1, chunks
    chunks[:] = []
    path = build(tmp_path, "ov2", 40)
    ExpireSnapshots(FileStore.open(path), cfg()).expire()
    assert chunks[0][0] > 3, chunks
