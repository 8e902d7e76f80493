import pytest

from paimon_commit.errors import OptionError
from paimon_commit.options import parse_duration_ms, parse_memory_size, validate_options


@pytest.mark.parametrize("text, ms", [
    ("500 ms", 500), ("30 s", 30_000), ("10 min", 600_000), ("1 h", 3_600_000),
    ("7 d", 604_800_000), ("250", 250), ("2h", 7_200_000), ("1 hours", 3_600_000),
])
def test_durations(text, ms):
    assert parse_duration_ms(text) == ms


@pytest.mark.parametrize("text", ["", "1 fortnight", "ten s", "1.5 h"])
def test_bad_durations(text):
    with pytest.raises(OptionError, match="duration|time unit"):
        parse_duration_ms(text)


def test_sizes():
    assert parse_memory_size("8 mb") == 8 << 20
    assert parse_memory_size("16MB") == 16 << 20
    assert parse_memory_size("1024") == 1024


def test_defaults():
    o = validate_options({})
    assert o["commit.max-retries"] == 10
    assert o["commit.timeout"] is None
    assert (o["commit.min-retry-wait"], o["commit.max-retry-wait"]) == (10, 10_000)
    assert o["manifest.merge-min-count"] == 30
    assert o["manifest.target-file-size"] == 8 << 20
    assert o["manifest.full-compaction-threshold-size"] == 16 << 20
    assert o["snapshot.num-retained.min"] == 10
    assert o["snapshot.time-retained"] == 3_600_000
    assert o["dynamic-partition-overwrite"] is True


def test_bad_bool():
    with pytest.raises(OptionError, match="'dynamic-partition-overwrite': expected 'true'"):
        validate_options({"dynamic-partition-overwrite": "yes"})
