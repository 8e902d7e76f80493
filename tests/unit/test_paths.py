import collections
import datetime
import decimal
import glob
import math
import os
import random
import re
import struct
import uuid

import fastavro
import pyarrow as pa
import pytest
from pypaimon import CatalogFactory
from pypaimon import Schema as PySchema
from pypaimon.schema.data_types import DataTypeParser
from pypaimon.utils.file_store_path_factory import FileStorePathFactory, _escape_partition_component

from paimon_commit.format import paths as P
from paimon_commit.format.binary_row import deserialize_binary_row, serialize_binary_row
from paimon_commit.format.types import arrow_to_paimon, parse_atomic

D = decimal.Decimal
UTC = datetime.timezone.utc
dt = datetime.datetime


# ------------------------------------------------------------------------------------------
# Escaping
# ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("raw, escaped", [
    ("a b", "a b"), ("x/y", "x%2Fy"), ("ü=#%", "ü%3D%23%25"), ("a:b*?", "a%3Ab%2A%3F"),
    ("\x00\x01\x1f\x7f", "%00%01%1F%7F"), ('"\'\\{}[]^', "%22%27%5C%7B%7D%5B%5D%5E"),
    ("2024-01-01T10:00", "2024-01-01T10%3A00"), ("日本", "日本"), ("~!@$&()+,;<>|`", "~!@$&()+,;<>|`"),
    ("\x80\xa0", "\x80\xa0"),
])
def test_escape(raw, escaped):
    assert P.escape_path_name(raw) == escaped
    assert P.unescape_path_name(escaped) == raw


def test_escape_matches_pypaimon_for_all_ascii():
    for c in map(chr, range(128)):
        assert P.escape_path_name(c) == _escape_partition_component(c)
        assert P.unescape_path_name(P.escape_path_name(c)) == c
    s = "".join(map(chr, range(1, 300)))
    assert P.escape_path_name(s) == _escape_partition_component(s)


def test_unescape_details():
    # a trailing %XX is decoded too (Java's unescapePathName skips it; we want an inverse)
    assert P.unescape_path_name("a%2F") == "a/"
    assert P.unescape_path_name("100%") == "100%"
    assert P.unescape_path_name("%zz%4") == "%zz%4"
    assert P.unescape_path_name("%2f") == "/"


def test_escape_refuses_empty():
    with pytest.raises(ValueError):
        P.escape_path_name("")


# ------------------------------------------------------------------------------------------
# Partition value strings
# ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("value, t, expected", [
    ("2024-01-01", "STRING", "2024-01-01"), ("a b", "VARCHAR(5)", "a b"), ("x", "CHAR(1)", "x"),
    (None, "STRING", "__DEFAULT_PARTITION__"), ("", "STRING", "__DEFAULT_PARTITION__"),
    (" \t\n", "STRING", "__DEFAULT_PARTITION__"), (None, "INT NOT NULL", "__DEFAULT_PARTITION__"),
    (-5, "TINYINT", "-5"), (2 ** 40, "BIGINT", "1099511627776"), (0, "INT", "0"),
    (True, "BOOLEAN", "true"), (False, "BOOLEAN", "false"),
    (datetime.date(2024, 1, 1), "DATE", "19723"), (datetime.date(1960, 5, 3), "DATE", "-3530"),
    (datetime.time(10, 0, 1, 500000), "TIME(0)", "36001500"), (datetime.time(0), "TIME(3)", "0"),
    (D("1.5"), "DECIMAL(10, 2)", "1.50"), (D("-0.01"), "DECIMAL(10, 2)", "-0.01"),
    (D("0"), "DECIMAL(10, 2)", "0.00"), (D("-0"), "DECIMAL(10, 2)", "0.00"), (7, "DECIMAL(5, 0)", "7"),
    (D("-1E-10"), "DECIMAL(38, 10)", "-0.0000000001"),
    (D("12345678901234567890.5"), "DECIMAL(38, 10)", "12345678901234567890.5000000000"),
    (dt(2024, 1, 1, 10, 0), "TIMESTAMP(3)", "2024-01-01T10:00"),
    (dt(2024, 1, 1, 10, 0, 5), "TIMESTAMP(3)", "2024-01-01T10:00:05"),
    (dt(2024, 1, 1, 10, 0, 5, 123000), "TIMESTAMP(3)", "2024-01-01T10:00:05.123"),
    (dt(2024, 1, 1, 10, 0, 0, 120000), "TIMESTAMP(6)", "2024-01-01T10:00:00.120"),
    (dt(2024, 1, 1, 10, 0, 5, 123456), "TIMESTAMP(6)", "2024-01-01T10:00:05.123456"),
    (dt(2024, 1, 1, 10, 0, 0, 1), "TIMESTAMP(9)", "2024-01-01T10:00:00.000001"),
    (dt(1969, 12, 31, 23, 59, 59, 999000), "TIMESTAMP(3)", "1969-12-31T23:59:59.999"),
    (dt(5, 1, 1), "TIMESTAMP(0)", "0005-01-01T00:00"),
    (dt(2024, 1, 1, 10, 0, 5, 1, tzinfo=UTC), "TIMESTAMP_LTZ(6)", "2024-01-01T10:00:05.000001"),
    (dt(2024, 1, 1, 12, tzinfo=datetime.timezone(datetime.timedelta(hours=2))),
     "TIMESTAMP(6) WITH LOCAL TIME ZONE", "2024-01-01T10:00"),
    (dt(2024, 1, 1, 10), "TIMESTAMP_LTZ(3)", "2024-01-01T10:00"),
    (1.5, "FLOAT", "1.5"), (0.1, "FLOAT", "0.1"), (1e10, "FLOAT", "1.0E10"), (-0.0, "FLOAT", "-0.0"),
    (3.4e38, "FLOAT", "3.4E38"), (1e-5, "FLOAT", "1.0E-5"), (123456.7, "FLOAT", "123456.7"),
    (3, "FLOAT", "3.0"), (1.401298464324817e-45, "FLOAT", "1.4E-45"),
    (0.1, "DOUBLE", "0.1"), (1e7, "DOUBLE", "1.0E7"), (9999999.0, "DOUBLE", "9999999.0"),
    (1e-3, "DOUBLE", "0.001"), (0.00099, "DOUBLE", "9.9E-4"), (1 / 3, "DOUBLE", "0.3333333333333333"),
    (0.0, "DOUBLE", "0.0"), (5e-324, "DOUBLE", "4.9E-324"), (1.7976931348623157e308, "DOUBLE",
                                                             "1.7976931348623157E308"),
])
def test_partition_value_string(value, t, expected):
    assert P.partition_value_string(value, t) == expected


def test_default_name_option():
    assert P.partition_value_string(None, "INT", "nil") == "nil"
    assert P.partition_path(["k"], [" "], ["STRING"], default_name="a/b") == "k=a%2Fb"


@pytest.mark.parametrize("value, t", [
    (float("nan"), "DOUBLE"), (float("inf"), "FLOAT"), (float("-inf"), "DOUBLE"),
    (b"abc", "BYTES"), (b"abcd", "BINARY(4)"),
    ("\u00a0", "STRING"), ("\u2007 ", "STRING"), ("\x85", "STRING"),
    ("2", "INT"), (dt(2024, 1, 1, 0, 0, 0, 1), "TIMESTAMP(3)"), (D("1.234"), "DECIMAL(10, 2)"),
    (dt(2024, 1, 1, tzinfo=UTC), "TIMESTAMP(6)"),
])
def test_partition_value_refused(value, t):
    with pytest.raises((TypeError, ValueError)):
        P.partition_value_string(value, t)


def test_whitespace_agreement_with_java():
    # blank for both Java (Character.isWhitespace) and Python: default partition
    for s in [" ", "\t", "\u2003", "\u3000", "\x1c\x1d\x1e\x1f", "\u2028"]:
        assert P.partition_value_string(s, "STRING") == P.DEFAULT_PARTITION_NAME
    # not blank for either: kept
    for s in [" a ", "\u200b"]:
        assert P.partition_value_string(s, "STRING") == s


def test_error_names_the_key():
    with pytest.raises(TypeError) as e:
        P.partition_path(["dt", "hr"], ["2024-01-01", "2"], ["STRING", "INT"])
    assert str(e.value) == "partition key 'hr' expects INT, got '2' (str)"


def _pypaimon_dir(values, types, keys=None):
    keys = keys or ["k%d" % i for i in range(len(values))]
    factory = FileStorePathFactory(
        "/tbl", keys, "__DEFAULT_PARTITION__", "parquet", "data-", "changelog-", True, False, "zstd",
        partition_types=[DataTypeParser.parse_data_type(t) for t in types])
    rel = factory.relative_bucket_path(tuple(values), 0, canonical_partition=True)
    assert rel.endswith("/bucket-0")
    return rel[:-len("/bucket-0")]


def test_float_strings_match_pypaimon_random():
    rng = random.Random(99)
    for _ in range(3000):
        bits = rng.getrandbits(64)
        (d,) = struct.unpack("<d", bits.to_bytes(8, "little"))
        f = struct.unpack("<f", bits.to_bytes(8, "little")[:4])[0]
        for value, t in ((d, "DOUBLE"), (f, "FLOAT"), (rng.uniform(-1e9, 1e9), "DOUBLE"),
                         (round(rng.uniform(-1000, 1000), rng.randint(0, 4)), "FLOAT")):
            if math.isnan(value) or math.isinf(value):
                continue
            assert "k0=" + P.escape_path_name(P.partition_value_string(value, t)) == \
                _pypaimon_dir([value], [t])


@pytest.mark.parametrize("values, types", [
    (["2024-01-01", 1], ["STRING", "INT"]),
    ([datetime.date(2024, 1, 1), None, "x/y"], ["DATE", "INT", "STRING"]),
    ([D("1.50"), D("-128.0000000000")], ["DECIMAL(10, 2)", "DECIMAL(38, 10)"]),
    ([dt(2024, 1, 1, 10, 0, 5, 123000), dt(2024, 1, 1, 10, 0, 5, 123456)],
     ["TIMESTAMP(3)", "TIMESTAMP(6)"]),
    ([dt(2024, 1, 1, 10, tzinfo=UTC)], ["TIMESTAMP_LTZ(6)"]),
    ([dt(2024, 1, 1, 10, 0, 0, 5, tzinfo=UTC)], ["TIMESTAMP(6) WITH LOCAL TIME ZONE"]),
    ([datetime.time(10, 0, 1, 500000), True, -3], ["TIME(0)", "BOOLEAN", "SMALLINT"]),
    (["", " ", None], ["STRING", "STRING", "STRING"]),
    (["ü=#%", "a:b*?", "\x01\x7f"], ["STRING", "VARCHAR(9)", "CHAR(2)"]),
])
def test_partition_path_matches_pypaimon(values, types):
    keys = ["k%d" % i for i in range(len(values))]
    assert P.partition_path(keys, values, types) == _pypaimon_dir(values, types, keys)


def test_partition_path_escapes_keys():
    assert P.partition_path(["a=b", "c"], [1, 2], ["INT", "INT"]) == "a%3Db=1/c=2"


def test_partition_path_layout():
    assert P.partition_path([], [], []) == ""
    path = P.partition_path(["dt", "hr"], [datetime.date(2024, 1, 1), 1], ["DATE", "INT"])
    assert path == "dt=19723/hr=1"
    assert P.data_dir(path, 0) == "dt=19723/hr=1/bucket-0"
    assert P.data_dir("", 0) == "bucket-0"
    with pytest.raises(ValueError):
        P.partition_path(["a"], [1, 2], ["INT"])


def test_bucket_dir():
    assert P.bucket_dir(0) == "bucket-0"
    assert P.bucket_dir(12) == "bucket-12"
    assert P.bucket_dir(-2) == "bucket-postpone"
    with pytest.raises(ValueError):
        P.bucket_dir(-1)
    with pytest.raises(TypeError):
        P.bucket_dir(True)
    with pytest.raises(TypeError):
        P.bucket_dir("0")  # type: ignore[arg-type]


# ------------------------------------------------------------------------------------------
# Against real pypaimon tables
# ------------------------------------------------------------------------------------------

TABLE_CASES = {
    "ti": (pa.int8(), [-5, 7, None]),
    "si": (pa.int16(), [-300, 2]),
    "i": (pa.int32(), [-1, 0, 2 ** 31 - 1]),
    "bi": (pa.int64(), [2 ** 40, -(2 ** 63)]),
    "bo": (pa.bool_(), [True, False, None]),
    "s": (pa.string(), ["a b", "x/y", "ü=#%", " ", "", None, "a:b*?", "\x01\x7f", "long string value"]),
    "d": (pa.date32(), [datetime.date(2024, 1, 1), datetime.date(1960, 5, 3), None]),
    "f": (pa.float32(), [1.5, 0.1, 1e10, -0.0, 3.4e38, 1e-5, 123456.7]),
    "db": (pa.float64(), [1.5, 0.1, 1e10, 1e7, 9999999.0, 1e-3, 0.00099, 1 / 3]),
    "dec": (pa.decimal128(10, 2), [D("1.5"), D("-0.01"), D("0"), None]),
    "dec38": (pa.decimal128(38, 10), [D("-128"), D("12345678901234567890.5"), D("-1E-10")]),
    "ts0": (pa.timestamp("s"), [dt(2024, 1, 1, 0, 0)]),
    "ts3": (pa.timestamp("ms"), [dt(2024, 1, 1, 10, 0), dt(2024, 1, 1, 10, 0, 5),
                                 dt(2024, 1, 1, 10, 0, 5, 123000), dt(1969, 12, 31, 23, 59, 59, 999000),
                                 None]),
    "ts6": (pa.timestamp("us"), [dt(2024, 1, 1, 10, 0, 5, 123456), dt(2024, 1, 1, 10, 0, 5, 123000),
                                 dt(1969, 12, 31, 23, 59, 59, 999999)]),
    "ts9": (pa.timestamp("ns"), [dt(2024, 1, 1, 10, 0, 5, 1)]),
    "ltz": (pa.timestamp("us", tz="UTC"), [dt(2024, 1, 1, 10, 0, 5, 1, tzinfo=UTC)]),
    "ltz3": (pa.timestamp("ms", tz="UTC"), [dt(2024, 1, 1, 10, 0, tzinfo=UTC)]),
    "tm": (pa.time32("ms"), [datetime.time(10, 0, 1, 500000), datetime.time(0, 0)]),
}


@pytest.fixture(scope="module")
def pypaimon_tables(tmp_path_factory):
    warehouse = str(tmp_path_factory.mktemp("wh"))
    catalog = CatalogFactory.create({"warehouse": warehouse})
    catalog.create_database("db", True)
    roots = {}
    for name, (arrow_type, values) in TABLE_CASES.items():
        schema = pa.schema([pa.field("id", pa.int64()), pa.field("p", arrow_type)])
        catalog.create_table("db.t_" + name, PySchema.from_pyarrow_schema(schema, partition_keys=["p"]),
                             False)
        table = catalog.get_table("db.t_" + name)
        builder = table.new_batch_write_builder()
        write, commit = builder.new_write(), builder.new_commit()
        write.write_arrow(pa.table({"id": list(range(len(values))),
                                    "p": pa.array(values, type=arrow_type)}, schema=schema))
        commit.commit(write.prepare_commit())
        write.close()
        commit.close()
        roots[name] = os.path.join(warehouse, "db.db", "t_" + name)
    return roots


def _manifest_entries(root):
    for path in glob.glob(os.path.join(root, "manifest", "manifest-*")):
        if os.path.basename(path).startswith("manifest-list-"):
            continue
        with open(path, "rb") as f:
            yield from fastavro.reader(f)


def _java_differs_from_pypaimon(value, t):
    a = parse_atomic(t)
    if a.root == "DECIMAL" and a.precision > 18 or a.root.startswith("TIMESTAMP") and a.precision > 3:
        return value is None
    return False


@pytest.mark.parametrize("name", sorted(TABLE_CASES))
def test_directories_and_partition_bytes_match_pypaimon(pypaimon_tables, name):
    arrow_type, values = TABLE_CASES[name]
    paimon_type = arrow_to_paimon(arrow_type)
    root = pypaimon_tables[name]
    expected_dirs = {P.partition_path(["p"], [v], [paimon_type]) for v in values}
    actual_dirs = {d for d in os.listdir(root) if d.startswith("p=")}
    assert actual_dirs == expected_dirs
    entries = list(_manifest_entries(root))
    assert len(entries) == len(values)
    decoded = []
    for e in entries:
        partition = e["_PARTITION"]
        (value,) = deserialize_binary_row(partition, [paimon_type])
        decoded.append(value)
        if not _java_differs_from_pypaimon(value, paimon_type):
            assert serialize_binary_row([value], [paimon_type]) == partition
        data_dir = P.data_dir(P.partition_path(["p"], [value], [paimon_type]), e["_BUCKET"])
        assert os.path.isfile(os.path.join(root, data_dir, e["_FILE"]["_FILE_NAME"]))

    def norm(v):
        if isinstance(v, float):
            return struct.pack(">f" if paimon_type == "FLOAT" else ">d", v)
        return v
    assert collections.Counter(map(norm, decoded)) == collections.Counter(map(norm, values))


# ------------------------------------------------------------------------------------------
# File names
# ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name, expected", [
    ("snapshot-1", 1), ("snapshot-0", 0), ("snapshot-123456789", 123456789),
    ("snapshot-9223372036854775807", 2 ** 63 - 1), ("snapshot-9223372036854775808", None),
    ("snapshot-01", None), ("snapshot-", None), ("snapshot-+1", None), ("snapshot--1", None),
    ("snapshot-1 ", None), (" snapshot-1", None), ("snapshot-1.tmp", None),
    (".snapshot-1.%s.tmp" % uuid.uuid4(), None), ("LATEST", None), ("EARLIEST", None),
    ("snapshot-١", None), ("snapshot-1a", None), ("Snapshot-1", None), ("schema-1", None),
])
def test_parse_snapshot_id(name, expected):
    assert P.parse_snapshot_id(name) == expected


def test_id_file_names():
    assert P.snapshot_file_name(5) == "snapshot-5"
    assert P.parse_snapshot_id(P.snapshot_file_name(2 ** 63 - 1)) == 2 ** 63 - 1
    assert P.schema_file_name(0) == "schema-0"
    assert P.parse_schema_id("schema-3") == 3
    assert P.parse_schema_id("schema-03") is None
    assert P.parse_schema_id("snapshot-3") is None
    assert P.changelog_file_name(7) == "changelog-7"
    assert P.parse_changelog_id("changelog-7") == 7
    for bad in (-1, 2 ** 63):
        with pytest.raises(ValueError):
            P.snapshot_file_name(bad)
    for bad in (True, 1.0, "1"):
        with pytest.raises(TypeError):
            P.snapshot_file_name(bad)  # type: ignore[arg-type]


def test_tag_and_consumer_names():
    assert P.tag_file_name("t3") == "tag-t3"
    assert P.parse_tag_name("tag-t3") == "t3"
    assert P.parse_tag_name("tag-2024-01-01 10") == "2024-01-01 10"
    assert P.parse_tag_name("tag-") is None
    assert P.parse_tag_name(".tag-t3.x.tmp") is None
    assert P.parse_tag_name("t3") is None
    assert P.consumer_file_name("c1") == "consumer-c1"
    assert P.parse_consumer_id("consumer-c1") == "c1"
    assert P.parse_consumer_id("consumer-") is None
    assert P.parse_consumer_id("tag-c1") is None
    for bad in ("", "  ", "a/b", "a\\b", "a\x00", "../x"):
        with pytest.raises(ValueError):
            P.tag_file_name(bad)
        with pytest.raises(ValueError):
            P.consumer_file_name(bad)
    # '..' as a name is fine once prefixed: "tag-.." is a plain file name
    assert P.tag_file_name("..") == "tag-.."


def test_manifest_and_data_names():
    u = uuid.UUID("9c8a0000-0000-4000-8000-000000000001")
    assert P.new_manifest_name(u, 0) == "manifest-%s-0" % u
    assert P.new_manifest_list_name(str(u), 1) == "manifest-list-%s-1" % u
    assert P.data_file_name("data-", u, 0, "parquet") == "data-%s-0.parquet" % u
    assert P.data_file_name("data-", u, 3, "zstd.parquet") == "data-%s-3.zstd.parquet" % u
    for bad_n in (-1, True, 1.5):
        with pytest.raises(ValueError):
            P.new_manifest_name(u, bad_n)  # type: ignore[arg-type]
    for bad_ext in ("", ".parquet", None):
        with pytest.raises(ValueError):
            P.data_file_name("data-", u, 0, bad_ext)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        P.data_file_name("x/", u, 0, "parquet")
    with pytest.raises(ValueError):
        P.new_manifest_name("a/b", 0)


def test_temp_files():
    name = P.temp_file_name("snapshot-5")
    m = re.fullmatch(r"\.snapshot-5\.([0-9a-f-]{36})\.tmp", name)
    assert m and uuid.UUID(m.group(1))
    assert P.temp_file_name("snapshot-5") != name
    assert P.temp_file_name("LATEST", uuid="u1") == ".LATEST.u1.tmp"
    assert P.is_temp_file(name)
    assert P.is_temp_file(".anything.tmp")
    assert not P.is_temp_file("snapshot-5")
    assert not P.is_temp_file("snapshot-5.tmp")
    assert not P.is_temp_file(".hidden")
    assert P.parse_snapshot_id(name) is None
    with pytest.raises(ValueError):
        P.temp_file_name("a/b")


@pytest.mark.parametrize("name", [
    "", ".", "..", "a/b", "/abs", "a\\b", "\\\\server\\share", "a\x00b", "C:", "c:evil",
    "../x", None, 5,
])
def test_validate_bare_file_name_rejects(name):
    with pytest.raises(ValueError) as e:
        P.validate_bare_file_name(name, "data file name")  # type: ignore[arg-type]
    assert "data file name" in str(e.value)


@pytest.mark.parametrize("name", [
    "data-9c8a-0.parquet", "manifest-list-x-1", "...", ".hidden", "a b", "日本", "ab:c", "tag-..",
])
def test_validate_bare_file_name_accepts(name):
    assert P.validate_bare_file_name(name, "x") == name
