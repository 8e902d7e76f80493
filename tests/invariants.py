"""Checks run after every destructive operation in the tests."""
import os

from oracle import pp_read, rows

from paimon_commit import Table


def referenced_files(table: Table, min_snapshot: int = 0, skip=frozenset()):
    """Every file a snapshot (id >= min_snapshot, not in `skip`) or tag references: lists,
    manifests, data."""
    st = table.store
    out = set()
    roots = [s for s in st.snapshots.snapshots() if s.id >= min_snapshot and s.id not in skip] \
        + [t.snapshot for t in table.tags()]
    for s in roots:
        for lst in s.manifest_lists():
            out.add(st.manifests.path(lst))
            for m in st.manifests.read_list(lst):
                out.add(st.manifests.path(m.file_name))
        for e in st.live_entries(s):
            out.add(st.data_file_path(e))
    return out


def assert_intact(path, expected_by_snapshot=None, expected_by_tag=None, min_snapshot=0):
    """pypaimon reads every snapshot (id >= min_snapshot) and tag; nothing they reference is
    missing. After a crash in the middle of an expiration, the snapshots being expired may be
    partly deleted until the rerun: pass the first retained id as min_snapshot."""
    t = Table.open(str(path))
    missing = [p for p in referenced_files(t, min_snapshot) if not os.path.exists(p)]
    assert not missing, f"referenced files missing: {missing[:5]}"
    for s in t.snapshots():
        if s.id < min_snapshot:
            continue
        got = rows(pp_read(path, snapshot_id=s.id))
        assert len(got) == s.total_record_count, f"snapshot {s.id}"
        if expected_by_snapshot and s.id in expected_by_snapshot:
            assert [r["id"] for r in got] == sorted(expected_by_snapshot[s.id]), \
                f"snapshot {s.id}"
    for tag in t.tags():
        got = rows(pp_read(path, tag=tag.name))
        assert len(got) == tag.snapshot.total_record_count, f"tag {tag.name}"
        if expected_by_tag and tag.name in expected_by_tag:
            assert [r["id"] for r in got] == sorted(expected_by_tag[tag.name]), \
                f"tag {tag.name}"
    return t
