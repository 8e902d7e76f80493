"""The manifest entry codec (format/entry_codec.py) against fastavro, the independent oracle:
the files it writes decode in fastavro to the same records, their blocks hold byte for byte
what fastavro encodes, and what it decodes equals what fastavro's records give; anything
else (another schema, a damaged block) is read by fastavro as before."""
import io
import os
import random

import fastavro
import pyarrow as pa
import pytest

from paimon_commit.errors import CorruptMetadataError
from paimon_commit.format.avro_container import raw_blocks
from paimon_commit.format.entry_codec import Malformed, decode_entries
from paimon_commit.format.entry_codec import _long as encode_long
from paimon_commit.format.manifest import (
    _PARSED_ENTRY, DataFileMeta, FileKind, ManifestEntry, SimpleStats, _own_entries,
    decode_manifest, encode_manifest)
from tests.oracle import pp_create, pp_write


def _opt(rng, value):
    return None if rng.random() < 0.3 else value


def _text(rng, n):
    return "".join(rng.choice("abcé/-_日0") for _ in range(n))


def _long(rng):
    return rng.choice([0, 1, -1, 63, -64, 64, -65, 127, 128, 2 ** 31, -(2 ** 31),
                       2 ** 63 - 1, -(2 ** 63), rng.randrange(-(2 ** 40), 2 ** 40)])


def _stats(rng):
    nc = _opt(rng, tuple(_opt(rng, _long(rng)) for _ in range(rng.choice([0, 1, 3, 70]))))
    return SimpleStats(os.urandom(rng.choice([0, 8, 63, 64, 300])),
                       os.urandom(rng.choice([0, 8, 200])), nc)


def random_entries(n, seed):
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        f = DataFileMeta(
            file_name=_text(rng, rng.choice([1, 40, 63, 64, 200])), file_size=_long(rng),
            row_count=_long(rng), schema_id=_long(rng),
            min_key=os.urandom(rng.choice([0, 5])), max_key=os.urandom(rng.choice([0, 70])),
            key_stats=_stats(rng), value_stats=_stats(rng),
            min_sequence_number=_long(rng), max_sequence_number=_long(rng),
            level=rng.randrange(-3, 100),
            extra_files=tuple(_text(rng, 9) for _ in range(rng.choice([0, 1, 65]))),
            creation_time=_opt(rng, rng.randrange(-(2 ** 40), 2 ** 42)), delete_row_count=_opt(rng, _long(rng)),
            embedded_file_index=_opt(rng, os.urandom(rng.choice([0, 100]))),
            file_source=_opt(rng, rng.choice([0, 1, 2 ** 30])),
            value_stats_cols=_opt(rng, tuple(_text(rng, 3) for _ in range(rng.choice([0, 4])))),
            external_path=_opt(rng, "s3://b/" + _text(rng, 80)),
            first_row_id=_opt(rng, _long(rng)),
            write_cols=_opt(rng, tuple(_text(rng, 2) for _ in range(rng.choice([0, 2])))),
            write_cols_sequences=_opt(rng, tuple(_long(rng) for _ in range(rng.choice([0, 3])))))
        out.append(ManifestEntry(rng.choice([FileKind.ADD, FileKind.DELETE]),
                                 os.urandom(rng.choice([0, 16, 100])), rng.randrange(-2, 9),
                                 rng.randrange(-1, 9), f))
    return out


def fastavro_file(entries, codec):
    buf = io.BytesIO()
    fastavro.writer(buf, _PARSED_ENTRY, [e.to_record() for e in entries], codec=codec)
    return buf.getvalue()


def payload(data):
    schema, blocks = raw_blocks(data)
    return schema, b"".join(b for _, b in blocks), sum(c for c, _ in blocks)


@pytest.mark.parametrize("codec", ["null", "deflate", "zstandard"])
@pytest.mark.parametrize("n,seed", [(0, 0), (1, 1), (40, 2), (900, 3)])
def test_written_files_are_what_fastavro_writes(codec, n, seed):
    entries = random_entries(n, seed)
    ours = encode_manifest(entries, codec)
    theirs = fastavro_file(entries, codec)
    # fastavro reads our file back to the same entries ...
    assert [ManifestEntry.from_record(r) for r in fastavro.reader(io.BytesIO(ours))] == entries
    # ... and its blocks hold exactly fastavro's encoding, under fastavro's header text
    assert payload(ours) == payload(theirs)
    assert fastavro.reader(io.BytesIO(ours)).codec == codec


@pytest.mark.parametrize("codec", ["null", "deflate", "zstandard"])
@pytest.mark.parametrize("n,seed", [(1, 4), (900, 5)])
def test_decoded_entries_are_what_fastavro_reads(codec, n, seed):
    entries = random_entries(n, seed)
    data = fastavro_file(entries, codec)
    fast = _own_entries(data)
    assert fast is not None            # the codec decoded it, not the fallback
    oracle = [ManifestEntry.from_record(r) for r in fastavro.reader(io.BytesIO(data))]
    assert fast == oracle == entries
    assert decode_manifest(data, "m") == oracle


def test_other_codecs_go_through_fastavro():
    entries = random_entries(30, 6)
    data = encode_manifest(entries, "bzip2")
    assert fastavro.reader(io.BytesIO(data)).codec == "bzip2"
    assert decode_manifest(data, "m") == entries


def test_pypaimon_written_manifests_decode_as_fastavro_reads_them(tmp_path):
    path = tmp_path / "wh" / "db.db" / "t"
    schema = pa.schema([("id", pa.int64()), ("p", pa.string())])
    pp_create(path, schema, partition_keys=["p"])
    for i in range(3):
        pp_write(path, pa.table({"id": [i, i + 10], "p": ["a", f"b{i}"]}, schema=schema))
    names = [n for n in os.listdir(path / "manifest")
             if n.startswith("manifest-") and not n.startswith("manifest-list-")]
    assert names
    for n in names:
        data = (path / "manifest" / n).read_bytes()
        oracle = [ManifestEntry.from_record(r) for r in fastavro.reader(io.BytesIO(data))]
        assert decode_manifest(data, n) == oracle


def test_another_schema_is_left_to_fastavro():
    # A writer schema that differs from ours (here: one optional field less) is never
    # read with our field order.
    import copy
    from paimon_commit.format.manifest import MANIFEST_ENTRY_SCHEMA
    other = copy.deepcopy(MANIFEST_ENTRY_SCHEMA)
    other["fields"][5]["type"]["fields"] = [
        f for f in other["fields"][5]["type"]["fields"] if f["name"] != "_FIRST_ROW_ID"]
    entries = random_entries(20, 7)
    records = [e.to_record() for e in entries]
    for r in records:
        del r["_FILE"]["_FIRST_ROW_ID"]
    buf = io.BytesIO()
    fastavro.writer(buf, fastavro.parse_schema(other), records)
    assert _own_entries(buf.getvalue()) is None
    got = decode_manifest(buf.getvalue(), "m")
    assert [e.file.first_row_id for e in got] == [None] * 20
    assert [e.file.file_name for e in got] == [e.file.file_name for e in entries]


@pytest.mark.parametrize("damage", ["truncate", "extend", "union", "length", "version"])
def test_damaged_blocks_raise_and_the_file_fails_as_before(damage):
    entries = random_entries(5, 8)
    data = encode_manifest(entries, "null")
    _, blocks = raw_blocks(data)
    (count, block), = blocks
    if damage == "truncate":
        bad = block[:-3]
    elif damage == "extend":
        bad = block + b"\x00"
    elif damage == "union":
        # the last byte of the last record is _WRITE_COLS_SEQUENCES's branch or the array's
        # end; a branch byte of 4 names no branch of ["null", T]
        entries2 = random_entries(1, 9)
        e = entries2[0]
        e = ManifestEntry(e.kind, e.partition, e.bucket, e.total_buckets,
                          DataFileMeta(**{**e.file.__dict__, "write_cols_sequences": None}))
        block = raw_blocks(encode_manifest([e], "null"))[1][0][1]
        assert block[-1] == 0
        count, bad = 1, block[:-1] + b"\x04"
    elif damage == "length":
        # _PARTITION's length (third byte) made ~134M: past the end of the block
        bad = block[:2] + b"\xfe\xff\xff\x7f" + block[3:]
    else:
        bad = b"\x06" + block[1:]                  # _VERSION 3
    with pytest.raises((Malformed, IndexError, UnicodeDecodeError)):
        decode_entries(bad, count)


def test_a_damaged_manifest_names_the_file():
    data = bytearray(encode_manifest(random_entries(50, 10), "null"))
    data[len(data) // 2: len(data) // 2 + 40] = b"\xff" * 40
    with pytest.raises(CorruptMetadataError, match="manifest-x"):
        decode_manifest(bytes(data), "manifest-x")


def test_a_version_other_than_2_is_refused_by_name():
    entries = random_entries(3, 11)
    records = [e.to_record() for e in entries]
    records[1]["_VERSION"] = 3
    buf = io.BytesIO()
    fastavro.writer(buf, _PARSED_ENTRY, records)
    with pytest.raises(CorruptMetadataError, match="unsupported _VERSION 3"):
        decode_manifest(buf.getvalue(), "m")


def test_a_varint_beyond_64_bits_is_left_to_fastavro():
    # A 10-byte varint whose last byte carries bits beyond a long: fastavro (like Avro Java)
    # keeps the low 64 bits; our decoder refuses the block, and fastavro reads the file.
    import dataclasses
    e = random_entries(1, 12)[0]
    e = ManifestEntry(e.kind, e.partition, e.bucket, e.total_buckets,
                      dataclasses.replace(e.file, file_name="f", file_size=2 ** 62))
    data = encode_manifest([e], "null")
    long_bytes = bytes([0x80] * 8 + [0x80, 0x01])       # 2**63 zigzag-encoded = 2**62
    bad = data.replace(long_bytes, bytes([0x82] + [0x80] * 8 + [0x03]))
    assert bad != data
    with pytest.raises(Malformed):
        decode_entries(raw_blocks(bad)[1][0][1], 1)
    oracle = [ManifestEntry.from_record(r) for r in fastavro.reader(io.BytesIO(bad))]
    assert decode_manifest(bad, "m") == oracle


@pytest.mark.parametrize("field,value", [("kind", 2 ** 31), ("bucket", -(2 ** 31) - 1),
                                         ("total_buckets", 2 ** 35), ("level", 2 ** 40),
                                         ("file_source", 2 ** 35)])
def test_avro_int_fields_beyond_32_bits_are_refused_by_name(field, value):
    import dataclasses
    e = random_entries(1, 13)[0]
    if field in ("level", "file_source"):
        e = ManifestEntry(e.kind, e.partition, e.bucket, e.total_buckets,
                          dataclasses.replace(e.file, file_name="data-x.parquet",
                                              **{field: value}))
    else:
        e = dataclasses.replace(e, file=dataclasses.replace(e.file, file_name="data-x.parquet"),
                                **{field: value})
    with pytest.raises(ValueError, match=rf"data file 'data-x.parquet': _{field.upper()} = "
                                         rf"{value} is not a 32-bit int"):
        encode_manifest([e], "zstandard")


def test_values_fastavro_wrote_are_written_the_same_or_refused_by_name():
    import dataclasses
    import datetime
    e = random_entries(1, 14)[0]
    f = dataclasses.replace(e.file, file_name="data-y.parquet", file_size=2421.0, row_count=3.0,
                            creation_time=datetime.datetime(2026, 1, 1, 12, 0))
    ours = encode_manifest([ManifestEntry(e.kind, e.partition, e.bucket, e.total_buckets, f)],
                           "null")
    theirs = fastavro_file([ManifestEntry(e.kind, e.partition, e.bucket, e.total_buckets, f)],
                           "null")
    assert payload(ours) == payload(theirs)
    bad = dataclasses.replace(f, file_size=2421.5)
    with pytest.raises(ValueError, match=r"data file 'data-y.parquet': _FILE_SIZE = 2421.5"):
        encode_manifest([ManifestEntry(e.kind, e.partition, e.bucket, e.total_buckets, bad)],
                        "null")


# --- raw records (decode_entries(keep_raw=True)): a DELETE copies the ADD's bytes -------

def _plain(e):
    """The same entry built by the constructor: no raw record, so the encoder writes it
    field by field."""
    return ManifestEntry(e.kind, e.partition, e.bucket, e.total_buckets, e.file)


def _block_of(entries):
    (count, block), = raw_blocks(encode_manifest(entries, "null"))[1]
    return block, count


@pytest.mark.parametrize("codec", ["null", "zstandard"])
@pytest.mark.parametrize("n,seed", [(1, 20), (60, 21), (900, 22)])
def test_raw_deletes_are_byte_for_byte_what_the_encoder_writes(codec, n, seed):
    # random_entries varies every optional field (None or not), stats with and without
    # null counts, extra files, external paths, multi-byte varints and lengths.
    entries = random_entries(n, seed)
    read = decode_manifest(encode_manifest(entries, codec), "m", keep_raw=True)
    assert read == entries
    assert all(e._raw is not None for e in read)
    deletes = [e.as_delete() for e in read]
    assert all(d._raw is e._raw for d, e in zip(deletes, read))
    plain = [_plain(e).as_delete() for e in entries]
    assert all(p._raw is None for p in plain)
    assert deletes == plain
    # the copied records are the encoder's bytes, and fastavro's
    assert payload(encode_manifest(deletes, codec)) == payload(encode_manifest(plain, codec)) \
        == payload(fastavro_file(plain, codec))
    # and ADDs written again (a manifest merge) are too
    assert payload(encode_manifest(read, codec)) == payload(encode_manifest(entries, codec))


def test_raw_records_are_opt_in():
    entries = random_entries(30, 23)
    data = encode_manifest(entries, "null")
    assert all(e._raw is None for e in decode_manifest(data, "m"))
    assert all(e._raw is None for e in _own_entries(data))


def test_entries_fastavro_reads_have_no_raw_record_and_are_encoded():
    # Another writer schema (an optional field less): fastavro reads it, no raw bytes; the
    # DELETEs are encoded field by field, as before.
    import copy
    from paimon_commit.format.manifest import MANIFEST_ENTRY_SCHEMA
    other = copy.deepcopy(MANIFEST_ENTRY_SCHEMA)
    other["fields"][5]["type"]["fields"] = [
        f for f in other["fields"][5]["type"]["fields"] if f["name"] != "_FIRST_ROW_ID"]
    entries = [_plain(e) for e in random_entries(20, 24)]
    records = [e.to_record() for e in entries]
    for r in records:
        del r["_FILE"]["_FIRST_ROW_ID"]
    buf = io.BytesIO()
    fastavro.writer(buf, fastavro.parse_schema(other), records)
    got = decode_manifest(buf.getvalue(), "m", keep_raw=True)
    assert all(e._raw is None for e in got)
    deletes = [e.as_delete() for e in got]
    assert payload(encode_manifest(deletes, "null")) == payload(fastavro_file(deletes, "null"))


def _bucket_at(e):
    """Where _BUCKET starts in `e`'s record: after _VERSION, _KIND and _PARTITION."""
    return 2 + len(encode_long(len(e.partition))) + len(e.partition)


def _one(extra_files=("zzzz1", "zzzz2"), bucket=0):
    e = _plain(random_entries(1, 25)[0])
    import dataclasses
    return ManifestEntry(FileKind.ADD, e.partition, bucket, e.total_buckets,
                         dataclasses.replace(e.file, extra_files=extra_files))


@pytest.mark.parametrize("form", ["overlong varint", "two blocks", "sized block"])
def test_bytes_the_encoder_would_write_otherwise_keep_no_raw_record(form):
    # Bytes another Avro writer may write for the same values (readers accept them): their
    # copy would not be what the encoder writes, so the block is read without raw records.
    e = _one()
    block, count = _block_of([e])
    if form == "overlong varint":
        at = _bucket_at(e)
        assert block[at] == 0                  # _BUCKET 0 ...
        bad = block[:at] + b"\x80\x00" + block[at + 1:]   # ... in two bytes
    else:
        canonical = b"\x04\x0azzzz1\x0azzzz2\x00"
        assert block.count(canonical) == 1
        other = b"\x02\x0azzzz1\x02\x0azzzz2\x00" if form == "two blocks" else \
            b"\x03\x18\x0azzzz1\x0azzzz2\x00"     # count -2 and a byte size of 12
        bad = block.replace(canonical, other)
    got = decode_entries(bad, count, keep_raw=True)
    assert got == decode_entries(bad, count) == [e]
    assert got[0]._raw is None
    assert payload(encode_manifest([got[0].as_delete()], "null")) == \
        payload(encode_manifest([e.as_delete()], "null"))


def test_a_raw_record_with_an_int_beyond_32_bits_is_still_refused_by_name():
    e = _one(extra_files=())
    block, count = _block_of([e])
    at = _bucket_at(e)
    bad = block[:at] + encode_long(2 ** 31) + block[at + 1:]    # _BUCKET 2**31
    got, = decode_entries(bad, count, keep_raw=True)
    assert got._raw is None and got.bucket == 2 ** 31      # no copy: encoded, and refused
    with pytest.raises(ValueError, match=r"_BUCKET = 2147483648 is not a 32-bit int"):
        encode_manifest([got.as_delete()], "null")


def test_raw_records_stay_out_of_equality_hash_repr_pickles_and_replace():
    import dataclasses
    import pickle
    entries = random_entries(40, 26)
    read = decode_manifest(encode_manifest(entries, "null"), "m", keep_raw=True)
    for r, e in zip(read, entries):
        assert r == e and hash(r) == hash(e) and repr(r) == repr(e)
        assert "_raw" not in r.__getstate__() and "_raw" in r.__dict__
        back = pickle.loads(pickle.dumps(r))
        assert back == e and back._raw is None
        # a changed copy must not carry bytes of the old values
        assert dataclasses.replace(r, bucket=r.bucket + 1)._raw is None


def test_decoded_objects_are_what_the_constructors_build():
    import dataclasses
    import pickle
    entries = [_plain(e) for e in random_entries(200, 27)]
    read = decode_manifest(encode_manifest(entries, "zstandard"), "m")
    for r, e in zip(read, entries):
        for a, b in ((r, e), (r.file, e.file), (r.file.key_stats, e.file.key_stats),
                     (r.file.value_stats, e.file.value_stats)):
            assert type(a) is type(b) and a == b and hash(a) == hash(b)
            assert repr(a) == repr(b)
            # (the bytes may differ: a pickle refers to an object it holds twice, such
            # as null counts shared by key and value stats, once)
            back = pickle.loads(pickle.dumps(a))
            assert type(back) is type(b) and back == b and repr(back) == repr(b)
            assert dataclasses.astuple(a) == dataclasses.astuple(b)
        with pytest.raises(dataclasses.FrozenInstanceError):
            r.file.file_size = 1
        assert dataclasses.replace(r.file, level=7) == dataclasses.replace(e.file, level=7)


def test_the_shortest_varint_reader_reads_what_read_long_reads_or_refuses():
    from paimon_commit.format.varint import NotShortest, read_long, read_shortest_long
    rng = random.Random(28)
    values = [0, 1, -1, 63, -64, 64, -65, 2 ** 31, -(2 ** 31), 2 ** 63 - 1, -(2 ** 63)] + \
        [rng.randrange(-(2 ** 63), 2 ** 63) >> rng.randrange(64) for _ in range(2000)]
    for v in values:
        b = b"\x07" + encode_long(v) + b"\x09"
        assert read_shortest_long(b, 1) == read_long(b, 1) == (v, len(b) - 1)
    for overlong in (b"\x80\x00", b"\x81\x80\x00", b"\xff\x80\x80\x00"):
        read_long(overlong, 0)                  # read_long reads it ...
        with pytest.raises(NotShortest):        # ... but it is no encoder's bytes
            read_shortest_long(overlong, 0)
    with pytest.raises(Malformed):              # beyond 64 bits: refused by both
        read_shortest_long(bytes([0x82] + [0x80] * 8 + [0x03]), 0)
