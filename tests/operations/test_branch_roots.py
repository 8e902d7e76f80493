"""Branches are roots of every deletion on main (audit issue25x x2; Paimon Java's
apache/paimon#6272): delete_tag, tag expiration (explicit and post-commit) and snapshot
expiration never delete a file a branch's snapshot or tag uses, and still delete what nothing
uses. Branches are laid out as Paimon Java's createBranch(name, tag) lays them out (the tag's
snapshot copied to branch/branch-<name>/snapshot/, the tag file to its tag/, the schemas), or
from a snapshot (createBranch(name, snapshotId) of Paimon 0.8), as the audit script does; our
handles refuse a branch, so its snapshot is read from the files its manifests name."""
import os
import shutil
import time

import pyarrow.parquet as pq

from conftest import SCHEMA, make_rows

from paimon_commit import Table
from paimon_commit.format.snapshot import Snapshot
from paimon_commit.reachability import Reachability, Unreadable

RETAIN_1 = {"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "1",
            "write-only": "true", "compaction.min.file-num": "2"}


def new_table(table_path, **options):
    return Table.create(str(table_path), SCHEMA, partition_keys=["dt", "hr"],
                        options=dict(RETAIN_1, **options))


def commit(t, ids):
    w = t.new_writer()
    w.write_arrow(make_rows(ids))
    with t.new_commit(commit_user="w") as c:
        return c.commit(w.prepare_commit())


def make_branch(path, name, src_file, sid, tags_from=None):
    """A branch as Paimon Java lays it out: `src_file` (a tag or snapshot file) copied as
    the branch's snapshot `sid`, the schemas, and the tag files of `tags_from`."""
    b = os.path.join(str(path), "branch", f"branch-{name}")
    os.makedirs(os.path.join(b, "snapshot"))
    shutil.copytree(os.path.join(str(path), "schema"), os.path.join(b, "schema"))
    shutil.copy(src_file, os.path.join(b, "snapshot", f"snapshot-{sid}"))
    for hint in ("LATEST", "EARLIEST"):
        with open(os.path.join(b, "snapshot", hint), "w") as f:
            f.write(str(sid))
    if tags_from:
        os.makedirs(os.path.join(b, "tag"))
        for tag in tags_from:
            shutil.copy(os.path.join(str(path), "tag", f"tag-{tag}"), os.path.join(b, "tag"))
    return b


def branch_rows(path, b, sid):
    """The ids the branch's snapshot `sid` holds, read from the data files its manifests
    name; raises Unreadable (a list or manifest gone) or FileNotFoundError (a data file)."""
    sp = os.path.join(b, "snapshot", f"snapshot-{sid}")
    with open(sp, "rb") as f:
        snap = Snapshot.from_json(f.read(), sp)
    files = Reachability(Table.open(str(path)).store).live_files(snap, "branch")
    ids = []
    for p in files:
        if p.endswith(".parquet"):
            ids.extend(pq.ParquetFile(p).read(columns=["id"]).column("id").to_pylist())
    return sorted(ids)


def readable(path, b, sid):
    try:
        return branch_rows(path, b, sid)
    except (Unreadable, FileNotFoundError) as e:
        return f"unreadable: {e}"


def live_paths(t, sid):
    return set(Reachability(t.store).live_files(t.snapshot(sid), f"snapshot {sid}"))


def test_delete_tag_keeps_the_branch_made_from_it(table_path):
    t = new_table(table_path)
    commit(t, [10])                                  # 1
    commit(t, [20])                                  # 2
    t.create_tag("T1", 1)
    t.create_tag("T2", 2)
    file10 = live_paths(t, 1)
    file20 = live_paths(t, 2) - file10
    b = make_branch(table_path, "b", os.path.join(str(table_path), "tag", "tag-T1"), 1,
                    tags_from=["T1"])
    t.compact()                                      # 3: rewrites 10, 20
    commit(t, [30])                                  # 4
    t.expire_snapshots(retain_min=1, retain_max=1)   # [4]; T1, T2 keep 10, 20
    assert branch_rows(table_path, b, 1) == [10]
    # What only T2 uses (file 20, its lists) still goes; what the branch uses stays.
    r2 = t.delete_tag("T2")
    assert r2.deleted_files > 0
    assert file20 and not any(os.path.exists(p) for p in file20)
    assert all(os.path.exists(p) for p in file10)
    assert branch_rows(table_path, b, 1) == [10]
    # The tag the branch was made from: its file goes, nothing the branch reads.
    r1 = t.delete_tag("T1")
    assert not t.tags()
    assert r1.deleted_files == 0, r1.deleted_paths
    assert readable(table_path, b, 1) == [10]
    assert sorted(Table.open(str(table_path)).read_arrow().column("id").to_pylist()) \
        == [10, 20, 30]


def test_post_commit_tag_expiration_keeps_the_branch(table_path):
    t = new_table(table_path)
    commit(t, [10])
    commit(t, [20])
    Table.open(str(table_path), options={"tag.default-time-retained": "1 ms"}) \
        .create_tag("T", 2)
    b = make_branch(table_path, "b", os.path.join(str(table_path), "tag", "tag-T"), 2,
                    tags_from=["T"])
    t.compact()
    commit(t, [30])
    t.expire_snapshots(retain_min=1, retain_max=1)
    assert branch_rows(table_path, b, 2) == [10, 20]
    time.sleep(0.01)
    t2 = Table.open(str(table_path), options={"write-only": "false",
                                              "tag.default-time-retained": "1 ms"})
    w = t2.new_writer()
    w.write_arrow(make_rows([40]))
    with t2.new_commit(commit_user="w") as c:
        c.commit(w.prepare_commit())
        c.wait_for_maintenance(30)
        assert c.maintenance_error is None
    assert [g.name for g in t2.tags()] == []           # expired, with no user action
    assert readable(table_path, b, 2) == [10, 20]


def test_snapshot_expiration_keeps_a_branch_made_from_a_snapshot(table_path):
    t = new_table(table_path)
    commit(t, [10])
    commit(t, [20])
    s1 = t.snapshot(1)
    b = make_branch(table_path, "b", os.path.join(str(table_path), "snapshot", "snapshot-2"), 2)
    t.compact()                                      # 3
    s3 = t.snapshot(3)
    commit(t, [30])                                  # 4
    used = live_paths(t, 2)
    assert branch_rows(table_path, b, 2) == [10, 20]
    r = t.expire_snapshots(retain_min=1, retain_max=1)
    assert r.expired_ids == [1, 2, 3]
    assert readable(table_path, b, 2) == [10, 20]
    assert all(os.path.exists(p) for p in used)
    # What no branch uses still goes: snapshot 1's and 3's own lists.
    gone = {os.path.basename(p) for p in r.deleted_paths}
    assert {s1.delta_manifest_list, s3.delta_manifest_list} <= gone
    mdir = os.path.join(str(table_path), "manifest")
    assert not os.path.exists(os.path.join(mdir, s3.delta_manifest_list))


def scenario(table_path, branch):
    """The audit's x2a sequence; returns (delete_tag's and expiration's deleted paths,
    relative, with the LIST requests each made)."""
    t = new_table(table_path)
    commit(t, [10])
    commit(t, [20])
    t.create_tag("T", 2)
    if branch:
        make_branch(table_path, "b", os.path.join(str(table_path), "tag", "tag-T"), 2,
                    tags_from=["T"])
    t.compact()
    commit(t, [30])
    e = t.expire_snapshots(retain_min=1, retain_max=1)
    d = t.delete_tag("T")
    rel = lambda ps: sorted(os.path.relpath(p, str(table_path)) for p in ps)  # noqa: E731
    return rel(e.deleted_paths), rel(d.deleted_paths), e.requests["LIST"], d.requests["LIST"]


def test_a_table_without_branches_deletes_as_before(tmp_path):
    e, d, e_lists, d_lists = scenario(tmp_path / "plain", branch=False)
    # Expiration of 1..3: their snapshot files, and what neither 4 nor tag T uses.
    assert [p for p in e if p.startswith("snapshot/")] == \
        ["snapshot/snapshot-1", "snapshot/snapshot-2", "snapshot/snapshot-3"]
    # delete_tag T (snapshot 2 expired): its two data files, its lists and manifests.
    data = [p for p in d if not p.startswith("manifest/")]
    assert len(data) == 2 and all(p.endswith(".parquet") for p in data)
    assert any(p.startswith("manifest/manifest-list-") for p in d)
    # The same run with a branch made from T: the expiration deletes what it did without
    # (T protected the same files), delete_tag deletes nothing the branch uses (all of it).
    e_b, d_b, e_lists_b, d_lists_b = scenario(tmp_path / "branched", branch=True)
    assert [os.path.basename(p) for p in e_b if p.startswith("snapshot/")] == \
        [os.path.basename(p) for p in e if p.startswith("snapshot/")]
    assert len(e_b) == len(e)
    assert d_b == []
    # Cost without branches: one listing of branch/ per deleting run.
    assert e_lists >= 1 and d_lists >= 1


def test_an_unreadable_branch_keeps_everything_but_main_snapshot_files(table_path):
    t = new_table(table_path)
    commit(t, [10])
    commit(t, [20])
    b = make_branch(table_path, "b", os.path.join(str(table_path), "snapshot", "snapshot-2"), 2)
    with open(os.path.join(b, "snapshot", "snapshot-3"), "w") as f:
        f.write("{not json")
    t.compact()
    commit(t, [30])
    r = t.expire_snapshots(retain_min=1, retain_max=1)
    assert r.expired_ids == [1, 2, 3]
    assert {os.path.basename(p) for p in r.deleted_paths} == \
        {"snapshot-1", "snapshot-2", "snapshot-3"}
    assert any("branch" in s for s in r.skipped)
    assert branch_rows(table_path, b, 2) == [10, 20]


def test_a_tag_deletion_killed_in_its_manifest_step_finishes_beside_a_branch(table_path):
    """A kill in the middle of delete_tag's (parallel) manifest step leaves any subset of it:
    here T's delta manifest gone, its merged base manifest (naming the branch's files 10, 20,
    which the deletion spares) still there. The rerun finishes: before, the branch's files
    being there read as damage ("repair the tag's metadata"), the marker stayed and every
    rerun deleted nothing (audit issue25y y2)."""
    from paimon_commit.io.local import LocalFileIO
    t = new_table(table_path, **{"manifest.merge-min-count": "2",
                                 "manifest.full-compaction-threshold-size": "1 b"})
    commit(t, [10])
    commit(t, [20])
    b = make_branch(table_path, "b", os.path.join(str(table_path), "snapshot", "snapshot-2"),
                    2)
    commit(t, [30])
    t.create_tag("T", 3)
    t.compact()
    commit(t, [50])
    t.expire_snapshots(retain_min=1, retain_max=1)
    ref = str(table_path) + "-ref"
    shutil.copytree(str(table_path), ref)
    own = sorted(os.path.basename(p) for p in Table.open(ref).delete_tag("T").deleted_paths
                 if "/manifest/manifest-" in p and "manifest-list" not in p)
    assert len(own) >= 2
    real, killed = LocalFileIO._unlink, []

    def unlink(io, norm):
        name = os.path.basename(norm)
        if name.startswith("manifest-") and not name.startswith("manifest-list") \
                and not killed:
            killed.append(name)
            raise KeyboardInterrupt("killed in the manifest step")
        return real(io, norm)
    LocalFileIO._unlink = unlink
    try:
        try:
            Table.open(str(table_path)).delete_tag("T")
        except KeyboardInterrupt:
            pass
    finally:
        LocalFileIO._unlink = real
    mdir = os.path.join(str(table_path), "manifest")
    for n in own:   # the others of the parallel step went before the kill
        if n != killed[0] and os.path.exists(os.path.join(mdir, n)):
            os.unlink(os.path.join(mdir, n))
    r = Table.open(str(table_path)).delete_tag("T")
    assert r.complete, r
    assert sorted(os.listdir(mdir)) == sorted(os.listdir(os.path.join(ref, "manifest")))
    assert not [n for d in ("tag", ".tag-deletions")
                if os.path.isdir(os.path.join(str(table_path), d))
                for n in os.listdir(os.path.join(str(table_path), d)) if "T" in n]
    assert branch_rows(table_path, b, 2) == [10, 20]
    assert sorted(Table.open(str(table_path)).read_arrow().column("id").to_pylist()) \
        == [10, 20, 30, 50]
