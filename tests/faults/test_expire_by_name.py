"""Expiration's by-name path: what a retained root uses cannot be read (a damaged tag), so the
expiring snapshots' lists, index manifests and statistics files are deleted by the name their
snapshot file gives. A name is never trusted to be of the kind its field says (audit f6)."""
import os

import pytest

from invariants import assert_intact
from oracle import pp_read, rows
from operations.test_changelog import add_index_and_statistics, rewrite_snapshot

from benchmarks.scale_tables import build_overwrite_table
from paimon_commit import Table
from paimon_commit.operations.expire import ExpireConfig, ExpireSnapshots
from paimon_commit.store import FileStore

SNAPSHOTS = 12
TAG = 6


def cfg():
    return ExpireConfig(retain_min=3, time_retained_ms=0)


@pytest.fixture
def table(tmp_path):
    path = str(tmp_path / "wh" / "db.db" / "t")
    build_overwrite_table(path, SNAPSHOTS * 2, 2)
    t = Table.open(path)
    for sid in range(1, SNAPSHOTS + 1):
        add_index_and_statistics(t, sid, [f"index-{sid}-a", f"index-{sid}-b"], f"stat-{sid}")
    Table.open(path).create_tag(f"t{TAG}", TAG)
    return path


def damage_tag(path):
    """Remove the tag's base list; returns (its path, its bytes) to restore it."""
    t = Table.open(path)
    base = t.store.manifests.path(t.store.snapshots.snapshot(TAG).base_manifest_list)
    with open(base, "rb") as f:
        backup = f.read()
    os.unlink(base)
    return base, backup


@pytest.mark.parametrize("field", ["index_manifest", "delta_manifest_list", "base_manifest_list"])
@pytest.mark.parametrize("whose", ["latest", "damaged-tag"])
def test_a_hostile_name_in_an_expiring_snapshot_never_deletes_a_data_manifest(table, field,
                                                                              whose):
    """An expiring snapshot's JSON names, as its index manifest or one of its lists, a data
    manifest that the latest snapshot reads (known: its list reads) or that only the damaged
    tag's unreadable list names (known by its kind only): it stays, the latest snapshot reads
    back, and once the tag's list is restored the tag reads too."""
    t = Table.open(table)
    holder = SNAPSHOTS if whose == "latest" else TAG
    victim = t.store.manifests.read_list_refs(
        t.store.snapshots.snapshot(holder).base_manifest_list)[0].file_name
    assert victim.startswith("manifest-") and not victim.startswith("manifest-list-")
    rewrite_snapshot(t, 2, **{field: victim})
    base, backup = damage_tag(table)
    r = ExpireSnapshots(FileStore.open(table), cfg()).expire()
    assert r.expired_ids == list(range(1, SNAPSHOTS - 2))
    assert os.path.exists(os.path.join(table, "manifest", victim))
    assert len(rows(pp_read(table, snapshot_id=SNAPSHOTS))) == 2   # (pypaimon: DV-aware)
    with open(base, "wb") as f:
        f.write(backup)
    assert_intact(table)


def test_the_by_name_path_deletes_only_the_expiring_changelog_files_nothing_retained_names(
        tmp_path):
    """With a changelog producer: on the by-name path the expiring snapshots' changelog files
    go (their changelog lists are named by nothing retained); the damaged tag's own changelog
    file and the retained snapshots' stay (audit c3: new in this path, untested)."""
    from operations.test_changelog import add_changelog
    path = str(tmp_path / "wh" / "db.db" / "t")
    build_overwrite_table(path, SNAPSHOTS * 2, 2)
    changelogs = {sid: add_changelog(Table.open(path), sid) for sid in range(1, SNAPSHOTS + 1)}
    Table.open(path).create_tag(f"t{TAG}", TAG)
    base, backup = damage_tag(path)
    r = ExpireSnapshots(FileStore.open(path), cfg()).expire()
    assert r.expired_ids == list(range(1, SNAPSHOTS - 2))
    gone = sorted(sid for sid, p in changelogs.items() if not os.path.exists(p))
    assert gone == [sid for sid in range(1, SNAPSHOTS - 2) if sid != TAG]
    with open(base, "wb") as f:
        f.write(backup)
    assert_intact(path)
