"""Inventory-fed orphan cleanup: a file list (an S3 Inventory or GCS inventory report, or any
CSV / Parquet listing) replaces the listing of the table (`--file-list`, `file_list=`).

What a list must be
-------------------
- CSV (plain or gzip) with a header row, or Parquet. Columns, matched case-insensitively and
  ignoring `_`, `-` and spaces: the location, either `path` (a full URI with the table's
  scheme, `s3://bucket/key`, or for a local table an absolute path or `file://` URI) or
  `key` / `name` (the object's key in the bucket, as S3 Inventory and GCS inventory reports
  write it; with an optional `bucket` column, which must name the table's bucket); `size`;
  and the last-modified time: `last_modified`, `last_modified_date` (S3), `updated` (GCS) or
  `mtime`, as ISO 8601 with a time zone (`2024-01-01T10:00:00.000Z`), epoch milliseconds, or
  a Parquet timestamp. `is_latest` / `is_delete_marker` (a versioned S3 inventory) are obeyed.
  Other columns are ignored.
- An S3 Inventory CSV has no header: its columns are in the inventory's `manifest.json`
  (`fileSchema`), given with `--file-list-manifest` / `file_list_manifest=`; its keys are then
  URL-decoded (S3 writes them URL-encoded in CSV only), its bucket must be the manifest's
  `sourceBucket` and the table's, and its time is the manifest's `creationTimestamp` (when S3
  began scanning the bucket: the earliest moment the list can describe).
- Otherwise the time the list was taken must be given (`--file-list-time`,
  `file_list_time_ms=`): the newest last-modified time in a list is only a lower bound of it.
  Unknown: refused; in doubt, nothing is deleted.

Every row names a file inside the table root, or the list is refused with the row's line
number (CSV lines count the header; Parquet rows from 1): it is not a listing of this table.
So are a missing header, a malformed row, an unreadable time, and a file listed twice with
different status. All of this is read before anything of the table is listed or deleted.

What it decides is in `orphan.py` (the cleaner keeps the same rules as with a listing, and
more): only files the list shows are candidates, in the places a listing would take them from;
the list must be newer than the cutoff and must cover the table (`OrphanFilesCleaner.
_check_covers`); every candidate's status is read again right before it is deleted.
"""
from __future__ import annotations

import csv
import datetime
import gzip
import io as _io
import json
import logging
import posixpath
import re
import sys
from array import array
from dataclasses import dataclass
from typing import Any, BinaryIO, Dict, Iterator, List, Optional, Set, Tuple, Union
from urllib.parse import unquote, unquote_plus

from ..errors import OptionError
from .orphan_context import PLAUSIBLE_MS

log = logging.getLogger("paimon_commit.operations.orphan")

__all__ = ["FileListError", "FileListManifest", "read_manifest", "read_rows", "format_utc",
           "Row", "storage_path_of", "FromFileList"]


class FileListError(OptionError):
    """A file list (inventory) that is malformed, foreign, stale or does not cover the table:
    refused, nothing deleted."""


def _norm(name: str) -> str:
    return re.sub(r"[\s_\-]", "", str(name).strip().lower())


LOCATION = ("path", "key", "name")
SIZE = ("size",)
MTIME = ("lastmodified", "lastmodifieddate", "updated", "mtime")
BUCKET = "bucket"
IS_LATEST = "islatest"
IS_DELETE_MARKER = "isdeletemarker"


def format_utc(ms: int) -> str:
    """`2024-01-01T10:00:00.000Z` of epoch milliseconds."""
    t = datetime.datetime.fromtimestamp(ms / 1000, datetime.timezone.utc)
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


@dataclass(frozen=True)
class FileListManifest:
    """What an S3 Inventory manifest.json says about its data files."""
    path: str
    time_ms: int          # creationTimestamp
    columns: Optional[List[str]]   # fileSchema of a CSV inventory (no header); None: Parquet
    bucket: str           # sourceBucket


def read_manifest(path: str) -> FileListManifest:
    """An S3 Inventory manifest.json; FileListError naming what is wrong."""
    try:
        with open(path, "rb") as f:
            doc = json.loads(f.read().decode("utf-8"))
    except OSError as e:
        raise FileListError(f"file list manifest {path}: cannot be read ({e.strerror or e})"
                            ) from None
    except (ValueError, UnicodeDecodeError) as e:
        raise FileListError(f"file list manifest {path}: not JSON ({e})") from None
    if not isinstance(doc, dict):
        raise FileListError(f"file list manifest {path}: not an S3 Inventory manifest.json")
    missing = [k for k in ("creationTimestamp", "fileFormat", "sourceBucket") if k not in doc]
    if missing:
        raise FileListError(f"file list manifest {path}: no {missing[0]!r}: not an S3 "
                            f"Inventory manifest.json")
    try:
        time_ms = int(str(doc["creationTimestamp"]))
    except ValueError:
        raise FileListError(f"file list manifest {path}: creationTimestamp "
                            f"{doc['creationTimestamp']!r} is not epoch milliseconds") from None
    if time_ms < PLAUSIBLE_MS:
        raise FileListError(f"file list manifest {path}: creationTimestamp {time_ms} looks "
                            f"like seconds, not milliseconds")
    fmt = str(doc["fileFormat"]).upper()
    columns: Optional[List[str]] = None
    if fmt == "CSV":
        schema = doc.get("fileSchema")
        if not isinstance(schema, str) or not schema.strip():
            raise FileListError(f"file list manifest {path}: a CSV inventory without "
                                f"fileSchema (its columns)")
        columns = [c.strip() for c in schema.split(",")]
    elif fmt != "PARQUET":
        raise FileListError(f"file list manifest {path}: fileFormat {doc['fileFormat']!r} is "
                            f"not supported (CSV or Parquet)")
    return FileListManifest(path, time_ms, columns, str(doc["sourceBucket"]))


class Row:
    """One file of a list: where it is in the list (`where`: 'line 7', 'row 3'), its
    location as written, and the storage path it names (set by `read_rows`' caller)."""
    __slots__ = ("where", "bucket", "location", "size", "mtime_ms")

    def __init__(self, where: str, bucket: Optional[str], location: str, size: int,
                 mtime_ms: int):
        self.where, self.bucket, self.location = where, bucket, location
        self.size, self.mtime_ms = size, mtime_ms


def _open_bytes(source: Union[str, BinaryIO]) -> Tuple[str, bytes]:
    """(how the list is named in messages, its bytes, gunzipped)."""
    if source == "-":
        shown, data = "stdin", sys.stdin.buffer.read()
    elif isinstance(source, str):
        shown = source
        try:
            with open(source, "rb") as f:
                data = f.read()
        except OSError as e:
            raise FileListError(f"file list {source}: cannot be read ({e.strerror or e})"
                                ) from None
    elif hasattr(source, "read"):
        shown, data = getattr(source, "name", None) or "the file list", source.read()
        if isinstance(data, str):
            data = data.encode("utf-8")
    else:
        raise FileListError(f"file_list must be a path, '-' (stdin) or a binary file object, "
                            f"got {source!r}")
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError) as e:
            raise FileListError(f"file list {shown}: a damaged gzip file ({e})") from None
    return shown, data


class _Columns:
    """Which column holds what, from a header or a manifest's fileSchema."""

    def __init__(self, names: List[str]):
        norm = [_norm(n) for n in names]
        self.count = len(norm)
        locs = [i for i, n in enumerate(norm) if n in LOCATION]
        self.location = locs[0] if len(locs) == 1 else None
        self.ambiguous = len(locs) > 1
        self.kind = norm[locs[0]] if len(locs) == 1 else None
        self.size = next((i for i, n in enumerate(norm) if n in SIZE), None)
        self.mtime = next((i for i, n in enumerate(norm) if n in MTIME), None)
        self.bucket = norm.index(BUCKET) if BUCKET in norm else None
        self.is_latest = norm.index(IS_LATEST) if IS_LATEST in norm else None
        self.is_delete_marker = norm.index(IS_DELETE_MARKER) if IS_DELETE_MARKER in norm \
            else None

    def complete(self) -> bool:
        return self.location is not None and self.size is not None and self.mtime is not None

    def missing(self) -> str:
        if self.ambiguous:
            return "more than one location column (path, key, name): which one is meant?"
        need = [what for what, i in (("path (or key)", self.location), ("size", self.size),
                                     ("last-modified", self.mtime)) if i is None]
        return "no " + ", no ".join(need) + " column"


_HEADER_HELP = ("a CSV file list needs a header row naming its path (or key), size and "
                "last-modified columns; an S3 Inventory CSV has none: give its manifest.json "
                "with --file-list-manifest (file_list_manifest=)")


def _parse_size(text: Any, where: str, shown: str) -> int:
    if isinstance(text, bool):
        text = str(text)
    if isinstance(text, int):
        value = text
    else:
        t = str(text).strip()
        if not t.isdigit():
            raise FileListError(f"file list {shown}, {where}: size {text!r} is not a number "
                                f"of bytes")
        value = int(t)
    if value < 0:
        raise FileListError(f"file list {shown}, {where}: size {text!r} is negative")
    return value


def _parse_mtime(value: Any, where: str, shown: str) -> int:
    """Epoch milliseconds of an ISO 8601 time with a zone, epoch milliseconds, or a
    datetime (a Parquet timestamp; one without a zone is UTC, as Parquet stores it)."""
    if isinstance(value, datetime.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=datetime.timezone.utc)
        return int(value.timestamp() * 1000)
    if isinstance(value, int) and not isinstance(value, bool):
        ms = value
    else:
        text = str(value).strip()
        if text.isdigit():
            ms = int(text)
        else:
            t = text[:-1] + "+00:00" if text.endswith(("Z", "z")) else text
            # fromisoformat takes up to 6 fraction digits, 3 or 6 only before 3.11
            t = re.sub(r"\.(\d+)", lambda m: "." + (m.group(1) + "000000")[:6], t, count=1)
            t = re.sub(r"([+-]\d\d)(\d\d)$", r"\1:\2", t)   # +0000 (find -printf %Tz)
            try:
                dt = datetime.datetime.fromisoformat(t.replace(" ", "T", 1))
            except ValueError:
                raise FileListError(
                    f"file list {shown}, {where}: last-modified {text!r} is not a time (ISO "
                    f"8601 with a time zone, e.g. 2024-01-01T10:00:00.000Z, or epoch "
                    f"milliseconds)") from None
            if dt.tzinfo is None:
                raise FileListError(
                    f"file list {shown}, {where}: last-modified {text!r} has no time zone "
                    f"(e.g. 2024-01-01T10:00:00.000Z)")
            return int(dt.timestamp() * 1000)
    if ms < PLAUSIBLE_MS:
        raise FileListError(f"file list {shown}, {where}: last-modified {value!r} looks like "
                            f"seconds, not milliseconds")
    return ms


def _false(text: Any) -> bool:
    return str(text).strip().lower() in ("false", "0", "")


def read_rows(source: Union[str, BinaryIO], manifest: Optional[FileListManifest] = None
              ) -> Tuple[str, str, Iterator[Row]]:
    """(the list as named in messages, its location column kind: 'path' | 'key' | 'name',
    its rows). The header (or the manifest's columns) is checked here; each row as it is
    read. FileListError with the line (CSV) or row (Parquet) number."""
    shown, data = _open_bytes(source)
    if data[:4] == b"PAR1":
        return _parquet_rows(shown, data)
    if manifest is not None and manifest.columns is None:
        raise FileListError(f"file list {shown}: the manifest {manifest.path} describes a "
                            f"Parquet inventory, but this is not a Parquet file")
    return _csv_rows(shown, data, manifest)


def _csv_rows(shown: str, data: bytes, manifest: Optional[FileListManifest]
              ) -> Tuple[str, str, Iterator[Row]]:
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = data[:e.start].count(b"\n") + 1
        raise FileListError(f"file list {shown}, line {line}: not UTF-8 text (a CSV or "
                            f"Parquet file list)") from None
    reader = csv.reader(_io.StringIO(text, newline=""))
    encoded = False
    if manifest is not None:
        cols = _Columns(manifest.columns or [])
        if not cols.complete():
            raise FileListError(f"file list manifest {manifest.path}: fileSchema has "
                                f"{cols.missing()}")
        encoded = True   # S3 Inventory CSV: keys are URL-encoded
    else:
        try:
            header = next(reader)
        except StopIteration:
            raise FileListError(f"file list {shown}, line 1: empty; {_HEADER_HELP}") from None
        except csv.Error as e:
            raise FileListError(f"file list {shown}, line 1: {e}") from None
        cols = _Columns(header)
        if not cols.complete():
            raise FileListError(f"file list {shown}, line {reader.line_num}: not a header "
                                f"row ({cols.missing()}); {_HEADER_HELP}")
    kind = cols.kind or "path"

    def rows() -> Iterator[Row]:
        need = max(i for i in (cols.location, cols.size, cols.mtime, cols.bucket,
                               cols.is_latest, cols.is_delete_marker) if i is not None)
        while True:
            try:
                fields = next(reader)
            except StopIteration:
                return
            except csv.Error as e:
                raise FileListError(f"file list {shown}, line {reader.line_num}: {e}"
                                    ) from None
            where = f"line {reader.line_num}"
            if not fields or fields == [""]:
                continue   # a blank line
            if len(fields) <= need:
                raise FileListError(f"file list {shown}, {where}: {len(fields)} field(s), "
                                    f"the columns need {need + 1}")
            if cols.is_delete_marker is not None and \
                    not _false(fields[cols.is_delete_marker]):
                continue
            if cols.is_latest is not None and _false(fields[cols.is_latest]):
                continue
            loc = fields[cols.location]
            if encoded:
                loc = unquote_plus(loc)
            if not loc:
                raise FileListError(f"file list {shown}, {where}: an empty "
                                    f"{kind}")
            yield Row(where, fields[cols.bucket] if cols.bucket is not None else None, loc,
                      _parse_size(fields[cols.size], where, shown),
                      _parse_mtime(fields[cols.mtime], where, shown))
    return shown, kind, rows()


def _parquet_rows(shown: str, data: bytes) -> Tuple[str, str, Iterator[Row]]:
    import pyarrow as pa
    import pyarrow.parquet as pq
    try:
        pf = pq.ParquetFile(pa.BufferReader(data))
    except Exception as e:  # noqa: BLE001 - any damage: one line
        raise FileListError(f"file list {shown}: not a readable Parquet file ({e})") from None
    names = pf.schema_arrow.names
    cols = _Columns(names)
    if not cols.complete():
        raise FileListError(f"file list {shown}: the Parquet columns ({', '.join(names)}) "
                            f"have {cols.missing()}")
    kind = cols.kind or "path"
    wanted = [names[i] for i in (cols.location, cols.size, cols.mtime, cols.bucket,
                                 cols.is_latest, cols.is_delete_marker) if i is not None]

    def rows() -> Iterator[Row]:
        n = 0
        for batch in pf.iter_batches(columns=wanted):
            d = batch.to_pydict()
            loc = d[names[cols.location]]
            size = d[names[cols.size]]
            mtime = d[names[cols.mtime]]
            bucket = d[names[cols.bucket]] if cols.bucket is not None else None
            latest = d[names[cols.is_latest]] if cols.is_latest is not None else None
            marker = d[names[cols.is_delete_marker]] if cols.is_delete_marker is not None \
                else None
            for i in range(len(loc)):
                n += 1
                where = f"row {n}"
                if marker is not None and marker[i] is not None and not _false(marker[i]):
                    continue
                if latest is not None and latest[i] is not None and _false(latest[i]):
                    continue
                if loc[i] is None or loc[i] == "" or size[i] is None or mtime[i] is None:
                    raise FileListError(f"file list {shown}, {where}: a {kind}, size and "
                                        f"last-modified time are needed, one is empty")
                yield Row(where, bucket[i] if bucket is not None else None, str(loc[i]),
                          _parse_size(size[i], where, shown),
                          _parse_mtime(mtime[i], where, shown))
    return shown, kind, rows()


def storage_path_of(row: Row, kind: str, io: Any, shown: str) -> str:
    """The storage path (FileIO's namespace) a row names; FileListError when it names
    another storage or bucket, or is not spelled as this storage's paths are."""
    from ..io.local import LocalFileIO
    scheme = getattr(io, "scheme", None)
    bucket = getattr(io, "bucket", None)
    loc = row.location
    if isinstance(io, LocalFileIO):
        if kind != "path":
            raise FileListError(f"file list {shown}: a {kind} column names objects in a "
                                f"bucket, but the table is on local disk: give a path column "
                                f"(absolute paths or file:// URIs)")
        if loc.startswith("file://"):
            loc = unquote(loc[len("file://"):])
            if not loc.startswith("/"):
                raise FileListError(f"file list {shown}, {row.where}: {row.location!r} is "
                                    f"not a file:///absolute/path URI")
        elif "://" in loc:
            raise FileListError(f"file list {shown}, {row.where}: {row.location!r} is not on "
                                f"the table's storage (local disk)")
        elif not loc.startswith("/"):
            raise FileListError(f"file list {shown}, {row.where}: {row.location!r} is not an "
                                f"absolute path")
        return loc
    if scheme is None or bucket is None:
        raise FileListError(f"file lists are supported for tables on local disk and object "
                            f"stores, not {io!r}")
    if kind == "path":
        given, sep, rest = loc.partition("://")
        from ..io.uri import AZURE_SCHEMES, GCS_SCHEMES, S3_SCHEMES
        family = next((f for f in (S3_SCHEMES, GCS_SCHEMES, AZURE_SCHEMES) if scheme in f), ())
        if not sep or given.lower() not in family:
            raise FileListError(f"file list {shown}, {row.where}: {row.location!r} is not a "
                                f"{scheme}:// URI of the table's bucket")
        got_bucket, _, key = rest.partition("/")
    else:
        got_bucket, key = (row.bucket if row.bucket is not None else bucket), loc
    if got_bucket != bucket:
        raise FileListError(f"file list {shown}, {row.where}: bucket {got_bucket!r} is not the "
                            f"table's bucket {bucket!r}: not a listing of this table")
    return f"{bucket}/{key}"


# --- the cleaner's side: candidates from the list, its coverage, the status read again -------
_METADATA = ("manifest", "index", "statistics", "snapshot", "changelog", "tag", "consumer",
             "schema")


class FromFileList:
    """OrphanFilesCleaner's methods for an inventory-fed run (mixed into it)."""

    def _read_file_list(self) -> Dict[str, Any]:
        """Every row checked (FileListError with its line), and the candidates it shows,
        in the places a listing takes them from, as `Listed` per directory."""
        from ..format import paths as P
        from ..io.base import check_path_shape
        from ..errors import UnsafePathError
        from .orphan_select import SEP, Listed
        ctx, io, root = self.ctx, self.io, self.root
        manifest = ctx.manifest
        if manifest is not None and manifest.bucket != getattr(io, "bucket", None):
            where = (f"bucket {io.bucket!r}" if getattr(io, "bucket", None) is not None
                     else "local disk")
            raise FileListError(f"the file list manifest {manifest.path} is an inventory of "
                                f"bucket {manifest.bucket!r}, but the table is on {where}: not "
                                f"a listing of this table; nothing was deleted")
        shown, kind, rows = read_rows(ctx.file_list, manifest)
        shown = "stdin" if ctx.file_list == "-" else shown
        shown_root = io.uri(root) if hasattr(io, "uri") else root
        branches = {posixpath.basename(b.rstrip("/")) for b in self._branch_roots()}
        keys = [P.escape_path_name(k) + "=" for k in self.store.partition_keys]
        # (directory, kind) -> {name: (size, mtime_ms)}
        groups: Dict[Tuple[str, Optional[str]], Dict[str, Tuple[int, int]]] = {}
        cover: Dict[str, Set[Any]] = {"snapshot": set(), "schema": set(), "metadata": set()}
        partitions: Set[Tuple[str, ...]] = set()
        prefix = root + "/"
        n = 0
        for row in rows:
            n += 1
            path = storage_path_of(row, kind, io, shown)
            try:
                check_path_shape(path, root)
            except UnsafePathError:
                raise FileListError(
                    f"file list {shown}, {row.where}: {row.location!r} is not a file inside "
                    f"the table root {shown_root}: not a listing of this table (an inventory "
                    f"of a whole bucket: keep only this table's rows); nothing was deleted"
                    ) from None
            placed = self._place(path[len(prefix):], branches, keys, partitions, cover)
            if placed is None:
                continue
            directory, name, what = placed
            files = groups.setdefault((prefix + directory, what), {})
            status = (row.size, row.mtime_ms)
            if files.setdefault(name, status) != status:
                raise FileListError(f"file list {shown}, {row.where}: {row.location!r} is "
                                    f"listed twice, with different sizes or times")
        if self.scope is not None:
            for values in sorted(partitions):
                self.scope.add_partition(values)
        listed = []
        for (directory, what), files in groups.items():
            names = list(files)
            listed.append(Listed(directory, SEP.join(names), len(names), what,
                                 array("q", [files[x][0] for x in names]),
                                 array("q", [files[x][1] for x in names])))
        log.info("orphan clean of %s: file list %s has %d row(s), %d candidate(s) in %d "
                 "directories", root, shown, n, sum(d.count for d in listed), len(listed))
        return {"shown": shown, "rows": n, "listed": listed, "cover": cover}

    def _place(self, rel: str, branches: Set[str], keys: List[str],
               partitions: Set[Tuple[str, ...]], cover: Dict[str, Set[Any]]
               ) -> Optional[Tuple[str, str, Optional[str]]]:
        """(directory relative to the root, name, kind) of a candidate the listing would
        take, or None: the same places (`list_candidates`). Notes what coverage needs."""
        from ..format import paths as P
        from .orphan_context import is_bucket_dir
        parts = rel.split("/")
        name, dirs = parts[-1], parts[:-1]
        if dirs and dirs[0] == "branch":
            if len(dirs) == 3 and dirs[1] in branches and self.scope is None:
                what = self._metadata_kind(dirs[2], name, branch=True)
                if what is not False:
                    return "/".join(dirs), name, what
            return None
        if len(dirs) == 1 and dirs[0] in _METADATA:
            sub = dirs[0]
            if sub == "snapshot":
                sid = P.parse_snapshot_id(name)
                if sid is not None:
                    cover["snapshot"].add(sid)
            elif sub == "schema":
                sid = P.parse_schema_id(name)
                if sid is not None:
                    cover["schema"].add(sid)
            elif sub in ("manifest", "index", "statistics"):
                cover["metadata"].add(name)
            if self.scope is None:
                what = self._metadata_kind(sub, name, branch=False)
                if what is not False:
                    return sub, name, what
            return None
        if len(dirs) != len(keys) + 1 or not is_bucket_dir(dirs[-1]):
            return None
        scope = self.scope
        active = scope.all() if scope is not None else ()
        values = []
        for d, key, real in zip(dirs, keys, self.store.partition_keys):
            if not d.startswith(key):
                return None
            value = d[len(key):]
            if scope is not None:
                active = scope.match(real, value, active)
                if not active:
                    return None
            values.append(value)
        if scope is not None:
            partitions.add(tuple(values))
        return "/".join(dirs), name, "data"

    @staticmethod
    def _metadata_kind(sub: str, name: str, branch: bool):
        """The kind of a candidate in a metadata directory (as `_list_metadata_dirs`
        narrows its listings), None (by name), or False: not a candidate."""
        from ..format import paths as P
        if sub == "manifest" and not branch:
            return None
        if sub in ("index", "statistics") and not branch:
            return sub
        if sub in ("snapshot", "changelog"):
            parse = P.parse_snapshot_id if sub == "snapshot" else P.parse_changelog_id
            ok = parse(name) is None and name not in (P.LATEST_HINT, P.EARLIEST_HINT)
            return sub if ok else False
        if sub in ("tag", "consumer", "schema"):
            return "temp" if P.is_temp_file(name) else False
        return False

    def _check_covers(self) -> None:
        """The list must be a listing of this table, whole when it was taken: it shows the
        table's first schema file, and of the retained snapshots (of the table, not its
        branches) the newest it shows, every older one, and every list, manifest, index and
        statistics file that one uses. Otherwise FileListError: it is foreign, stale or
        partial, and nothing is deleted."""
        from ..format import paths as P
        from ..reachability import Unreadable
        from ..store import SchemaManager
        from .orphan_context import OrphanCleanAborted
        inv = self._inventory
        cover, shown, io = inv["cover"], inv["shown"], self.io
        table = io.uri(self.root) if hasattr(io, "uri") else self.root
        refuse = f"file list {shown} is not a whole listing of {table}"
        ids = SchemaManager(io, io.root).list_ids()
        if ids and ids[0] not in cover["schema"]:
            raise FileListError(
                f"{refuse}: it does not show schema/{P.schema_file_name(ids[0])}, which the "
                f"table has had since it was created (another table's list, a partial one, "
                f"or one from before the table was created); nothing was deleted")
        snapshot_dir = io.join(self.root, "snapshot")
        snaps = sorted((r for r in self._roots if r.kind == "snapshot" and
                        posixpath.dirname(r.where) == snapshot_dir),
                       key=lambda r: r.snapshot.id)
        if not snaps:
            return
        shown_snaps = [r for r in snaps if r.snapshot.id in cover["snapshot"]]
        if not shown_snaps:
            raise FileListError(
                f"{refuse}: it shows none of the table's {len(snaps)} retained snapshot(s) "
                f"({P.snapshot_file_name(snaps[0].snapshot.id)} .. "
                f"{P.snapshot_file_name(snaps[-1].snapshot.id)}); nothing was deleted")
        anchor = shown_snaps[-1]
        older = [r.snapshot.id for r in snaps
                 if r.snapshot.id < anchor.snapshot.id and r.snapshot.id not in
                 cover["snapshot"]]
        if older:
            raise FileListError(
                f"{refuse}: it shows {P.snapshot_file_name(anchor.snapshot.id)} but not the "
                f"older {P.snapshot_file_name(older[0])}, which is retained ({len(older)} in "
                f"all): a partial list; nothing was deleted")
        try:
            used = self._reach.metadata_names(anchor)
        except Unreadable as e:
            raise OrphanCleanAborted(f"{e}; nothing was deleted") from None
        missing = sorted(used - cover["metadata"])
        if missing:
            raise FileListError(
                f"{refuse}: it shows {P.snapshot_file_name(anchor.snapshot.id)} but not "
                f"{missing[0]}, which that snapshot uses ({len(missing)} in all): a partial "
                f"list; nothing was deleted")

    @staticmethod
    def _listed_status(found) -> Dict[str, Tuple[int, int]]:
        """path -> (size, mtime_ms) as the list showed each orphan found."""
        return {d + "/" + e[0]: (e[1], e[2]) for d, _, entries in found.groups
                for e in entries}

    def _still_as_listed(self, paths: List[str], listed: Dict[str, Tuple[int, int]]
                         ) -> List[str]:
        """`paths` whose status, read again now (one listing of each directory, as a run
        without a list takes it: regular files only, never through a symlink), is what the
        list showed (size, and the last-modified time to the second: what every store
        keeps) and still older than the cutoff. The others are kept and counted."""
        from ..io import read_ahead
        by_dir: Dict[str, List[str]] = {}
        for p in paths:
            d, _, n = p.rpartition("/")
            by_dir.setdefault(d, []).append(n)
        older = self.ctx.older_than_ms
        keep: List[str] = []
        changed: List[str] = []
        dirs = list(by_dir)
        for d, got in zip(dirs, read_ahead.ordered(self._relist, dirs,
                                                    read_ahead.concurrency_of(self.io))):
            now = got.result()
            current = {} if now is None else dict(zip(now.names, zip(now.sizes,
                                                                     now.mtimes_ms)))
            for n in by_dir[d]:
                p = d + "/" + n
                size, mtime = listed[p]
                c = current.get(n)
                if c is not None and c[0] == size and c[1] // 1000 == mtime // 1000 \
                        and c[1] < older:
                    keep.append(p)
                else:
                    changed.append(p)
        if changed:
            self._result.file_list_changed += len(changed)
            log.info("orphan clean of %s: keeping %d file(s) whose status changed since the "
                     "file list (gone, rewritten or a symlink now), e.g. %s", self.root,
                     len(changed), changed[0])
        return keep

    def _relist(self, directory: str):
        """The directory's regular files now, or None when a directory on the way from the
        root is a symlink (a listing never enters one)."""
        from ..io.local import LocalFileIO
        if isinstance(self.io, LocalFileIO):
            import os
            p = self.root
            for part in directory[len(self.root) + 1:].split("/"):
                p = p + "/" + part
                try:
                    if os.path.islink(p):
                        return None
                except OSError:
                    return None
        return self.io.list_files(directory)
