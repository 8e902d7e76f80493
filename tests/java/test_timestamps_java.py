"""Timestamps before 1970 in files we write: Paimon Java 1.0, pypaimon and we read back exactly
the values written, at every precision.

TIMESTAMP(7..9) is INT96 in parquet (8 bytes nanos of the day, then the Julian day). Arrow's
encoder gives a pre-1970 value that is not a whole day negative nanos of the day, and Java's
reader then throws IllegalArgumentException on every read of the file: one row made the table
unreadable for every Java reader (paimon_commit/format/int96.py).
"""
import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from javaoracle import sorted_rows
from oracle import pp_read

from paimon_commit import Table
from paimon_commit import writer as writer_module

# Edge values as nanoseconds since 1970 (ISO text -> int through numpy, not our code).
EDGES = [
    "1969-12-31T23:59:59.999999999",   # 1 ns before the epoch
    "1969-12-31T00:00:00.000000001",   # 1 ns into the last day before the epoch
    "1969-12-31T12:34:56.789012345",
    "1900-01-01T12:00:00.5",           # whole milliseconds: Java read these even before
    "1970-01-01T00:00:00",
    "1970-01-01T00:00:00.000000001",
    "1969-12-30T00:00:00",             # whole days before the epoch
    "1677-09-22T00:00:00",
    "1677-09-21T00:12:43.145224193",   # the earliest ns timestamp (int64 min is NaT in numpy)
    "2262-04-11T23:47:16.854775807",   # the latest
    "2024-02-29T23:59:59.999999999",
]
NS = [int(np.datetime64(s, "ns").astype(np.int64)) for s in EDGES]


def _truncate(ns, precision):
    """`ns` at a precision <= 9: floored, so pre-1970 values stay pre-1970, except where that
    leaves the int64 range."""
    step = 10 ** (9 - precision)
    floor = ns // step * step
    return floor if floor >= -2 ** 63 else floor + step


def _write(table, data):
    w = table.new_writer()
    w.write_arrow(data)
    msgs = w.prepare_commit()
    with table.new_commit() as c:
        return c.commit(msgs)


def _as_ns(col):
    """A timestamp column as int64 nanoseconds, whatever unit the reader returned."""
    col = col.cast(pa.timestamp("ns", tz=col.type.tz))
    return col.cast(pa.int64()).to_pylist()


def _data_files(path):
    out = []
    for root, _dirs, files in os.walk(path):
        out += [os.path.join(root, f) for f in files if f.endswith(".parquet")]
    return sorted(out)


def _three_reads(java, table, path):
    """(id -> row) as Java, we and pypaimon read the table, timestamps as int64 ns."""
    def view(t):
        cols = {n: (_as_ns(t.column(n)) if pa.types.is_timestamp(t.column(n).type)
                    else t.column(n).to_pylist()) for n in t.column_names}
        return {cols["id"][i]: {n: v[i] for n, v in cols.items()} for i in range(t.num_rows)}
    return view(java.read(path)), view(table.read_arrow()), view(pp_read(path))


@pytest.mark.parametrize("precision", [7, 8, 9])
def test_pre_1970_high_precision_timestamps_read_back_by_java(java, wh, precision):
    """Every edge value, in a table Java created, plain-encoded in one file and
    dictionary-encoded (repeated values) in another: Java, we and pypaimon read back what was
    written. (With Arrow's own encoding Java fails with IllegalArgumentException on both.)"""
    path = str(wh / f"ts{precision}")
    java.create_table(path, [("id", "INT"), ("ts", f"TIMESTAMP({precision})"),
                             ("ltz", f"TIMESTAMP({precision}) WITH LOCAL TIME ZONE")])
    table = Table.open(path)
    values = [_truncate(v, precision) for v in NS] + [None]
    schema = table.schema.arrow_schema()

    def rows(ids, vals):
        return pa.table({"id": pa.array(ids, pa.int32()),
                         "ts": pa.array(vals, pa.timestamp("ns")),
                         "ltz": pa.array(vals, pa.timestamp("ns", tz="UTC"))}).cast(schema)
    plain = rows(list(range(len(values))), values)
    repeated_ids = list(range(100, 300))
    repeated = rows(repeated_ids, [values[i % len(values)] for i in range(len(repeated_ids))])
    _write(table, plain)
    _write(table, repeated)
    assert len(_data_files(path)) == 2
    # the second file really is dictionary-encoded, the first is not
    encodings = [pq.read_metadata(f).row_group(0).column(1).encodings for f in _data_files(path)]
    assert sorted("RLE_DICTIONARY" in e for e in encodings) == [False, True]

    want = {i: {"id": i, "ts": v, "ltz": v} for i, v in enumerate(values)}
    want.update({i: {"id": i, "ts": values[k % len(values)], "ltz": values[k % len(values)]}
                 for k, i in enumerate(repeated_ids)})
    by_java, by_us, by_pypaimon = _three_reads(java, table, path)
    assert by_java == want
    assert by_us == want
    assert by_pypaimon == want


@pytest.mark.parametrize("int96", [True, False], ids=["with-int96", "int64-only"])
def test_pre_1970_timestamps_of_every_precision_in_one_file(java, wh, int96):
    """TIMESTAMP(0/3/6) (INT64 millis / micros: with their logical type, or plain next to an
    INT96 column) and TIMESTAMP(9) (INT96), top-level and nested, all before 1970: Java reads
    every one as written."""
    path = str(wh / "mixed")
    unit = "ns" if int96 else "us"   # of the nested ones
    schema = pa.schema([("id", pa.int32()),
                        ("ts0", pa.timestamp("s")), ("ts3", pa.timestamp("ms")),
                        ("ts6", pa.timestamp("us")),
                        ("ltz3", pa.timestamp("ms", tz="UTC")),
                        ("ltz6", pa.timestamp("us", tz="UTC"))]
                       + ([("ts9", pa.timestamp("ns")), ("ltz9", pa.timestamp("ns", tz="UTC"))]
                          if int96 else [])
                       + [("arr", pa.list_(pa.timestamp(unit))),
                          ("st", pa.struct([("x", pa.timestamp(unit))]))])
    table = Table.create(path, schema)
    div = {"s": 10 ** 9, "ms": 10 ** 6, "us": 10 ** 3, "ns": 1}
    cols = {"id": pa.array(range(len(NS)), pa.int32())}
    for f in schema:
        if pa.types.is_timestamp(f.type):
            cols[f.name] = pa.array([v // div[f.type.unit] for v in NS], f.type)
    nested = [v // div[unit] for v in NS]
    cols["arr"] = pa.array([[v, nested[0], None] for v in nested], schema.field("arr").type)
    cols["st"] = pa.array([{"x": v} for v in nested], schema.field("st").type)
    data = pa.table(cols, schema=schema)
    _write(table, data)

    want = sorted_rows(data, schema)
    assert sorted_rows(java.read(path), schema) == want
    assert sorted_rows(table.read_arrow(), schema) == want
    # pypaimon 2.1 reads TIMESTAMP(0) stored as plain INT64 millis (the form it takes next to
    # an INT96 column, see writer._RollingFile) as seconds: compared without that column.
    others = pa.schema([f for f in schema if not (int96 and f.name == "ts0")])
    assert sorted_rows(pp_read(path), others) == sorted_rows(data, others)


def test_pre_1970_batch_after_a_later_one_rolls_to_a_new_file(java, wh, monkeypatch):
    """A file opened for post-1970 values gets pre-1970 ones in a later row group: the writer
    starts a new file for them, and Java reads every row of both."""
    monkeypatch.setattr(writer_module, "ROW_GROUP_ROWS", 4)  # a row group every 4 rows
    path = str(wh / "roll")
    schema = pa.schema([("id", pa.int32()), ("ts", pa.timestamp("ns"))])
    table = Table.create(path, schema)
    later = [v for v in NS if v >= 0][:4]
    earlier = [v for v in NS if v < 0][:4]
    values = later + earlier
    w = table.new_writer()
    w.write_arrow(pa.table({"id": pa.array(range(4), pa.int32()),
                            "ts": pa.array(later, pa.timestamp("ns"))}))
    w.write_arrow(pa.table({"id": pa.array(range(4, 8), pa.int32()),
                            "ts": pa.array(earlier, pa.timestamp("ns"))}))
    msgs = w.prepare_commit()
    assert [f.row_count for m in msgs for f in m.new_files] == [4, 4]
    with table.new_commit() as c:
        c.commit(msgs)
    want = {i: {"id": i, "ts": v} for i, v in enumerate(values)}
    by_java, by_us, by_pypaimon = _three_reads(java, table, path)
    assert by_java == want
    assert by_us == want
    assert by_pypaimon == want
