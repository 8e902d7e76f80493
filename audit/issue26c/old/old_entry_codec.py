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
from typing import Callable, Dict, List, Optional, Sequence

from paimon_commit.format.entry import DataFileMeta, ManifestEntry, SimpleStats, _ms
from paimon_commit.format.varint import Malformed, read_long

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
    for e in entries:
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


def _rbytes(b: bytes, pos: int):
    n, pos = _rlong(b, pos)
    end = pos + n
    if n < 0 or end > len(b):
        raise Malformed("bytes beyond the block")
    return b[pos:end], end


def _rstring(b: bytes, pos: int):
    v, pos = _rbytes(b, pos)
    return str(v, "utf-8"), pos


def _rarray(b: bytes, pos: int, item):
    out = []
    while True:
        n, pos = _rlong(b, pos)
        if n == 0:
            return out, pos
        if n < 0:                    # a block with its byte size: the size is not needed
            n = -n
            _, pos = _rlong(b, pos)
        for _ in range(n):
            v, pos = item(b, pos)
            out.append(v)


def _branch(b: bytes, pos: int) -> bool:
    """The union ["null", T]: False for null, True for T."""
    c = b[pos]
    if c == 0:
        return False
    if c == 2:
        return True
    raise Malformed(f"union index byte {c}")


def _ropt(b: bytes, pos: int, read):
    """The union ["null", T]: (None, pos) or read's (value, pos)."""
    if not _branch(b, pos):
        return None, pos + 1
    return read(b, pos + 1)


def _rstrings(b: bytes, pos: int):
    v, pos = _rarray(b, pos, _rstring)
    return tuple(v), pos


def _rlongs(b: bytes, pos: int):
    v, pos = _rarray(b, pos, _rlong)
    return tuple(v), pos


def _ropt_long(b: bytes, pos: int):
    if not _branch(b, pos):
        return None, pos + 1
    return _rlong(b, pos + 1)


def _rstats(b: bytes, pos: int, stats):
    lo, pos = _rbytes(b, pos)
    hi, pos = _rbytes(b, pos)
    if _branch(b, pos):
        nc, pos = _rarray(b, pos + 1, _ropt_long)
        return stats(lo, hi, tuple(nc)), pos
    return stats(lo, hi, None), pos + 1


def decode_entries(block: bytes, count: int) -> List:
    """The `count` ManifestEntry records of one decompressed block written with
    MANIFEST_ENTRY_SCHEMA (the caller checks the writer schema). Raises Malformed (or
    IndexError, UnicodeDecodeError) on anything it cannot read exactly; _VERSION is returned
    in each entry's place check by the caller (see manifest.decode_manifest)."""
    b = block
    pos = 0
    out = []
    rlong, rbytes, rstring = _rlong, _rbytes, _rstring
    for _ in range(count):
        if b[pos] != 4:
            raise Malformed(f"_VERSION byte {b[pos]}")   # 2, zigzag-encoded
        kind, pos = rlong(b, pos + 1)
        partition, pos = rbytes(b, pos)
        bucket, pos = rlong(b, pos)
        total_buckets, pos = rlong(b, pos)
        file_name, pos = rstring(b, pos)
        file_size, pos = rlong(b, pos)
        row_count, pos = rlong(b, pos)
        min_key, pos = rbytes(b, pos)
        max_key, pos = rbytes(b, pos)
        key_stats, pos = _rstats(b, pos, SimpleStats)
        value_stats, pos = _rstats(b, pos, SimpleStats)
        min_seq, pos = rlong(b, pos)
        max_seq, pos = rlong(b, pos)
        schema_id, pos = rlong(b, pos)
        level, pos = rlong(b, pos)
        extra, pos = _rarray(b, pos, rstring)
        creation_time, pos = _ropt_long(b, pos)
        delete_rows, pos = _ropt_long(b, pos)
        index, pos = _ropt(b, pos, rbytes)
        source, pos = _ropt_long(b, pos)
        stats_cols, pos = _ropt(b, pos, _rstrings)
        external, pos = _ropt(b, pos, rstring)
        first_row_id, pos = _ropt_long(b, pos)
        write_cols, pos = _ropt(b, pos, _rstrings)
        write_seqs, pos = _ropt(b, pos, _rlongs)
        out.append(ManifestEntry(kind, partition, bucket, total_buckets, DataFileMeta(
            file_name, file_size, row_count, schema_id, min_key, max_key, key_stats,
            value_stats, min_seq, max_seq, level, tuple(extra), creation_time, delete_rows,
            index, source, stats_cols, external, first_row_id, write_cols, write_seqs)))
    if pos != len(b):
        raise Malformed("block not consumed exactly")
    return out
