"""The one module that decides what is still used (paimon_commit/reachability.py), on real
tables: what each kind of root needs, and the partial-view rules (what must be kept is read
strictly, what may be deleted tolerantly)."""
import os

import pytest

from conftest import make_rows, write

from paimon_commit import Table
from paimon_commit.format.manifest import FileKind
from paimon_commit.reachability import Reachability, Root, Unreadable


@pytest.fixture
def five(table):
    """Five snapshots, one row each in hr = i % 2; snapshot 5 drops hr=0."""
    for i in range(1, 5):
        write(table, make_rows([i], hr=i % 2))
    with table.new_commit() as c:
        c.drop_partitions([{"hr": 0}])
    return table


def test_a_root_uses_its_lists_manifests_and_files(five, table_path):
    reach = Reachability(five.store)
    s4, s5 = five.snapshot(4), five.snapshot(5)
    names = reach.metadata_names(Root("snapshot-4", s4))
    assert set(s4.manifest_lists()) <= names
    manifests = {f for f in os.listdir(table_path / "manifest") if f in names}
    assert manifests == names   # only manifest-dir names: no index, no statistics here
    # Files of DELETE entries are used too (Paimon's orphan cleanup matches names).
    used = reach.used_names([Root("snapshot-5", s5)])
    dropped = {f.file_name for f in five.live_files(4) if f.partition["hr"] == 0}
    assert dropped and dropped <= used
    assert reach.live_data(s5, "s5") == {f.path for f in five.live_files(5)}


def fresh(table_path):
    """A Reachability of a freshly opened table: nothing read yet."""
    return Reachability(Table.open(str(table_path)).store)


def test_needed_lists_are_read_strictly(five, table_path):
    s4 = five.snapshot(4)
    os.unlink(table_path / "manifest" / s4.base_manifest_list)
    reach = fresh(table_path)
    for kind in ("snapshot", "tag"):
        with pytest.raises(Unreadable, match="where-it-is"):
            reach.metadata_names(Root("where-it-is", s4, kind))
    # A long-lived changelog is read by its delta list (no changelog list): base may go.
    names = reach.metadata_names(Root("changelog-4", s4, "changelog"))
    assert s4.delta_manifest_list in names and s4.base_manifest_list not in names
    os.unlink(table_path / "manifest" / s4.delta_manifest_list)
    with pytest.raises(Unreadable):
        fresh(table_path).metadata_names(Root("changelog-4", s4, "changelog"))


def test_a_tag_or_changelog_without_its_changelog_list(five):
    s4 = five.snapshot(4).with_(changelog_manifest_list="manifest-list-gone-0")
    reach = Reachability(five.store)
    # Paimon's expiration deletes a tagged snapshot's changelog: the tag stays valid.
    assert "manifest-list-gone-0" not in reach.metadata_names(Root("tag-t", s4, "tag"))
    # A changelog is read by its changelog list: without it, nothing is known.
    with pytest.raises(Unreadable):
        reach.metadata_names(Root("changelog-4", s4, "changelog"))
    with pytest.raises(Unreadable):
        reach.metadata_names(Root("snapshot-4", s4))


def test_what_may_be_deleted_is_read_tolerantly(five, table_path):
    s3, s4 = five.snapshot(3), five.snapshot(4)
    reach = Reachability(five.store)
    keep = reach.kept_metadata([Root("snapshot-4", s4)])
    skipped = []
    unused = reach.unused_metadata(s3, s3.manifest_lists(), keep, skipped.append)
    assert {os.path.basename(p) for p in unused} == {s3.base_manifest_list,
                                                     s3.delta_manifest_list}
    assert not {os.path.basename(p) for p in unused} & keep
    # A list already gone (an earlier, interrupted run) contributes nothing, silently.
    os.unlink(table_path / "manifest" / s3.base_manifest_list)
    assert {os.path.basename(p) for p in fresh(table_path).unused_metadata(
        s3, s3.manifest_lists(), keep, skipped.append)} == {s3.delta_manifest_list}
    # A damaged one is kept, with a reason.
    (table_path / "manifest" / s3.delta_manifest_list).write_bytes(b"garbage")
    assert {os.path.basename(p) for p in fresh(table_path).unused_metadata(
        s3, s3.manifest_lists(), keep, skipped.append)} == {s3.delta_manifest_list}
    assert s3.delta_manifest_list in skipped[-1] and "left for orphan cleanup" in skipped[-1]


def test_deleted_files_never_on_a_partial_view(five, table_path):
    snaps = {i: five.snapshot(i) for i in range(1, 6)}
    dropped = {f.path for f in five.live_files(4) if f.partition["hr"] == 0}
    lineage = [(i, snaps[i]) for i in range(2, 6)]
    reach = Reachability(five.store)
    skipped = []
    assert set(reach.deleted_files(lineage, 5, set, skipped.append)) == dropped
    # Protected (e.g. live in a tag): kept.
    assert reach.deleted_files(lineage, 5, lambda: dropped, skipped.append) == {}
    # What protects cannot be read: nothing at all.
    def unreadable():
        raise Unreadable("tag t", FileNotFoundError("tag-t"))
    assert reach.deleted_files(lineage, 5, unreadable, skipped.append) == {}
    assert "no data file is deleted" in skipped[-1]
    # A missing snapshot at or after the delete hides a possible re-add: nothing.
    assert Reachability(five.store).deleted_files(
        lineage[:-1] + [(5, None)], 5, set, skipped.append) == {}
    # A re-add later in the lineage keeps the file.
    readd = snaps[4].with_(id=6, delta_manifest_list=snaps[2].delta_manifest_list)
    assert Reachability(five.store).deleted_files(
        lineage + [(6, readd)], 5, set, skipped.append) == {
            p: n for p, n in reach.deleted_files(lineage, 5, set, skipped.append).items()
            if p not in {f.path for f in five.live_files(2)}}


def test_reads_are_cached_by_file_name_and_pruned(five, table_path):
    reach = fresh(table_path)
    s4 = five.snapshot(4)
    reach.start()
    first = reach.entries(s4.delta_manifest_list)
    os.unlink(table_path / "manifest" / s4.delta_manifest_list)
    assert reach.entries(s4.delta_manifest_list) is first   # immutable: never read twice
    assert [e.kind for e in first] == [FileKind.ADD]
    reach.prune()
    reach.start()
    reach.manifests(five.snapshot(5).delta_manifest_list)   # the next run touches only this
    reach.prune()
    assert s4.delta_manifest_list not in reach._entries   # what the last run did not touch


def test_a_changelog_needs_only_the_manifests_of_the_list_it_is_read_by(five, table_path):
    s4 = five.snapshot(4)
    st = Table.open(str(table_path)).store
    delta = {m.file_name for m in st.manifests.read_list(s4.delta_manifest_list)}
    base_only = {m.file_name for m in st.manifests.read_list(s4.base_manifest_list)} - delta
    assert base_only
    for m in base_only:    # an interrupted changelog expiration (manifests go before lists)
        os.unlink(table_path / "manifest" / m)
    used = fresh(table_path).used_names([Root("changelog-4", s4, "changelog")])
    assert delta <= used and s4.base_manifest_list in used
    with pytest.raises(Unreadable, match="manifest-"):
        fresh(table_path).used_names([Root("snapshot-4", s4)])


def test_what_a_changelog_is_read_by_depends_on_the_producer(five, table_path):
    """With a changelog producer, a snapshot that produced no changelog (e.g. the APPEND half
    of a lookup table's write) leaves a long-lived changelog that needs nothing; Paimon
    deleted its lists with the snapshot. With producer none its delta is its changelog."""
    s4 = five.snapshot(4)
    for name in s4.manifest_lists():
        os.unlink(table_path / "manifest" / name)
    root = Root("changelog-4", s4, "changelog")
    reach = fresh(table_path)
    reach.producer = "lookup"
    assert reach.metadata_names(root) == set()
    assert root.read_by("lookup") is None and root.read_by("none") == s4.delta_manifest_list
    with pytest.raises(Unreadable):
        fresh(table_path).metadata_names(root)     # this table's producer: none
