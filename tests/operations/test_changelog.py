"""Changelog-bearing tables and primary-key metadata, built by hand (no JVM needed): snapshot
expiration with and without the decoupled changelog lifecycle, changelog expiration, orphan
cleanup and delete_tag with index manifests, index files and statistics. Java-written tables
of every changelog producer are in tests/java/test_changelog_lifecycle.py."""
import dataclasses
import io
import json
import os
import time
import uuid

import fastavro
import pytest

from conftest import files_under, make_rows, write
from invariants import assert_intact

from paimon_commit import Table
from paimon_commit.format.manifest import FileKind
from paimon_commit.manifests import ManifestWriteSession
from paimon_commit.operations.expire import ExpireConfig, ExpireSnapshots
from paimon_commit.operations.orphan import CleanContext, OrphanCleanAborted, OrphanFilesCleaner
from paimon_commit.snapshots import ChangelogManager

FAR_FUTURE = lambda: time.time() + 10 * 365 * 86400  # noqa: E731
OLD = time.time() - 3 * 86400

INDEX_SCHEMA = fastavro.parse_schema({"type": "record", "name": "IndexManifestEntry", "fields": [
    {"name": "_VERSION", "type": "int"}, {"name": "_KIND", "type": "int"},
    {"name": "_PARTITION", "type": "bytes"}, {"name": "_BUCKET", "type": "int"},
    {"name": "_INDEX_TYPE", "type": "string"}, {"name": "_FILE_NAME", "type": "string"},
    {"name": "_FILE_SIZE", "type": "long"}, {"name": "_ROW_COUNT", "type": "long"}]})


def rewrite_snapshot(table, sid, **changes):
    """Give a just-committed snapshot (nothing has read it yet) more metadata, as Paimon's
    primary-key writers do. Returns the new snapshot."""
    sm = table.store.snapshots
    s = sm.snapshot(sid).with_(**changes)
    with open(sm.snapshot_path(sid), "wb") as f:
        f.write(s.to_json())
    return s


def add_changelog(table, sid):
    """Snapshot `sid` gets a changelog list with one changelog file next to its data (what a
    changelog producer writes). Returns the changelog file's path."""
    st = table.store
    add = next(e for e in st.delta_entries(st.snapshots.snapshot(sid)) if e.kind == FileKind.ADD)
    name = f"changelog-{uuid.uuid4()}-0.parquet"
    path = os.path.join(os.path.dirname(st.data_file_path(add)), name)
    with open(path, "wb") as f:
        f.write(b"c" * 40)
    entry = dataclasses.replace(add, file=dataclasses.replace(add.file, file_name=name,
                                                              file_size=40))
    session = ManifestWriteSession(st.manifests)
    lst, size = session.write_list(session.write_manifests([entry]))
    rewrite_snapshot(table, sid, changelog_manifest_list=lst, changelog_manifest_list_size=size,
                     changelog_record_count=1)
    return path


def add_index_and_statistics(table, sid, index_files, stats=None):
    """Snapshot `sid` gets an index manifest listing `index_files` (deletion vectors, hash
    index: files under index/) and optionally a statistics file."""
    root = table.store.root
    os.makedirs(os.path.join(root, "index"), exist_ok=True)
    for n in index_files:
        with open(os.path.join(root, "index", n), "wb") as f:
            f.write(b"dv")
    buf = io.BytesIO()
    fastavro.writer(buf, INDEX_SCHEMA, [
        {"_VERSION": 1, "_KIND": 0, "_PARTITION": b"", "_BUCKET": 0,
         "_INDEX_TYPE": "DELETION_VECTORS", "_FILE_NAME": n, "_FILE_SIZE": 2, "_ROW_COUNT": 1}
        for n in index_files])
    manifest = f"index-manifest-{uuid.uuid4()}-0"
    with open(os.path.join(root, "manifest", manifest), "wb") as f:
        f.write(buf.getvalue())
    if stats:
        os.makedirs(os.path.join(root, "statistics"), exist_ok=True)
        with open(os.path.join(root, "statistics", stats), "wb") as f:
            f.write(b"{}")
    rewrite_snapshot(table, sid, index_manifest=manifest, statistics=stats)
    return manifest


@pytest.fixture
def cl_table(table_path):
    def make(**options):
        producer = options.pop("changelog-producer", None)
        t = Table.create(str(table_path), make_rows([]).schema, partition_keys=["dt", "hr"],
                         options={"write-only": "true", **options})
        if producer is None:
            return t
        # Table.create refuses a producer on an append table (Paimon does too); these tests
        # stand for a primary-key table's changelog files, so the option is put into the
        # schema as another engine would have stored it.
        schema_file = table_path / "schema" / "schema-0"
        obj = json.loads(schema_file.read_text())
        obj["options"]["changelog-producer"] = producer
        schema_file.write_text(json.dumps(obj))
        return Table.open(str(table_path))
    return make


def history(table, n, with_changelog=True, drop_at=()):
    """n snapshots, each one row into hr = i % 2 (a changelog file each); at `drop_at`, hr=0
    is dropped instead. Returns {snapshot id: changelog file path}."""
    changelogs = {}
    for i in range(1, n + 1):
        if i in drop_at:
            with table.new_commit() as c:
                c.drop_partitions([{"hr": 0}])
        else:
            write(table, make_rows([i], hr=i % 2))
            if with_changelog:
                changelogs[i] = add_changelog(table, i)
    return changelogs


def expire(table, **cfg):
    """Expiration with the table's options (changelog-producer) and `cfg`."""
    cfg = ExpireConfig.from_options(table.store.options, **{
        "time_retained_ms": 0, "max_deletes": 1000, **cfg})
    return ExpireSnapshots(table.store, cfg, clock=FAR_FUTURE).expire()


def changelog_ids(path):
    return sorted(int(n[len("changelog-"):]) for n in os.listdir(path / "changelog")
                  if n.startswith("changelog-"))


def assert_changelogs_readable(table):
    """Every long-lived changelog's changelog list (or, without one, its delta list), the
    manifests in it and the files they add exist: what a streaming reader reads."""
    st = table.store
    for c in ChangelogManager(st.io, st.root).snapshots():
        for m in st.manifests.read_list(c.changelog_manifest_list or c.delta_manifest_list):
            for e in st.manifests.read_manifest(m.file_name):
                if e.kind == FileKind.ADD:
                    assert os.path.exists(st.data_file_path(e)), f"changelog {c.id}: {e}"


def test_not_decoupled_changelog_files_go_with_their_snapshot(cl_table, table_path):
    t = cl_table(**{"changelog-producer": "input"})
    changelogs = history(t, 6)
    r = expire(t, retain_min=2)
    assert r.expired_ids == [1, 2, 3, 4] and r.expired_changelogs == []
    assert r.by_kind["changelog"]["files"] == 4
    assert [os.path.exists(changelogs[i]) for i in range(1, 7)] == [False] * 4 + [True] * 2
    assert not (table_path / "changelog").exists()
    assert_intact(table_path)


def test_decoupled_snapshots_live_on_as_changelogs_then_expire(cl_table, table_path):
    t = cl_table(**{"changelog-producer": "input"})
    changelogs = history(t, 8)
    raw = {i: (table_path / "snapshot" / f"snapshot-{i}").read_bytes() for i in range(1, 9)}
    lists = {i: t.snapshot(i) for i in range(1, 9)}
    r = expire(t, retain_min=2, changelog_retain_min=5)
    assert r.expired_ids == list(range(1, 7))
    # Changelogs 1..6 were written, 1..3 expired again (5 retained counting the snapshots).
    assert r.expired_changelogs == [1, 2, 3]
    assert changelog_ids(table_path) == [4, 5, 6]
    for i in (4, 5, 6):   # the snapshot's JSON, byte for byte (Paimon's Changelog format)
        assert (table_path / "changelog" / f"changelog-{i}").read_bytes() == raw[i]
    assert (table_path / "changelog" / "LATEST").read_text() == "6"
    assert (table_path / "changelog" / "EARLIEST").read_text() == "4"
    assert [os.path.exists(changelogs[i]) for i in range(1, 9)] == [False] * 3 + [True] * 5
    manifest = table_path / "manifest"
    for i in range(1, 7):   # producer input: base and delta lists go with the snapshot
        assert not (manifest / lists[i].base_manifest_list).exists()
        assert (manifest / lists[i].changelog_manifest_list).exists() == (i >= 4)
    assert r.by_kind["long-lived-changelog"]["files"] == 3
    assert_changelogs_readable(t)
    assert_intact(table_path)
    # Nothing left to do: a second run expires nothing and deletes nothing.
    before = files_under(table_path)
    again = expire(Table.open(str(table_path)), retain_min=2, changelog_retain_min=5)
    assert (again.expired_ids, again.expired_changelogs, again.deleted_files) == ([], [], 0)
    assert files_under(table_path) == before


def test_producer_none_keeps_append_files_until_their_changelog_expires(cl_table, table_path):
    t = cl_table()
    history(t, 8, with_changelog=False, drop_at=(5,))
    dropped = [f.path for f in t.live_files(4) if f.partition["hr"] == 0]
    lists = {i: t.snapshot(i) for i in range(1, 9)}
    r = expire(t, retain_min=2, changelog_retain_min=6)
    assert r.expired_ids == list(range(1, 7)) and r.expired_changelogs == [1, 2]
    # The deltas are the changelog: the files snapshot 5 dropped wait for changelog 5.
    assert dropped and all(os.path.exists(p) for p in dropped)
    for i in range(3, 7):   # every list of a retained changelog stays
        assert (table_path / "manifest" / lists[i].delta_manifest_list).exists()
        assert (table_path / "manifest" / lists[i].base_manifest_list).exists()
    assert_changelogs_readable(t)
    r = expire(Table.open(str(table_path)), retain_min=2, changelog_retain_min=3)
    assert r.expired_changelogs == [3, 4, 5] and changelog_ids(table_path) == [6]
    assert not any(os.path.exists(p) for p in dropped)
    assert_changelogs_readable(t)
    assert_intact(table_path, {7: [1, 3, 6, 7], 8: [1, 3, 6, 7, 8]})


def test_tag_protects_what_changelog_expiration_would_delete(cl_table, table_path):
    t = cl_table()
    history(t, 8, with_changelog=False, drop_at=(5,))
    t.create_tag("t4", 4)
    expire(t, retain_min=2, changelog_retain_min=6)
    expire(Table.open(str(table_path)), retain_min=2, changelog_retain_min=3)
    assert changelog_ids(table_path) == [6]
    assert_intact(table_path, expected_by_tag={"t4": [1, 2, 3, 4]})


def test_orphan_cleanup_needs_only_a_changelogs_changelog_list(cl_table, table_path):
    t = cl_table(**{"changelog-producer": "input"})
    changelogs = history(t, 6)
    expire(t, retain_min=2, changelog_retain_min=4)
    cid = changelog_ids(table_path)[0]
    c = ChangelogManager(t.store.io, t.store.root).snapshot(cid)
    # Our expiration deleted its base and delta lists, as Java's does.
    assert not (table_path / "manifest" / c.base_manifest_list).exists()
    for root, dirs, names in os.walk(table_path):
        for n in names + dirs:
            os.utime(os.path.join(root, n), (OLD, OLD))
    r = OrphanFilesCleaner(CleanContext(str(table_path))).clean()
    assert r.deleted_files == 0
    assert os.path.exists(changelogs[cid])
    assert_changelogs_readable(t)
    # Without its changelog list nothing proves what the changelog needs: abort.
    os.unlink(table_path / "manifest" / c.changelog_manifest_list)
    before = files_under(table_path)
    with pytest.raises(OrphanCleanAborted, match=f"changelog-{cid}"):
        OrphanFilesCleaner(CleanContext(str(table_path))).clean()
    assert files_under(table_path) == before


def test_rollback_deletes_changelogs_past_the_target(cl_table, table_path):
    t = cl_table(**{"changelog-producer": "input"})
    history(t, 8)
    t.create_tag("t3", 3)
    expire(t, retain_min=2, changelog_retain_min=8)
    assert changelog_ids(table_path) == [1, 2, 3, 4, 5, 6]
    t.rollback_to(tag="t3")
    assert changelog_ids(table_path) == [1, 2, 3]
    assert (table_path / "changelog" / "LATEST").read_text() == "3"
    assert [s.id for s in t.snapshots()] == [3]


def test_index_files_and_statistics_follow_their_snapshots(table, table_path):
    for i in range(1, 7):
        write(table, make_rows([i], hr=i % 2))
    # Snapshot 2's index file stays in use up to 4; 5 and 6 have their own.
    add_index_and_statistics(table, 2, ["index-a-0"], "stat-2")
    for i in (3, 4):
        man = add_index_and_statistics(table, i, ["index-a-0", f"index-b{i}-0"])
    add_index_and_statistics(table, 5, ["index-c-0"], "stat-5")
    add_index_and_statistics(table, 6, ["index-c-0", "index-d-0"], "stat-5")
    table.create_tag("t4", 4)
    index = table_path / "index"
    r = expire(table, retain_min=2)
    assert r.expired_ids == [1, 2, 3, 4]
    assert sorted(os.listdir(index)) == ["index-a-0", "index-b4-0", "index-c-0", "index-d-0"]
    assert not (table_path / "statistics" / "stat-2").exists()
    assert (table_path / "statistics" / "stat-5").exists()
    assert (table_path / "manifest" / man).exists()         # the tag's index manifest
    # The tag was the last to use index-a and index-b4: they go with it.
    d = table.delete_tag("t4")
    assert d.skipped == []
    assert sorted(os.listdir(index)) == ["index-c-0", "index-d-0"]
    assert not (table_path / "manifest" / man).exists()
    # Orphan cleanup keeps every index file in use and takes an unreferenced one.
    (index / "index-stray-0").write_bytes(b"x")
    for root, dirs, names in os.walk(table_path):
        for n in names + dirs:
            os.utime(os.path.join(root, n), (OLD, OLD))
    r = OrphanFilesCleaner(CleanContext(str(table_path))).clean()
    assert r.deleted_paths == ["index/index-stray-0"]
    assert sorted(os.listdir(index)) == ["index-c-0", "index-d-0"]
    assert_intact(table_path)


def test_post_commit_maintenance_keeps_and_expires_changelogs(table_path):
    """One commit object, its expirer reused after every commit (what a streaming job
    does): at every point 2 snapshots and 2 more long-lived changelogs are readable."""
    t = Table.create(str(table_path), make_rows([]).schema, partition_keys=["dt", "hr"],
                     options={"snapshot.num-retained.min": "2",
                              "snapshot.num-retained.max": "2", "snapshot.time-retained": "0 s",
                              "changelog.num-retained.min": "4",
                              "changelog.num-retained.max": "4", "snapshot.expire.limit": "100"})
    with t.new_commit(commit_user="job") as c:
        for i in range(1, 13):
            if i % 4 == 0:
                c.drop_partitions([{"hr": 0}], commit_identifier=i)
            else:
                w = t.new_writer()
                w.write_arrow(make_rows([i], hr=i % 2))
                c.commit(w.prepare_commit(), commit_identifier=i)
            if i >= 4:
                assert [s.id for s in t.snapshots()] == [i - 1, i]
                assert changelog_ids(table_path) == [i - 3, i - 2]
                assert_changelogs_readable(t)
    assert_intact(table_path)


def test_long_lived_changelogs_leave_index_files_to_their_snapshots(cl_table, table_path):
    """Index and statistics files go when no retained snapshot or tag uses them, whether or
    not a long-lived changelog names them (Paimon: they belong to the snapshot)."""
    t = cl_table(**{"changelog-producer": "input"})
    history(t, 6)
    shared = add_index_and_statistics(t, 2, ["index-2-0"])
    rewrite_snapshot(t, 3, index_manifest=shared)      # carried forward, as Paimon does
    for i in (4, 5, 6):
        add_index_and_statistics(t, i, [f"index-{i}-0"])
    expire(t, retain_min=4, changelog_retain_min=6)    # 1, 2 -> changelogs; 3 keeps it
    assert (table_path / "manifest" / shared).exists()
    expire(Table.open(str(table_path)), retain_min=2, changelog_retain_min=6)
    assert changelog_ids(table_path) == [1, 2, 3, 4]
    assert not (table_path / "manifest" / shared).exists()
    assert sorted(os.listdir(table_path / "index")) == ["index-5-0", "index-6-0"]
    for root, dirs, names in os.walk(table_path):
        for n in names + dirs:
            os.utime(os.path.join(root, n), (OLD, OLD))
    assert OrphanFilesCleaner(CleanContext(str(table_path))).clean().deleted_files == 0
    assert_changelogs_readable(t)
    assert_intact(table_path)


def test_an_explicit_config_keeps_the_tables_changelog_lifecycle(cl_table, table_path):
    """ExpireConfig(retain_min=...) built by hand on a table whose options decouple the
    changelog: the table's changelog retention and producer still apply."""
    t = cl_table(**{"changelog-producer": "input", "changelog.num-retained.min": "5",
                    "changelog.num-retained.max": "5"})
    changelogs = history(t, 8)
    r = ExpireSnapshots(t.store, ExpireConfig(retain_min=2, retain_max=2, time_retained_ms=0,
                                              max_deletes=100), clock=FAR_FUTURE).expire()
    assert r.expired_ids == list(range(1, 7)) and r.expired_changelogs == [1, 2, 3]
    assert changelog_ids(table_path) == [4, 5, 6]
    assert [os.path.exists(changelogs[i]) for i in range(1, 9)] == [False] * 3 + [True] * 5
    assert_changelogs_readable(t)


def test_changelogs_expired_concurrently_do_not_shift_ids_and_earliest(
        cl_table, table_path, monkeypatch):
    """Another expirer deletes changelogs 1 and 2 after this run listed them, and changelog 4
    cannot be deleted: the run reports exactly what it expired (3) and EARLIEST names the
    first changelog still there (4), not ids shifted onto the files of others."""
    from paimon_commit.io.local import LocalFileIO
    t = cl_table(**{"changelog-producer": "input"})
    changelogs = history(t, 8)
    r = expire(t, retain_min=2, changelog_retain_min=8)   # snapshots 1..6 -> changelogs
    assert r.expired_ids == list(range(1, 7)) and r.expired_changelogs == []
    assert changelog_ids(table_path) == [1, 2, 3, 4, 5, 6]
    cl_dir = table_path / "changelog"
    read, unlink = LocalFileIO.read_bytes, LocalFileIO._unlink

    def concurrent_expirer(self, path):
        if path.endswith("/changelog/changelog-1") and os.path.exists(path):
            os.remove(cl_dir / "changelog-1")
            os.remove(cl_dir / "changelog-2")
        return read(self, path)
    monkeypatch.setattr(LocalFileIO, "read_bytes", concurrent_expirer)
    monkeypatch.setattr(LocalFileIO, "_unlink", lambda self, p: False
                        if p.endswith("/changelog/changelog-4") else unlink(self, p))
    t = Table.open(str(table_path))
    r = expire(t, retain_min=2, changelog_retain_min=4)   # changelogs 1..4 expire
    assert r.expired_ids == [] and r.expired_changelogs == [3]
    assert r.skipped == [f"{t.store.root}/changelog/changelog-4 could not be deleted; "
                         f"EARLIEST stays at 4"]
    assert changelog_ids(table_path) == [4, 5, 6]
    assert (cl_dir / "EARLIEST").read_text() == "4"
    # 1, 2: the other expirer's job; 4's files went before its changelog file (crash-safe
    # order: a rerun finishes from what is left).
    assert [os.path.exists(changelogs[i]) for i in range(1, 9)] == \
        [True, True, False, False] + [True] * 4
    monkeypatch.undo()
    again = expire(Table.open(str(table_path)), retain_min=2, changelog_retain_min=4)
    assert again.expired_changelogs == [4] and changelog_ids(table_path) == [5, 6]
    assert (cl_dir / "EARLIEST").read_text() == "5"
    assert_changelogs_readable(t)
    assert_intact(table_path)


def test_lowered_changelog_retention_keeps_what_existing_changelogs_read(table_path):
    """Audit F5: long-lived changelogs exist (decoupled lifecycle); a handle then lowers the
    changelog retention below the snapshot one (no longer decoupled) and expires snapshots
    after a compaction replaced the APPEND files those changelogs read. The changelogs stay
    (no changelog expiration runs when not decoupled), so their files must stay too."""
    path = str(table_path)
    Table.create(path, make_rows([]).schema, partition_keys=["dt", "hr"], options={
        "snapshot.num-retained.min": "1", "snapshot.num-retained.max": "2",
        "snapshot.time-retained": "1 ms", "changelog.num-retained.min": "50",
        "changelog.num-retained.max": "50", "changelog.time-retained": "1 d",
        "write-only": "true"})
    t = Table.open(path)
    for i in range(5):
        write(t, make_rows([i], hr=1))
    time.sleep(0.01)
    t.expire_snapshots()
    assert changelog_ids(table_path) == [1, 2, 3, 4]
    t.compact(options={"compaction.min.file-num": "2"})   # replaces the 5 APPEND files
    write(t, make_rows([10], hr=1))
    write(t, make_rows([11], hr=1))
    time.sleep(0.01)
    lowered = Table.open(path, options={"changelog.num-retained.min": "1",
                                        "changelog.num-retained.max": "1",
                                        "changelog.time-retained": "1 ms"})
    assert lowered.expire_snapshots().to_dict()["expired_snapshots"] == 3
    assert changelog_ids(table_path) == [1, 2, 3, 4]
    assert_changelogs_readable(Table.open(path))
    assert_intact(table_path)


def test_expiration_after_a_rollback_on_a_table_paimon_java_wrote_keeps_expiring(tmp_path):
    """Snapshots written in Paimon Java's JSON layout (`"id" : 2`); changelogs kept longer than
    snapshots; rollback to a tag whose snapshot expired into changelog-2 restores snapshot 2
    in our layout. Expiring it again finds changelog-2 with other bytes and the same snapshot:
    before, every later expiration failed ("changelog-2 exists with other contents") after
    its data and manifest deletes, and snapshots from 2 on never expired again (audit
    issue25ab ab3)."""
    from paimon_commit.operations.expire import ExpireConfig, ExpireSnapshots
    from conftest import SCHEMA
    path = str(tmp_path / "wh" / "db.db" / "t")
    opts = {"snapshot.num-retained.min": "100", "snapshot.num-retained.max": "1000",
            "snapshot.time-retained": "1 d", "changelog.num-retained.min": "1000",
            "changelog.num-retained.max": "1000"}
    t = Table.create(path, SCHEMA, partition_keys=["dt", "hr"], options=opts)
    for k in range(4):
        write(Table.open(path), make_rows([10 * k]))
    sd = os.path.join(path, "snapshot")
    for n in os.listdir(sd):
        if n.startswith("snapshot-"):
            with open(os.path.join(sd, n)) as f:
                doc = json.load(f)
            with open(os.path.join(sd, n), "w") as f:
                json.dump(doc, f, indent=2, separators=(",", " : "))

    def expire():
        cfg = ExpireConfig(retain_min=1, retain_max=1, time_retained_ms=0,
                           changelog_retain_min=1000, changelog_retain_max=1000)
        return ExpireSnapshots(Table.open(path).store, cfg).expire()
    t.create_tag("T", 2)
    expire()                                     # 1..3 kept as changelog-1..3
    Table.open(path).rollback_to(tag="T")        # snapshot-2 restored, in our layout
    write(Table.open(path), make_rows([50]))     # 3
    write(Table.open(path), make_rows([60]))     # 4
    assert expire().expired_ids == [2, 3]
    assert sorted(Table.open(path).store.snapshots.list_snapshot_ids()) == [4]
    assert sorted(Table.open(path).read_arrow().column("id").to_pylist()) == [0, 10, 50, 60]
    assert sorted(Table.open(path).read_arrow(tag="T").column("id").to_pylist()) == [0, 10]
    assert_intact(path)
