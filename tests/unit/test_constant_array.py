"""constant_array (a partition column filled from its partition) gives what pa.repeat of
pa.scalar gives, for every type and edge value, without importing pandas on the common types."""
import datetime
import decimal
import os
import subprocess
import sys

import pyarrow as pa
import pytest

from paimon_commit.format.types import constant_array

CASES = [
    (pa.int8(), [0, 127, -128]), (pa.int16(), [-32768, 32767]),
    (pa.int32(), [0, 7, -1, 2 ** 31 - 1, -(2 ** 31)]), (pa.int64(), [2 ** 63 - 1, -(2 ** 63)]),
    (pa.float32(), [1.5, -0.0, float("inf")]), (pa.float64(), [3.25, 1e300, 7]),
    (pa.bool_(), [True, False]),
    (pa.date32(), [datetime.date(2024, 2, 29), datetime.date(1, 1, 1),
                   datetime.date(9999, 12, 31), datetime.date(1969, 12, 31)]),
    (pa.string(), ["", "a b/c=é", "日本"]), (pa.large_string(), ["x", ""]),
    (pa.binary(), [b"", b"\x00\xff"]), (pa.large_binary(), [b"ab"]),
    # the rest through pa.scalar
    (pa.decimal128(10, 2), [decimal.Decimal("12.34")]),
    (pa.timestamp("ms"), [datetime.datetime(2024, 1, 1, 12, 30)]),
    (pa.timestamp("us", tz="UTC"), [datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc)]),
    (pa.time32("ms"), [datetime.time(1, 2, 3)]),
]


@pytest.mark.parametrize("type_,values", CASES, ids=[str(t) for t, _ in CASES])
@pytest.mark.parametrize("n", [0, 1, 9, 1000])
def test_same_as_repeat_of_scalar(type_, values, n):
    for v in values + [None]:
        got = constant_array(v, type_, n)
        want = pa.repeat(pa.scalar(v, type=type_), n)
        got.validate(full=True)
        assert got.type == type_ and len(got) == n
        assert got.equals(want), (v, got, want)
        assert got.null_count == (n if v is None else 0)


@pytest.mark.parametrize("type_,value", [(pa.int8(), 128), (pa.int32(), 2 ** 31),
                                         (pa.date32(), "2024-01-01")])
def test_a_value_that_does_not_fit_fails_as_pa_scalar_fails(type_, value):
    with pytest.raises(Exception) as want:
        pa.scalar(value, type=type_)
    with pytest.raises(type(want.value)):
        constant_array(value, type_, 3)


def test_common_partition_types_do_not_import_pandas():
    code = ("import sys, datetime, pyarrow as pa\n"
            "from paimon_commit.format.types import constant_array\n"
            "for v, t in [(5, pa.int32()), ('x', pa.string()), (datetime.date(2024, 1, 1), "
            "pa.date32()), (True, pa.bool_()), (None, pa.int64()), (2.5, pa.float64())]:\n"
            "    constant_array(v, t, 10)\n"
            "print('pandas' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=os.path.dirname(os.path.dirname(os.path.dirname(
                             os.path.abspath(__file__)))))
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"
