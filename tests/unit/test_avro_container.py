"""The container reader behind manifest decoding gives fastavro.reader's records, or its error."""
import io

import fastavro
import pytest

from paimon_commit.errors import CorruptMetadataError
from paimon_commit.format import avro_container
from paimon_commit.format.avro_container import read_records
from paimon_commit.format.manifest import decode_index_manifest_names, decode_manifest_list_refs

SCHEMA = fastavro.parse_schema({"type": "record", "name": "R", "fields": [
    {"name": "_FILE_NAME", "type": "string"},
    {"name": "_FILE_SIZE", "type": "long"},
    {"name": "_STATS", "type": ["null", {"type": "array", "items": ["null", "long"]}]},
    {"name": "_BYTES", "type": "bytes"},
]})


def container(records, codec="null", block_size=16000):
    buf = io.BytesIO()
    fastavro.writer(buf, SCHEMA, records, codec=codec, sync_interval=block_size)
    return buf.getvalue()


def records(n):
    return [{"_FILE_NAME": f"manifest-{i}", "_FILE_SIZE": i * 1000 - 5,
             "_STATS": None if i % 3 else [i, None, -i], "_BYTES": bytes([i % 256]) * (i % 7)}
            for i in range(n)]


@pytest.mark.parametrize("codec", ["null", "deflate", "zstandard"])
@pytest.mark.parametrize("n, block_size", [(0, 16000), (1, 16000), (500, 16000), (500, 200)])
def test_same_records_as_fastavro(codec, n, block_size):
    data = container(records(n), codec, block_size)
    assert read_records(data) == list(fastavro.reader(io.BytesIO(data))) == records(n)


def test_other_codecs_go_through_fastavro():
    data = container(records(20), "bzip2")
    assert read_records(data) == records(20)


@pytest.mark.parametrize("damage", [
    lambda d: d[:len(d) // 2],                       # truncated
    lambda d: d[:-3],                                # last sync marker cut
    lambda d: d[:-16] + b"\x00" * 16,                # wrong sync marker
    lambda d: d[:10],                                # header cut
    lambda d: b"",
])
def test_damaged_files_fail_as_in_fastavro(damage):
    data = damage(container(records(50), "zstandard"))
    with pytest.raises(Exception) as ours:
        read_records(data)
    with pytest.raises(Exception) as theirs:
        list(fastavro.reader(io.BytesIO(data)))
    assert type(ours.value) is type(theirs.value)


def test_manifest_decoders_name_the_damaged_file():
    with pytest.raises(CorruptMetadataError, match="manifest-list-x.*not a readable Avro"):
        decode_manifest_list_refs(b"Obj\x01garbage", "/t/manifest/manifest-list-x")
    index_schema = fastavro.parse_schema({"type": "record", "name": "IndexManifestEntry",
                                          "fields": [{"name": "_KIND", "type": "int"},
                                                     {"name": "_FILE_NAME", "type": "string"},
                                                     {"name": "_FILE_SIZE", "type": "long"}]})
    buf = io.BytesIO()
    fastavro.writer(buf, index_schema, [{"_KIND": 0, "_FILE_NAME": "../escape", "_FILE_SIZE": 1}])
    bad = buf.getvalue()
    with pytest.raises(CorruptMetadataError, match="index-manifest-y.*'../escape'"):
        decode_index_manifest_names(bad, "/t/manifest/index-manifest-y")


def test_schema_cache_is_bounded(monkeypatch):
    monkeypatch.setattr(avro_container, "_schemas", {})
    for i in range(avro_container._SCHEMA_CACHE_SIZE + 5):
        schema = fastavro.parse_schema({"type": "record", "name": f"R{i}", "fields": [
            {"name": "a", "type": "long"}]})
        buf = io.BytesIO()
        fastavro.writer(buf, schema, [{"a": i}])
        assert read_records(buf.getvalue()) == [{"a": i}]
    assert 0 < len(avro_container._schemas) <= avro_container._SCHEMA_CACHE_SIZE
