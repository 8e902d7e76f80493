"""Expiration and orphan cleanup at the size where tables hurt, made small: a large range is
expired in chunks (each in the crash-safe order), re-adds are tracked by path hash (a
collision only keeps), and what maintenance reads is held as names, not decoded entries.
The tables are bench_scale's (benchmarks/scale_tables.py); pypaimon reads them."""
import os
import shutil

import pytest

from invariants import assert_intact
from oracle import pp_read

from benchmarks.scale_tables import (build_append_table, build_overwrite_table,
                                     count_data_files)
from paimon_commit import Table
from paimon_commit import reachability
from paimon_commit.operations import expire as expire_mod
from paimon_commit.operations.expire import ExpireConfig, ExpireSnapshots
from paimon_commit.operations.orphan import CleanContext, OrphanFilesCleaner
from paimon_commit.store import FileStore
from tests.tablefiles import table_walk  # noqa: E402

PER_SNAPSHOT = 5
SNAPSHOTS = 60


def cfg(retain=3):
    return ExpireConfig(retain_min=retain, retain_max=retain, time_retained_ms=0,
                        max_deletes=1 << 30)


@pytest.fixture
def overwrite_table(tmp_path):
    path = str(tmp_path / "wh" / "db.db" / "ov")
    build_overwrite_table(path, SNAPSHOTS * PER_SNAPSHOT, PER_SNAPSHOT)
    return path


@pytest.fixture
def small_chunks(monkeypatch):
    monkeypatch.setattr(expire_mod, "FIRST_CHUNK", 7)
    monkeypatch.setattr(expire_mod, "FIRST_CHUNK_FILES", 0)   # (a fixed first chunk)
    monkeypatch.setattr(expire_mod, "CHUNK_FILES", 40)


def rel_files(root):
    return {os.path.relpath(os.path.join(d, f), root)
            for d, _, fs in table_walk(root) for f in fs}


def test_bench_tables_read_by_pypaimon_and_us(tmp_path, overwrite_table):
    ap = str(tmp_path / "wh" / "db.db" / "ap")
    build_append_table(ap, 300, snapshots=6, strays=4, manifest_entries=20)
    assert pp_read(overwrite_table).num_rows == PER_SNAPSHOT
    assert Table.open(overwrite_table).read_arrow().num_rows == PER_SNAPSHOT
    assert pp_read(ap).num_rows == 300 == Table.open(ap).read_arrow().num_rows
    assert pp_read(overwrite_table, snapshot_id=10).num_rows == PER_SNAPSHOT
    r = OrphanFilesCleaner(CleanContext(ap, dry_run=True)).clean()
    assert sorted(os.path.basename(p) for p in r.deleted_paths) == \
        [f"data-stray-{i}.parquet" for i in range(4)]


def test_large_expiration_runs_in_chunks_like_one_run(tmp_path, overwrite_table, small_chunks,
                                                      monkeypatch):
    whole = str(tmp_path / "wh" / "db.db" / "whole")
    shutil.copytree(overwrite_table, whole)
    before = rel_files(overwrite_table)
    plans = []
    plan = ExpireSnapshots.plan

    def counting(self):
        p = plan(self)
        plans.append(len(p.expiring))
        return p
    monkeypatch.setattr(ExpireSnapshots, "plan", counting)
    r = ExpireSnapshots(FileStore.open(overwrite_table), cfg()).expire()
    assert len([n for n in plans if n]) >= 3 and max(plans) < SNAPSHOTS - 3   # chunks
    monkeypatch.setattr(expire_mod, "FIRST_CHUNK", 10 ** 6)
    monkeypatch.setattr(expire_mod, "CHUNK_SNAPSHOTS", 10 ** 6)
    plans.clear()
    w = ExpireSnapshots(FileStore.open(whole), cfg()).expire()
    assert plans[0] == SNAPSHOTS - 3   # one plan
    assert r.expired_ids == w.expired_ids == list(range(1, SNAPSHOTS - 2))
    assert r.by_kind == w.by_kind and r.deleted_files == w.deleted_files
    assert rel_files(overwrite_table) == rel_files(whole)
    gone = before - rel_files(overwrite_table)
    assert {os.path.relpath(p, overwrite_table) for p in r.deleted_paths} == gone
    assert count_data_files(overwrite_table) == 3 * PER_SNAPSHOT
    assert [s.id for s in Table.open(overwrite_table).snapshots()] == [58, 59, 60]
    assert_intact(overwrite_table)


def test_a_run_stopped_between_chunks_is_finished_by_the_next(overwrite_table, small_chunks,
                                                              monkeypatch):
    calls = []
    execute = ExpireSnapshots._execute

    def crash_on_second_chunk(self, plan):
        calls.append(plan.begin)
        if len(calls) == 2:
            raise KeyboardInterrupt("killed between chunks")
        return execute(self, plan)
    monkeypatch.setattr(ExpireSnapshots, "_execute", crash_on_second_chunk)
    with pytest.raises(KeyboardInterrupt):
        ExpireSnapshots(FileStore.open(overwrite_table), cfg()).expire()
    first = Table.open(overwrite_table).snapshots()[0].id
    assert 1 < first < SNAPSHOTS - 2   # the first chunk is done, the rest not
    assert_intact(overwrite_table)
    monkeypatch.undo()
    r = ExpireSnapshots(FileStore.open(overwrite_table), cfg()).expire()
    assert r.expired_ids == list(range(first, SNAPSHOTS - 2)) and not r.skipped
    assert count_data_files(overwrite_table) == 3 * PER_SNAPSHOT
    assert_intact(overwrite_table)


def test_limit_counts_for_the_whole_run_not_per_chunk(overwrite_table, small_chunks):
    r = ExpireSnapshots(FileStore.open(overwrite_table),
                        ExpireConfig(retain_min=3, time_retained_ms=0, max_deletes=20)).expire()
    assert r.expired_ids == list(range(1, 21))
    assert Table.open(overwrite_table).snapshots()[0].id == 21


def test_a_path_hash_collision_only_keeps_files(overwrite_table, monkeypatch):
    # Every path hashes alike: each DELETE then looks re-added by any later ADD.
    monkeypatch.setattr(reachability, "hash", lambda path: 7, raising=False)
    data_before = count_data_files(overwrite_table)
    r = ExpireSnapshots(FileStore.open(overwrite_table), cfg()).expire()
    assert r.expired_snapshots == SNAPSHOTS - 3
    assert "data" not in r.by_kind   # kept (left for orphan cleanup), never deleted
    assert count_data_files(overwrite_table) == data_before
    assert_intact(overwrite_table)


def test_maintenance_holds_names_not_decoded_entries(tmp_path, overwrite_table, monkeypatch):
    monkeypatch.setattr(reachability.Reachability, "MEMO_REFS", 40)
    store = FileStore.open(overwrite_table)
    op = ExpireSnapshots(store, cfg())
    op.expire()
    assert sum(len(v) for v in op.reach._entries.values()) <= 40
    assert not store.manifests._manifests._d   # no decoded manifest was cached
    ap = str(tmp_path / "wh" / "db.db" / "ap")
    build_append_table(ap, 200, snapshots=4, strays=0, manifest_entries=50)
    cleaner = OrphanFilesCleaner(CleanContext(ap, dry_run=True))
    assert len(cleaner.used_files()) >= 200
    assert not cleaner.store.manifests._manifests._d


def test_orphan_cleanup_keeps_a_stray_whose_name_hash_collides(tmp_path, monkeypatch):
    ap = str(tmp_path / "wh" / "db.db" / "ap")
    build_append_table(ap, 100, snapshots=4, strays=3, manifest_entries=30)
    before = rel_files(ap)
    # Every name hashes alike: each stray looks used, and is kept.
    from paimon_commit.operations import orphan_select
    monkeypatch.setattr(orphan_select, "hash", lambda name: 11, raising=False)
    r = OrphanFilesCleaner(CleanContext(ap)).clean()
    assert r.deleted_files == 0 and rel_files(ap) == before
    monkeypatch.undo()
    r = OrphanFilesCleaner(CleanContext(ap)).clean()
    assert sorted(os.path.basename(p) for p in r.deleted_paths) == \
        [f"data-stray-{i}.parquet" for i in range(3)]
    assert_intact(ap)
