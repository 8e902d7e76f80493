"""INT96 timestamps before 1970: the bytes of our data files are what Paimon Java reads
(8 bytes nanos of the day in [0, 86400 * 10^9), then the Julian day), and every reader gets the
written values back. tests/java/test_timestamps_java.py has Paimon Java read them.

The expected bytes are computed here from the INT96 definition (floor division), independently
of paimon_commit/format/int96.py; Arrow's own encoding (truncating division) is the wrong one.
"""
import os
import struct

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from conftest import write
from oracle import pp_read

from paimon_commit import Table

NANOS_PER_DAY = 86_400 * 10 ** 9
JULIAN_EPOCH_DAY = 2_440_588  # 1970-01-01

EDGES = [
    "1969-12-31T23:59:59.999999999",
    "1969-12-31T00:00:00.000000001",
    "1969-12-31T12:34:56.789012345",
    "1900-01-01T12:00:00.5",
    "1970-01-01T00:00:00",
    "1969-12-30T00:00:00",
    "1677-09-21T00:12:43.145224193",
    "2262-04-11T23:47:16.854775807",
]
NS = [int(np.datetime64(s, "ns").astype(np.int64)) for s in EDGES]


def int96_bytes(ns: int) -> bytes:
    """The INT96 a Java reader accepts: floor split into day and nanos of the day."""
    day, nanos = divmod(ns, NANOS_PER_DAY)
    return struct.pack("<qI", nanos, day + JULIAN_EPOCH_DAY)


def arrow_int96_bytes(ns: int) -> bytes:
    """pyarrow 19's encoding: truncating division, negative nanos before 1970."""
    day = -(-ns // NANOS_PER_DAY) if ns < 0 else ns // NANOS_PER_DAY
    return struct.pack("<qI", ns - day * NANOS_PER_DAY, day + JULIAN_EPOCH_DAY)


def data_files(path):
    out = []
    for root, _dirs, names in os.walk(path):
        out += [os.path.join(root, n) for n in names if n.endswith(".parquet")]
    return sorted(out)


def as_ns(col):
    return col.cast(pa.timestamp("ns", tz=col.type.tz)).cast(pa.int64()).to_pylist()


def test_arrow_encoding_is_the_broken_one():
    """The premise: pyarrow writes 1 ns before 1970 as (1970-01-01, -1 ns)."""
    buf = pa.BufferOutputStream()
    pq.write_table(pa.table({"t": pa.array([-1], pa.timestamp("ns"))}), buf,
                   use_deprecated_int96_timestamps=True, compression="none",
                   use_dictionary=False)
    raw = buf.getvalue().to_pybytes()
    assert arrow_int96_bytes(-1) == struct.pack("<qI", -1, JULIAN_EPOCH_DAY)
    assert arrow_int96_bytes(-1) in raw
    assert int96_bytes(-1) == struct.pack("<qI", NANOS_PER_DAY - 1, JULIAN_EPOCH_DAY - 1)


@pytest.mark.parametrize("repeat", [1, 40], ids=["plain", "dictionary"])
def test_writer_stores_pre_1970_int96_with_positive_nanos_of_day(table_path, repeat):
    schema = pa.schema([("id", pa.int32()), ("ts", pa.timestamp("ns")),
                        ("ltz", pa.timestamp("ns", tz="UTC")),
                        ("arr", pa.list_(pa.timestamp("ns")))])
    table = Table.create(str(table_path), schema)
    values = (NS + [None]) * repeat
    data = pa.table({"id": pa.array(range(len(values)), pa.int32()),
                     "ts": pa.array(values, pa.timestamp("ns")),
                     "ltz": pa.array(values, pa.timestamp("ns", tz="UTC")),
                     "arr": pa.array([[v, None, NS[0]] for v in values],
                                     schema.field("arr").type)}, schema=schema)
    write(table, data)
    f, = data_files(table_path)
    raw = open(f, "rb").read()
    for v in NS:
        assert int96_bytes(v) in raw, f"INT96 of {np.datetime64(v, 'ns')} not in the file"
        if arrow_int96_bytes(v) != int96_bytes(v):
            assert arrow_int96_bytes(v) not in raw
    meta = pq.read_metadata(f)
    dictionary = [("RLE_DICTIONARY" in meta.row_group(0).column(i).encodings) for i in (1, 2)]
    assert dictionary == [repeat > 1] * 2
    for got in (table.read_arrow(), pp_read(table_path)):
        got = got.sort_by("id")
        assert as_ns(got.column("ts")) == values
        assert as_ns(got.column("ltz")) == values
        assert got.column("arr").cast(schema.field("arr").type).to_pylist() == \
            data.column("arr").to_pylist()


def test_other_columns_keep_the_table_compression(table_path):
    """Only INT96 columns are left uncompressed, and only in files that had to be fixed."""
    schema = pa.schema([("id", pa.int32()), ("s", pa.string()), ("ts", pa.timestamp("ns"))])
    table = Table.create(str(table_path), schema)
    write(table, pa.table({"id": pa.array([1], pa.int32()), "s": ["x"],
                           "ts": pa.array([-1], pa.timestamp("ns"))}, schema=schema))
    write(table, pa.table({"id": pa.array([2], pa.int32()), "s": ["y"],
                           "ts": pa.array([1], pa.timestamp("ns"))}, schema=schema))
    codecs = sorted(tuple(pq.read_metadata(f).row_group(0).column(i).compression
                          for i in range(3)) for f in data_files(table_path))
    assert codecs == [("ZSTD", "ZSTD", "UNCOMPRESSED"), ("ZSTD", "ZSTD", "ZSTD")]


def test_many_pages_of_pre_1970_values(table_path):
    """More than one data page (pyarrow's pages hold 1 MiB): every page is fixed."""
    schema = pa.schema([("id", pa.int32()), ("ts", pa.timestamp("ns"))])
    table = Table.create(str(table_path), schema)
    n = 100_000
    start = int(np.datetime64("1969-06-01T00:00:00", "ns").astype(np.int64))
    values = start + np.arange(n, dtype=np.int64) * 7_777_777_777 + 1
    write(table, pa.table({"id": pa.array(np.arange(n, dtype=np.int32)),
                           "ts": pa.array(values, pa.timestamp("ns"))}))
    f, = data_files(table_path)
    column = pq.read_metadata(f).row_group(0).column(1)
    assert "RLE_DICTIONARY" not in column.encodings
    assert column.total_uncompressed_size > 1 << 20
    raw = open(f, "rb").read()
    for v in values[::997].tolist() + [int(values[-1])]:
        assert int96_bytes(v) in raw
        assert arrow_int96_bytes(v) not in raw
    got = table.read_arrow().sort_by("id")
    assert as_ns(got.column("ts")) == values.tolist()


# --- fix_int96_file on files pyarrow writes with other settings -----------------------------

NESTED = pa.schema([pa.field("ts", pa.timestamp("ns")),
                    pa.field("req", pa.timestamp("us"), nullable=False),
                    ("st", pa.struct([("x", pa.timestamp("ms")), ("n", pa.int64())])),
                    ("m", pa.map_(pa.string(), pa.timestamp("ns"))),
                    ("ll", pa.list_(pa.list_(pa.timestamp("ns"))))])


# pyarrow reads INT96 back as ns, so a us/ms value near the ends of the ns range would wrap
INNER = [v for v in NS if abs(v) < 9 * 10 ** 18]


def _nested_rows(k):
    rows = []
    for i in range(k):
        v = INNER[i % len(INNER)]
        rows.append({"ts": None if i % 7 == 3 else v, "req": v // 1000,
                     "st": None if i % 5 == 4 else {"x": v // 10 ** 6, "n": i},
                     "m": [("a", v), ("b", None)],
                     "ll": [[v, None], [], None] if i % 2 else None})
    return pa.Table.from_pylist(rows, schema=NESTED)


@pytest.mark.parametrize("options", [
    {"use_dictionary": False},
    {"use_dictionary": True},
    {"use_dictionary": True, "dictionary_pagesize_limit": 64},   # falls back to plain
    {"use_dictionary": False, "data_page_version": "2.0"},
    {"use_dictionary": False, "data_page_size": 100},             # many small pages
], ids=["plain", "dictionary", "fallback", "v2", "small-pages"])
def test_fix_int96_file_rewrites_every_bad_value(tmp_path, options):
    from paimon_commit.format.int96 import fix_int96_file, int96_compression
    data = pa.concat_tables([_nested_rows(60), _nested_rows(45)])
    kwargs = dict(use_deprecated_int96_timestamps=True, **options)
    path = tmp_path / "f.parquet"
    with pq.ParquetWriter(str(path), NESTED,
                          compression=int96_compression(NESTED, "zstd", **kwargs),
                          **kwargs) as w:
        w.write_table(data.slice(0, 60))
        w.write_table(data.slice(60))                # a second row group
    before = open(path, "rb").read()
    assert arrow_int96_bytes(NS[0]) in before
    with open(path, "r+b") as f:
        changed = fix_int96_file(f)
    after = open(path, "rb").read()
    assert len(after) == len(before)
    assert changed > 0
    # every value as the ns the file holds: ts, m and ll as written, req in us, st.x in ms
    for v in {u for v in INNER for u in (v, v // 1000 * 1000, v // 10 ** 6 * 10 ** 6)}:
        assert int96_bytes(v) in after
        if arrow_int96_bytes(v) != int96_bytes(v):
            assert arrow_int96_bytes(v) not in after
    assert pq.read_table(str(path)).to_pylist() == data.to_pylist()
    with open(path, "r+b") as f:
        assert fix_int96_file(f) == 0                 # nothing left to fix


def test_fix_int96_file_refuses_a_compressed_int96_column(tmp_path):
    from paimon_commit.format.int96 import fix_int96_file
    path = tmp_path / "f.parquet"
    pq.write_table(pa.table({"t": pa.array([-1], pa.timestamp("ns"))}), str(path),
                   use_deprecated_int96_timestamps=True, compression="zstd")
    before = open(path, "rb").read()
    with open(path, "r+b") as f, pytest.raises(ValueError, match="INT96 column t is "
                                                "ZSTD-compressed"):
        fix_int96_file(f)
    assert open(path, "rb").read() == before
