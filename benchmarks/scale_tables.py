"""Big Paimon tables built quickly, for bench_scale (and its test): the metadata is written
directly through paimon_commit's format layer, the data files are hard links of one tiny
parquet file per partition written by our writer (one row each), so a 2M-file table costs
2M directory entries, not 2M inodes or 8 GB of blocks.

Two shapes:
  * overwrite table (what expiration deletes): snapshot i is an OVERWRITE of the whole table
    that deletes the previous snapshot's F files and adds F new ones (delta list: a DELETE
    manifest and an ADD manifest; base list: the previous ADD manifest). Expiring all but a
    few snapshots deletes nearly every data file, manifest and list.
  * append table (what orphan cleanup reads): S snapshots that each append N/S files, base
    lists naming every earlier manifest (Paimon would merge them; the entries are the same),
    plus a few stray files that no snapshot names.

pypaimon reads both (tests/unit/test_bench_scale.py checks a small one of each).
"""
from __future__ import annotations

import io
import os
import time
import uuid
from typing import Any, Dict, List, Optional, Tuple

import fastavro
import pyarrow as pa

from paimon_commit import Table
from paimon_commit.format import paths as P
from paimon_commit.format.manifest import (
    _PARSED_ENTRY, FileKind, ManifestEntry, ManifestFileMeta, SimpleStats,
    encode_manifest_list)
from paimon_commit.format.snapshot import CommitKind, Snapshot

__all__ = ["build_overwrite_table", "build_append_table", "SCHEMA", "FILES_PER_PARTITION",
           "count_data_files"]

SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.int32())])
# A bucket directory holds at most this many files (and one template inode has at most this
# many links: ext4 allows 65,000).
FILES_PER_PARTITION = 10_000
OLD_MS = 2 * 86_400_000   # data files look two days old: orphan cleanup's default threshold
                          # (one day) makes every one of them a candidate


class _Builder:
    def __init__(self, path: str, partitions: int):
        self.t = Table.create(path, SCHEMA, partition_keys=["p"],
                              options={"write-only": "true"})
        self.store = self.t.store
        self.root = path
        self.codec = self.store.manifests.codec
        self.uuid = str(uuid.uuid4())
        self.n_manifest = 0
        self.n_list = 0
        self.old_s = time.time() - OLD_MS / 1000
        for sub in ("manifest", "snapshot"):
            os.makedirs(os.path.join(path, sub), exist_ok=True)
        self.parts: List[Tuple[bytes, str, str, Dict[str, Any]]] = []
        for p in range(partitions):
            self.parts.append(self._template(p))

    def _template(self, p: int) -> Tuple[bytes, str, str, Dict[str, Any]]:
        """(partition bytes, bucket dir, template file, the template's manifest record)."""
        w = self.t.new_writer()
        w.write_arrow(pa.table({"id": [p], "p": [p]}, schema=SCHEMA))
        (m,) = w.prepare_commit()
        f = m.new_files[0]
        entry = ManifestEntry(FileKind.ADD, m.partition_bytes, m.bucket, m.total_buckets, f)
        path = self.store.data_file_path(entry)
        template = os.path.join(os.path.dirname(path), ".template.parquet")
        os.rename(path, template)
        os.utime(template, (self.old_s, self.old_s))
        return m.partition_bytes, os.path.dirname(path), template, entry.to_record()

    # --- files -----------------------------------------------------------------------------
    def data_files(self, p: int, names: List[str]) -> None:
        _, bucket_dir, template, _ = self.parts[p]
        for n in names:
            os.link(template, os.path.join(bucket_dir, n))

    def manifest(self, p: int, names: List[str], kind: int) -> ManifestFileMeta:
        pb, _, _, rec = self.parts[p]
        file_rec = rec["_FILE"]
        records = [{**rec, "_KIND": kind, "_FILE": {**file_rec, "_FILE_NAME": n}}
                   for n in names]
        buf = io.BytesIO()
        fastavro.writer(buf, _PARSED_ENTRY, records, codec=self.codec)
        name = P.new_manifest_name(self.uuid, self.n_manifest)
        self.n_manifest += 1
        self._write(self.store.manifests.path(name), buf.getvalue())
        return ManifestFileMeta(name, len(buf.getvalue()),
                                len(names) if kind == FileKind.ADD else 0,
                                0 if kind == FileKind.ADD else len(names),
                                SimpleStats(pb, pb, (0,)), 0, 0, 0, 0, 0)

    def manifest_list(self, metas: List[ManifestFileMeta]) -> Tuple[str, int]:
        data = encode_manifest_list(metas, self.codec)
        name = P.new_manifest_list_name(self.uuid, self.n_list)
        self.n_list += 1
        self._write(self.store.manifests.path(name), data)
        return name, len(data)

    def snapshot(self, sid: int, kind: str, base: Tuple[str, int], delta: Tuple[str, int],
                 total: int, delta_rows: int) -> None:
        s = Snapshot(id=sid, schema_id=0, base_manifest_list=base[0],
                     delta_manifest_list=delta[0], commit_user="bench_scale",
                     commit_identifier=sid, commit_kind=kind,
                     time_millis=int(self.old_s * 1000) + sid, total_record_count=total,
                     delta_record_count=delta_rows, base_manifest_list_size=base[1],
                     delta_manifest_list_size=delta[1])
        self._write(self.store.snapshots.snapshot_path(sid), s.to_json())

    def hints(self, earliest: int, latest: int) -> None:
        snap_dir = os.path.join(self.root, "snapshot")
        for hint, sid in ((P.EARLIEST_HINT, earliest), (P.LATEST_HINT, latest)):
            self._write(os.path.join(snap_dir, hint), str(sid).encode(), replace=True)

    @staticmethod
    def _write(path: str, data: bytes, replace: bool = False) -> None:
        if os.path.exists(path) and not replace:
            raise FileExistsError(path)
        with open(path, "wb") as f:
            f.write(data)

    def finish(self) -> None:
        for _, _, template, _ in self.parts:
            os.unlink(template)


def _names(prefix: str, start: int, count: int) -> List[str]:
    return [f"data-{prefix}-{i}.parquet" for i in range(start, start + count)]


def build_overwrite_table(path: str, n_files: int, per_snapshot: int = 100,
                          progress: Optional[Any] = None) -> Dict[str, Any]:
    """n_files data files over n_files / per_snapshot OVERWRITE snapshots (each replacing
    the whole table): only the latest snapshot's per_snapshot files are live."""
    snapshots = max(2, n_files // per_snapshot)
    snaps_per_partition = max(1, FILES_PER_PARTITION // per_snapshot)
    partitions = -(-snapshots // snaps_per_partition)
    b = _Builder(path, partitions)
    prefix = b.uuid
    empty = b.manifest_list([])
    prev: Optional[Tuple[int, List[str], ManifestFileMeta]] = None
    for sid in range(1, snapshots + 1):
        p = (sid - 1) // snaps_per_partition
        names = _names(prefix, (sid - 1) * per_snapshot, per_snapshot)
        b.data_files(p, names)
        adds = b.manifest(p, names, FileKind.ADD)
        if prev is None:
            base, delta = empty, b.manifest_list([adds])
        else:
            deletes = b.manifest(prev[0], prev[1], FileKind.DELETE)
            base, delta = b.manifest_list([prev[2]]), b.manifest_list([deletes, adds])
        b.snapshot(sid, CommitKind.OVERWRITE if prev else CommitKind.APPEND, base, delta,
                   per_snapshot, per_snapshot)
        prev = (p, names, adds)
        if progress and sid % max(1, snapshots // 10) == 0:
            progress(f"overwrite table: snapshot {sid}/{snapshots}")
    b.hints(1, snapshots)
    b.finish()
    return {"path": path, "files": snapshots * per_snapshot, "snapshots": snapshots,
            "per_snapshot": per_snapshot, "partitions": partitions,
            "live_files": per_snapshot}


def build_append_table(path: str, n_files: int, snapshots: int = 100, strays: int = 1000,
                       manifest_entries: int = 10_000, progress: Optional[Any] = None
                       ) -> Dict[str, Any]:
    """n_files live data files appended by `snapshots` APPEND snapshots, plus `strays` old
    files no snapshot names (what orphan cleanup finds)."""
    per_snapshot = max(1, n_files // snapshots)
    n_files = per_snapshot * snapshots
    partitions = -(-n_files // FILES_PER_PARTITION)
    b = _Builder(path, partitions)
    prefix = b.uuid
    metas: List[ManifestFileMeta] = []
    empty = b.manifest_list([])
    next_file = 0
    for sid in range(1, snapshots + 1):
        new: List[ManifestFileMeta] = []
        stop = next_file + per_snapshot
        while next_file < stop:
            p = next_file // FILES_PER_PARTITION
            count = min(stop, (p + 1) * FILES_PER_PARTITION, next_file + manifest_entries) \
                - next_file
            names = _names(prefix, next_file, count)
            b.data_files(p, names)
            new.append(b.manifest(p, names, FileKind.ADD))
            next_file += count
        base = b.manifest_list(metas) if metas else empty
        b.snapshot(sid, CommitKind.APPEND, base, b.manifest_list(new), next_file, per_snapshot)
        metas.extend(new)
        if progress and sid % max(1, snapshots // 10) == 0:
            progress(f"append table: snapshot {sid}/{snapshots}")
    b.hints(1, snapshots)
    stray_names = [f"data-stray-{i}.parquet" for i in range(strays)]
    for i, n in enumerate(stray_names):
        p = i % partitions
        bucket_dir = b.parts[p][1]
        with open(os.path.join(bucket_dir, n), "wb") as f:
            f.write(b"stray")
        os.utime(os.path.join(bucket_dir, n), (b.old_s, b.old_s))
    b.finish()
    return {"path": path, "files": n_files, "snapshots": snapshots, "partitions": partitions,
            "live_files": n_files, "strays": strays}


def count_data_files(path: str) -> int:
    """Files under the partition directories (p=*/bucket-*/)."""
    n = 0
    for d in os.listdir(path):
        if d.startswith("p="):
            for bucket in os.listdir(os.path.join(path, d)):
                n += len(os.listdir(os.path.join(path, d, bucket)))
    return n
