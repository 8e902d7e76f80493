"""Tables Paimon Java 1.0 writes — append (bucket-unaware, fixed bucket) and primary-key (fixed,
dynamic and cross-partition buckets; deletion vectors; each changelog producer) — that we then
maintain: expire, tag, drop partitions, roll back, clean orphans. Afterwards Java reads every
retained snapshot and tag and gets the rows it read before; our expiration and orphan cleanup
delete exactly the files Java's own would on the same table (issue 11, items 1, 5 and 6).

Every table is built once per module by Java (write-only, so Java never expires anything by
itself) and copied for each test.
"""
import json
import os
import shutil
import time

import pyarrow as pa
import pytest

from javaoracle import sorted_rows

from paimon_commit import (CleanContext, ExpireConfig, ExpireSnapshots, OrphanFilesCleaner,
                           Table, UnsupportedTableError)
from paimon_commit.cli import main as cli_main
from tests.chunks import note_chunks  # noqa: E402
from tests.tablefiles import table_walk  # noqa: E402

DAYS = ["2024-01-01", "2024-01-02", "2024-01-03"]
DAY_MS = 86_400_000

PK_COLUMNS = [("id", "BIGINT NOT NULL"), ("v", "STRING"), ("dt", "STRING NOT NULL")]
APPEND_COLUMNS = [("id", "BIGINT"), ("v", "STRING"), ("dt", "STRING")]

# kind -> (primary keys, options)
KINDS = {
    "append": ((), {}),
    "append-fixed-bucket": ((), {"bucket": "2", "bucket-key": "id"}),
    "pk-fixed-bucket": (("id", "dt"), {"bucket": "2"}),
    "pk-fixed-bucket-dv": (("id", "dt"), {"bucket": "2", "deletion-vectors.enabled": "true"}),
    "pk-dynamic-bucket": (("id", "dt"), {"bucket": "-1"}),
    "pk-cross-partition": (("id",), {"bucket": "-1"}),
    "pk-changelog-input": (("id", "dt"), {"bucket": "2", "changelog-producer": "input"}),
    "pk-changelog-lookup": (("id", "dt"), {"bucket": "2", "changelog-producer": "lookup"}),
    "pk-changelog-full-compaction": (("id", "dt"),
                                     {"bucket": "2", "changelog-producer": "full-compaction"}),
}
PK_KINDS = [k for k in KINDS if KINDS[k][0]]


def rows(ids, tag, dt=None):
    return pa.table({"id": pa.array(list(ids), pa.int64()),
                     "v": [f"{tag}{i}" for i in ids],
                     "dt": [dt or DAYS[i % 3] for i in ids]})


def build_java_table(java, path, kind):
    """Java's history: appends / upserts, deletes or an overwrite, a compaction, a Java tag.
    Returns the snapshot ids."""
    pk, options = KINDS[kind]
    java.create_table(path, PK_COLUMNS if pk else APPEND_COLUMNS, partition_keys=["dt"],
                      primary_keys=pk, options={**options, "write-only": "true"})
    java.write(path, rows(range(0, 12), "a"))
    java.write(path, rows(range(6, 12), "b"))      # pk: 6..11 updated
    java.write(path, rows(range(12, 18), "b"))     # (3 files a bucket: append compaction's minimum)
    if kind != "append":   # bucket-unaware append tables compact in a separate job
        java.compact(path)
    # Tagged after the compaction: with deletion vectors, level-0 files are not read.
    java.create_tag(path, "java-tag")
    if pk:
        gone = rows([0, 1], "a")
        java.write(path, gone, row_kinds=["-D"] * gone.num_rows)
    else:
        java.write(path, rows([100, 103], "o", dt=DAYS[2]), overwrite={"dt": DAYS[2]})
    java.write(path, rows(range(20, 26), "c"))
    if kind.endswith("-dv") or options.get("changelog-producer") in ("lookup",
                                                                      "full-compaction"):
        java.compact(path)   # rows visible (deletion vectors), changelog produced
    return list(range(1, java.latest_snapshot_id(path) + 1))


@pytest.fixture(scope="module")
def java_tables(java, tmp_path_factory):
    """kind -> (path of the pristine Java-written table, snapshot ids, Java's reads at every
    snapshot and tag)."""
    base = tmp_path_factory.mktemp("java-tables") / "wh" / "db.db"
    base.mkdir(parents=True)
    built = {}

    def get(kind):
        if isinstance(built.get(kind), Exception):
            raise built[kind]
        if kind not in built:
            built[kind] = RuntimeError(f"building the Java {kind} table failed earlier")
            path = str(base / kind.replace("-", "_"))
            ids = build_java_table(java, path, kind)
            reads = {("snapshot", s): sorted_rows(java.read(path, snapshot_id=s)) for s in ids}
            reads[("tag", "java-tag")] = sorted_rows(java.read(path, tag="java-tag"))
            if "changelog-producer" in KINDS[kind][1]:
                for sid, t in java.read_changelog(path, 1):
                    reads[("changelog", sid)] = sorted_rows(t)
            # Sanity: the history has rows, compaction happened.
            assert reads[("snapshot", ids[-1])] and reads[("tag", "java-tag")], kind
            if kind != "append":
                kinds = [s.commit_kind for s in Table.open(path).snapshots()]
                assert "COMPACT" in kinds, (kind, kinds)
            built[kind] = (path, ids, reads)
        return built[kind]
    return get


def copy_table(src, wh, name):
    dst = str(wh / name)
    shutil.copytree(src, dst)
    return dst


def files_under(path):
    out = []
    for root, _, names in table_walk(path):
        out.extend(os.path.relpath(os.path.join(root, n), path) for n in names)
    return sorted(out)


def backdate(path, ms=2 * DAY_MS):
    """Make every file look `ms` old (orphan cleanup only touches old files)."""
    t = time.time() - ms / 1000
    for root, _, names in table_walk(path):
        for n in names:
            os.utime(os.path.join(root, n), (t, t))


def assert_java_reads_as_before(java, path, reads, snapshot_ids=None, tags=None):
    """Java reads every given (default: every existing) snapshot and tag as it did before."""
    t = Table.open(path)
    if snapshot_ids is None:
        snapshot_ids = [s.id for s in t.snapshots()]
    if tags is None:
        tags = [tag.name for tag in t.tags() if ("tag", tag.name) in reads]
    assert java.tag_names(path) == sorted(x.name for x in t.tags())
    for s in snapshot_ids:
        assert sorted_rows(java.read(path, snapshot_id=s)) == reads[("snapshot", s)], \
            f"Java reads snapshot {s} differently after our maintenance"
    for name in tags:
        assert sorted_rows(java.read(path, tag=name)) == reads[("tag", name)], \
            f"Java reads tag {name} differently after our maintenance"


# --------------------------------------------------------------------------------------------
# Expiration: ours vs Java's, file for file
# --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", list(KINDS))
def test_our_expiration_matches_javas_and_java_reads_what_is_left(java, java_tables, wh, kind):
    src, ids, reads = java_tables(kind)
    ours, theirs = copy_table(src, wh, "ours"), copy_table(src, wh, "theirs")
    keep = 2
    if kind.endswith("bucket") or kind == "append":
        # The command line, for a few kinds.
        assert cli_main(["expire-snapshots", ours, "--retain-min", str(keep), "--retain-max",
                         str(keep), "--time-retained", "0 ms", "--max-deletes", "100",
                         "--json"]) == 0
    else:
        ExpireSnapshots(Table.open(ours).store,
                        ExpireConfig(retain_min=keep, retain_max=keep, time_retained_ms=0,
                                     max_deletes=100)).expire()
    java.expire_snapshots(theirs, retain_min=keep, retain_max=keep, time_retained_ms=0)
    retained = ids[-keep:]
    assert [s.id for s in Table.open(ours).snapshots()] == retained
    # One deliberate difference (docs/safety.md): a tag keeps its snapshot's changelog, which
    # Java's expiration deletes (and Java 1.0's orphan cleanup then loses the tag).
    tag_changelog = set(java.changelog_files(src, "java-tag"))
    only_ours = sorted(set(files_under(ours)) - set(files_under(theirs)))
    only_java = sorted(set(files_under(theirs)) - set(files_under(ours)))
    assert not only_java and set(only_ours) <= tag_changelog, (
        f"our expiration and Paimon Java's delete different files: kept only by us "
        f"{sorted(set(only_ours) - tag_changelog)}, kept only by Java {only_java}")
    assert set(only_ours) == tag_changelog - set(files_under(theirs)), \
        "the tag's changelog is not kept whole"
    assert_java_reads_as_before(java, ours, reads, retained, ["java-tag"])
    if "changelog-producer" in KINDS[kind][1]:
        # A streaming reader starting at the earliest retained snapshot reads what it did.
        got = {("changelog", sid): sorted_rows(t)
               for sid, t in java.read_changelog(ours, retained[0])}
        want = {k: v for k, v in reads.items() if k[0] == "changelog" and k[1] >= retained[0]}
        assert want and got == want


@pytest.mark.parametrize("kind", list(KINDS))
def test_commit_object_expiration_on_java_table(java, java_tables, wh, kind):
    """`new_commit(...).expire_snapshots(...)` (the Python API a job holds) on a Java table."""
    src, ids, reads = java_tables(kind)
    path = copy_table(src, wh, "t")
    with Table.open(path).new_commit(commit_user="maintainer") as c:
        result = c.expire_snapshots(retain_min=3, retain_max=3, time_retained_ms=0,
                                    max_deletes=100)
    assert result.expired_ids == ids[:-3]
    assert_java_reads_as_before(java, path, reads, ids[-3:], ["java-tag"])
    # The table is not stuck: Java writes and compacts on top of our maintenance.
    java.write(path, rows(range(40, 44), "d"))
    if kind != "append":
        java.compact(path)
    got = {r["id"] for r in java.read(path).to_pylist()}
    assert {40, 41, 42, 43} <= got
    assert {20, 21, 22} <= got


# --------------------------------------------------------------------------------------------
# Tags, partition drop, rollback
# --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", list(KINDS))
def test_we_tag_drop_and_roll_back_java_tables(java, java_tables, wh, kind):
    src, ids, reads = java_tables(kind)
    path = copy_table(src, wh, "t")
    t = Table.open(path)
    latest = ids[-1]
    t.create_tag("ours", snapshot_id=latest - 1)
    assert java.tag_names(path) == ["java-tag", "ours"]
    assert sorted_rows(java.read(path, tag="ours")) == reads[("snapshot", latest - 1)]

    with t.new_commit() as c:
        dropped = c.drop_partitions([{"dt": DAYS[0]}])
    assert dropped == latest + 1
    want = [r for r in reads[("snapshot", latest)] if r["dt"] != DAYS[0]]
    assert sorted_rows(java.read(path)) == want
    assert_java_reads_as_before(java, path, reads, ids, ["java-tag", ])
    # Java's own partition drop of the same partition on the pristine copy reads the same.
    other = copy_table(src, wh, "java-drop")
    java.drop_partitions(other, [{"dt": DAYS[0]}])
    assert sorted_rows(java.read(other)) == want

    tagged = t.tags()[0].snapshot.id
    assert t.tags()[0].name == "java-tag"
    t.rollback_to(tag="java-tag")
    assert java.latest_snapshot_id(path) == tagged
    assert java.tag_names(path) == ["java-tag"]      # "ours" (on a later snapshot) is gone
    assert sorted_rows(java.read(path)) == reads[("snapshot", tagged)]
    t.delete_tag("java-tag")
    assert java.tag_names(path) == []
    assert sorted_rows(java.read(path)) == reads[("snapshot", tagged)]
    # Java continues on top of our rollback.
    java.write(path, rows([50], "e"), compact=kind != "append")
    assert 50 in {r["id"] for r in java.read(path).to_pylist()}


# --------------------------------------------------------------------------------------------
# Orphan cleanup: ours vs Java's
# --------------------------------------------------------------------------------------------

def plant_orphans(path):
    """Files no snapshot references, where Paimon writes them. Names are unique, as Paimon's
    are (Java 1.0's OrphanFilesClean keys candidates by file name alone)."""
    planted = []
    n = 0
    for d in sorted(os.listdir(path)):
        full = os.path.join(path, d)
        if d.startswith("dt=") and os.path.isdir(full):
            for b in sorted(os.listdir(full)):
                if b.startswith("bucket-"):
                    n += 1
                    planted.append(os.path.join(d, b, f"data-{n:08d}-orphan-0.parquet"))
                    planted.append(os.path.join(d, b, f"changelog-{n:08d}-orphan-0.parquet"))
    planted.append("manifest/manifest-00000000-orphan-0")
    planted.append("manifest/manifest-list-00000000-orphan-0")
    if os.path.isdir(os.path.join(path, "index")):
        planted.append("index/index-00000000-orphan-0")
    for rel in planted:
        with open(os.path.join(path, rel), "wb") as f:
            f.write(b"orphan")
    return sorted(planted)


@pytest.mark.parametrize("kind", list(KINDS))
def test_our_orphan_cleanup_matches_javas(java, java_tables, wh, kind):
    src, ids, reads = java_tables(kind)
    ours, theirs = copy_table(src, wh, "ours"), copy_table(src, wh, "theirs")
    # Expire first (ours on both copies), so unused files of expired snapshots exist too.
    for p in (ours, theirs):
        ExpireSnapshots(Table.open(p).store, ExpireConfig(
            retain_min=2, retain_max=2, time_retained_ms=0, max_deletes=100)).expire()
    assert files_under(ours) == files_under(theirs)
    planted = plant_orphans(ours)
    assert plant_orphans(theirs) == planted
    before = files_under(ours)
    backdate(ours)
    backdate(theirs)
    older_than = int(time.time() * 1000) - DAY_MS
    result = OrphanFilesCleaner(CleanContext(ours, older_than_ms=older_than)).clean()
    deleted_by_java = java.remove_orphan_files(theirs, older_than_ms=older_than)
    assert sorted(set(before) - set(files_under(ours))) == planted, \
        f"we deleted {sorted(set(before) - set(files_under(ours)))}"
    assert sorted(result.deleted_paths) == planted
    # Java 1.0 also deletes the manifest lists of a tag whose changelog manifest list is gone
    # (expiration removes that one, Java's and ours alike): its OrphanFilesClean treats a
    # snapshot with an unreadable list as unused. Ours keeps them: the tag stays readable.
    java_bug = tag_lists_javas_orphan_cleanup_deletes(ours)
    assert sorted(set(deleted_by_java) - set(planted)) == java_bug
    assert set(planted) <= set(deleted_by_java)
    assert files_under(ours) == sorted(set(files_under(theirs)) | set(java_bug))
    assert_java_reads_as_before(java, ours, reads, ids[-2:], ["java-tag"])


@pytest.mark.parametrize("kind", ["append", "pk-fixed-bucket", "pk-changelog-input"])
def test_partition_scoped_orphan_cleanup_of_java_tables(java, java_tables, wh, kind):
    # Java-written manifest lists carry the partition statistics a scoped run prunes by: it
    # deletes exactly what our full run (which matches Java's, above) deletes in the matching
    # partitions, and nothing else; Java reads every retained snapshot and tag as before.
    src, ids, reads = java_tables(kind)
    scoped, full = copy_table(src, wh, "scoped"), copy_table(src, wh, "full")
    for p in (scoped, full):
        ExpireSnapshots(Table.open(p).store, ExpireConfig(
            retain_min=2, retain_max=2, time_retained_ms=0, max_deletes=100)).expire()
    planted = plant_orphans(scoped)
    assert plant_orphans(full) == planted
    backdate(scoped)
    backdate(full)
    older_than = int(time.time() * 1000) - DAY_MS
    everything = OrphanFilesCleaner(CleanContext(full, older_than_ms=older_than)).clean()
    before = files_under(scoped)
    r = OrphanFilesCleaner(CleanContext(scoped, older_than_ms=older_than,
                                        partitions=["dt=2024-01-0[12]"])).clean()
    inside = ("dt=2024-01-01/", "dt=2024-01-02/")
    expected = sorted(p for p in everything.deleted_paths if p.startswith(inside))
    assert expected and sorted(r.deleted_paths) == expected
    assert sorted(set(before) - set(files_under(scoped))) == expected
    assert r.manifests_skipped > 0 or kind != "append", (r.manifests_read, r.manifests_skipped)
    assert_java_reads_as_before(java, scoped, reads, ids[-2:], ["java-tag"])


def tag_lists_javas_orphan_cleanup_deletes(path):
    """Base and delta manifest lists of tags whose changelog manifest list does not exist."""
    out = []
    for tag in Table.open(path).tags():
        s = tag.snapshot
        if s.changelog_manifest_list and not os.path.exists(
                os.path.join(path, "manifest", s.changelog_manifest_list)):
            out += [f"manifest/{s.base_manifest_list}", f"manifest/{s.delta_manifest_list}"]
    return sorted(out)


# --------------------------------------------------------------------------------------------
# Our writer refuses every Java table it would corrupt
# --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", [k for k in KINDS if k != "append"])
def test_our_writer_refuses_java_tables_it_cannot_write(java, java_tables, wh, kind):
    src, ids, reads = java_tables(kind)
    path = copy_table(src, wh, "t")
    before = files_under(path)
    t = Table.open(path)
    data = pa.table({"id": pa.array([1000], pa.int64()), "v": ["x"], "dt": [DAYS[0]]})
    # Refused by the writer itself (new_writer or write_arrow), so no data file is ever
    # written, not only no snapshot committed.
    with pytest.raises(UnsupportedTableError) as e:
        t.new_writer().write_arrow(data)
    message = str(e.value)
    assert ("primary-key" if KINDS[kind][0] else "fixed bucket") in message, message
    assert files_under(path) == before, "a refused write left files behind"
    assert java.latest_snapshot_id(path) == ids[-1]
    assert sorted_rows(java.read(path)) == reads[("snapshot", ids[-1])]


def test_our_writer_appends_to_java_append_table(java, java_tables, wh):
    """The positive control: a bucket-unaware append table Java wrote takes our commits, and
    Java reads them."""
    src, ids, reads = java_tables("append")
    path = copy_table(src, wh, "t")
    t = Table.open(path)
    data = pa.table({"id": pa.array([1000, 1001], pa.int64()), "v": ["x", "y"],
                     "dt": [DAYS[0], None]})
    w = t.new_writer()
    w.write_arrow(data)
    with t.new_commit() as c:
        sid = c.commit(w.prepare_commit())
    assert sid == ids[-1] + 1
    want = sorted_rows(pa.Table.from_pylist(reads[("snapshot", ids[-1])] + data.to_pylist()))
    assert sorted_rows(java.read(path)) == want
    assert sorted_rows(t.read_arrow()) == want


@pytest.mark.parametrize("ours_spec, java_spec, kept", [
    ({"dt": ""}, {"dt": ""}, {2: None, 3: "x"}),
    ({"dt": None}, {"dt": "__DEFAULT_PARTITION__"}, {1: "", 3: "x"}),
], ids=["empty-string", "null"])
def test_drop_of_empty_string_and_null_partitions_matches_java(java, wh, ours_spec, java_spec,
                                                               kept):
    """'' and null share the default-partition directory but are two partitions: dropping
    one keeps the other, in Java (spec '' / the default name) and in ours ('' / None)."""
    src = str(wh / "src")
    java.create_table(src, [("id", "INT"), ("dt", "STRING")], partition_keys=["dt"])
    java.write(src, pa.table({"id": pa.array([1, 2, 3], pa.int32()), "dt": ["", None, "x"]}))
    assert sorted_rows(Table.open(src).read_arrow()) == sorted_rows(java.read(src))
    ours, theirs = copy_table(src, wh, "ours"), copy_table(src, wh, "theirs")
    with Table.open(ours).new_commit() as c:
        c.drop_partitions([ours_spec])
    java.drop_partitions(theirs, [java_spec])
    got = sorted_rows(java.read(ours))
    assert got == sorted_rows(java.read(theirs))
    assert {r["id"]: r["dt"] for r in got} == kept
    assert sorted_rows(Table.open(ours).read_arrow()) == got


@pytest.mark.parametrize("kind", list(KINDS))
def test_we_expire_partitions_of_java_tables(java, java_tables, wh, kind, capsys):
    """Partition expiration (command line): the dropped partitions are gone for Java, every
    other row and every retained snapshot and tag read as before, and Java keeps writing."""
    src, ids, reads = java_tables(kind)
    path = copy_table(src, wh, "t")
    capsys.readouterr()
    assert cli_main(["expire-partitions", path, "--expiration-time", "1 d",
                     "--max-expires", "1", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    expired = [p["dt"] for p in out["expired_partitions"]]
    assert expired == [DAYS[0]], out                    # the oldest one, and only that one
    latest = ids[-1]
    assert java.latest_snapshot_id(path) == latest + 1
    assert sorted_rows(java.read(path)) == \
        [r for r in reads[("snapshot", latest)] if r["dt"] not in expired]
    assert_java_reads_as_before(java, path, reads, ids, ["java-tag"])
    java.write(path, rows([60, 63], "f", dt=DAYS[0]), compact=kind != "append")
    assert {60, 63} <= {r["id"] for r in java.read(path).to_pylist()}


@pytest.mark.parametrize("kind", ["append", "pk-fixed-bucket-dv", "pk-changelog-lookup"])
def test_our_expiration_in_chunks_sized_by_their_deltas_matches_javas(java, java_tables, wh,
                                                                       kind, monkeypatch):
    # The first chunk sized from its snapshots' delta lists (a few snapshots here, more than
    # FIRST_CHUNK), the rest in later chunks: the same files as Paimon Java's one expiration,
    # and Java reads what is left as before.
    from paimon_commit.operations import expire as expire_mod
    monkeypatch.setattr(expire_mod, "FIRST_CHUNK", 1)
    monkeypatch.setattr(expire_mod, "CHUNK_FILES", 14)
    src, ids, reads = java_tables(kind)
    ours, theirs = copy_table(src, wh, "ours"), copy_table(src, wh, "theirs")
    chunks = note_chunks(monkeypatch)
    keep = 1
    r = ExpireSnapshots(Table.open(ours).store,
                        ExpireConfig(retain_min=keep, retain_max=keep, time_retained_ms=0,
                                     max_deletes=100)).expire()
    assert not r.skipped
    assert chunks[0] > 1 and len([c for c in chunks if c]) > 1, chunks
    java.expire_snapshots(theirs, retain_min=keep, retain_max=keep, time_retained_ms=0)
    retained = ids[-keep:]
    assert [s.id for s in Table.open(ours).snapshots()] == retained
    tag_changelog = set(java.changelog_files(src, "java-tag"))
    only_ours = sorted(set(files_under(ours)) - set(files_under(theirs)))
    only_java = sorted(set(files_under(theirs)) - set(files_under(ours)))
    assert not only_java and set(only_ours) <= tag_changelog, (only_ours, only_java)
    assert_java_reads_as_before(java, ours, reads, retained, ["java-tag"])
