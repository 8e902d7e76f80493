"""Primary-key tables with a changelog producer and a changelog retained longer than snapshots
(Paimon's decoupled changelog lifecycle), written by Paimon Java 1.0, maintained by us
(issue 11, items 3, 4 and 6).

Snapshots expire after 2, changelogs after 5: expiring snapshot N must leave
changelog/changelog-N (a long-lived changelog) with its changelog files, as Java's expiration
does, so that a streaming reader can still start at N; changelog expiration removes them later.
Java writes with write-only = true and runs its expiration explicitly (its commit-time
changelog expiration fails in this build with decoupled options).
"""
import os
import shutil
import time

import pyarrow as pa
import pytest

from javaoracle import sorted_rows

from paimon_commit import CleanContext, OrphanFilesCleaner, Table
from tests.tablefiles import table_walk  # noqa: E402

DAY_MS = 86_400_000
DAYS = ["2024-01-01", "2024-01-02"]
COLUMNS = [("id", "BIGINT NOT NULL"), ("v", "STRING"), ("dt", "STRING NOT NULL")]
RETENTION = {"snapshot.num-retained.min": "2", "snapshot.num-retained.max": "2",
             "changelog.num-retained.min": "5", "changelog.num-retained.max": "5",
             "snapshot.expire.limit": "100"}
PRODUCERS = ["input", "lookup", "full-compaction"]

pytestmark = pytest.mark.slow   # about 20 s: three Java tables with 8-16 commits each
WRITES = 8


def rows(ids, tag):
    return pa.table({"id": pa.array(list(ids), pa.int64()), "v": [f"{tag}{i}" for i in ids],
                     "dt": [DAYS[i % 2] for i in ids]})


def build(java, path, producer):
    """8 commits of upserts and deletes, each with changelog (lookup and full-compaction: each
    write compacts, which is when those producers write their changelog)."""
    java.create_table(path, COLUMNS, partition_keys=["dt"], primary_keys=["id", "dt"],
                      options={"bucket": "2", "changelog-producer": producer,
                               "write-only": "true", **RETENTION})
    compact = producer != "input"
    for k in range(WRITES):
        if k % 3 == 2:
            gone = rows([k - 2, k - 1], f"w{k - 2}-")
            java.write(path, gone, row_kinds=["-D"] * gone.num_rows, compact=compact)
        else:
            java.write(path, rows(range(k, k + 4), f"w{k}-"), compact=compact)
    return java.latest_snapshot_id(path)


@pytest.fixture(scope="module")
def changelog_tables(java, tmp_path_factory):
    """producer -> (pristine path, latest id, changelog Java streams from snapshot 1 on,
    Java's batch reads of every snapshot)."""
    base = tmp_path_factory.mktemp("java-changelog") / "wh" / "db.db"
    base.mkdir(parents=True)
    built = {}

    def get(producer):
        if producer not in built:
            path = str(base / producer.replace("-", "_"))
            latest = build(java, path, producer)
            stream = {sid: sorted_rows(t) for sid, t in java.read_changelog(path, 1)}
            assert len(stream) >= WRITES - 1, (producer, sorted(stream))
            snaps = {s: sorted_rows(java.read(path, snapshot_id=s))
                     for s in range(1, latest + 1)}
            built[producer] = (path, latest, stream, snaps)
        return built[producer]
    return get


def copy_table(src, dst):
    shutil.copytree(src, str(dst))
    return str(dst)


def files_under(path):
    out = []
    for root, _, names in table_walk(path):
        out.extend(os.path.relpath(os.path.join(root, n), path) for n in names)
    return sorted(out)


HINTS = ("EARLIEST", "LATEST")


def assert_same_files(ours, theirs):
    """Same files, except that a hint file (EARLIEST/LATEST) one side did not write is not a
    difference; hints both wrote must say the same."""
    a, b = files_under(ours), files_under(theirs)
    plain = lambda files: [f for f in files if os.path.basename(f) not in HINTS]  # noqa: E731
    only_ours = sorted(set(plain(a)) - set(plain(b)))
    only_java = sorted(set(plain(b)) - set(plain(a)))
    assert not only_ours and not only_java, (
        f"our expiration and Paimon Java's delete different files: kept only by us "
        f"{only_ours}, kept only by Java {only_java}")
    for f in set(a) & set(b):
        if os.path.basename(f) in HINTS:
            with open(os.path.join(ours, f)) as x, open(os.path.join(theirs, f)) as y:
                assert x.read().strip() == y.read().strip(), f"hint {f} differs"


def backdate(path, ms=2 * DAY_MS):
    t = time.time() - ms / 1000
    for root, _, names in table_walk(path):
        for n in names:
            os.utime(os.path.join(root, n), (t, t))


def changelog_ids(path):
    d = os.path.join(path, "changelog")
    if not os.path.isdir(d):
        return []
    return sorted(int(n.split("-")[1]) for n in os.listdir(d) if n.startswith("changelog-"))


def assert_java_streams_as_before(java, path, stream, start):
    got = {sid: sorted_rows(t) for sid, t in java.read_changelog(path, start)}
    want = {sid: r for sid, r in stream.items() if sid >= start}
    assert got == want, f"Java streams the changelog from {start} differently"


@pytest.mark.parametrize("producer", PRODUCERS)
def test_our_expiration_keeps_long_lived_changelogs_as_java_does(java, changelog_tables,
                                                                  tmp_path, producer):
    src, latest, stream, snaps = changelog_tables(producer)
    ours = copy_table(src, tmp_path / "ours")
    theirs = copy_table(src, tmp_path / "theirs")
    with Table.open(ours).new_commit() as c:      # the table's own options
        c.expire_snapshots()
    java.expire(theirs)                            # snapshot + changelog expiration, as Java
    assert [s.id for s in Table.open(ours).snapshots()] == [latest - 1, latest]
    # Snapshots latest-4 .. latest-2 live on as long-lived changelogs; older ones expired.
    assert changelog_ids(theirs) == list(range(latest - 4, latest - 1))
    assert changelog_ids(ours) == changelog_ids(theirs)
    assert_same_files(ours, theirs)
    assert_java_streams_as_before(java, ours, stream, latest - 4)
    for s in (latest - 1, latest):
        assert sorted_rows(java.read(ours, snapshot_id=s)) == snaps[s]


@pytest.mark.parametrize("producer", PRODUCERS)
def test_expiration_in_steps_matches_java(java, changelog_tables, tmp_path, producer):
    """Snapshot expiration first (long-lived changelogs appear), then more Java commits and a
    second run that also expires changelogs past their retention: ours and Java's agree at
    each step."""
    src, latest, stream, snaps = changelog_tables(producer)
    ours = copy_table(src, tmp_path / "ours")
    theirs = copy_table(src, tmp_path / "theirs")
    # Every changelog kept (Java 1.0 fails with changelog.num-retained.min > latest id).
    keep_all = {"changelog.num-retained.min": str(latest),
                "changelog.num-retained.max": str(latest)}
    with Table.open(ours).new_commit(options=keep_all) as c:
        c.expire_snapshots()
    java.expire(theirs, options=keep_all)
    assert changelog_ids(ours) == changelog_ids(theirs) == list(range(1, latest - 1))
    assert_same_files(ours, theirs)
    assert_java_streams_as_before(java, ours, stream, 1)
    # More commits (into one copy, then copied again: file names are random).
    java.write(ours, rows(range(50, 53), "late"), compact=producer != "input")
    shutil.rmtree(theirs)
    theirs = copy_table(ours, tmp_path / "theirs")
    with Table.open(ours).new_commit() as c:
        c.expire_snapshots()
    java.expire(theirs)
    assert changelog_ids(ours) == changelog_ids(theirs)
    assert_same_files(ours, theirs)
    first = changelog_ids(ours)[0]
    got = {sid: sorted_rows(t) for sid, t in java.read_changelog(ours, first)}
    assert {s: r for s, r in got.items() if s <= latest} == \
        {s: r for s, r in stream.items() if s >= first}


@pytest.mark.parametrize("producer", PRODUCERS)
def test_our_orphan_cleanup_after_javas_changelog_expiration(java, changelog_tables, tmp_path,
                                                             producer):
    """Java's changelog expiration deletes long-lived changelogs' base and delta manifest lists
    by design; our orphan cleanup must run anyway (not abort), delete only what Java's would,
    and leave every changelog Java streams."""
    src, latest, stream, snaps = changelog_tables(producer)
    ours = copy_table(src, tmp_path / "ours")
    java.expire(ours)
    theirs = copy_table(ours, tmp_path / "theirs")
    orphan = os.path.join("dt=" + DAYS[0], "bucket-0", "changelog-orphan-0000-0.parquet")
    for p in (ours, theirs):
        with open(os.path.join(p, orphan), "wb") as f:
            f.write(b"orphan")
        backdate(p)
    before = files_under(ours)
    older_than = int(time.time() * 1000) - DAY_MS
    result = OrphanFilesCleaner(CleanContext(ours, older_than_ms=older_than)).clean()
    deleted_by_java = java.remove_orphan_files(theirs, older_than_ms=older_than)
    deleted_by_us = sorted(set(before) - set(files_under(ours)))
    assert sorted(result.deleted_paths) == deleted_by_us
    assert orphan in deleted_by_us
    assert deleted_by_us == deleted_by_java
    assert_java_streams_as_before(java, ours, stream, changelog_ids(ours)[0])
    for s in (latest - 1, latest):
        assert sorted_rows(java.read(ours, snapshot_id=s)) == snaps[s]


@pytest.mark.parametrize("producer", PRODUCERS)
def test_our_orphan_cleanup_after_our_expiration_keeps_changelogs(java, changelog_tables,
                                                                  tmp_path, producer):
    src, latest, stream, snaps = changelog_tables(producer)
    path = copy_table(src, tmp_path / "t")
    with Table.open(path).new_commit() as c:
        c.expire_snapshots()
    first = changelog_ids(path)[0]
    backdate(path)
    before = files_under(path)
    result = OrphanFilesCleaner(CleanContext(
        path, older_than_ms=int(time.time() * 1000) - DAY_MS)).clean()
    assert result.deleted_paths == []
    assert files_under(path) == before
    assert_java_streams_as_before(java, path, stream, first)
