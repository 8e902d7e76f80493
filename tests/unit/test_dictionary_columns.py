"""Which columns the writer dictionary-encodes: the prefix check added for speed decides
exactly as counting every sampled value does, and the parquet files show the decision."""
import io
import random

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from paimon_commit.writer import DICTIONARY_MAX_RATIO, _dictionary_columns


def full_count_rule(t):
    limit = max(1, t.num_rows * DICTIONARY_MAX_RATIO)
    return [n for n in t.column_names if not pa.types.is_nested(t.column(n).type)
            and pc.count_distinct(t.column(n)).as_py() <= limit]


def columns(n, seed):
    rng = random.Random(seed)
    limit = max(1, int(n * DICTIONARY_MAX_RATIO))
    return {
        "unique": list(range(n)),
        "constant": ["x"] * n,
        # exactly `limit` distinct values, all inside the prefix: dictionary
        "at_limit_early": [i % limit for i in range(n)],
        # one more than `limit`, the extra one at the very end: no dictionary
        "over_limit_late": [i % limit for i in range(n - 1)] + [-1],
        # `limit` + 1 distinct values, all inside the prefix: no dictionary
        "over_limit_early": [i % (limit + 1) for i in range(n)],
        "random_low": [rng.randrange(max(1, limit // 2)) for _ in range(n)],
        "nested": [[i] for i in range(n)],
        "nulls": pa.array([None] * n, pa.string()),
    }


@pytest.mark.parametrize("n", [10, 100, 2_001, 10_000])
def test_prefix_check_decides_as_the_full_count(n):
    t = pa.table(columns(n, n))
    got = _dictionary_columns(t)
    assert got == full_count_rule(t)
    assert "unique" not in got and "constant" in got and "nested" not in got
    assert ("over_limit_late" in got) is False
    assert ("at_limit_early" in got) is True


def test_the_file_uses_dictionary_pages_only_for_the_chosen_columns():
    t = pa.table(columns(10_000, 1))
    chosen = _dictionary_columns(t)
    buf = io.BytesIO()
    pq.write_table(t, buf, use_dictionary=chosen)
    meta = pq.ParquetFile(pa.BufferReader(buf.getvalue())).metadata.row_group(0)
    has_dict = {meta.column(i).path_in_schema: meta.column(i).has_dictionary_page
                for i in range(meta.num_columns)}
    assert has_dict["unique"] is False and has_dict["constant"] is True
    assert has_dict["over_limit_early"] is False and has_dict["at_limit_early"] is True
