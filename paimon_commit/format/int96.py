"""Parquet INT96 timestamps as Paimon Java reads them.

Paimon Java writes TIMESTAMP(7..9) and TIMESTAMP_LTZ(7..9) as INT96: 8 bytes little-endian
nanoseconds of the day, which must lie in [0, 86400 * 10^9), then 4 bytes little-endian Julian
day. Java's reader (1.0's ``TimestampColumnReader.int96ToTimestamp``) turns a value into epoch
millis = day millis + nanos / 10^6 and nanos-of-millisecond = nanos % 10^6, and its
``Timestamp`` refuses a negative nanos-of-millisecond with IllegalArgumentException: the whole
read fails, not only the row.

Arrow's encoder (pyarrow 19) splits a value with truncating division, so a value before 1970
that is not a whole day gets the *following* day and negative nanos (1969-12-31
23:59:59.999999999 becomes day 1970-01-01, nanos -1). Arrow itself reads both forms alike
(day * 86400 * 10^9 + nanos), Java does not.

pyarrow cannot write an INT96 column from given bytes, so the writer keeps such columns
uncompressed and :func:`fix_int96_file` rewrites the bad values in place after the file is
closed: (day, nanos) -> (day - 1, nanos + 86400 * 10^9). Every value keeps its size, so the
footer's offsets stay valid; INT96 has no statistics in Arrow's files, so none go stale.
"""
from __future__ import annotations

import struct
from typing import Any, Dict, Iterable, List, Optional, Tuple

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

__all__ = ["NANOS_PER_DAY", "has_pre_epoch_timestamps", "int96_compression",
           "fix_int96_file"]

NANOS_PER_DAY = 86_400 * 10 ** 9

_VALUE = struct.Struct("<qI")  # nanos of the day, Julian day

# parquet.thrift PageType and Encoding values
_DATA_PAGE, _DICTIONARY_PAGE, _DATA_PAGE_V2 = 0, 2, 3
_PLAIN, _RLE = 0, 3


# --------------------------------------------------------------------------------------------
# Which data needs it
# --------------------------------------------------------------------------------------------

def _timestamp_leaves(arr: pa.Array) -> Iterable[pa.Array]:
    t = arr.type
    if pa.types.is_timestamp(t):
        yield arr
    elif pa.types.is_struct(t):
        for i in range(t.num_fields):
            yield from _timestamp_leaves(arr.field(i))
    elif pa.types.is_map(t):
        yield from _timestamp_leaves(arr.keys)
        yield from _timestamp_leaves(arr.items)
    elif pa.types.is_list(t) or pa.types.is_large_list(t):
        yield from _timestamp_leaves(arr.values)


def has_pre_epoch_timestamps(column: pa.ChunkedArray) -> bool:
    """Whether a column holds a timestamp (at any depth) before 1970-01-01: those are the
    values Arrow may encode as INT96 with negative nanos of the day. Values hidden under a
    null parent count too; that errs on the safe side."""
    for chunk in column.chunks:
        for leaf in _timestamp_leaves(chunk):
            low = pc.min(leaf.cast(pa.int64()))
            if low.is_valid and low.as_py() < 0:
                return True
    return False


# --------------------------------------------------------------------------------------------
# Writer options
# --------------------------------------------------------------------------------------------

def _leaf_columns(schema: pa.Schema, **writer_options) -> List[Tuple[str, str]]:
    """(path, physical type) of every parquet leaf column pyarrow writes for `schema`."""
    buf = pa.BufferOutputStream()
    with pq.ParquetWriter(buf, schema, **writer_options):
        pass
    meta = pq.read_metadata(pa.BufferReader(buf.getvalue()))
    return [(meta.schema.column(i).path, meta.schema.column(i).physical_type)
            for i in range(len(meta.schema))]


def int96_compression(schema: pa.Schema, codec: Optional[str],
                      **writer_options) -> Dict[str, str]:
    """pyarrow's per-column ``compression``: `codec` for every leaf column, none for the INT96
    ones, whose bytes :func:`fix_int96_file` rewrites. (A dict leaves unnamed columns
    uncompressed, so every leaf is named.)"""
    codec = "NONE" if codec is None else codec
    return {path: "NONE" if physical == "INT96" else codec
            for path, physical in _leaf_columns(schema, **writer_options)}


# --------------------------------------------------------------------------------------------
# Rewriting a finished file
# --------------------------------------------------------------------------------------------

class _Truncated(Exception):
    """The page header continues beyond the bytes read so far."""


class _Compact:
    """Just enough of Thrift's compact protocol to read a parquet PageHeader: structs become
    {field id: value}."""

    def __init__(self, data: bytes):
        self.data = data
        self.pos = 0

    def byte(self) -> int:
        if self.pos >= len(self.data):
            raise _Truncated()
        b = self.data[self.pos]
        self.pos += 1
        return b

    def varint(self) -> int:
        shift = result = 0
        while True:
            b = self.byte()
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                return result
            shift += 7

    def zigzag(self) -> int:
        v = self.varint()
        return (v >> 1) ^ -(v & 1)

    def skip(self, n: int) -> bytes:
        if self.pos + n > len(self.data):
            raise _Truncated()
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def value(self, ctype: int) -> Any:
        if ctype in (1, 2):          # bool in a field header: the type is the value
            return ctype == 1
        if ctype == 3:
            return self.byte()
        if ctype in (4, 5, 6):       # i16, i32, i64
            return self.zigzag()
        if ctype == 7:
            return self.skip(8)
        if ctype == 8:
            return self.skip(self.varint())
        if ctype in (9, 10):         # list, set
            head = self.byte()
            size, etype = head >> 4, head & 0x0F
            if size == 15:
                size = self.varint()
            if etype in (1, 2):      # bools in a list are one byte each
                return [self.byte() == 1 for _ in range(size)]
            return [self.value(etype) for _ in range(size)]
        if ctype == 11:
            size = self.varint()
            if size == 0:
                return {}
            kv = self.byte()
            return {self.value(kv >> 4): self.value(kv & 0x0F) for _ in range(size)}
        if ctype == 12:
            return self.struct()
        raise ValueError("unknown thrift compact type %d" % ctype)

    def struct(self) -> Dict[int, Any]:
        fields: Dict[int, Any] = {}
        last = 0
        while True:
            head = self.byte()
            if head == 0:
                return fields
            delta, ctype = head >> 4, head & 0x0F
            fid = last + delta if delta else self.zigzag()
            fields[fid] = self.value(ctype)
            last = fid


def _page_header(f, pos: int, end: int) -> Tuple[Dict[int, Any], int]:
    """The PageHeader at `pos` and its length in bytes."""
    window = 256
    while True:
        f.seek(pos)
        reader = _Compact(f.read(min(window, end - pos)))
        try:
            return reader.struct(), reader.pos
        except _Truncated:
            if window >= end - pos:
                raise ValueError("truncated parquet page header at offset %d" % pos) from None
            window *= 4


def _fix_values(f, start: int, end: int) -> int:
    """Normalise the PLAIN INT96 values in [start, end); returns how many changed."""
    f.seek(start)
    data = bytearray(f.read(end - start))
    if len(data) != end - start or len(data) % 12:
        raise ValueError("INT96 values at offset %d: %d bytes is not a whole number of values"
                         % (start, end - start))
    changed = 0
    for i, (nanos, day) in enumerate(_VALUE.iter_unpack(data)):
        if not 0 <= nanos < NANOS_PER_DAY:
            days, nanos = divmod(nanos, NANOS_PER_DAY)
            _VALUE.pack_into(data, i * 12, nanos, day + days)
            changed += 1
    if changed:
        f.seek(start)
        f.write(data)
    return changed


def _level_bytes(f, pos: int) -> int:
    """Length of one RLE level section of a v1 data page, its 4-byte length prefix included."""
    f.seek(pos)
    raw = f.read(4)
    if len(raw) != 4:
        raise ValueError("truncated levels at offset %d" % pos)
    return 4 + struct.unpack("<i", raw)[0]


def _fix_chunk(f, column, max_rep: int, max_def: int) -> int:
    if column.compression != "UNCOMPRESSED":
        raise ValueError("INT96 column %s is %s-compressed; it must be written uncompressed to "
                         "be fixed" % (column.path_in_schema, column.compression))
    offsets = [column.data_page_offset]
    if column.has_dictionary_page and column.dictionary_page_offset:
        offsets.append(column.dictionary_page_offset)
    pos = min(offsets)
    end = pos + column.total_compressed_size
    changed = 0
    while pos < end:
        header, header_len = _page_header(f, pos, end)
        body, size = pos + header_len, header[3]
        if 4 in header:
            # A checksum would have to be recomputed; our writer does not ask for them.
            raise ValueError("INT96 page at offset %d has a checksum" % pos)
        ptype = header[1]
        if ptype == _DICTIONARY_PAGE:
            changed += _fix_values(f, body, body + size)
        elif ptype == _DATA_PAGE and header[5][2] == _PLAIN:
            if (max_rep and header[5][4] != _RLE) or (max_def and header[5][3] != _RLE):
                # the old BIT_PACKED levels carry no length; Arrow does not write them
                raise ValueError("INT96 page at offset %d has levels that are not RLE" % pos)
            values = body
            if max_rep:
                values += _level_bytes(f, values)
            if max_def:
                values += _level_bytes(f, values)
            changed += _fix_values(f, values, body + size)
        elif ptype == _DATA_PAGE_V2 and header[8][4] == _PLAIN:
            v2 = header[8]
            changed += _fix_values(f, body + v2.get(5, 0) + v2.get(6, 0), body + size)
        # other pages: dictionary indices or index pages, no values
        pos = body + size
    return changed


def fix_int96_file(f) -> int:
    """Rewrite, in the finished parquet file `f` (a seekable binary file open for reading and
    writing), every INT96 value whose nanos of the day are outside [0, 86400 * 10^9) as the
    same instant with the day before and positive nanos. The INT96 columns must be
    uncompressed (:func:`int96_compression`). Returns the number of values rewritten."""
    f.seek(0)
    meta = pq.ParquetFile(f).metadata
    leaves = [(i, meta.schema.column(i)) for i in range(meta.num_columns)
              if meta.schema.column(i).physical_type == "INT96"]
    changed = 0
    for rg in range(meta.num_row_groups):
        group = meta.row_group(rg)
        for i, leaf in leaves:
            changed += _fix_chunk(f, group.column(i), leaf.max_repetition_level,
                                  leaf.max_definition_level)
    f.flush()
    return changed
