"""Paimon Java 1.0 reads every snapshot and tag of tables we write and maintain, and gets the
rows we read and pypaimon reads (issue 11, items 3, 4 and 6).

Every partition type and every column type our writer supports; '' and null partition values;
appends, overwrites, partition drops, tags, expiration, rollback — all done by us.
"""
import datetime
import decimal
import os

import pyarrow as pa
import pytest

from javaoracle import sorted_rows
from oracle import pp_read

from paimon_commit import ExpireConfig, ExpireSnapshots, Table
from tests.tablefiles import table_walk  # noqa: E402

D = decimal.Decimal
DT = datetime.datetime

# (case id, Arrow type of the partition column, Paimon type when Java creates the table (None:
# we create it from the Arrow schema), values — each one partition; the first two are
# overwritten and dropped later, so they are ordinary values).
PARTITION_CASES = [
    ("string", pa.string(), None, ["a", "b c", "x=y/z", "", None]),
    ("tinyint", pa.int8(), None, [1, -128, 127, None]),
    ("smallint", pa.int16(), None, [7, -32768, None]),
    ("int", pa.int32(), None, [0, 2147483647, -5, None]),
    ("bigint", pa.int64(), None, [10, -(2 ** 63), None]),
    ("boolean", pa.bool_(), None, [True, False, None]),
    ("date", pa.date32(), None, [datetime.date(2024, 1, 1), datetime.date(1969, 12, 31), None]),
    ("decimal", pa.decimal128(10, 2), None, [D("1.50"), D("-0.01"), D("12345678.99"), None]),
    ("decimal38", pa.decimal128(38, 6), None, [D("1.000001"), D("-123456789012.5"), None]),
    ("char", pa.string(), "CHAR(5)", ["ab", "abcde", "", None]),
    ("varchar", pa.string(), "VARCHAR(10)", ["k1", "k 2", "", None]),
    ("timestamp3", pa.timestamp("ms"), None,
     [DT(2024, 1, 1, 12, 30, 0, 123000), DT(2024, 1, 2), None]),
    ("timestamp6", pa.timestamp("us"), None, [DT(2024, 1, 1, 12, 30, 0, 123456), None]),
    ("double", pa.float64(), None, [1.5, -2.25, None]),
]


def _schema(ptype):
    return pa.schema([("id", pa.int64()), ("name", pa.string()), ("p", ptype)])


def _rows(schema, ids, values):
    return pa.Table.from_pylist(
        [{"id": i, "name": f"n{i}", "p": values[i % len(values)]} for i in ids], schema=schema)


def _write(table, data, overwrite=None):
    w = table.new_writer()
    w.write_arrow(data)
    msgs = w.prepare_commit()
    with table.new_commit() as c:
        if overwrite is not None:
            return c.overwrite(msgs, partition=overwrite)
        return c.commit(msgs)


def assert_three_readers_agree(java, table, path, schema, expected=None, snapshot_id=None,
                               tag=None):
    """Java, we and pypaimon read the same rows (and `expected`, when given)."""
    ours = sorted_rows(table.read_arrow(snapshot_id=snapshot_id, tag=tag), schema)
    theirs = sorted_rows(java.read(path, snapshot_id=snapshot_id, tag=tag), schema)
    where = f"snapshot {snapshot_id}" if tag is None else f"tag {tag}"
    assert theirs == ours, f"Paimon Java and paimon_commit disagree at {where}"
    assert sorted_rows(pp_read(path, snapshot_id=snapshot_id, tag=tag), schema) == ours, \
        f"pypaimon and paimon_commit disagree at {where}"
    if expected is not None:
        assert ours == sorted_rows(expected, schema), f"unexpected rows at {where}"


@pytest.mark.parametrize("case", PARTITION_CASES, ids=[c[0] for c in PARTITION_CASES])
def test_java_reads_every_snapshot_and_tag_of_ours_by_partition_type(java, wh, case):
    name, ptype, java_sql, values = case
    path = str(wh / f"t_{name}")
    schema = _schema(ptype)
    if java_sql is None:
        table = Table.create(path, schema, partition_keys=["p"])
    else:  # CHAR/VARCHAR: no Arrow spelling, so Java creates the (append) table
        java.create_table(path, [("id", "BIGINT"), ("name", "STRING"), ("p", java_sql)],
                          partition_keys=["p"])
        table = Table.open(path)
    expected = {}
    n = len(values)
    s1 = _write(table, _rows(schema, range(0, 3 * n), values))
    expected[s1] = _rows(schema, range(0, 3 * n), values)
    s2 = _write(table, _rows(schema, range(100, 100 + 2 * n), values))
    expected[s2] = pa.concat_tables([expected[s1], _rows(schema, range(100, 100 + 2 * n),
                                                          values)])
    table.create_tag("after-appends", snapshot_id=s2)
    first = values[0]
    s3 = _write(table, _rows(schema, [500, 501], [first]), overwrite={"p": first})
    keep = [r for r in expected[s2].to_pylist() if r["p"] != first]
    expected[s3] = pa.Table.from_pylist(keep + _rows(schema, [500, 501], [first]).to_pylist(),
                                        schema=schema)
    with table.new_commit() as c:
        s4 = c.drop_partitions([{"p": values[1]}])
    expected[s4] = pa.Table.from_pylist(
        [r for r in expected[s3].to_pylist() if r["p"] != values[1]], schema=schema)
    s5 = _write(table, _rows(schema, range(900, 900 + n), values))
    expected[s5] = pa.concat_tables([expected[s4], _rows(schema, range(900, 900 + n), values)])
    table.create_tag("latest", snapshot_id=s5)
    assert [s1, s2, s3, s4, s5] == [1, 2, 3, 4, 5]

    for sid in range(1, 6):
        assert_three_readers_agree(java, table, path, schema, expected[sid], snapshot_id=sid)

    # Our expiration: snapshots 1 and 2 go, the tag on 2 keeps its files.
    ExpireSnapshots(table.store, ExpireConfig(retain_min=3, time_retained_ms=0,
                                              max_deletes=100)).expire()
    assert [s.id for s in table.snapshots()] == [3, 4, 5]
    for sid in (3, 4, 5):
        assert_three_readers_agree(java, table, path, schema, expected[sid], snapshot_id=sid)
    assert_three_readers_agree(java, table, path, schema, expected[2], tag="after-appends")
    assert_three_readers_agree(java, table, path, schema, expected[5], tag="latest")
    assert java.tag_names(path) == ["after-appends", "latest"]


def test_empty_string_partition_stays_empty_string(java, wh):
    """'' and null share the default-partition directory but stay distinct values: Java's own
    writer keeps '' in the partition row (issue 11 item 2)."""
    path = str(wh / "t")
    schema = _schema(pa.string())
    table = Table.create(path, schema, partition_keys=["p"])
    _write(table, pa.Table.from_pylist([{"id": 1, "name": "e", "p": ""},
                                        {"id": 2, "name": "n", "p": None},
                                        {"id": 3, "name": "v", "p": "v"}], schema=schema))
    got = {r["id"]: r["p"] for r in java.read(path).to_pylist()}
    assert got == {1: "", 2: None, 3: "v"}
    assert {r["id"]: r["p"] for r in table.read_arrow().to_pylist()} == got
    # Both rows live in the default-partition directory.
    assert sorted(d for d in os.listdir(path) if d.startswith("p=")) == \
        ["p=__DEFAULT_PARTITION__", "p=v"]


# Every column type our writer takes from Arrow (paimon_commit/format/types.py), with nulls and
# edge values. Decimals <= 18 digits and TIMESTAMP(9) are the types issue 11 item 7 is about.
COLUMN_TYPES = pa.schema([
    ("id", pa.int64()),
    ("b", pa.bool_()),
    ("i8", pa.int8()),
    ("i16", pa.int16()),
    ("i32", pa.int32()),
    ("i64", pa.int64()),
    ("f32", pa.float32()),
    ("f64", pa.float64()),
    ("dec5", pa.decimal128(5, 2)),
    ("dec9", pa.decimal128(9, 0)),
    ("dec18", pa.decimal128(18, 4)),
    ("dec30", pa.decimal128(30, 6)),
    ("dec38", pa.decimal128(38, 10)),
    ("s", pa.string()),
    ("bin", pa.binary()),
    ("fbin", pa.binary(4)),
    ("d", pa.date32()),
    ("t", pa.time32("ms")),
    ("ts0", pa.timestamp("s")),
    ("ts3", pa.timestamp("ms")),
    ("ts6", pa.timestamp("us")),
    ("ts9", pa.timestamp("ns")),
    ("ltz3", pa.timestamp("ms", tz="UTC")),
    ("ltz6", pa.timestamp("us", tz="UTC")),
    ("ltz9", pa.timestamp("ns", tz="UTC")),
    ("arr", pa.list_(pa.int32())),
    ("m", pa.map_(pa.string(), pa.int64())),
    ("st", pa.struct([("x", pa.int32()), ("y", pa.string())])),
    ("dt", pa.string()),
])


def _typed_rows(ids):
    rows = []
    for i in ids:
        null = i % 5 == 4
        rows.append({
            "id": i,
            "b": None if null else i % 2 == 0,
            "i8": None if null else [-128, 127, 0, i % 100][i % 4],
            "i16": None if null else [-32768, 32767, i][i % 3],
            "i32": None if null else [-2 ** 31, 2 ** 31 - 1, i * 1000][i % 3],
            "i64": None if null else [-2 ** 63, 2 ** 63 - 1, i * 10 ** 12][i % 3],
            "f32": None if null else [1.5, -0.0, 3.4e38, float(i)][i % 4],
            "f64": None if null else [1e-300, -2.5, float(i) / 3][i % 3],
            "dec5": None if null else [D("999.99"), D("-999.99"), D(i) / 4][i % 3],
            "dec9": None if null else [D("999999999"), D(-i)][i % 2],
            "dec18": None if null else [D("99999999999999.9999"), D(i) / 8][i % 2],
            "dec30": None if null else [D("-999999999999999999999999.999999"), D(i)][i % 2],
            "dec38": None if null else [D("9999999999999999999999999999.9999999999"),
                                        D(i) / 1024][i % 2],
            "s": None if null else ["", "héllo wörld", "x" * 300, f"s{i}"][i % 4],
            "bin": None if null else [b"", bytes(range(256)), b"\x00\x01"][i % 3],
            "fbin": None if null else bytes([i % 256, 1, 2, 3]),
            "d": None if null else [datetime.date(1, 1, 1), datetime.date(9999, 12, 31),
                                    datetime.date(2024, 2, 29)][i % 3],
            "t": None if null else [datetime.time(0, 0), datetime.time(23, 59, 59, 999000),
                                    datetime.time(12, 0, 0, 1000)][i % 3],
            "ts0": None if null else DT(2024, 1, 1, 0, 0, i % 60),
            "ts3": None if null else DT(1969, 12, 31, 23, 59, 59, 999000),
            "ts6": None if null else DT(2024, 5, 1, 12, 0, 0, i),
            "ts9": None if null else pa.scalar(1_700_000_000_123_456_789 + i,
                                                 pa.timestamp("ns")).as_py(),
            "ltz3": None if null else DT(2024, 5, 1, 12, 0, 0, 123000,
                                         tzinfo=datetime.timezone.utc),
            "ltz6": None if null else DT(2024, 5, 1, 12, 0, 0, i, tzinfo=datetime.timezone.utc),
            "ltz9": None if null else pa.scalar(1_700_000_000_987_654_321 + i,
                                                  pa.timestamp("ns", tz="UTC")).as_py(),
            "arr": None if null else [[], [1, None, 3], [i]][i % 3],
            "m": None if null else [{}, {"a": 1, "b": None}][i % 2],
            "st": None if null else {"x": i, "y": None if i % 2 else f"y{i}"},
            "dt": ["2024-01-01", "2024-01-02"][i % 2],
        })
    return pa.Table.from_pylist(rows, schema=COLUMN_TYPES)


def _column_view(table: pa.Table):
    """Rows by id, each value as Python sees it (maps as sorted item lists)."""
    out = {}
    for r in table.select(COLUMN_TYPES.names).to_pylist():
        if r["m"] is not None:
            r["m"] = sorted(r["m"] if isinstance(r["m"], list) else r["m"].items())
        out[r["id"]] = r
    return out


def _java_view(java_table: pa.Table):
    """Another reader's Arrow types cast to ours (Java returns e.g. ns timestamps for
    TIMESTAMP(9)); also used for pypaimon's reads."""
    cols = []
    for f in COLUMN_TYPES:
        col = java_table.column(f.name)
        cols.append(col if col.type == f.type else col.cast(f.type))
    return _column_view(pa.Table.from_arrays(cols, names=COLUMN_TYPES.names))


def _null_ts0(t: pa.Table) -> pa.Table:
    i = t.schema.get_field_index("ts0")
    return t.set_column(i, t.schema.field(i), pa.nulls(t.num_rows, t.schema.field(i).type))


def test_java_reads_every_column_type_we_write(java, wh):
    path = str(wh / "types")
    table = Table.create(path, COLUMN_TYPES, partition_keys=["dt"])
    data1, data2 = _typed_rows(range(0, 40)), _typed_rows(range(40, 60))
    s1 = _write(table, data1)
    assert _write(table, data2) == s1 + 1
    table.create_tag("v1", snapshot_id=s1)
    want1 = _column_view(data1)
    want2 = {**want1, **_column_view(data2)}
    assert _column_view(table.read_arrow(snapshot_id=s1)) == want1
    assert _column_view(table.read_arrow()) == want2
    # pypaimon 2.1 reads TIMESTAMP(0) stored as plain INT64 millis (next to a TIMESTAMP(9)
    # column, see writer._RollingFile) as seconds: compared without that column.
    def without_ts0(view):
        return {k: {c: v for c, v in r.items() if c != "ts0"} for k, r in view.items()}
    assert without_ts0(_java_view(_null_ts0(pp_read(path, snapshot_id=s1)))) == \
        without_ts0(want1)
    assert without_ts0(_java_view(_null_ts0(pp_read(path)))) == without_ts0(want2)
    assert _java_view(java.read(path, snapshot_id=s1)) == want1
    assert _java_view(java.read(path)) == want2
    assert _java_view(java.read(path, tag="v1")) == want1


@pytest.mark.parametrize("precision", [7, 8, 9])
def test_java_reads_high_precision_timestamps_we_write(java, wh, precision):
    """TIMESTAMP(7..9) in a table Java created: our parquet must be what Java 1.0 reads."""
    path = str(wh / f"ts{precision}")
    java.create_table(path, [("id", "INT"), ("ts", f"TIMESTAMP({precision})"),
                             ("ltz", f"TIMESTAMP({precision}) WITH LOCAL TIME ZONE")])
    table = Table.open(path)
    base = 1_700_000_000_123_456_789
    step = 10 ** (9 - precision)
    ns = [base // step * step + i * step for i in range(5)]
    data = pa.table({"id": pa.array(range(5), pa.int32()),
                     "ts": pa.array(ns, pa.timestamp("ns")),
                     "ltz": pa.array(ns, pa.timestamp("ns", tz="UTC"))})
    _write(table, data)
    got = java.read(path)
    assert sorted(zip(got.column("id").to_pylist(),
                      got.column("ts").cast(pa.int64()).to_pylist(),
                      got.column("ltz").cast(pa.int64()).to_pylist())) == \
        [(i, ns[i], ns[i]) for i in range(5)]


def test_java_reads_mixed_timestamp_precisions_in_one_file(java, wh):
    """TIMESTAMP(9) next to TIMESTAMP(3)/(6) columns: each column must get the physical type
    Java's writer gives its precision (INT64 millis / micros, INT96 for 7..9) — a file-wide
    INT96 switch makes Java 1.0 fail on the (6) column (ClassCastException)."""
    path = str(wh / "mixed")
    schema = pa.schema([("id", pa.int32()), ("ts3", pa.timestamp("ms")),
                        ("ts6", pa.timestamp("us")), ("ts9", pa.timestamp("ns")),
                        ("ltz6", pa.timestamp("us", tz="UTC"))])
    table = Table.create(path, schema)
    ns = 1_700_000_000_123_456_789
    data = pa.table({"id": pa.array([1, 2], pa.int32()),
                     "ts3": pa.array([ns // 10 ** 6, None], pa.timestamp("ms")),
                     "ts6": pa.array([ns // 1000, ns // 1000 + 1], pa.timestamp("us")),
                     "ts9": pa.array([ns, None], pa.timestamp("ns")),
                     "ltz6": pa.array([None, ns // 1000], pa.timestamp("us", tz="UTC"))},
                    schema=schema)
    _write(table, data)
    got = java.read(path)
    assert sorted_rows(got, schema) == sorted_rows(data, schema)
    assert sorted_rows(table.read_arrow(), schema) == sorted_rows(data, schema)


def test_java_reads_ours_after_rollback_and_tag_deletion(java, wh):
    path = str(wh / "rb")
    schema = _schema(pa.date32())
    days = [datetime.date(2024, 1, d) for d in (1, 2, 3)]
    table = Table.create(path, schema, partition_keys=["p"])
    for k in range(4):
        _write(table, _rows(schema, range(10 * k, 10 * k + 6), days))
    table.create_tag("two", snapshot_id=2)
    table.create_tag("four", snapshot_id=4)
    before2 = sorted_rows(java.read(path, snapshot_id=2), schema)
    table.rollback_to(tag="two")
    assert java.latest_snapshot_id(path) == 2
    assert java.tag_names(path) == ["two"]
    assert sorted_rows(java.read(path), schema) == before2
    table.delete_tag("two")
    assert java.tag_names(path) == []
    # Java appends on top of our rollback; we read what Java reads. (pypaimon 2.1 cannot read
    # manifests written by Java 1.0: KeyError '_VALUE_STATS_COLS'.)
    assert java.write(path, _rows(schema, [999], days)) == 3
    want = before2 + sorted_rows(_rows(schema, [999], days), schema)
    assert sorted_rows(java.read(path), schema) == sorted_rows(pa.Table.from_pylist(want), schema)
    assert sorted_rows(Table.open(path).read_arrow(), schema) == \
        sorted_rows(java.read(path), schema)


def test_orphan_cleanup_matches_java_with_two_partition_levels(java, wh):
    """Our orphan cleanup and Java's, on copies of one table of ours with two partition levels
    (where Java 1.0's cleanup deadlocks with its default pool on 2 cores): the same files go,
    and Java reads every retained snapshot and tag afterwards."""
    import shutil
    import time
    from paimon_commit import CleanContext, OrphanFilesCleaner

    schema = pa.schema([("id", pa.int64()), ("dt", pa.date32()), ("hr", pa.int32())])
    path = str(wh / "two")
    table = Table.create(path, schema, partition_keys=["dt", "hr"])
    days = [datetime.date(2024, 1, 1), datetime.date(2024, 1, 2)]
    for k in range(4):
        _write(table, pa.Table.from_pylist(
            [{"id": 10 * k + i, "dt": days[i % 2], "hr": i % 3} for i in range(6)],
            schema=schema))
    table.create_tag("t2", snapshot_id=2)
    with table.new_commit() as c:
        c.drop_partitions([{"dt": days[0], "hr": 0}])
    ExpireSnapshots(table.store, ExpireConfig(retain_min=2, time_retained_ms=0,
                                              max_deletes=100)).expire()
    reads = {s.id: sorted_rows(java.read(path, snapshot_id=s.id)) for s in table.snapshots()}
    tag_rows = sorted_rows(java.read(path, tag="t2"))
    planted = []
    for root, dirs, _ in table_walk(path):
        if os.path.basename(root).startswith("bucket-"):
            rel = os.path.relpath(root, path)
            planted.append(os.path.join(rel, f"data-orphan-{len(planted)}-0.parquet"))
    planted.append("manifest/manifest-orphan-0")
    for rel in planted:
        with open(os.path.join(path, rel), "wb") as f:
            f.write(b"x")
    past = time.time() - 2 * 86400
    for root, _, names in table_walk(path):
        for n in names:
            os.utime(os.path.join(root, n), (past, past))
    theirs = str(wh / "two-java")
    shutil.copytree(path, theirs)

    def listing(p):
        return sorted(os.path.relpath(os.path.join(r, n), p)
                      for r, _, ns in table_walk(p) for n in ns)
    before = listing(path)
    older_than = int(time.time() * 1000) - 86_400_000
    result = OrphanFilesCleaner(CleanContext(path, older_than_ms=older_than)).clean()
    by_java = java.remove_orphan_files(theirs, older_than_ms=older_than)
    # The drop and the expiration left unused files too; both must find the same set.
    assert sorted(result.deleted_paths) == by_java
    assert set(planted) <= set(by_java)
    assert sorted(set(before) - set(listing(path))) == by_java
    assert listing(path) == listing(theirs)
    for sid, want in reads.items():
        assert sorted_rows(java.read(path, snapshot_id=sid)) == want
    assert sorted_rows(java.read(path, tag="t2")) == tag_rows


def test_java_reads_sql_only_types_we_write_into_a_java_table(java, wh):
    """Types with no Arrow spelling of their own (CHAR, VARCHAR, BINARY, VARBINARY, TIME(3),
    TINY decimals, NOT NULL columns): Java creates the table, we write it, Java reads it."""
    path = str(wh / "sqltypes")
    java.create_table(path, [("id", "INT NOT NULL"), ("c", "CHAR(5)"), ("vc", "VARCHAR(10)"),
                             ("b", "BINARY(3)"), ("vb", "VARBINARY(8)"), ("t", "TIME(3)"),
                             ("d1", "DECIMAL(1, 0)"), ("d18", "DECIMAL(18, 18)")])
    table = Table.open(path)
    data = pa.table({
        "id": pa.array([1, 2, 3], pa.int32()),
        "c": ["abcde", "a", None],
        "vc": ["", "héllo", None],
        "b": [b"\x00\x01\x02", b"abc", None],
        "vb": [b"", b"\xff" * 8, None],
        "t": pa.array([datetime.time(0, 0), datetime.time(23, 59, 59, 999000), None],
                      pa.time32("ms")),
        "d1": pa.array([D("9"), D("-9"), None], pa.decimal128(1, 0)),
        "d18": pa.array([D("0.999999999999999999"), D("-0.000000000000000001"), None],
                        pa.decimal128(18, 18)),
    })
    _write(table, data)
    got = java.read(path)
    schema = table.arrow_schema()
    assert sorted_rows(got, schema) == sorted_rows(table.read_arrow(), schema)
    assert sorted_rows(got, schema) == sorted_rows(data, schema)


def test_java_streams_the_appends_we_commit(java, wh):
    """A Java (Flink-style) streaming reader of a table we write gets each APPEND snapshot's
    rows once, as +I, and skips our OVERWRITE and drop snapshots (Paimon's default)."""
    schema = _schema(pa.int32())
    path = str(wh / "stream")
    table = Table.create(path, schema, partition_keys=["p"])
    batches = {}
    for k in range(3):
        data = _rows(schema, range(10 * k, 10 * k + 4), [1, 2])
        batches[_write(table, data)] = data
    _write(table, _rows(schema, [100], [1]), overwrite={"p": 1})
    with table.new_commit() as c:
        c.drop_partitions([{"p": 2}])
    data = _rows(schema, [200, 201], [3])
    batches[_write(table, data)] = data
    got = java.read_changelog(path, 1)
    assert [sid for sid, _ in got] == sorted(batches)
    for sid, rows in got:
        assert set(rows.column("rowkind").to_pylist()) == {"+I"}
        assert sorted_rows(rows.drop_columns(["rowkind"]), schema) == \
            sorted_rows(batches[sid], schema)
