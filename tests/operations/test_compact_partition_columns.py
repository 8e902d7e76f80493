"""Compaction fills a row's partition columns from its file's partition, not from the values
stored in the file, as Paimon's readers do (Java's and pypaimon's take a partition column
from the partition, never from the data file): the rows every reader sees are unchanged, and
the new files store the partition values."""
import datetime
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from conftest import write
from invariants import assert_intact
from oracle import pp_read, rows

from paimon_commit import Table
from paimon_commit.operations.compact import rewrite as compact_rewrite
from paimon_commit.operations.compact import compact_table

SCHEMA = pa.schema([("id", pa.int64()), ("s", pa.string()), ("d", pa.date32()),
                    ("k", pa.int32()), ("v", pa.string())])
OPTS = {"target-file-size": "64 kb", "source.split.open-file-cost": "1 b"}
PARTS = [("a b/c=é", datetime.date(2024, 2, 29), 7), (None, None, None),
         ("", datetime.date(1970, 1, 1), -1)]


def _rows(ids, s, d, k):
    return pa.Table.from_pylist([{"id": i, "s": s, "d": d, "k": k, "v": f"v{i}"} for i in ids],
                                schema=SCHEMA)


def _stored(path):
    return pq.read_table(path, partitioning=None)


def _data_files(table_path):
    out = []
    for root, _, names in os.walk(table_path):
        out += [os.path.join(root, n) for n in names if n.endswith(".parquet")]
    return out


def test_rows_and_stored_partition_values_after_compaction(table_path):
    t = Table.create(str(table_path), SCHEMA, partition_keys=["s", "d", "k"], options=OPTS)
    i = 0
    for _ in range(6):
        for s, d, k in PARTS:
            write(t, _rows(range(i, i + 5), s, d, k))
            i += 5
    before = rows(pp_read(table_path))
    r = compact_table(t)
    assert r.rewritten_files == 18 and r.written_files == 3
    assert rows(pp_read(table_path)) == before
    live = {f.file_name: f for f in Table.open(str(table_path)).live_files()}
    for path in _data_files(table_path):
        if os.path.basename(path) not in live:
            continue
        f = live[os.path.basename(path)]
        got = _stored(path)
        want = f.partition
        for key in ("s", "d", "k"):
            assert set(got.column(key).to_pylist()) == {want[key]}, (path, key)
    assert_intact(table_path)


def test_a_stored_partition_value_that_disagrees_is_read_as_the_partition(table_path):
    # A writer stored "wrong" in the partition column of one file of partition s=a; every
    # Paimon reader shows s=a for its rows, and so does the compacted file.
    t = Table.create(str(table_path), SCHEMA, partition_keys=["s"], options=OPTS)
    for j in range(6):
        write(t, _rows(range(j * 5, j * 5 + 5), "a", None, 1))
    victim = sorted(p for p in _data_files(table_path))[0]
    data = _stored(victim)
    bad = data.set_column(data.schema.get_field_index("s"), "s",
                          pa.array(["wrong"] * data.num_rows, pa.string()))
    pq.write_table(bad, victim, compression="zstd")
    before = rows(pp_read(table_path))
    assert {r["s"] for r in pp_read(table_path).to_pylist()} == {"a"}
    compact_table(t)
    after = pp_read(table_path)
    assert rows(after) == before
    assert {r["s"] for r in after.to_pylist()} == {"a"}
    (new,) = [p for p in _data_files(table_path)
              if os.path.basename(p) in {f.file_name for f in
                                         Table.open(str(table_path)).live_files()}]
    assert set(_stored(new).column("s").to_pylist()) == {"a"}


def _plant_wrong_value(table_path, key):
    """Rewrite one data file with "wrong" stored in partition column `key`."""
    victim = sorted(_data_files(table_path))[0]
    data = _stored(victim)
    bad = data.set_column(data.schema.get_field_index(key), key,
                          pa.array(["wrong"] * data.num_rows, pa.string()))
    pq.write_table(bad, victim, compression="zstd")


@pytest.mark.parametrize("key", ["s", "p.x"])
@pytest.mark.parametrize("large", [False, True], ids=["whole", "large"])
def test_a_disagreeing_stored_value_never_blocks_compaction(table_path, monkeypatch, key,
                                                            large):
    # Any partition column name (a dotted one is read from the file: the reader's name
    # lookup could take it for a nested field) and any input size (files over
    # WHOLE_FILE_BYTES are read with every column): the rows hold the partition's value,
    # and the bin is compacted instead of refused for ever.
    if large:
        monkeypatch.setattr(compact_rewrite, "WHOLE_FILE_BYTES", 0)
    schema = pa.schema([("id", pa.int64()), (key, pa.string())])
    t = Table.create(str(table_path), schema, partition_keys=[key], options=OPTS)
    for j in range(6):
        write(t, pa.table({"id": list(range(j * 5, j * 5 + 5)), key: ["a"] * 5},
                          schema=schema))
    _plant_wrong_value(table_path, key)
    before = rows(pp_read(table_path))
    assert {r[key] for r in pp_read(table_path).to_pylist()} == {"a"}
    r = compact_table(t)
    assert r.rewritten_files == 6 and r.written_files == 1
    after = pp_read(table_path)
    assert rows(after) == before
    (new,) = [p for p in _data_files(table_path)
              if os.path.basename(p) in {f.file_name for f in
                                         Table.open(str(table_path)).live_files()}]
    assert set(_stored(new).column(key).to_pylist()) == {"a"}
    assert_intact(table_path)


def test_read_arrow_reads_the_partition_value_as_pypaimon_does(table_path):
    t = Table.create(str(table_path), SCHEMA, partition_keys=["s", "k"], options=OPTS)
    write(t, _rows(range(5), "a", None, 1))
    write(t, _rows(range(5, 10), "b", None, 2))
    _plant_wrong_value(table_path, "s")
    got = Table.open(str(table_path)).read_arrow()
    assert rows(got) == rows(pp_read(table_path))
    assert sorted({(r["s"], r["k"]) for r in got.to_pylist()}) == [("a", 1), ("b", 2)]
