"""`check` on tables Paimon Java 1.0 wrote: deletion vectors (index manifests and index files)
and changelog files (changelog lists) are checked too, and a lost one names what it breaks."""
import os

from test_we_maintain_java import build_java_table

from paimon_commit import Table
from paimon_commit.format.manifest import FileKind, decode_index_manifest_files


def build_dv_table(java, path):
    """A primary-key table with deletion vectors: a tag on the compacted table, then deletes
    and updates that minor compactions turn into deletion vectors (index files)."""
    from test_we_maintain_java import PK_COLUMNS, rows
    java.create_table(path, PK_COLUMNS, partition_keys=["dt"], primary_keys=("id", "dt"),
                      options={"bucket": "1", "deletion-vectors.enabled": "true",
                               "write-only": "true"})
    java.write(path, rows(range(0, 12), "a"))
    java.compact(path)
    java.create_tag(path, "java-tag")
    gone = rows([0, 1], "a")
    java.write(path, gone, row_kinds=["-D"] * gone.num_rows, compact=True,
               full_compaction=False)
    java.write(path, rows([3], "b"), compact=True, full_compaction=False)


def test_a_lost_deletion_vector_file_breaks_the_roots_whose_index_lists_it(java, wh):
    path = str(wh / "dv")
    build_dv_table(java, path)
    t = Table.open(path)
    r = t.check()
    assert r.healthy, r.problems
    assert r.checked["index"]["files"] >= 1 and r.checked["index-manifest"]["files"] >= 1
    latest = t.latest_snapshot()
    im = t.store.manifests.path(latest.index_manifest)
    with open(im, "rb") as f:
        entries = decode_index_manifest_files(f.read(), im)
    lost = entries[0]
    os.unlink(os.path.join(path, "index", lost.file_name))
    users = []
    for root, kind in [(s, "snapshot") for s in t.snapshots()] + \
            [(x.snapshot, "tag") for x in t.tags()]:
        if root.index_manifest:
            p = t.store.manifests.path(root.index_manifest)
            with open(p, "rb") as f:
                names = {e.file_name for e in decode_index_manifest_files(f.read(), p)
                         if e.kind == FileKind.ADD}
            if lost.file_name in names:
                users.append(f"{kind} {root.id}" if kind == "snapshot" else "tag java-tag")
    r = Table.open(path).check()
    (p,) = r.problems
    assert (p.path, p.kind, p.state, p.expected_size, p.actual_size) == (
        f"index/{lost.file_name}", "index", "missing", lost.file_size, None)
    assert list(p.roots) == users and f"snapshot {latest.id}" in users


def test_a_lost_changelog_file_breaks_its_snapshot(java, wh):
    path = str(wh / "lookup")
    build_java_table(java, path, "pk-changelog-lookup")
    t = Table.open(path)
    assert t.check().healthy
    s = [s for s in t.snapshots() if s.changelog_manifest_list][-1]
    mio = t.store.manifests
    (e,) = [e for m in mio.read_list(s.changelog_manifest_list)
            for e in mio.read_manifest(m.file_name) if e.kind == FileKind.ADD][:1]
    f = os.path.join(t.store.bucket_dir(mio.decode_partition(e.partition), e.bucket),
                     e.file.file_name)
    os.unlink(f)
    r = Table.open(path).check()
    (p,) = r.problems
    assert (p.path, p.kind, p.state, p.expected_size) == (
        os.path.relpath(f, path), "data", "missing", e.file.file_size)
    assert p.roots == (f"snapshot {s.id}",)
