"""Bad input: a clear error naming the file or option, and no file written or deleted."""
import io
import os

import fastavro
import pytest

from conftest import SCHEMA, files_under, make_rows, write

from paimon_commit import (
    CorruptMetadataError, OptionError, Table, TableExistsError, TableNotFoundError,
)
from paimon_commit.format.manifest import MANIFEST_FILE_META_SCHEMA


@pytest.fixture
def committed(table, table_path):
    write(table, make_rows([1]))
    write(table, make_rows([2]))
    return table


def _new_commit_attempt(table):
    w = table.new_writer()
    w.write_arrow(make_rows([3]))
    msgs = w.prepare_commit()
    return msgs, files_under(table.path)


@pytest.mark.parametrize("content, problem", [
    (b'{"version": 3, "id": 2, "schemaId": 0, "baseManifestList": "manif', "not valid JSON"),
    (b"this is not json", "not valid JSON"),
    (b"[1, 2]", "expected a JSON object"),
    (b'{"version": 3, "id": 2}', "missing required key"),
])
def test_broken_latest_snapshot_file(committed, table_path, content, problem):
    (table_path / "snapshot" / "snapshot-2").write_bytes(content)
    msgs, before = _new_commit_attempt(committed)
    with pytest.raises(CorruptMetadataError, match=problem) as e:
        with committed.new_commit() as c:
            c.commit(msgs)
    assert str(table_path / "snapshot" / "snapshot-2") in str(e.value)
    assert files_under(table_path) == before
    with pytest.raises(CorruptMetadataError, match="snapshot-2"):
        Table.open(str(table_path)).read_arrow()


def test_snapshot_id_must_match_its_file_name(committed, table_path):
    p = table_path / "snapshot" / "snapshot-2"
    p.write_bytes(p.read_bytes().replace(b'"id": 2', b'"id": 7'))
    with pytest.raises(CorruptMetadataError, match="holds id 7, but its name says 2"):
        committed.snapshot(2)


def test_manifest_list_with_version_1(committed, table_path):
    s = committed.latest_snapshot()
    path = table_path / "manifest" / s.delta_manifest_list
    records = list(fastavro.reader(io.BytesIO(path.read_bytes())))
    for r in records:
        r["_VERSION"] = 1
    buf = io.BytesIO()
    fastavro.writer(buf, fastavro.parse_schema(MANIFEST_FILE_META_SCHEMA), records,
                    codec="zstandard")
    path.write_bytes(buf.getvalue())
    fresh = Table.open(str(table_path))  # manifests are immutable, so `committed` caches them
    msgs, before = _new_commit_attempt(fresh)
    with pytest.raises(CorruptMetadataError, match="unsupported _VERSION 1") as e:
        with fresh.new_commit() as c:
            c.commit(msgs)
    assert s.delta_manifest_list in str(e.value)
    assert files_under(table_path) == before


def test_truncated_manifest(committed, table_path):
    s = committed.latest_snapshot()
    name = committed.store.manifests.read_list(s.delta_manifest_list)[0].file_name
    path = table_path / "manifest" / name
    path.write_bytes(path.read_bytes()[:40])
    with pytest.raises(CorruptMetadataError, match=name):
        Table.open(str(table_path)).live_files()


def test_missing_schema_directory(tmp_path):
    (tmp_path / "t" / "snapshot").mkdir(parents=True)
    with pytest.raises(TableNotFoundError, match="is not a Paimon table"):
        Table.open(str(tmp_path / "t"))
    assert files_under(tmp_path) == []


def test_create_refuses_an_existing_table(table, table_path):
    with pytest.raises(TableExistsError, match=str(table_path)):
        Table.create(str(table_path), SCHEMA)


@pytest.mark.parametrize("options, message", [
    ({"snapshot.num-retained.min": "0"}, "'snapshot.num-retained.min' = '0': must be >= 1"),
    ({"snapshot.num-retained.min": "5", "snapshot.num-retained.max": "2"},
     "'snapshot.num-retained.max' = 2 must be >= 'snapshot.num-retained.min' = 5"),
    ({"commit.max-retries": "-1"}, "'commit.max-retries' = '-1': must be >= 0"),
    ({"commit.timeout": "soon"}, "option 'commit.timeout': invalid duration 'soon'"),
    ({"manifest.target-file-size": "8 parsecs"}, "invalid memory size"),
    ({"bucket": "0"}, "'bucket' = '0': must be -1 (unaware/dynamic), -2 (postpone) or >= 1"),
    ({"snapshot.expire.limit": "-1"}, "'snapshot.expire.limit' = '-1': must be >= 0"),
])
def test_out_of_range_options(tmp_path, options, message):
    path = tmp_path / "t"
    with pytest.raises(OptionError) as e:
        Table.create(str(path), SCHEMA, ["dt"], options)
    assert message in str(e.value)
    assert not path.exists()


def test_commit_options_are_validated_before_io(table, table_path):
    write(table, make_rows([1]))
    before = files_under(table_path)
    with pytest.raises(OptionError, match="commit.min-retry-wait"):
        table.new_commit(options={"commit.min-retry-wait": "1 h", "commit.max-retry-wait": "1 s"})
    assert files_under(table_path) == before
