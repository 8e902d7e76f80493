import datetime
import os
import sys

import pyarrow as pa
import pytest

sys.path.insert(0, os.path.dirname(__file__))

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("dt", pa.date32()),
                    ("hr", pa.int32())])
D1 = datetime.date(2024, 1, 1)
D2 = datetime.date(2024, 1, 2)


def make_rows(ids, dt=D1, hr=1, name=None):
    return pa.Table.from_pylist(
        [{"id": i, "name": name or f"n{i}", "dt": dt, "hr": hr} for i in ids], schema=SCHEMA)


@pytest.fixture
def table_path(tmp_path):
    """<wh>/db.db/t: the layout pypaimon's filesystem catalog expects."""
    p = tmp_path / "wh" / "db.db" / "t"
    p.parent.mkdir(parents=True)
    return p


@pytest.fixture
def table(table_path):
    from paimon_commit import Table
    return Table.create(str(table_path), SCHEMA, partition_keys=["dt", "hr"])


def write(table, data, commit=None, identifier=None):
    """Write `data` and commit it as one snapshot; returns the snapshot id."""
    w = table.new_writer()
    w.write_arrow(data)
    msgs = w.prepare_commit()
    if commit is not None:
        return commit.commit(msgs, identifier)
    with table.new_commit() as c:
        return c.commit(msgs, identifier)


def files_under(path):
    """Every file of the table, relative; not the maintenance lease's records
    (`.maintenance/`: bookkeeping of who maintains the table, which every destructive run
    leaves; tests/operations/test_lease.py looks at them)."""
    out = []
    for root, dirs, names in os.walk(path):
        if os.path.realpath(root) == os.path.realpath(path):
            dirs[:] = [d for d in dirs if d != ".maintenance"]
        for n in names:
            out.append(os.path.relpath(os.path.join(root, n), path))
    return sorted(out)


@pytest.fixture(scope="session")
def spark():
    """One local Spark session for every test that needs it (tests/spark, tests/objectstore)."""
    pytest.importorskip("pyspark")
    from pyspark.sql import SparkSession
    os.environ.setdefault("PYSPARK_PYTHON", os.sys.executable)
    s = (SparkSession.builder.master("local[2]").appName("paimon-commit-tests")
         .config("spark.ui.enabled", "false")
         .config("spark.sql.shuffle.partitions", "4")
         .config("spark.driver.memory", "1g")
         .getOrCreate())
    s.sparkContext.setLogLevel("ERROR")
    yield s
    s.stop()


def without_bill(out):
    """A command's text output without the run's trailing `requests:` line (and its
    `estimated cost:` line): tests that compare the rest of the text exactly drop it here
    (tests/operations/test_request_bill.py checks the line itself)."""
    lines = out.splitlines(keepends=True)
    while lines and lines[-1].startswith(("requests: ", "estimated cost: ")):
        lines.pop()
    return "".join(lines)


class OrphanReadAhead:
    """What `orphan_read_ahead` set up, and which of orphan cleanup's paths the test took:
    per snapshot mark, whether it was taken on this (the main) thread; per re-check before a
    batch, whether it read with a pool."""

    def __init__(self, concurrent):
        self.concurrent = concurrent
        self.marks_here, self.recheck_pools = [], []


@pytest.fixture(params=["sequential", "concurrent"])
def orphan_read_ahead(request, monkeypatch):
    """Orphan cleanup on real local directories both ways: "sequential", local disk as it is
    (read-ahead 1: the order of old), and "concurrent", LocalFileIO (and the subclasses tests
    make of it) given an object store's read-ahead of 8, so that a real run takes the paths
    of one (operations/orphan.py): the used set read on the listing pool while the
    candidates are listed and the lease taken meanwhile (where find_orphans is not
    overridden), the storage probed beside the listing, the re-check before each batch
    reading the marked snapshot and the next id in one wave beside the lease check, branch/
    listed beside the main roots, lists prefetched per root. After the test: every re-check
    took its mode's path. `marks_here`: per delete phase's mark (`_mark_from`, made where the
    used set is read), whether it was made on the main thread."""
    import threading
    from paimon_commit.io.local import LocalFileIO
    from paimon_commit.operations.orphan import OrphanFilesCleaner
    seen = OrphanReadAhead(request.param == "concurrent")
    if seen.concurrent:
        monkeypatch.setattr(LocalFileIO, "read_concurrency", 8)
    mark, recheck = OrphanFilesCleaner._mark_from, OrphanFilesCleaner._committed_since_with

    def spy_mark(self, roots_by_branch):
        seen.marks_here.append(threading.current_thread() is threading.main_thread())
        return mark(self, roots_by_branch)

    def spy_recheck(self, since, pool):
        seen.recheck_pools.append(pool is not None)
        return recheck(self, since, pool)
    monkeypatch.setattr(OrphanFilesCleaner, "_mark_from", spy_mark)
    monkeypatch.setattr(OrphanFilesCleaner, "_committed_since_with", spy_recheck)
    yield seen
    if not seen.concurrent:
        assert set(seen.marks_here) <= {True}, seen.marks_here
    assert set(seen.recheck_pools) <= {seen.concurrent}, seen.recheck_pools
