"""The decoupled changelog lifecycle on primary-key tables Paimon Java 1.0 writes (issue 11,
items 3 and 4): changelog retained longer than snapshots. Our expiration writes and expires the
long-lived `changelog/changelog-<id>` files as Java's does, file for file; a Java streaming
reader still reads every retained changelog; orphan cleanup neither aborts nor deletes what a
changelog needs (Java's own expiration deletes such a changelog's base and delta lists).
"""
import os
import shutil
import time

import pyarrow as pa
import pytest

from javaoracle import sorted_rows

from paimon_commit import (CleanContext, ExpireConfig, ExpireSnapshots, OrphanFilesCleaner,
                           Table)
from tests.tablefiles import table_walk  # noqa: E402

DAY_MS = 86_400_000
COLUMNS = [("id", "BIGINT NOT NULL"), ("v", "STRING"), ("dt", "STRING NOT NULL")]
PRODUCERS = ["input", "lookup", "full-compaction", "none"]
KEEP, KEEP_CHANGELOG = 2, 5
# In the table's options: Java's streaming readers follow long-lived changelogs only when the
# table says the lifecycle is decoupled, and our expiration takes its config from them.
RETENTION = {"snapshot.num-retained.min": str(KEEP), "snapshot.num-retained.max": str(KEEP),
             "snapshot.expire.limit": "100", "changelog.num-retained.min": str(KEEP_CHANGELOG),
             "changelog.num-retained.max": str(KEEP_CHANGELOG)}


def rows(ids, tag):
    return pa.table({"id": pa.array(list(ids), pa.int64()), "v": [f"{tag}{i}" for i in ids],
                     "dt": ["2024-01-0%d" % (1 + i % 2) for i in ids]})


@pytest.fixture(scope="module")
def java_changelog_tables(java, tmp_path_factory):
    """producer -> (pristine table, what a Java streaming reader reads from snapshot 1)."""
    base = tmp_path_factory.mktemp("changelog-tables") / "wh" / "db.db"
    base.mkdir(parents=True)
    built = {}

    def get(producer):
        if producer not in built:
            path = str(base / producer.replace("-", "_"))
            java.create_table(path, COLUMNS, partition_keys=["dt"], primary_keys=("id", "dt"),
                              options={"bucket": "2", "changelog-producer": producer,
                                       "write-only": "true", **RETENTION})
            for i in range(8):     # upserts: every snapshot changes a few keys
                java.write(path, rows(range(i, i + 4), f"w{i}-"),
                           compact=producer in ("lookup", "full-compaction") and i % 3 == 2)
            java.create_tag(path, "t3", 3)
            stream = {sid: sorted_rows(t) for sid, t in java.read_changelog(path, 1)}
            built[producer] = (path, stream)
        return built[producer]
    return get


def copy(src, wh, name):
    dst = str(wh / name)
    shutil.copytree(src, dst)
    return dst


def files_under(path):
    return sorted(os.path.relpath(os.path.join(r, n), path)
                  for r, _, ns in table_walk(path) for n in ns)


def tag_changelog(path, tag):
    """Relative paths of a tag's changelog list, its manifests and the files they add."""
    st = Table.open(path).store
    lst = Table.open(path).tags()[0].snapshot.changelog_manifest_list
    if lst is None:
        return set()
    out = {f"manifest/{lst}"}
    for m in st.manifests.read_list(lst):
        out.add(f"manifest/{m.file_name}")
        out.update(os.path.relpath(st.data_file_path(e), path)
                   for e in st.manifests.read_manifest(m.file_name))
    return out


def our_expire(path):
    """Our expiration with the table's options (time conditions off)."""
    store = Table.open(path).store
    cfg = ExpireConfig.from_options(store.options, time_retained_ms=0,
                                    changelog_time_retained_ms=0)
    assert cfg.changelog_decoupled
    return ExpireSnapshots(store, cfg).expire()


def expire_both(java, ours, theirs):
    r = our_expire(ours)
    java.expire_snapshots(theirs, retain_min=KEEP, retain_max=KEEP, time_retained_ms=0,
                          changelog_retain_min=KEEP_CHANGELOG,
                          changelog_retain_max=KEEP_CHANGELOG, changelog_time_retained_ms=0)
    java.expire_changelogs(theirs, retain_min=KEEP_CHANGELOG, retain_max=KEEP_CHANGELOG)
    return r


@pytest.mark.parametrize("producer", PRODUCERS)
def test_decoupled_expiration_matches_java_and_streaming_readers_still_read(
        java, java_changelog_tables, wh, producer):
    src, stream = java_changelog_tables(producer)
    ours, theirs = copy(src, wh, "ours"), copy(src, wh, "theirs")
    latest = java.latest_snapshot_id(src)
    r = expire_both(java, ours, theirs)
    assert r.expired_ids == list(range(1, latest - KEEP + 1)) and r.skipped == []
    first = latest - KEEP_CHANGELOG + 1
    assert r.expired_changelogs == list(range(1, first))
    assert sorted(os.listdir(os.path.join(ours, "changelog"))) == sorted(
        ["EARLIEST", "LATEST"] + [f"changelog-{i}" for i in range(first, latest - KEEP + 1)])
    # File for file Java's, except that we keep the tag's changelog (its list, manifests
    # and files) while the tag exists: Java deletes it, after which Java 1.0's orphan
    # cleanup deletes the tag's other lists and the tag cannot be read any more.
    extra = set(files_under(ours)) - set(files_under(theirs))
    assert set(files_under(theirs)) <= set(files_under(ours))
    assert extra == tag_changelog(ours, "t3"), \
        "our decoupled expiration deletes other files than Paimon Java's"
    # A streaming reader that starts at the earliest changelog reads what it read before.
    got = {sid: sorted_rows(t) for sid, t in java.read_changelog(ours, first)}
    assert got == {sid: v for sid, v in stream.items() if sid >= first}
    for sid in range(latest - KEEP + 1, latest + 1):
        assert sorted_rows(java.read(ours, snapshot_id=sid)) == \
            sorted_rows(java.read(src, snapshot_id=sid))
    assert sorted_rows(java.read(ours, tag="t3")) == sorted_rows(java.read(src, tag="t3"))


@pytest.mark.parametrize("producer", ["input", "none"])
def test_java_expired_changelogs_do_not_stop_our_orphan_cleanup(
        java, java_changelog_tables, wh, producer):
    """Java's expiration deleted the base and delta lists of its long-lived changelogs (by
    design): our orphan cleanup runs, deletes the planted orphans like Java's, and nothing a
    changelog, snapshot or tag needs."""
    src, stream = java_changelog_tables(producer)
    ours, theirs = copy(src, wh, "ours"), copy(src, wh, "theirs")
    for p in (ours, theirs):   # Java expires both copies
        java.expire_snapshots(p, retain_min=KEEP, retain_max=KEEP, time_retained_ms=0,
                              changelog_retain_min=KEEP_CHANGELOG,
                              changelog_retain_max=KEEP_CHANGELOG)
    planted = ["manifest/manifest-list-00000000-orphan-0", "manifest/manifest-00000000-orphan-0",
               "dt=2024-01-01/bucket-0/data-00000000-orphan-0.parquet"]
    for p in (ours, theirs):
        for rel in planted:
            with open(os.path.join(p, rel), "wb") as f:
                f.write(b"orphan")
        old = time.time() - 2 * DAY_MS / 1000
        for r_, _, ns in table_walk(p):
            for n in ns:
                os.utime(os.path.join(r_, n), (old, old))
    older_than = int(time.time() * 1000) - DAY_MS
    result = OrphanFilesCleaner(CleanContext(ours, older_than_ms=older_than)).clean()
    assert sorted(java.remove_orphan_files(theirs, older_than_ms=older_than)) == sorted(planted)
    assert sorted(result.deleted_paths) == sorted(planted)
    assert files_under(ours) == files_under(theirs)
    first = min(int(n.split("-")[1]) for n in os.listdir(os.path.join(ours, "changelog"))
                if n.startswith("changelog-"))
    got = {sid: sorted_rows(t) for sid, t in java.read_changelog(ours, first)}
    assert got == {sid: v for sid, v in stream.items() if sid >= first}


@pytest.mark.parametrize("producer", ["input", "none"])
def test_delete_tag_keeps_what_long_lived_changelogs_read(java, java_changelog_tables, wh,
                                                          producer):
    src, stream = java_changelog_tables(producer)
    path = copy(src, wh, "t")
    latest = java.latest_snapshot_id(src)
    our_expire(path)
    t = Table.open(path)
    r = t.delete_tag("t3")              # snapshot 3 expired; changelog 3 expired too
    assert r.skipped == []
    assert java.tag_names(path) == []
    first = latest - KEEP_CHANGELOG + 1
    got = {sid: sorted_rows(x) for sid, x in java.read_changelog(path, first)}
    assert got == {sid: v for sid, v in stream.items() if sid >= first}
    for sid in range(latest - KEEP + 1, latest + 1):
        assert sorted_rows(java.read(path, snapshot_id=sid)) == \
            sorted_rows(java.read(src, snapshot_id=sid))
