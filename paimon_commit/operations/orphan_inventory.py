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
import re
import sys
from dataclasses import dataclass
from typing import Any, BinaryIO, Iterator, List, Optional, Tuple, Union
from urllib.parse import unquote, unquote_plus

from ..errors import OptionError

# A modification time below this (1970-04-26 in ms) is almost surely in seconds.
PLAUSIBLE_MS = 10_000_000_000

log = logging.getLogger("paimon_commit.operations.orphan")

__all__ = ["FileListError", "FileListManifest", "read_manifest", "read_rows", "format_utc",
           "Row", "storage_path_of", "PLAUSIBLE_MS"]


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
