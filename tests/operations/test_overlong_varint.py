"""An overlong varint (10 bytes with bits above bit 63) in a manifest: every hand-written
decoder of format/ refuses it through the one reader (format/varint.py) and the file is read
by fastavro, which reads the low 64 bits as pypaimon and Paimon Java do. The FileRef reader
used to keep the high bits: a _KIND of ADD read as 2**63 (not ADD, so a DELETE) and
expiration deleted the live file."""
import io
import os
import time

import fastavro
import pytest

from conftest import SCHEMA, files_under, make_rows, write
from invariants import assert_intact

from paimon_commit import Table
from paimon_commit.format.avro_container import raw_blocks
from paimon_commit.format.entry_codec import _entry, _long
from paimon_commit.format.file_refs import compile_reader
from paimon_commit.format.manifest import (_PARSED_ENTRY, MANIFEST_VERSION, FileKind, FileRef,
                                           _check_version, _decode, _file_refs,
                                           decode_manifest, decode_manifest_files)
from paimon_commit.format.varint import Malformed, read_long, skip_long
from paimon_commit.operations.expire import ExpireConfig, ExpireSnapshots

# 0 in the low 64 bits, bit 64 set: fastavro and Avro Java read 0 (ADD).
OVERLONG_ZERO = bytes([0x80] * 9 + [0x02])


def _container(block: bytes, count: int = 1) -> bytes:
    """An Avro container of one null-codec block, framed as fastavro frames it."""
    buf = io.BytesIO()
    fastavro.writer(buf, _PARSED_ENTRY, [], codec="null")
    header, sync = buf.getvalue()[:-16], buf.getvalue()[-16:]
    return header + sync + _long(count) + _long(len(block)) + block + sync


def _with_overlong_kind(entry) -> bytes:
    block = bytearray()
    _entry(entry, block)
    assert block[:2] == b"\x04\x00"          # _VERSION 2, _KIND 0 (ADD)
    return _container(b"\x04" + OVERLONG_ZERO + bytes(block[2:]))


def test_an_overlong_add_kind_does_not_make_expiration_delete_the_live_file(table_path):
    t = Table.create(str(table_path), SCHEMA, partition_keys=["dt", "hr"])
    write(t, make_rows([0], hr=3))
    before = set(files_under(table_path))
    write(t, make_rows([1]))
    live = [f for f in files_under(table_path) if f.endswith(".parquet") and f not in before]
    assert len(live) == 1
    write(t, make_rows([2], hr=2))
    # The manifest of snapshot 2 (the ADD of `live`), its _KIND rewritten as 10 bytes.
    patched = []
    mdir = table_path / "manifest"
    for name in sorted(os.listdir(mdir)):
        if not name.startswith("manifest-") or name.startswith("manifest-list-"):
            continue
        path = str(mdir / name)
        entries = decode_manifest((mdir / name).read_bytes(), path)
        if [e.file.file_name for e in entries] == [os.path.basename(live[0])]:
            data = _with_overlong_kind(entries[0])
            (mdir / name).write_bytes(data)
            patched.append(path)
    assert len(patched) == 1
    data = open(patched[0], "rb").read()
    oracle = _file_refs(_decode(data, patched[0]), patched[0])
    assert [r.kind for r in oracle] == [FileKind.ADD]
    assert decode_manifest_files(data, patched[0]) == oracle
    # A fresh table: the writer's cache holds the entries it wrote, not the file's bytes.
    t = Table.open(str(table_path))
    r = ExpireSnapshots(t.store, ExpireConfig(time_retained_ms=0, max_deletes=1000,
                                              retain_min=1),
                        clock=lambda: time.time() + 10 * 365 * 86400).expire()
    assert r.expired_ids == [1, 2]
    assert "data" not in r.by_kind
    assert (table_path / live[0]).exists()
    assert_intact(table_path, {3: [0, 1, 2]})


@pytest.mark.parametrize("raw,expected", [
    (bytes([0x80] * 9 + [0x01]), 2 ** 62),                           # bit 63 only: fine
    (bytes([0xFE] + [0xFF] * 8 + [0x01]), (1 << 63) - 1),             # the largest long
    (bytes([0xFF] * 9 + [0x01]), -(1 << 63)),                         # the smallest
])
def test_ten_byte_longs_within_64_bits_read_as_fastavro_reads_them(raw, expected):
    assert read_long(raw, 0) == (fastavro.schemaless_reader(io.BytesIO(raw), "long"), 10)
    assert read_long(raw, 0) == (expected, 10)
    assert skip_long(raw + b"\x00", 0) == 10


@pytest.mark.parametrize("raw,message", [
    (OVERLONG_ZERO, "varint beyond 64 bits"),
    (bytes([0x80] * 9 + [0x7F]), "varint beyond 64 bits"),
    (bytes([0x80] * 10 + [0x00]), "varint longer than 10 bytes"),
])
def test_overlong_longs_are_refused(raw, message):
    with pytest.raises(Malformed, match=f"^{message}$"):
        read_long(raw, 0)
    with pytest.raises(Malformed, match=f"^{message}$"):
        skip_long(raw, 0)


@pytest.mark.parametrize("field", ["_BUCKET", "_TOTAL_BUCKETS"])
def test_an_overlong_long_anywhere_sends_the_file_to_fastavro(field):
    # _BUCKET is kept by the FileRef reader, _TOTAL_BUCKETS skipped: both are refused by
    # the compiled reader (read_long / skip_long) and the answer is fastavro's.
    from paimon_commit.format.manifest import DataFileMeta, ManifestEntry
    e = ManifestEntry(FileKind.ADD, b"", 0, 0, DataFileMeta("data-x.parquet", 5, 1, 0))
    block = bytearray()
    _entry(e, block)
    # _VERSION, _KIND, _PARTITION (empty: one byte), then _BUCKET and _TOTAL_BUCKETS
    at = 3 if field == "_BUCKET" else 4
    assert block[at] == 0
    data = _container(bytes(block[:at]) + OVERLONG_ZERO + bytes(block[at + 1:]))
    schema_text, blocks = raw_blocks(data)
    read = compile_reader(schema_text)
    assert read is not None
    with pytest.raises(Malformed, match="^varint beyond 64 bits$"):
        read(blocks[0][1], 1, FileRef, _check_version, MANIFEST_VERSION)
    oracle = _file_refs(_decode(data, "m"), "m")
    assert decode_manifest_files(data, "m") == oracle == [FileRef.of(e)]

