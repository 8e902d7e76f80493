"""The supported Python versions are stated once and agree everywhere (setup.cfg's
python_requires and classifiers, the README, the versions `make test` runs tests/unit on), and
what differs between them is handled (3.10's datetime.fromisoformat rejects a trailing "Z")."""
import configparser
import datetime
import os
import re

from paimon_commit.table_maintenance import cutoff_ms

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _setup_cfg():
    cfg = configparser.ConfigParser()
    cfg.read(os.path.join(ROOT, "setup.cfg"))
    return cfg


def test_versions_agree_everywhere():
    cfg = _setup_cfg()
    requires = cfg["options"]["python_requires"].replace(" ", "")
    assert requires == ">=3.10,<3.14"
    stated = ["3.10", "3.11", "3.12", "3.13"]
    classifiers = re.findall(r"Programming Language :: Python :: (3\.\d+)",
                             cfg["metadata"]["classifiers"])
    assert classifiers == stated
    makefile = open(os.path.join(ROOT, "Makefile")).read()
    assert re.search(r"^PYVERSIONS \?= (.*)$", makefile, re.M).group(1).split() == stated
    readme = open(os.path.join(ROOT, "README.md")).read()
    assert "Python 3.10, 3.11, 3.12 and 3.13 (`python_requires = >=3.10, <3.14`)" in readme
    assert "(Python 3.10 to 3.13; see [Python versions](#python-versions))" in readme


def test_a_utc_cutoff_with_z_is_read_on_every_version():
    z = cutoff_ms("2024-06-01T12:00:00Z", "older_than")
    assert z == int(datetime.datetime(2024, 6, 1, 12, tzinfo=datetime.timezone.utc)
                    .timestamp() * 1000)
    assert cutoff_ms("2024-06-01T12:00:00+00:00", "older_than") == z


def test_iso_times_read_as_python_3_11_reads_them():
    from paimon_commit.format.python_values import parse_iso_datetime
    utc = datetime.timezone.utc
    assert parse_iso_datetime("2026-11-24T21:16:22.45761Z") == \
        datetime.datetime(2026, 11, 24, 21, 16, 22, 457610, tzinfo=utc)
    assert parse_iso_datetime("2024-06-01 12:00:00.5") == \
        datetime.datetime(2024, 6, 1, 12, 0, 0, 500000)
    assert parse_iso_datetime("2024-06-01T12:00:00.1234567+02:00") == \
        datetime.datetime(2024, 6, 1, 12, 0, 0, 123456,
                          tzinfo=datetime.timezone(datetime.timedelta(hours=2)))
    assert parse_iso_datetime("2024-06-01") == datetime.datetime(2024, 6, 1)
