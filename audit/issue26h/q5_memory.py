"""Q5: how much the sized first chunk holds compared with later chunks and with the old fixed
first chunk, where `_first_limit`'s count (FILES_PER_SNAPSHOT + the delta's manifests + the
successor delta's num_deleted_files) misses what a snapshot's expiration really deletes.

Tables (overwrite tables, 2 data files per snapshot, 200 snapshots, retain 3):
  plain           : the count is about right (control)
  changelog x50   : changelog-producer input, 50 changelog files per snapshot (deleted with
                    their snapshot when the lifecycle is not decoupled; not counted)
  index x50       : an index manifest with 50 index files (deletion vectors) per snapshot
                    (deleted with their snapshot; not counted)
  zero counts     : the delta lists say num_deleted_files = 0 (a writer that leaves the
                    counts at 0; the manifests still hold the DELETEs)
Sizes scaled down: FIRST_CHUNK=5, CHUNK_FILES=2,000 (production: 100 / 20,000; CHUNK_SNAPSHOTS
2,000 in both): with 200 snapshots the whole backlog fits the count of the new first chunk, as
2,000 snapshots do in production. Reported per table, old vs new: files deleted by the first chunk, by the
largest later chunk, and the run's traced peak memory (tracemalloc).
"""
import dataclasses
import json
import os
import sys
import tempfile
import tracemalloc
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import (ExpireConfig, ExpireSnapshots, chunk_log, clone, sizes,  # noqa: E402
                    table_files)

from benchmarks.scale_tables import build_overwrite_table  # noqa: E402
from invariants import assert_intact  # noqa: E402
from operations.test_changelog import add_index_and_statistics, rewrite_snapshot  # noqa: E402
from paimon_commit import Table  # noqa: E402
from paimon_commit.format.manifest import FileKind, encode_manifest_list  # noqa: E402
from paimon_commit.manifests import ManifestWriteSession  # noqa: E402
from paimon_commit.store import FileStore  # noqa: E402

SNAPS, PER, K = 200, 2, 50
CHUNK_FILES = 2000


def add_changelogs(table, sid, k):
    st = table.store
    add = next(e for e in st.delta_entries(st.snapshots.snapshot(sid)) if e.kind == FileKind.ADD)
    entries = []
    for _ in range(k):
        name = f"changelog-{uuid.uuid4()}-0.parquet"
        with open(os.path.join(os.path.dirname(st.data_file_path(add)), name), "wb") as f:
            f.write(b"c" * 40)
        entries.append(dataclasses.replace(add, file=dataclasses.replace(
            add.file, file_name=name, file_size=40)))
    session = ManifestWriteSession(st.manifests)
    lst, size = session.write_list(session.write_manifests(entries))
    rewrite_snapshot(table, sid, changelog_manifest_list=lst, changelog_manifest_list_size=size,
                     changelog_record_count=k)


def set_option(path, key, value):
    sch = os.path.join(path, "schema", "schema-0")
    obj = json.load(open(sch))
    obj["options"][key] = value
    json.dump(obj, open(sch, "w"))


def zero_delete_counts(path):
    t = Table.open(path)
    mio = t.store.manifests
    for s in t.store.snapshots.snapshots():
        metas = mio.read_list(s.delta_manifest_list)
        data = encode_manifest_list([dataclasses.replace(m, num_deleted_files=0)
                                     for m in metas], mio.codec)
        with open(mio.path(s.delta_manifest_list), "wb") as f:
            f.write(data)


def make(base, name):
    path = os.path.join(base, name, "db.db", "t")
    build_overwrite_table(path, SNAPS * PER, PER)
    if name == "changelog x50":
        set_option(path, "changelog-producer", "input")
        for sid in range(1, SNAPS + 1):
            add_changelogs(Table.open(path), sid, K)
    elif name == "index x50":
        t = Table.open(path)
        for sid in range(1, SNAPS + 1):
            add_index_and_statistics(t, sid, [f"index-{sid}-{i}" for i in range(K)])
    elif name == "zero counts":
        zero_delete_counts(path)
    return path


def main():
    import logging
    logging.disable(logging.WARNING)
    base = tempfile.mkdtemp(prefix="audit26h-q5-")
    cfg = ExpireConfig(retain_min=3, retain_max=3, time_retained_ms=0, max_deletes=1 << 30)
    for name in ("plain", "changelog x50", "index x50", "zero counts"):
        tpl = make(base, name)
        row = {}
        for first_files in ("old", None):
            path = clone(tpl, os.path.join(base, "run", "db.db", "t"))
            with sizes(first_files, FIRST_CHUNK=5, CHUNK_FILES=CHUNK_FILES), \
                    chunk_log() as chunks:
                tracemalloc.start()
                r = ExpireSnapshots(FileStore.open(path), cfg).expire()
                peak = tracemalloc.get_traced_memory()[1]
                tracemalloc.stop()
            assert_intact(path)   # (nothing a retained snapshot reads was deleted)
            row[first_files] = (chunks, peak, table_files(path), r.expired_ids)
        (oc, op, of, oi), (nc, np_, nf, ni) = row["old"], row[None]
        if not (of == nf and oi == ni):
            print(f"{name:14}: DIFFERENT OUTCOME: expired old {oi[:3]}..{oi[-3:]} "
                  f"({len(oi)}) new {ni[:3]}..{ni[-3:]} ({len(ni)}); files only old "
                  f"{sorted(of - nf)[:3]} ({len(of - nf)}), only new {sorted(nf - of)[:3]} "
                  f"({len(nf - of)})")
        print(f"{name:14}: first chunk old {oc[0][0]} snapshots / {oc[0][1]} files, new "
              f"{nc[0][0]} / {nc[0][1]} files; largest chunk old "
              f"{max(f for _, f in oc)} files, new {max(f for _, f in nc)} files "
              f"(CHUNK_FILES {CHUNK_FILES}); chunks old {len(oc)} new {len(nc)}; peak old "
              f"{op / 1e6:.1f} MB new {np_ / 1e6:.1f} MB", flush=True)


if __name__ == "__main__":
    sys.exit(main())
