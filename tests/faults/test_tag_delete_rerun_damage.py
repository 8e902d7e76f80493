"""A delete_tag rerun (from the deletion marker) on a tag whose metadata is damaged, not
half deleted (audit f3). "What the tag uses no longer reads" means "the killed run got past
the data step" only when the missing piece is genuinely absent and none of the tag's own
data files its readable manifests name is still there. Otherwise the rerun reports the damage
and keeps the marker (the only record of those data files): after a repair, one more run
finishes with exactly the files of an undamaged deletion."""
import os
import shutil

import pytest

from faults.faulty_io import Crash, FaultyIO
from invariants import assert_intact

from benchmarks.scale_tables import build_overwrite_table
from paimon_commit import Table
from paimon_commit.operations.expire import ExpireConfig, ExpireSnapshots
from paimon_commit.store import FileStore


def files(root):
    # (not the maintenance lease's records: bookkeeping, not the table; a killed run leaves
    # its record unreleased)
    return {os.path.relpath(os.path.join(d, f), root)
            for d, _, fs in os.walk(root) for f in fs
            if not os.path.relpath(d, root).startswith(".maintenance")}


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    """Tags t5 (deleted by the tests) and keep on snapshots that then expire: t5 owns files."""
    path = str(tmp_path_factory.mktemp("tpl") / "wh" / "db.db" / "t")
    build_overwrite_table(path, 40, 4)
    t = Table.open(path)
    t.create_tag("t5", 5)
    t.create_tag("keep", 3)
    ExpireSnapshots(FileStore.open(path), ExpireConfig(retain_min=2, time_retained_ms=0)).expire()
    return path


@pytest.fixture(scope="module")
def reference(template, tmp_path_factory):
    """The files after an undamaged, uninterrupted delete_tag."""
    path = str(tmp_path_factory.mktemp("ref") / "wh" / "db.db" / "t")
    shutil.copytree(template, path)
    assert not Table.open(path).delete_tag("t5").skipped
    return files(path)


@pytest.mark.parametrize("damage", ["corrupt", "removed"])
def test_a_rerun_on_a_damaged_tag_keeps_the_marker_and_reports_it(template, reference,
                                                                  tmp_path, damage):
    path = str(tmp_path / "wh" / "db.db" / "t")
    shutil.copytree(template, path)
    t = Table.open(path)
    tag_snap = next(x.snapshot for x in t.tags() if x.name == "t5")
    # The tag's ADD manifest (its delta list: [DELETE manifest, ADD manifest]).
    adds = t.store.manifests.read_list_refs(tag_snap.delta_manifest_list)[-1].file_name
    adds_path = os.path.join(path, "manifest", adds)
    backups = {}
    for m in t.store.manifests.read_list_refs(tag_snap.delta_manifest_list):
        with open(os.path.join(path, "manifest", m.file_name), "rb") as f:
            backups[os.path.join(path, "manifest", m.file_name)] = f.read()
    # Killed in the data step: unlink 1 is the tag file, 2 a data file, 3 dies.
    with pytest.raises(Crash):
        Table(FileStore.open(path, io=FaultyIO(path, fail_at=3, kinds={"_unlink"}))
              ).delete_tag("t5")
    if damage == "corrupt":
        with open(adds_path, "r+b") as f:
            f.write(b"garbage, not avro")
    else:
        # The delta's DELETE manifest removed by something else between the runs: absent,
        # as the manifest step leaves it, but the ADD manifest still names data files of the
        # tag that are there. (Were the ADD manifest itself removed, nothing would name
        # them any more and the rerun could not tell; they are left for orphan cleanup.)
        os.unlink(os.path.join(path, "manifest", t.store.manifests.read_list_refs(
            tag_snap.delta_manifest_list)[0].file_name))
    before = files(path)
    r = Table.open(path).delete_tag("t5")
    marker = os.path.join(path, ".tag-deletions", "tag-t5")
    assert len(r.skipped) == 1, r.skipped
    assert r.skipped[0].startswith(f"cannot read what tag t5 uses ("), r.skipped
    assert r.skipped[0].endswith(
        f", and its data files are not all gone; its deletion marker {marker} is kept: repair "
        f"the tag's metadata and run delete_tag('t5') again"), r.skipped
    assert r.deleted_files == 0 and files(path) == before
    assert Table.open(path).unfinished_tag_deletions() == ["t5"]
    assert_intact(path)
    # Repaired: the next run finishes the job.
    for p, data in backups.items():
        with open(p, "wb") as f:
            f.write(data)
    r = Table.open(path).delete_tag("t5")
    assert not r.skipped, r.skipped
    assert Table.open(path).unfinished_tag_deletions() == []
    assert files(path) == reference
    assert_intact(path)


@pytest.mark.parametrize("op", ["delete-tag", "expire-tags"])
def test_a_tag_recreated_by_another_engine_is_kept_and_the_earlier_deletion_finishes(
        template, reference, tmp_path, capsys, op):
    """The deletion of t5 (snapshot 5) is killed in its data step; another engine (it does not
    know the markers) then tags snapshot 10 "t5" (audit f4). `tags` says the marker is from
    an earlier t5 and that the live one is kept (it advised `delete-tag t5`, which deleted
    the live tag and left the old one's files); delete-tag and expire-tags finish the earlier
    deletion, keeping the live tag: the files are those of an unkilled deletion plus the
    live tag's file."""
    from paimon_commit.cli import main
    path = str(tmp_path / "wh" / "db.db" / "t")
    shutil.copytree(template, path)
    with pytest.raises(Crash):
        Table(FileStore.open(path, io=FaultyIO(path, fail_at=3, kinds={"_unlink"}))
              ).delete_tag("t5")
    shutil.copyfile(os.path.join(path, "snapshot", "snapshot-10"),
                    os.path.join(path, "tag", "tag-t5"))
    assert main(["tags", path]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[-1] == (
        "t5\tdeletion of an earlier tag t5 (snapshot 5) unfinished; the tag t5 on snapshot 10 "
        "is a newer one and is kept: run `paimon-commit expire-tags TABLE` or `paimon-commit "
        "delete-tag TABLE t5` to finish the earlier deletion")
    if op == "delete-tag":
        r = Table.open(path).delete_tag("t5")
        assert r.snapshot_id == 5
        assert r.skipped == [
            "a tag 't5' on snapshot 10 was created after the deletion of an earlier tag 't5' "
            "on snapshot 5 was interrupted: that deletion is finished and the tag 't5' on "
            "snapshot 10 is kept (run delete_tag('t5') again to delete it)"]
    else:
        from paimon_commit.operations.tag_expire import expire_tags
        r = expire_tags(FileStore.open(path))
        assert r.finished_deletions == ["t5"] and not r.errors, r.to_dict()
    t = Table.open(path)
    assert [(x.name, x.id) for x in t.tags()] == [("keep", 3), ("t5", 10)]
    assert t.unfinished_tag_deletions() == []
    assert files(path) == reference | {"tag/tag-t5"}
    assert_intact(path)
