"""Streaming reads of a Paimon append table: `spark.readStream.format("paimon").load(PATH)`.

Paimon's default streaming scan (`scan.mode` latest-full) for append tables: the first batch
reads every file live in the latest snapshot; each later batch reads the files ADDed by the
snapshots committed since, in snapshot order. As Paimon's delta follow-up scanner does, only
APPEND snapshots are read: a COMPACT snapshot rewrites rows the stream has already delivered
(sending them again would duplicate every compacted row), ANALYZE changes no data, and an
OVERWRITE is skipped unless `streaming-read-overwrite` is true (then its new files are read;
the rows it removed cannot be retracted from an append stream).

Offsets are `{"snapshot": N}`: everything up to snapshot N was delivered. The initial offset
`{"snapshot": -1}` stands for "nothing yet": the batch ending at N then reads snapshot N in
full. A snapshot the stream still needs that was expired meanwhile fails the batch with a
clear error instead of silently skipping its rows.
"""
from __future__ import annotations

import logging
from typing import Any, Dict, Iterator, List, Mapping, Sequence, Tuple

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.types import StructType

from ..errors import OptionError, PaimonCommitError
from ..format.manifest import FileKind
from ..format.snapshot import CommitKind
from ..io import redact_uri
from ..io.object_store_config import storage_options
from ..table import Table
from .arrow_schema import to_arrow_schema

log = logging.getLogger(__name__)

__all__ = ["PaimonStreamReader", "StreamSnapshotExpired"]

NOTHING_YET = -1
# 64 MB of files per Spark partition (tiny files grouped), as the batch reader does.
_GROUP_BYTES = 64 << 20


class StreamSnapshotExpired(PaimonCommitError):
    """A snapshot the stream had not read yet is gone (expired): its rows cannot be read."""


class _StreamPartition(InputPartition):
    def __init__(self, paths: List[Tuple[str, Dict[str, Any]]]):
        super().__init__(None)
        self.paths = paths


def _bool_option(options: Mapping[str, str], key: str) -> bool:
    text = str(options.get(key, "false")).strip().lower()
    if text not in ("true", "false"):
        raise OptionError(f"option {key!r} = {options.get(key)!r}: expected true or false")
    return text == "true"


class PaimonStreamReader(DataSourceStreamReader):
    def __init__(self, options: Mapping[str, str], schema: StructType):
        if options.get("snapshot-id") or options.get("tag"):
            raise OptionError("a streaming read starts from the latest snapshot: options "
                              "'snapshot-id' and 'tag' are for batch reads")
        self.path = redact_uri(options["path"])
        self.storage = storage_options(options, options["path"])
        self.read_overwrite = _bool_option(options, "streaming-read-overwrite")
        self.schema = schema

    def _table(self) -> Table:
        return Table.open(self.path, storage_options=self.storage)

    def initialOffset(self) -> dict:
        return {"snapshot": NOTHING_YET}

    def latestOffset(self) -> dict:
        latest = self._table().store.snapshots.latest_snapshot_id()
        return {"snapshot": NOTHING_YET if latest is None else latest}

    def partitions(self, start: dict, end: dict) -> Sequence[InputPartition]:
        first, last = int(start["snapshot"]), int(end["snapshot"])
        if last <= first:
            return []
        table = self._table()
        st = table.store
        files: List[Tuple[str, Dict[str, Any], int]] = []
        if first == NOTHING_YET:
            # The first batch: the latest snapshot (as of this batch) in full.
            st.check_readable(self._snapshot(table, last))
            files = [(f.path, f.partition, f.file_size) for f in table.live_files(last)]
        else:
            for sid in range(first + 1, last + 1):
                files.extend(self._delta(table, sid))
        return self._groups(files)

    def _snapshot(self, table: Table, sid: int):
        s = table.store.snapshots.try_snapshot(sid)
        if s is None:
            raise StreamSnapshotExpired(
                f"snapshot {sid} of {self.path} was expired before this stream read it; its "
                f"rows cannot be delivered (keep snapshots longer than the stream lags, or "
                f"restart the stream from a new checkpoint)")
        return s

    def _delta(self, table: Table, sid: int) -> List[Tuple[str, Dict[str, Any], int]]:
        st = table.store
        s = self._snapshot(table, sid)
        kind = s.commit_kind
        if kind == CommitKind.COMPACT or kind == CommitKind.ANALYZE or \
                (kind == CommitKind.OVERWRITE and not self.read_overwrite):
            log.info("stream of %s skips snapshot %d (%s)", self.path, sid, kind)
            return []
        st.check_readable(s)
        out = []
        for e in st.delta_entries(s):
            if e.kind == FileKind.ADD:
                out.append((st.data_file_path(e),
                            st.partition_dict(st.manifests.decode_partition(e.partition)),
                            e.file.file_size))
        return out

    @staticmethod
    def _groups(files: List[Tuple[str, Dict[str, Any], int]]) -> List[InputPartition]:
        groups: List[List[Tuple[str, Dict[str, Any]]]] = []
        size = 0
        for path, partition, nbytes in files:
            if not groups or size >= _GROUP_BYTES:
                groups.append([])
                size = 0
            groups[-1].append((path, partition))
            size += nbytes
        return [_StreamPartition(g) for g in groups]

    def read(self, partition: _StreamPartition) -> Iterator[pa.RecordBatch]:
        from ..io import for_path as file_io_for_path
        from ..read import read_data_file
        target = to_arrow_schema(self.schema)
        io = file_io_for_path(self.path, self.storage)
        for path, values in partition.paths:
            yield from read_data_file(io, path, values, target).to_batches()

    def commit(self, end: dict) -> None:
        pass  # nothing to release: files are read straight from the snapshots
