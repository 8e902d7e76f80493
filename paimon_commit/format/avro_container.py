"""Reading Avro object container files (manifests, manifest lists) with a cached schema.

fastavro.reader parses the writer schema in every file's header; Paimon's manifests are
small and share one schema, so that parse costs more than decoding their records. Here the
container framing (header, blocks, sync markers) is read directly, the parsed schema is
cached by its JSON text, and fastavro decodes the records. Any codec other than null,
deflate and zstandard goes through fastavro.reader, and so does anything that does not
look like a well-formed container, so that errors read the same as before.
"""
from __future__ import annotations

import io
import json
import threading
import zlib
from typing import Any, Dict, Iterator, List, Optional, Tuple

import fastavro

from .varint import Malformed, read_long

__all__ = ["read_records", "iter_records", "raw_blocks", "schema_and_blocks", "out_of_memory"]

_MAGIC = b"Obj\x01"
_SCHEMA_CACHE_SIZE = 64
_schemas: Dict[bytes, Any] = {}

try:  # the module fastavro itself uses for the zstandard codec
    from compression import zstd as _zstd  # type: ignore[import-not-found]
except ImportError:  # pragma: no cover - depends on the Python version
    try:
        from backports import zstd as _zstd  # type: ignore[no-redef]
    except ImportError:
        _zstd = None


try:  # reusable decompression contexts: ~5x less per small block than a new one per call
    import zstandard as _zstandard  # type: ignore[import-not-found]
except ImportError:  # pragma: no cover - declared in setup.cfg (install_requires)
    _zstandard = None
_contexts = threading.local()   # a zstandard context serves one thread at a time


class _Malformed(Exception):
    pass


def _long(b: bytes, pos: int) -> Tuple[int, int]:
    # The one varint reader of format/ (varint.py): a block count or size in overlong bytes
    # is refused like any other overlong long, and fastavro reads the file.
    try:
        return read_long(b, pos)
    except (IndexError, Malformed):
        raise _Malformed() from None


def _bytes(b: bytes, pos: int) -> Tuple[bytes, int]:
    n, pos = _long(b, pos)
    if n < 0 or pos + n > len(b):
        raise _Malformed()
    return b[pos:pos + n], pos + n


# Headers seen (everything before the sync marker, and its metadata): a table's manifests
# share one header but for the marker, and comparing bytes costs less than parsing them.
_KNOWN_HEADERS = 8
_headers: List[Tuple[bytes, Dict[str, bytes]]] = []


def _header(b: bytes) -> Tuple[Dict[str, bytes], bytes, int]:
    for prefix, meta in _headers:
        if b.startswith(prefix):
            pos = len(prefix)
            if pos + 16 > len(b):
                raise _Malformed()
            return meta, b[pos:pos + 16], pos + 16
    meta, sync, pos = _parse_header(b)
    if len(_headers) < _KNOWN_HEADERS:
        _headers.append((b[:pos - 16], meta))
    return meta, sync, pos


def _parse_header(b: bytes) -> Tuple[Dict[str, bytes], bytes, int]:
    if b[:4] != _MAGIC:
        raise _Malformed()
    pos, meta = 4, {}
    while True:
        count, pos = _long(b, pos)
        if count == 0:
            break
        if count < 0:  # a negative count is followed by the block's size in bytes
            count = -count
            _, pos = _long(b, pos)
        for _ in range(count):
            key, pos = _bytes(b, pos)
            meta[key.decode("utf-8")], pos = _bytes(b, pos)
    if pos + 16 > len(b):
        raise _Malformed()
    return meta, b[pos:pos + 16], pos + 16


def _parsed_schema(text: bytes) -> Any:
    parsed = _schemas.get(text)
    if parsed is None:
        parsed = fastavro.parse_schema(json.loads(text))
        if len(_schemas) >= _SCHEMA_CACHE_SIZE:
            _schemas.clear()
        _schemas[text] = parsed
    return parsed


def _decompress(codec: bytes, block: bytes) -> Optional[bytes]:
    if codec == b"null":
        return block
    if codec == b"deflate":
        return zlib.decompress(block, -15)
    if codec == b"zstandard" and _zstd is not None:
        return _zstd_decompress(block)
    return None


def _zstd_decompress(block: bytes) -> bytes:
    """One block: through this thread's zstandard context when the block is exactly one
    frame (with its size in the header, as Python writers write it, or without, as Paimon
    Java's does), else the standard module (more frames, and the errors of a damaged
    block)."""
    if _zstandard is not None:
        dctx = getattr(_contexts, "dctx", None)
        if dctx is None:
            dctx = _contexts.dctx = _zstandard.ZstdDecompressor()
        try:
            return dctx.decompress(block, allow_extra_data=False)
        except Exception:  # noqa: BLE001 - the standard module decides, or says why not
            pass
        try:   # one frame without its size (Paimon Java's writer): streamed, same context
            obj = dctx.decompressobj()
            out = obj.decompress(block)
            if obj.eof and not obj.unused_data:
                return out
        except Exception:  # noqa: BLE001 - as above
            pass
    return _zstd.decompress(block)


def _fast(data: bytes) -> Optional[List[Dict[str, Any]]]:
    blocks = _blocks(data)
    if blocks is None:
        return None
    out: List[Dict[str, Any]] = []
    for block in blocks:
        out.extend(block)
    return out


def _blocks(data: bytes) -> Optional[Iterator[Iterator[Dict[str, Any]]]]:
    """Per block, an iterator over its records; None for a codec read only by fastavro."""
    found = _decoded_blocks(data)
    if found is None:
        return None
    schema = _parsed_schema(found[0])
    return (_records(block, count, schema) for count, block in found[1])


def _decoded_blocks(data: bytes) -> Optional[Tuple[bytes, Iterator[Tuple[int, bytes]]]]:
    """(writer schema JSON, the (record count, decompressed block) of each block, lazily);
    None for a codec only fastavro reads. Raises _Malformed on a malformed container."""
    meta, sync, pos = _header(data)
    codec = meta.get("avro.codec", b"null")
    if codec not in (b"null", b"deflate", b"zstandard") or "avro.schema" not in meta:
        return None
    if codec == b"zstandard" and _zstd is None:
        return None
    return meta["avro.schema"], _each_block(data, sync, pos, codec)


def _each_block(data: bytes, sync: bytes, pos: int, codec: bytes
                ) -> Iterator[Tuple[int, bytes]]:
    end = len(data)
    while pos < end:
        count, pos = _long(data, pos)
        size, pos = _long(data, pos)
        if count < 0 or size < 0 or pos + size + 16 > end:
            raise _Malformed()
        block = _decompress(codec, data[pos:pos + size])
        pos += size
        if data[pos:pos + 16] != sync:
            raise _Malformed()
        pos += 16
        yield count, block


def _records(block: bytes, count: int, schema: Any) -> Iterator[Dict[str, Any]]:
    f = io.BytesIO(block)
    for _ in range(count):
        yield fastavro.schemaless_reader(f, schema, None)
    if f.tell() != len(block):
        raise _Malformed()


def out_of_memory(error: BaseException) -> Optional[MemoryError]:
    """The MemoryError a decoding error stands for, if it is a failed allocation and not a
    damaged file (then None). A failed allocation reported as an unreadable manifest would
    make expiration keep everything the manifest names and delete the snapshot anyway (its
    files left to orphan cleanup), and hide why; zstandard reports one as a ZstdError."""
    if isinstance(error, MemoryError):
        return error
    text = str(error).lower()
    if type(error).__name__ == "ZstdError" and ("unable to create" in text or
                                                "memory" in text):
        return MemoryError(f"zstd: {error}")
    return None


def read_records(data: bytes) -> List[Dict[str, Any]]:
    """Every record of an Avro container file. Raises whatever fastavro raises on a file it
    cannot read."""
    try:
        records = _fast(data)
    except Exception:  # noqa: BLE001 - let fastavro produce the error for a damaged file
        records = None
    if records is None:
        records = list(fastavro.reader(io.BytesIO(data)))
    return records


def iter_records(data: bytes) -> Iterator[Dict[str, Any]]:
    """The records of an Avro container file one at a time, so that a caller that keeps a
    few fields of each never holds every decoded record of a large manifest. A damaged file
    raises part-way (callers read it again with read_records for fastavro's error)."""
    blocks = _blocks(data)
    if blocks is None:
        yield from fastavro.reader(io.BytesIO(data))
        return
    for block in blocks:
        yield from block


def schema_and_blocks(data: bytes) -> Optional[Tuple[bytes, Iterator[Tuple[int, bytes]]]]:
    """(writer schema JSON, the (record count, decompressed block) of each block, lazily),
    for decoders of their own: a caller that does not decode this schema returns before any
    block is decompressed (and fastavro then decompresses them once). None when the codec is
    one only fastavro reads. Raises on a malformed container, the iterator on a malformed
    block."""
    return _decoded_blocks(data)


def raw_blocks(data: bytes) -> Optional[Tuple[bytes, List[Tuple[int, bytes]]]]:
    """schema_and_blocks with the blocks decompressed into a list."""
    found = _decoded_blocks(data)
    if found is None:
        return None
    return found[0], list(found[1])
