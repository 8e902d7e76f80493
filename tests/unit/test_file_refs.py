"""The FileRef reader compiled per manifest schema (format/file_refs.py) gives exactly what
fastavro's records give, for our manifests, pypaimon's and older field sets, and a damaged
manifest still fails with the error it had."""
import io
import os

import fastavro
import pyarrow as pa
import pytest

from paimon_commit.errors import CorruptMetadataError
from paimon_commit.format.manifest import (
    MANIFEST_ENTRY_SCHEMA, DataFileMeta, FileKind, FileRef, ManifestEntry, SimpleStats,
    _compiled_file_refs, _decode, _file_refs, decode_manifest, decode_manifest_files,
    encode_manifest)
from paimon_commit.format.file_refs import compile_reader
from tests.oracle import pp_create, pp_write


def entries(n):
    out = []
    for i in range(n):
        f = DataFileMeta(
            file_name=f"data-{i}-é.parquet", file_size=i * 1000 + 7, row_count=i,
            schema_id=i % 3, min_key=bytes([i % 256]) * (i % 5), max_key=b"k",
            key_stats=SimpleStats(b"a", b"b", (None, i)),
            value_stats=SimpleStats(b"", b"zz", None if i % 2 else (1, None, -i)),
            min_sequence_number=-i, max_sequence_number=2 ** 40 + i, level=i % 4,
            extra_files=tuple(f"idx-{i}-{j}" for j in range(i % 3)),
            creation_time=1_700_000_000_000 + i, delete_row_count=None if i % 4 else i,
            embedded_file_index=None if i % 5 else b"\x00\x01" * i,
            file_source=None if i % 6 == 1 else i % 2,
            value_stats_cols=None if i % 7 else ("a", "b"),
            external_path=None if i % 8 else f"s3://b/x/data-{i}.parquet",
            first_row_id=None if i % 2 else i, write_cols=("id",) if i % 9 == 0 else None)
        out.append(ManifestEntry(FileKind.ADD if i % 3 else FileKind.DELETE,
                                 bytes([i % 7]) * 8, i % 5 - 1, 4, f))
    return out


@pytest.mark.parametrize("codec", ["null", "deflate", "zstandard"])
@pytest.mark.parametrize("n", [0, 1, 700])
def test_same_refs_as_decoded_entries(codec, n):
    data = encode_manifest(entries(n), codec)
    refs = _compiled_file_refs(data, "m")
    assert refs is not None   # the compiled reader was used, not the fallback
    assert refs == [FileRef.of(e) for e in decode_manifest(data, "m")]
    assert decode_manifest_files(data, "m") == refs


def test_older_field_set_reads_missing_optional_fields_as_none():
    # Paimon < 1.0 manifests lack _EXTERNAL_PATH, _FILE_SOURCE and later fields.
    old = {k: v for k, v in MANIFEST_ENTRY_SCHEMA.items()}
    file_type = dict(old["fields"][5]["type"])
    drop = {"_FILE_SOURCE", "_VALUE_STATS_COLS", "_EXTERNAL_PATH", "_FIRST_ROW_ID",
            "_WRITE_COLS", "_WRITE_COLS_SEQUENCES"}
    file_type["fields"] = [f for f in file_type["fields"] if f["name"] not in drop]
    old["fields"] = old["fields"][:5] + [{"name": "_FILE", "type": file_type}]
    records = []
    for e in entries(50):
        r = e.to_record()
        r["_FILE"] = {k: v for k, v in r["_FILE"].items() if k not in drop}
        records.append(r)
    buf = io.BytesIO()
    fastavro.writer(buf, fastavro.parse_schema(old), records)
    refs = _compiled_file_refs(buf.getvalue(), "m")
    assert refs is not None
    assert refs == _file_refs(_decode(buf.getvalue(), "m"), "m")
    assert all(r.external_path is None and r.file_source is None for r in refs)


def test_pypaimon_written_manifests(tmp_path):
    path = tmp_path / "wh" / "db.db" / "t"
    schema = pa.schema([("id", pa.int64()), ("p", pa.string())])
    pp_create(path, schema, partition_keys=["p"])
    for i in range(3):
        pp_write(path, pa.table({"id": [i, i + 10], "p": ["a", f"b{i}"]}, schema=schema))
    manifests = [n for n in os.listdir(path / "manifest")
                 if n.startswith("manifest-") and not n.startswith("manifest-list-")]
    assert manifests
    for name in manifests:
        data = (path / "manifest" / name).read_bytes()
        refs = _compiled_file_refs(data, name)
        assert refs is not None and len(refs) == 2
        assert refs == [FileRef.of(e) for e in decode_manifest(data, name)]


def test_a_damaged_manifest_fails_as_before():
    data = encode_manifest(entries(40), "null")
    for bad in (data[:len(data) // 2], data[:-20] + b"\xff" * 20, b"garbage"):
        with pytest.raises(CorruptMetadataError) as compiled:
            decode_manifest_files(bad, "manifest-x")
        with pytest.raises(CorruptMetadataError) as full:
            decode_manifest(bad, "manifest-x")
        assert str(compiled.value) == str(full.value)


def test_wrong_version_is_refused():
    recs = [dict(e.to_record(), _VERSION=1) for e in entries(3)]
    buf = io.BytesIO()
    fastavro.writer(buf, fastavro.parse_schema(MANIFEST_ENTRY_SCHEMA), recs)
    with pytest.raises(CorruptMetadataError, match="unsupported _VERSION 1"):
        decode_manifest_files(buf.getvalue(), "manifest-x")


def test_schema_without_required_fields_is_left_to_fastavro():
    assert compile_reader(b'{"type": "record", "name": "x", "fields": '
                          b'[{"name": "_KIND", "type": "int"}]}') is None
    assert compile_reader(b"not json") is None


def metas(n):
    from paimon_commit.format.manifest import ManifestFileMeta
    return [ManifestFileMeta(f"manifest-{i}-é", i * 977 + 3, i % 4, (i * 7) % 5,
                             SimpleStats(bytes([i % 9]) * (i % 70), b"", None if i % 2
                                         else tuple(range(i % 6))),
                             i % 3, min_bucket=None if i % 4 else i, total_buckets=i % 2 or None,
                             extra_files=None if i % 5 else (f"x-{i}",))
            for i in range(n)]


@pytest.mark.parametrize("codec", ["null", "deflate", "zstandard"])
@pytest.mark.parametrize("n", [0, 1, 300])
def test_list_refs_through_the_compiled_reader(codec, n):
    from paimon_commit.format.manifest import (
        _compiled_list_refs, decode_manifest_list, decode_manifest_list_refs,
        encode_manifest_list)
    data = encode_manifest_list(metas(n), codec)
    refs = _compiled_list_refs(data)
    assert refs is not None   # the compiled reader was used, not fastavro
    expected = [(m.file_name, m.file_size, m.num_added_files, m.num_deleted_files)
                for m in decode_manifest_list(data, "l")]
    assert [tuple(r) for r in refs] == expected
    assert decode_manifest_list_refs(data, "l") == refs


def test_pypaimon_written_lists_read_through_the_compiled_reader(tmp_path):
    from paimon_commit.format.manifest import _compiled_list_refs, decode_manifest_list
    path = tmp_path / "wh" / "db.db" / "t"
    schema = pa.schema([("id", pa.int64()), ("p", pa.string())])
    pp_create(path, schema, partition_keys=["p"])
    for i in range(3):
        pp_write(path, pa.table({"id": [i, i + 10], "p": ["a", f"b{i}"]}, schema=schema))
    lists = [n for n in os.listdir(path / "manifest") if n.startswith("manifest-list-")]
    assert lists
    for name in lists:
        data = (path / "manifest" / name).read_bytes()
        refs = _compiled_list_refs(data)
        assert refs is not None
        assert [tuple(r) for r in refs] == [
            (m.file_name, m.file_size, m.num_added_files, m.num_deleted_files)
            for m in decode_manifest_list(data, name)]


def test_a_damaged_list_fails_as_before():
    from paimon_commit.format.manifest import decode_manifest_list, decode_manifest_list_refs
    from paimon_commit.format.manifest import encode_manifest_list
    data = encode_manifest_list(metas(40), "zstandard")
    for bad in (data[:len(data) // 2], data[:-20] + b"\xff" * 20, b"garbage"):
        with pytest.raises(CorruptMetadataError) as compiled:
            decode_manifest_list_refs(bad, "manifest-list-x")
        with pytest.raises(CorruptMetadataError) as full:
            decode_manifest_list(bad, "manifest-list-x")
        assert str(compiled.value) == str(full.value)


def test_zstd_blocks_of_several_frames_or_without_a_size():
    # Avro writers put one frame stating its size in each block; other shapes go through
    # the standard module and read the same.
    import zstandard
    from paimon_commit.format.avro_container import _zstd_decompress
    a, b = b"first " * 100, b"second" * 50
    two = zstandard.ZstdCompressor().compress(a) + zstandard.ZstdCompressor().compress(b)
    assert _zstd_decompress(two) == a + b
    sizeless = zstandard.ZstdCompressor(write_content_size=False).compress(a)
    assert _zstd_decompress(sizeless) == a
    with pytest.raises(Exception):
        _zstd_decompress(two[:-5])


def test_a_sizeless_frame_is_read_through_the_reused_context(monkeypatch):
    # Paimon Java's blocks are one frame without its size: they must not fall through to
    # the standard module (the slow path), and a two-frame block must not be cut to its first
    # frame by the streamed path.
    import zstandard
    from paimon_commit.format import avro_container
    a, b = b"first " * 100, b"second" * 50
    sizeless = zstandard.ZstdCompressor(write_content_size=False).compress(a)
    two = sizeless + zstandard.ZstdCompressor(write_content_size=False).compress(b)

    def no_standard(block):
        raise AssertionError("standard module used")
    import types
    monkeypatch.setattr(avro_container, "_zstd", types.SimpleNamespace(decompress=no_standard))
    assert avro_container._zstd_decompress(sizeless) == a
    with pytest.raises(AssertionError, match="standard module used"):
        avro_container._zstd_decompress(two)


def test_files_sharing_a_header_but_not_its_sync_marker():
    # The second file's header is matched against the first's (not parsed): it must still
    # use its own sync marker, and a file whose marker does not match is refused.
    first, second = encode_manifest(entries(30), "zstandard"), \
        encode_manifest(entries(31), "zstandard")
    assert first[:200] == second[:200] and first != second
    assert decode_manifest_files(second, "m") == [FileRef.of(e) for e in entries(31)]
    assert decode_manifest_files(first, "m") == [FileRef.of(e) for e in entries(30)]
    marker_at = len(first) - 16
    with pytest.raises(CorruptMetadataError):
        decode_manifest_files(first[:marker_at] + second[-16:], "m")


def test_a_list_without_entry_counts_reads_with_unknown_counts():
    # Counts only let planners skip reading DELETE-free manifests; a list written without
    # them (no Paimon or pypaimon writer does that) reads as before, counts unknown.
    import io

    import fastavro
    schema = {"type": "record", "name": "ManifestFileMeta", "fields": [
        {"name": "_VERSION", "type": "int"}, {"name": "_FILE_NAME", "type": "string"},
        {"name": "_FILE_SIZE", "type": "long"}]}
    buf = io.BytesIO()
    fastavro.writer(buf, fastavro.parse_schema(schema),
                    [{"_VERSION": 2, "_FILE_NAME": "manifest-x-0", "_FILE_SIZE": 10}],
                    codec="null")
    from paimon_commit.format.manifest import decode_manifest_list_refs
    refs = decode_manifest_list_refs(buf.getvalue(), "manifest-list-x")
    assert [(r.file_name, r.file_size, r.num_added_files, r.num_deleted_files)
            for r in refs] == [("manifest-x-0", 10, None, None)]
