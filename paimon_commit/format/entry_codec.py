"""Manifest entries (ManifestEntry records in MANIFEST_ENTRY_SCHEMA) to and from Avro,
without fastavro, for the one schema we write.

fastavro takes ~40 us to write a manifest entry and ~30 us to read one (plus building the
dataclasses from its dicts): it makes a dict per record and nested record, and picks the
branch of each of the entry's eleven optional fields by testing the value against every
branch. A compaction of 10,000 small files reads 10,000 entries to plan and writes 10,000
DELETE entries to commit, and the two were a third of its time. The schema is fixed, so
this module walks it field by field, straight from and to the frozen dataclasses: the same
bytes as fastavro's (tested against it), in a third of the time.

Writing: codecs other than null, deflate and zstandard are left to fastavro
(`encode_entries` returns None). Reading: only blocks of files whose writer schema is ours
(the caller checks); anything this decoder cannot read exactly raises, and the caller reads
the file with fastavro, which reads it or says what is wrong."""
from __future__ import annotations

import os
import threading
import zlib
from typing import Any, Callable, Dict, List, Optional, Sequence

from .binary_row import EMPTY_ROW
from .entry import EMPTY_STATS, _ms, new_entry, new_file_meta, new_stats
from .varint import Malformed, NotShortest, read_long, read_shortest_long

__all__ = ["encode_entries", "BLOCK_BYTES"]

#: Records go into blocks of about this many uncompressed bytes (Avro Java's default sync
#: interval; fastavro's is 16 kB). Any block size reads the same.
BLOCK_BYTES = 64000

# zigzag varints of 0..63 and their negatives: nearly every int in a manifest entry
_SMALL = {n: bytes([(n << 1) ^ (n >> 63)]) for n in range(-64, 64)}

try:
    import zstandard as _zstandard  # type: ignore[import-not-found]
except ImportError:  # pragma: no cover - declared in setup.cfg; without it fastavro writes
    _zstandard = None
_contexts = threading.local()


def _long(n: int) -> bytes:
    b = _SMALL.get(n)
    if b is not None:
        return b
    if type(n) is not int:
        # what fastavro wrote: a number with an integral value (2421.0), as that int
        if isinstance(n, float) and n.is_integer() or isinstance(n, int):
            n = int(n)
        else:
            raise TypeError(f"{n!r} is not an integer")
    n = (n << 1) ^ (n >> 63)
    if n >> 64:
        raise OverflowError(f"{n} does not fit an Avro long")
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _bytes(v: bytes, out: bytearray) -> None:
    out += _long(len(v))
    out += v


def _string(v: str, out: bytearray) -> None:
    b = v.encode("utf-8")
    out += _long(len(b))
    out += b


def _strings(v, out: bytearray) -> None:
    if v:
        out += _long(len(v))
        for s in v:
            _string(s, out)
    out += b"\x00"


def _opt_long(v: Optional[int], out: bytearray) -> None:
    if v is None:
        out += b"\x00"
    else:
        out += b"\x02"
        out += _long(v)


def _stats(s, out: bytearray) -> None:
    _bytes(s.min_values, out)
    _bytes(s.max_values, out)
    nc = s.null_counts
    if nc is None:
        out += b"\x00"
        return
    out += b"\x02"
    if nc:
        out += _long(len(nc))
        for c in nc:
            _opt_long(c, out)
    out += b"\x00"


_I32 = 1 << 31
#: Fields of Avro type "int" (32 bits): Java reads a larger value as another number, or
#: fails on the whole manifest.
_INT_FIELDS = (("_KIND", lambda e: e.kind), ("_BUCKET", lambda e: e.bucket),
               ("_TOTAL_BUCKETS", lambda e: e.total_buckets), ("_LEVEL", lambda e: e.file.level),
               ("_FILE_SOURCE", lambda e: e.file.file_source))
#: The other scalar fields, for the error of an entry that cannot be encoded.
_FIELDS = (("_PARTITION", lambda e: e.partition, bytes),
           ("_FILE_NAME", lambda e: e.file.file_name, str),
           ("_FILE_SIZE", lambda e: e.file.file_size, int),
           ("_ROW_COUNT", lambda e: e.file.row_count, int),
           ("_MIN_SEQUENCE_NUMBER", lambda e: e.file.min_sequence_number, int),
           ("_MAX_SEQUENCE_NUMBER", lambda e: e.file.max_sequence_number, int),
           ("_SCHEMA_ID", lambda e: e.file.schema_id, int),
           ("_DELETE_ROW_COUNT", lambda e: e.file.delete_row_count, (int, type(None))),
           ("_FIRST_ROW_ID", lambda e: e.file.first_row_id, (int, type(None))))


def _bad_entry(e, error: BaseException) -> ValueError:
    """The error for an entry that cannot be written: the field and the data file named."""
    f = getattr(e, "file", None)
    name = getattr(f, "file_name", "?")
    for field, get in _INT_FIELDS:
        try:
            v = get(e)
        except AttributeError:
            continue
        if v is not None and (not isinstance(v, int) or not -_I32 <= v < _I32):
            return ValueError(f"manifest entry of data file {name!r}: {field} = {v!r} is not "
                              f"a 32-bit int (Avro int)")
    for field, get, want in _FIELDS:
        try:
            v = get(e)
        except AttributeError:
            continue
        if not isinstance(v, want) or isinstance(v, int) and not -(1 << 63) <= v < 1 << 63:
            return ValueError(f"manifest entry of data file {name!r}: {field} = {v!r} cannot "
                              f"be written (expected {getattr(want, '__name__', 'int or None')}"
                              f" in Avro's range)")
    return ValueError(f"manifest entry of data file {name!r} cannot be written: "
                      f"{type(error).__name__}: {error}")


def _entry(e, out: bytearray) -> None:
    """One record, field by field in MANIFEST_ENTRY_SCHEMA's order; an optional field is the
    union ["null", T]: branch 0 (byte 0) for None, branch 1 (byte 2) and the value."""
    f = e.file
    src = f.file_source
    if not (-_I32 <= e.kind < _I32 and -_I32 <= e.bucket < _I32 and
            -_I32 <= e.total_buckets < _I32 and -_I32 <= f.level < _I32 and
            (src is None or -_I32 <= src < _I32)):
        raise _bad_entry(e, OverflowError("int field out of range"))
    out += b"\x04"                               # _VERSION 2
    out += _long(e.kind)
    raw = getattr(e, "_raw", None)
    if raw is not None:
        # The bytes this function wrote for every field after _KIND, as read by
        # decode_entries(keep_raw=True) from a record of exactly this form: a DELETE of a
        # read entry (a compaction's, per input file) is its ADD with another _KIND.
        out += raw
        return
    _bytes(e.partition, out)
    out += _long(e.bucket)
    out += _long(e.total_buckets)
    _string(f.file_name, out)
    out += _long(f.file_size)
    out += _long(f.row_count)
    _bytes(f.min_key, out)
    _bytes(f.max_key, out)
    _stats(f.key_stats, out)
    _stats(f.value_stats, out)
    out += _long(f.min_sequence_number)
    out += _long(f.max_sequence_number)
    out += _long(f.schema_id)
    out += _long(f.level)
    _strings(f.extra_files, out)
    ct = f.creation_time
    if ct is not None and not isinstance(ct, int):
        ct = _ms(ct)   # a datetime (fastavro's reading of the field): its millis
    _opt_long(ct, out)
    _opt_long(f.delete_row_count, out)
    _opt(f.embedded_file_index, _bytes, out)
    _opt_long(f.file_source, out)
    _opt(f.value_stats_cols, _strings, out)
    _opt(f.external_path, _string, out)
    _opt_long(f.first_row_id, out)
    _opt(f.write_cols, _strings, out)
    _opt(f.write_cols_sequences, _longs, out)


def _opt(v, write, out: bytearray) -> None:
    """The union ["null", T]: branch 0 (byte 0) for None, else branch 1 (byte 2) and v."""
    if v is None:
        out += b"\x00"
    else:
        out += b"\x02"
        write(v, out)


def _longs(v, out: bytearray) -> None:
    if v:
        out += _long(len(v))
        for x in v:
            out += _long(x)
    out += b"\x00"


def _zstd(block: bytes) -> bytes:
    c = getattr(_contexts, "c", None)
    if c is None:
        c = _contexts.c = _zstandard.ZstdCompressor()
    return c.compress(block)


def _deflate(block: bytes) -> bytes:
    z = zlib.compressobj(zlib.Z_DEFAULT_COMPRESSION, zlib.DEFLATED, -15)
    return z.compress(block) + z.flush()


_COMPRESSORS: Dict[str, Optional[Callable[[bytes], bytes]]] = {
    "null": lambda b: b, "deflate": _deflate,
    "zstandard": _zstd if _zstandard is not None else None}


#: _VERSION 2 and _KIND of a record written from its raw bytes, by kind (ADD, DELETE)
_HEADS = {0: b"\x04\x00", 1: b"\x04\x02"}


def encode_entries(entries: Sequence, codec: str, header: bytes) -> Optional[bytes]:
    """An Avro container file of `entries` (ManifestEntry) in MANIFEST_ENTRY_SCHEMA, or None
    when `codec` (fastavro's name) is one to leave to fastavro. `header`: the file's header
    up to its sync marker (magic, schema and codec; the caller takes it from fastavro, so
    that the schema text is the one fastavro writes); the marker is new per file."""
    compress = _COMPRESSORS.get(codec)
    if compress is None:
        return None
    sync = os.urandom(16)
    out: List[bytes] = [header, sync]
    block = bytearray()
    count = 0
    heads = _HEADS
    for e in entries:
        raw = getattr(e, "_raw", None)
        if raw is not None:
            head = heads.get(e.kind)
            if head is not None:
                # A decoded record's bytes (see _entry), checked when read to be exactly
                # what _entry writes, its ints in range: no call for a compaction's DELETEs
                block += head
                block += raw
                count += 1
                if len(block) >= BLOCK_BYTES:
                    _block(out, block, count, compress, sync)
                    block, count = bytearray(), 0
                continue
        mark = len(block)
        try:
            _entry(e, block)
        except ValueError:
            raise
        except (TypeError, OverflowError, AttributeError) as error:
            del block[mark:]
            raise _bad_entry(e, error) from None
        count += 1
        if len(block) >= BLOCK_BYTES:
            _block(out, block, count, compress, sync)
            block, count = bytearray(), 0
    if count:
        _block(out, block, count, compress, sync)
    return b"".join(out)


def _block(out: List[bytes], block: bytearray, count: int,
           compress: Callable[[bytes], bytes], sync: bytes) -> None:
    data = compress(bytes(block))
    out.append(_long(count))
    out.append(_long(len(data)))
    out.append(data)
    out.append(sync)


# --- reading ------------------------------------------------------------------------------
# One varint reader for every decoder in format/ (varint.py): an overlong long is refused
# the same way here and in the FileRef reader, so the two never read different numbers.
_rlong = read_long


class _NotCanonical(Exception):
    """Bytes that read exactly but are not what `_entry` writes for the values they hold (an
    array in several blocks or with a byte size; a varint longer than needed raises
    varint.NotShortest): such a record's bytes are not kept as its raw record (see
    decode_entries)."""


def _decoder(rlong, exact: bool):
    """The loop of decode_entries with varint reader `rlong`. `exact`: keep each record's
    bytes after _KIND as the entry's _raw, and raise _NotCanonical for bytes that `_entry`
    would not write byte for byte for the values read, or would refuse to write (an Avro
    int field beyond 32 bits).

    Written out field by field, with the one-byte varint (nearly every int of an entry)
    read inline: function calls were most of the decoding time (a plan decodes an entry
    per live file). Objects that repeat are shared (within a block): a partition is one
    bytes object for all its entries (hashed once, in the maps that group and check
    entries), equal null counts and stats columns one tuple, and an empty key or key stats
    (every append table's) is EMPTY_ROW / EMPTY_STATS. That more than pays for the
    dictionaries the fast constructors give each object (entry._builder): an append
    table's entry takes a fifth less memory than before."""
    empty_row, empty_stats = EMPTY_ROW, EMPTY_STATS
    stats_of, meta_of, entry_of = new_stats, new_file_meta, new_entry

    def rbytes(b: bytes, pos: int):
        c = b[pos]
        if c < 128:
            n = (c >> 1) ^ -(c & 1)
            pos += 1
        else:
            n, pos = rlong(b, pos)
        end = pos + n
        if n < 0 or end > len(b):
            raise Malformed("bytes beyond the block")
        return b[pos:end], end

    def rstring(b: bytes, pos: int):
        v, pos = rbytes(b, pos)
        return str(v, "utf-8"), pos

    def rarray(b: bytes, pos: int, item):
        out: list = []
        while True:
            n, pos = rlong(b, pos)
            if n == 0:
                return out, pos
            if n < 0:                # a block with its byte size: the size is not needed
                if exact:
                    raise _NotCanonical
                n = -n
                _, pos = rlong(b, pos)
            elif exact and out:      # a second block
                raise _NotCanonical
            for _ in range(n):
                v, pos = item(b, pos)
                out.append(v)

    def ropt_long(b: bytes, pos: int):
        """The union ["null", long]: branch 0 (byte 0) null, branch 1 (byte 2) a long."""
        c = b[pos]
        if c == 0:
            return None, pos + 1
        if c != 2:
            raise Malformed(f"union index byte {c}")
        c = b[pos + 1]
        if c < 128:
            return (c >> 1) ^ -(c & 1), pos + 2
        return rlong(b, pos + 1)

    def ropt_array(b: bytes, pos: int, item):
        """The union ["null", array]: (None or a tuple, pos)."""
        c = b[pos]
        if c == 0:
            return None, pos + 1
        if c != 2:
            raise Malformed(f"union index byte {c}")
        if b[pos + 1] == 0:
            return (), pos + 2
        v, pos = rarray(b, pos + 1, item)
        return tuple(v), pos

    def rstats(b: bytes, pos: int, shared: Dict):
        # rbytes twice, inline (the lengths of stats rows fit a byte but in wide tables)
        c = b[pos]
        if c < 128:
            n = (c >> 1) ^ -(c & 1)
            pos += 1
        else:
            n, pos = rlong(b, pos)
        end = pos + n
        if n < 0 or end > len(b):
            raise Malformed("bytes beyond the block")
        lo = b[pos:end]
        c = b[end]
        if c < 128:
            n = (c >> 1) ^ -(c & 1)
            pos = end + 1
        else:
            n, pos = rlong(b, end)
        end = pos + n
        if n < 0 or end > len(b):
            raise Malformed("bytes beyond the block")
        hi = b[pos:end]
        if b[end] == 2 and b[end + 1] == 0:     # null counts [] (no value columns)
            nc: Optional[tuple] = ()
            pos = end + 2
        else:
            nc, pos = ropt_array(b, end, ropt_long)
            if nc is not None:
                nc = shared.setdefault(nc, nc)
        if nc == () and lo == empty_row and hi == empty_row:
            return empty_stats, pos
        return stats_of(lo, hi, nc), pos

    def decode(b: bytes, count: int) -> List:
        pos = 0
        out: List = []
        append = out.append
        # values that repeat from entry to entry, one object each: partitions, null counts,
        # stats columns (bytes and tuples of ints or str: equal only to their own kind)
        parts: Dict[Any, Any] = {}
        for _ in range(count):
            if b[pos] != 4:
                raise Malformed(f"_VERSION byte {b[pos]}")   # 2, zigzag-encoded
            c = b[pos + 1]
            if c < 128:
                kind = (c >> 1) ^ -(c & 1)
                pos += 2
            else:
                kind, pos = rlong(b, pos + 1)
            start = pos
            partition, pos = rbytes(b, pos)
            partition = parts.setdefault(partition, partition)
            c = b[pos]
            if c < 128:
                bucket = (c >> 1) ^ -(c & 1)
                pos += 1
            else:
                bucket, pos = rlong(b, pos)
                if exact and not -_I32 <= bucket < _I32:
                    raise _NotCanonical   # an Avro int _entry refuses (by name)
            c = b[pos]
            if c < 128:
                total_buckets = (c >> 1) ^ -(c & 1)
                pos += 1
            else:
                total_buckets, pos = rlong(b, pos)
                if exact and not -_I32 <= total_buckets < _I32:
                    raise _NotCanonical   # an Avro int _entry refuses (by name)
            file_name, pos = rstring(b, pos)
            file_size, pos = rlong(b, pos)
            c = b[pos]
            if c < 128:
                row_count = (c >> 1) ^ -(c & 1)
                pos += 1
            else:
                row_count, pos = rlong(b, pos)
            min_key, pos = rbytes(b, pos)
            if min_key == empty_row:
                min_key = empty_row
            max_key, pos = rbytes(b, pos)
            if max_key == empty_row:
                max_key = empty_row
            key_stats, pos = rstats(b, pos, parts)
            value_stats, pos = rstats(b, pos, parts)
            c = b[pos]
            if c < 128:
                min_seq = (c >> 1) ^ -(c & 1)
                pos += 1
            else:
                min_seq, pos = rlong(b, pos)
            c = b[pos]
            if c < 128:
                max_seq = (c >> 1) ^ -(c & 1)
                pos += 1
            else:
                max_seq, pos = rlong(b, pos)
            c = b[pos]
            if c < 128:
                schema_id = (c >> 1) ^ -(c & 1)
                pos += 1
            else:
                schema_id, pos = rlong(b, pos)
            c = b[pos]
            if c < 128:
                level = (c >> 1) ^ -(c & 1)
                pos += 1
            else:
                level, pos = rlong(b, pos)
                if exact and not -_I32 <= level < _I32:
                    raise _NotCanonical   # an Avro int _entry refuses (by name)
            if b[pos] == 0:
                extra: tuple = ()
                pos += 1
            else:
                v, pos = rarray(b, pos, rstring)
                extra = tuple(v)
            creation_time, pos = ropt_long(b, pos)
            # optional fields: inline for null and a one-byte value (their usual ones)
            c = b[pos]
            if c == 0:
                delete_rows = None
                pos += 1
            elif c == 2 and b[pos + 1] < 128:
                c = b[pos + 1]
                delete_rows = (c >> 1) ^ -(c & 1)
                pos += 2
            else:
                delete_rows, pos = ropt_long(b, pos)
            c = b[pos]
            if c == 0:
                index = None
                pos += 1
            elif c == 2:
                index, pos = rbytes(b, pos + 1)
            else:
                raise Malformed(f"union index byte {c}")
            c = b[pos]
            if c == 0:
                source = None
                pos += 1
            elif c == 2 and b[pos + 1] < 128:
                c = b[pos + 1]
                source = (c >> 1) ^ -(c & 1)
                pos += 2
            else:
                source, pos = ropt_long(b, pos)
                if exact and source is not None and not -_I32 <= source < _I32:
                    raise _NotCanonical
            if b[pos] == 0:
                stats_cols = None
                pos += 1
            else:
                stats_cols, pos = ropt_array(b, pos, rstring)
                if stats_cols is not None:
                    stats_cols = parts.setdefault(stats_cols, stats_cols)
            c = b[pos]
            if c == 0:
                external = None
                pos += 1
            elif c == 2:
                external, pos = rstring(b, pos + 1)
            else:
                raise Malformed(f"union index byte {c}")
            c = b[pos]
            if c == 0:
                first_row_id = None
                pos += 1
            elif c == 2 and b[pos + 1] < 128:
                c = b[pos + 1]
                first_row_id = (c >> 1) ^ -(c & 1)
                pos += 2
            else:
                first_row_id, pos = ropt_long(b, pos)
            if b[pos] == 0:
                write_cols = None
                pos += 1
            else:
                write_cols, pos = ropt_array(b, pos, rstring)
            if b[pos] == 0:
                write_seqs = None
                pos += 1
            else:
                write_seqs, pos = ropt_array(b, pos, rlong)
            append(entry_of(kind, partition, bucket, total_buckets, meta_of(
                file_name, file_size, row_count, schema_id, min_key, max_key, key_stats,
                value_stats, min_seq, max_seq, level, extra, creation_time, delete_rows,
                index, source, stats_cols, external, first_row_id, write_cols, write_seqs),
                b[start:pos] if exact else None))
        if pos != len(b):
            raise Malformed("block not consumed exactly")
        return out

    return decode


_decode_plain = _decoder(_rlong, False)
_decode_exact = _decoder(read_shortest_long, True)


def decode_entries(block: bytes, count: int, keep_raw: bool = False) -> List:
    """The `count` ManifestEntry records of one decompressed block written with
    MANIFEST_ENTRY_SCHEMA (the caller checks the writer schema). Raises Malformed (or
    IndexError, UnicodeDecodeError) on anything it cannot read exactly; _VERSION is checked
    here (any other value raises Malformed: the caller reads the file with fastavro, which
    says what is wrong, see manifest.decode_manifest).

    `keep_raw`: each entry keeps its record's bytes after _KIND (ManifestEntry._raw), so that
    writing it again, as a DELETE above all, copies them (`_entry`). Only for a block whose
    every record is exactly what `_entry` writes for its values; any other block is decoded
    without them (the encoder then writes its entries field by field). Opt-in: the bytes
    are a fifth more memory per entry, for readers that will write the entries again."""
    if keep_raw:
        try:
            return _decode_exact(block, count)
        except (_NotCanonical, NotShortest):
            pass
    return _decode_plain(block, count)
