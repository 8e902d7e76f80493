"""Table: open or create a Paimon append table, look at its snapshots, read it, and get a
writer and a commit object."""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Sequence

import pyarrow as pa

from .dynamic_options import (check_branch_options, check_changelog_producer,
                              check_dynamic_options, refuse_storage_options,
                              with_dynamic_options)
from .errors import TableExistsError, UnsupportedTableError
from .io import FileIO
from .io import for_path as file_io_for_path
from .io import redact_uri
from .format import paths as P
from .format.manifest import DataFileMeta, ManifestEntry
from .format.schema import TableSchema
from .format.snapshot import Consumer, Snapshot, Tag
from .operations.tag_ops import RollbackResult, TagDeleteResult, TagOperations
from .option_names import check_table_option_names
from .options import parse_duration_ms, validate_options
from .read import read_data_file
from .tags import ConsumerManager, tag_manager
from .store import FileStore, SchemaManager, write_refusal
from .table_commit import TableCommit
from .table_maintenance import TableMaintenance, cutoff_ms
from .writer import TableWriter

log = logging.getLogger(__name__)

__all__ = ["Table", "LiveFile"]


@dataclass(frozen=True)
class LiveFile:
    """A data file live in a snapshot."""
    partition: Dict[str, Any]
    bucket: int
    path: str
    file: DataFileMeta

    @property
    def file_name(self) -> str:
        """The data file's name."""
        return self.file.file_name

    @property
    def row_count(self) -> int:
        """Rows in the file."""
        return self.file.row_count

    @property
    def file_size(self) -> int:
        """Bytes on storage."""
        return self.file.file_size


def _str_options(options: Optional[Mapping[str, Any]]) -> Dict[str, str]:
    return {str(k): str(v) for k, v in (options or {}).items()}


class Table(TableMaintenance):
    """A Paimon table: its snapshots, tags and rows, a writer and commit objects, and every
    maintenance operation by name (expire_snapshots, expire_partitions, expire_tags,
    remove_orphan_files, create_tag, delete_tag, rollback_to, report).

    Open one with `Table.open(path)` or create an append table with `Table.create(...)`.
    Data files are written only into bucket-unaware append tables; every kind of Paimon
    table (append or primary-key, any bucket mode) can be inspected and maintained.
    """

    def __init__(self, store: FileStore, dynamic_options: Optional[Mapping[str, str]] = None):
        self.store = store
        self._dynamic_options: Dict[str, str] = dict(dynamic_options or {})

    # --- construction --------------------------------------------------------------------
    @classmethod
    def open(cls, path: str, file_io: Optional[FileIO] = None,
             options: Optional[Mapping[str, Any]] = None, *,
             storage_options: Optional[Mapping[str, Any]] = None) -> "Table":
        """Open the table at `path` (local path, file://, s3://, gs://, az://, abfs://,
        hdfs://).

        Args:
            path: the table directory.
            file_io: storage to use instead of the one the path's scheme selects.
            options: table options for this handle only (Paimon's dynamic options, as in
                `Table.create(options=...)`): they override the options stored in the table
                for everything done through the returned Table (commits and what runs after
                them, expiration, compaction, orphan cleanup, the report) and are never
                written to the table. Options that fix the table's layout (`bucket`,
                `bucket-key`, `partition`, `merge-engine`, ...) cannot be changed this way.
            storage_options: how to reach the storage, such as `s3.endpoint`, `s3.access-key`
                (Paimon's names); never written to the table.

        Raises:
            TableNotFoundError: no `schema/schema-N` file under `path`.
            OptionError: an option of the table, of `options` or of `storage_options` is
                invalid (a storage option given as `options=` included); the options'
                names and values are checked before any I/O.
        """
        path = str(path)
        dynamic = check_dynamic_options(options)   # before any I/O
        io = file_io or file_io_for_path(path, _str_options(storage_options))
        path = redact_uri(path)   # no credentials in Table.path
        store = FileStore.open(path, io)
        if dynamic:
            store = FileStore.from_schema(path, io, with_dynamic_options(store.schema,
                                                                         dynamic, path))
        return cls(store, dynamic)

    @classmethod
    def create(cls, path: str, schema: pa.Schema, partition_keys: Sequence[str] = (),
               options: Optional[Mapping[str, Any]] = None,
               file_io: Optional[FileIO] = None,
               storage_options: Optional[Mapping[str, Any]] = None) -> "Table":
        """Create an append table (bucket-unaware) at `path`.

        Args:
            path: the table directory (local path, file://, hdfs://, s3://, …).
            schema: the Arrow schema; Paimon types are derived from it.
            partition_keys: partition columns, outermost first.
            options: table options, stored in the schema (validated before any I/O).
            file_io: storage to use instead of the one the path's scheme selects.
            storage_options: how to reach the storage (`s3.endpoint`, …); not stored.

        Returns:
            The new Table.

        Raises:
            TableExistsError: a Paimon table already exists at `path`.
            OptionError: an option is invalid.
        """
        path = str(path)
        if options:   # before any I/O; the schema is readable by every reader of the table
            refuse_storage_options(options, "Table.create",
                                   "(table options are stored in the table's schema)")
            check_branch_options(options, "Table.create")
            check_changelog_producer(options, (), "Table.create")
        # A typo of a Paimon name is refused here, before it is stored in the schema (options
        # a table already carries only warn: dynamic_options).
        check_table_option_names(options, strict=True)
        table_schema = TableSchema.from_arrow(schema, list(partition_keys), options,
                                              time_millis=int(time.time() * 1000))
        parsed = validate_options(table_schema.options)
        problem = write_refusal(table_schema, parsed)
        if problem:  # before any I/O: a table this library could not write to
            raise UnsupportedTableError(f"cannot create {redact_uri(path)}: {problem}")
        io = file_io or file_io_for_path(path, _str_options(storage_options))
        path = redact_uri(path)  # s3://key:secret@bucket/...: credentials stay in `io` only
        schemas = SchemaManager(io, io.root)
        if schemas.list_ids():
            raise TableExistsError(f"a Paimon table already exists at {path}")
        io.mkdirs(schemas.schema_dir)
        # A store that rejects conditional creates is an error unless one writer is declared.
        single = {"single_writer": True} if parsed["commit.single-writer"] else {}
        if not io.try_create_atomic(io.join(schemas.schema_dir, P.schema_file_name(0)),
                                    table_schema.to_json(), **single):
            raise TableExistsError(f"a Paimon table was created concurrently at {path}")
        return cls(FileStore.from_schema(path, io, table_schema))

    # --- properties ----------------------------------------------------------------------
    @property
    def path(self) -> str:
        """The table path as given (credentials removed)."""
        return self.store.path

    @property
    def schema(self) -> TableSchema:
        """The latest schema (schema/schema-N with the highest N)."""
        return self.store.schema

    @property
    def partition_keys(self) -> List[str]:
        """Partition columns, outermost first."""
        return list(self.store.partition_keys)

    @property
    def options(self) -> Dict[str, str]:
        """The table options this handle acts on (strings): those stored in the schema, with
        the dynamic options given to `Table.open` over them."""
        return dict(self.store.schema.options)

    @property
    def dynamic_options(self) -> Dict[str, str]:
        """The options given to `Table.open(options=...)` (strings); not in the table."""
        return dict(self._dynamic_options)

    def arrow_schema(self) -> pa.Schema:
        """The table's columns as an Arrow schema (what read_arrow returns)."""
        return self.store.schema.arrow_schema()

    # --- snapshots -----------------------------------------------------------------------
    def snapshots(self) -> List[Snapshot]:
        """Every snapshot on storage, oldest first."""
        return list(self.store.snapshots.snapshots())

    def latest_snapshot(self) -> Optional[Snapshot]:
        """The newest snapshot, or None for a table without snapshots."""
        return self.store.snapshots.latest_snapshot()

    def snapshot(self, snapshot_id: int) -> Snapshot:
        """Snapshot `snapshot_id`; ValueError if it does not exist (never was, or expired)."""
        s = self.store.snapshots.try_snapshot(snapshot_id)
        if s is None:
            raise ValueError(f"snapshot {snapshot_id} does not exist in table {self.path}")
        return s

    def resolve_snapshot(self, snapshot_id: Optional[int] = None, tag: Optional[str] = None
                         ) -> Optional[Snapshot]:
        """The snapshot a tag points to, or snapshot `snapshot_id`, or the latest one
        (None for an empty table). Raises ValueError for an unknown id or tag."""
        if tag is not None:
            return self._resolve_tag(tag)
        return self.latest_snapshot() if snapshot_id is None else self.snapshot(snapshot_id)

    # --- reading -------------------------------------------------------------------------
    def live_entries(self, snapshot_id: Optional[int] = None, tag: Optional[str] = None
                     ) -> List[ManifestEntry]:
        """The ADD manifest entries live in a snapshot (default: the latest) or a tag."""
        s = self.resolve_snapshot(snapshot_id, tag)
        return [] if s is None else self.store.live_entries(s)

    def live_files(self, snapshot_id: Optional[int] = None, tag: Optional[str] = None
                   ) -> List[LiveFile]:
        """The data files live in a snapshot (default: the latest) or a tag, with their
        partition values, bucket and path."""
        st = self.store
        return [LiveFile(st.partition_dict(st.manifests.decode_partition(e.partition)),
                         e.bucket, st.data_file_path(e), e.file)
                for e in self.live_entries(snapshot_id, tag)]

    def read_arrow(self, snapshot_id: Optional[int] = None, tag: Optional[str] = None
                   ) -> pa.Table:
        """The rows of a snapshot (default: the latest) or a tag, as one pyarrow Table with
        the table's current schema (columns added later read as null).

        Raises:
            ValueError: the snapshot or tag does not exist.
            UnsupportedTableError: a primary-key table (rows need a merge by key) or a
                snapshot with deletion vectors.
        """
        s = self.resolve_snapshot(snapshot_id, tag)
        target = self.arrow_schema()
        st = self.store
        st.check_readable(s)
        if s is None:
            return target.empty_table()
        tables = [read_data_file(st.io, st.data_file_path(e),
                                 st.partition_dict(st.manifests.decode_partition(e.partition)),
                                 target)
                  for e in st.live_entries(s)]
        return pa.concat_tables(tables) if tables else target.empty_table()

    # --- tags, rollback, consumers ------------------------------------------------------
    def tags(self) -> List[Tag]:
        """Every tag, by name."""
        return tag_manager(self.store).tags()

    def create_tag(self, name: str, snapshot_id: Optional[int] = None,
                   time_retained: Optional[Any] = None) -> Tag:
        """Tag a snapshot (default: the latest). `time_retained` is a duration ('7 d') or ms."""
        ms = None if time_retained is None else parse_duration_ms(time_retained,
                                                                  "tag time_retained")
        if ms is None:   # Paimon: tag.default-time-retained applies to manual tags too
            ms = self.store.options["tag.default-time-retained"]
        return TagOperations(self.store).create_tag(name, snapshot_id, ms)

    def delete_tag(self, name: str) -> TagDeleteResult:
        """Delete a tag and the files only it kept (its snapshot may have expired).
        Crash-safe: running it again after an interruption finishes the job.

        Returns:
            TagDeleteResult (deleted files, bytes and paths).

        Raises:
            ValueError: no such tag (and no unfinished deletion of it).
        """
        return TagOperations(self.store).delete_tag(name)

    def unfinished_tag_deletions(self) -> List[str]:
        """Tags whose deletion was interrupted; delete_tag(name) finishes each."""
        return tag_manager(self.store).pending_deletions()

    def expire_tags(self, older_than_ms: Optional[int] = None, dry_run: bool = False,
                    clock=time.time, *, older_than: Any = None, max_duration: Any = None):
        """Expire tags past their retention (create time + time retained) and, with
        `older_than` (a past datetime, 'YYYY-MM-DD HH:MM:SS' or epoch ms; `older_than_ms` is
        the older spelling), tags created before it; each deletion also deletes the files only
        that tag kept (as delete_tag). Tags without retention are only expired through a
        cutoff. `max_duration` ('10 min', or milliseconds; more than 0) stops the run
        between two tags once reached (`complete` False, `stopped_by` "max-duration").

        Returns:
            TagExpireResult (expired_tags, deleted_files, deleted_bytes, ...).

        Raises:
            CorruptMetadataError: a tag file cannot be parsed (nothing is deleted).
        """
        from .operations.tag_lifecycle import expire_tags
        if older_than is not None:
            if older_than_ms is not None:
                raise TypeError("give older_than or older_than_ms, not both")
            older_than_ms = cutoff_ms(older_than, "older_than", clock)
        from .table_maintenance import max_duration_arg
        limit = max_duration_arg(max_duration)
        return expire_tags(self.store, older_than_ms, dry_run, clock, max_duration_ms=limit)

    def rollback_to(self, snapshot_id: Optional[int] = None, tag: Optional[str] = None
                    ) -> RollbackResult:
        """Make a snapshot (or a tag's snapshot) the latest again: newer snapshots and newer
        tags are deleted; their data files are left for orphan cleanup.

        Returns:
            RollbackResult (the snapshot rolled back to, the snapshots and tags removed).

        Raises:
            ValueError: neither or both of `snapshot_id` and `tag`, or an unknown one.
        """
        return TagOperations(self.store).rollback_to(snapshot_id, tag)

    def consumers(self) -> List[Consumer]:
        """Streaming consumers (consumer/consumer-<id>) and the next snapshot each reads."""
        return ConsumerManager(self.store.io, self.store.root).consumers()

    def _resolve_tag(self, tag: str) -> Snapshot:
        t = tag_manager(self.store).try_tag(tag)
        if t is None:
            raise ValueError(f"tag {tag!r} does not exist in table {self.path}")
        return t.snapshot

    # --- checking ------------------------------------------------------------------------
    def check(self, progress=None, max_duration: Any = None):
        """Which snapshots, tags and long-lived changelogs (of every branch) are broken:
        every manifest list, manifest, data file (with its extra files), index manifest,
        index file and statistics file they need must exist with the size the metadata
        records. Read-only: nothing is written or deleted. One listing per directory; each
        manifest is read once, shared by every root that names it.

        Args:
            progress: optional paimon_commit.progress callback.
            max_duration: stop reading manifests after this long ('10 min', or ms; more
                than 0): the result then says complete=False and names the roots not
                checked in full.

        Returns:
            CheckResult: `healthy`, `problems` (path, kind, state, expected and actual size,
            the roots each breaks), `broken` ("snapshot 3", "tag t1"), counts, listings,
            reads and seconds; `to_dict()`.
        """
        from .operations.check import check_table
        from .table_maintenance import max_duration_arg
        return check_table(self.store, progress, max_duration_arg(max_duration))

    def repair(self, apply: bool = False, progress=None):
        """Give up the data files that are gone: one new OVERWRITE snapshot without the
        entries of the latest snapshot whose data files `check` finds missing, so that its
        readers work again (Paimon Java's `remove_unexisting_files`). Only shows that unless
        `apply=True`. It deletes nothing and changes no existing snapshot or tag: those that
        miss files stay broken (`still_broken` names them). With `apply`, it holds the
        table's maintenance lease; the snapshot is published like any commit (atomic,
        retried, the files chosen again from the latest snapshot of each attempt).

        Args:
            apply: commit the repair snapshot (default False: a dry run, nothing written).
            progress: optional paimon_commit.progress callback (of the check).

        Returns:
            RepairResult: `files` given up (path, partition, bucket, record_count, file_size;
            `groups` per partition and bucket), `records`, `snapshot_id` (None: a dry run or
            nothing to repair), `base_snapshot_id`, `still_broken`, `unrepaired` (problems
            of the latest snapshot it does not fix: a data file of the wrong size, ...),
            `message`; `to_dict()`.

        Raises:
            UnsupportedTableError: a primary-key or data-evolution table, or a latest
                snapshot with an index manifest (deletion vectors) when files are missing.
            RepairError: the latest snapshot's own manifests are damaged.
            LeaseHeldError: with apply, another process kept the maintenance lease.
        """
        from .operations.repair import repair_table
        return repair_table(self.store, apply, progress)

    # --- writing -------------------------------------------------------------------------
    def new_writer(self) -> TableWriter:
        """A writer of parquet data files (one per task; not thread-safe).

        Raises:
            UnsupportedTableError: the table is not a bucket-unaware append table, or has
                a layout option this library does not write (nothing is written).
        """
        return TableWriter(self.store)

    def new_commit(self, commit_user: Optional[str] = None,
                   options: Optional[Mapping[str, Any]] = None) -> TableCommit:
        """A commit object with post-commit maintenance (see TableCommit).

        Args:
            commit_user: stable name of the logical writer (exactly-once needs one);
                default: a random UUID.
            options: table options overriding the table's for this object only.

        Raises:
            OptionError: an option is invalid (before any I/O).
        """
        return TableCommit(self.store, commit_user, options)

    # --- compaction ----------------------------------------------------------------------
    def compact(self, partitions: Optional[Sequence[Mapping[str, Any]]] = None,
                dry_run: bool = False, options: Optional[Mapping[str, Any]] = None,
                progress=None):
        """Rewrite the small data files of this (bucket-unaware append) table into files of
        about `target-file-size` and commit one COMPACT snapshot (Paimon's rules and
        options, see docs/compaction.md). Rows are not changed; every earlier snapshot and
        tag reads as before; the old files go when snapshot expiration no longer needs them.

        Args:
            partitions: partition specs to compact, as for `drop_partitions`: a list of
                dicts, possibly partial (`[{"dt": date(2024, 1, 1)}]`, `[{"hr": 3}]`);
                None or the default partition name mean NULL. None: every partition.
            dry_run: plan only; nothing is written or committed (sizes after: estimated).
            options: dynamic table options for this compaction only (`target-file-size`,
                `compaction.min.file-num`, `compaction.small-file-ratio`,
                `compaction.file-num-limit`, `source.split.open-file-cost`).
            progress: optional paimon_commit.progress callback.

        Returns:
            CompactResult: files and bytes before and after per partition, the COMPACT
            snapshot id (None with nothing to compact or a dry run), timings; `to_dict()`.

        Raises:
            UnsupportedTableError: a table this library does not write (primary-key, fixed
                bucket, ...), with the writer's message; before any I/O.
            OptionError: a bad option or partition spec (before any I/O), or a partition
                with no data files.
            CompactionConflictError: input files were removed by a concurrent commit
                (`moved_files` names them); the files written were deleted, nothing was
                committed.
        """
        from .operations.compact import compact_table
        return compact_table(self.store, partitions, dry_run, options, progress)

    def __repr__(self) -> str:
        return f"Table({self.path!r})"
