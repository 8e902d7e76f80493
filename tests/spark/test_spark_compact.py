"""Distributed compaction (issue 18, Spark): executors rewrite the bins, the driver commits once;
the same result as the local compaction, conflicts fail cleanly and leave nothing behind."""
import os
import shutil

import pytest

from conftest import D1, files_under, make_rows
from invariants import assert_intact
from operations.test_compact import OPTS, _all_rows, _fill, _table
from oracle import pp_read, pp_write, rows

from paimon_commit import Table
from paimon_commit.errors import CommitConflictError
from paimon_commit.operations.compact import CompactionConflictError, CompactionError, \
    compact_table
from paimon_commit.spark import compact
from paimon_commit.spark.compact import DistributedCompaction

pytestmark = pytest.mark.slow


def _counts(table_path):
    """Live data files per partition (hr), as a reader sees them."""
    out = {}
    for f in Table.open(str(table_path)).live_files():
        out[f.partition["hr"]] = out.get(f.partition["hr"], 0) + 1
    return out


def _summary(r):
    d = r.to_dict()
    d.pop("seconds")
    for p in d["partitions"]:  # bytes written depend on creation times inside the files
        for k in ("bytes_after", "written_bytes"):
            p.pop(k)
    return d


def test_spark_compaction_equals_local(spark, table_path, tmp_path):
    t = _table(table_path)
    ids = _fill(t, n=6, hrs=(1, 2, 3))
    _fill(t, n=2, hrs=(4,), start=10_000)            # too few small files: left alone
    copy = tmp_path / "copy" / "db.db" / "t"
    shutil.copytree(table_path, copy)
    before = _all_rows(table_path, t)

    local_dry = compact_table(str(table_path), dry_run=True)
    spark_dry = compact(spark, str(copy), dry_run=True)
    assert _summary(spark_dry)["partitions"] == _summary(local_dry)["partitions"]
    local = compact_table(str(table_path))
    dist = compact(spark, str(copy), parallelism=2)

    assert dist.snapshot_id == local.snapshot_id == 21
    assert (dist.rewritten_files, dist.written_files) == (18, 3)
    # (`requests`: the request bill counts this process's requests, not Spark executors')
    assert {k: v for k, v in _summary(dist).items() if k not in ("table", "requests")} == \
        {k: v for k, v in _summary(local).items() if k not in ("table", "requests")}
    assert _counts(copy) == _counts(table_path) == {1: 1, 2: 1, 3: 1, 4: 2}
    c = Table.open(str(copy))
    assert c.latest_snapshot().commit_kind == "COMPACT"
    new = [f for f in c.live_files() if f.partition["hr"] != 4]
    assert all(f.file.file_source == 1 for f in new)
    # Rows: the same for our reader and pypaimon, on both tables, now and in every earlier
    # snapshot.
    expected = rows(t.read_arrow(snapshot_id=20))
    assert rows(c.read_arrow()) == rows(pp_read(copy)) == rows(pp_read(table_path)) == expected
    assert len(expected) == len(ids) + 20
    assert {k: v for k, v in _all_rows(copy, c).items() if k != 21} == before
    # Nothing but the snapshot's files was added to the table directory.
    added = set(files_under(copy)) - set(files_under(table_path))
    assert all("compact-" in a or a.startswith(("manifest/", "snapshot/")) for a in added)
    assert_intact(copy)


def test_conflict_on_spark_fails_cleanly_and_leaves_nothing(spark, table_path):
    t = _table(table_path)
    _fill(t, n=5, hrs=(1, 2))
    before = _all_rows(table_path, t)
    written = []

    class OverwrittenMeanwhile(DistributedCompaction):
        def rewrite(self, plan):
            out = super().rewrite(plan)
            written.extend(p for r in out for p in r.paths)
            assert written and all(os.path.exists(p) for p in written)
            # Between the executors' rewrite and the driver's commit: pypaimon overwrites
            # partition hr=2.
            pp_write(table_path, make_rows([500], hr=2), overwrite={"dt": D1, "hr": 2})
            return out

    job = OverwrittenMeanwhile(Table.open(str(table_path)).store, spark, parallelism=2)
    with pytest.raises(CompactionConflictError) as e:
        job.run()
    msg = str(e.value)
    assert "5 of its 10 input files are no longer live in snapshot 11" in msg
    assert f"deleted the {len(written)} file(s) it wrote" in msg
    assert isinstance(e.value, CommitConflictError) and len(e.value.moved_files) == 5
    # No file of this run is left; the overwrite landed; the earlier snapshots read the same.
    assert not any(os.path.exists(p) for p in written)
    assert not [f for f in files_under(table_path) if job.marker in f]
    t = Table.open(str(table_path))
    assert t.latest_snapshot().id == 11 and t.latest_snapshot().commit_kind == "OVERWRITE"
    assert {k: v for k, v in _all_rows(table_path, t).items() if k != 11} == before
    assert [r["id"] for r in rows(pp_read(table_path)) if r["hr"] == 2] == [500]
    assert_intact(table_path)


def test_failing_executor_job_deletes_every_file_of_the_run(spark, table_path):
    # Two bins on two tasks: the task of the second fails on an unreadable input, the first
    # finishes and writes its file, whose result the driver never sees; the driver's sweep
    # (files named with the run's marker) removes it.
    t = _table(table_path)
    _fill(t, n=5, hrs=(1, 2))
    job = DistributedCompaction(t.store, spark, parallelism=2)
    plan = job.job.plan()
    victim = t.store.data_file_path(plan.tasks[1].files[-1])
    with open(victim, "wb") as f:
        f.write(b"not parquet")
    before = files_under(table_path)
    with pytest.raises(CompactionError) as e:
        job.run()
    assert f"a Spark job rewriting the 2 bin(s) of {table_path} failed" in str(e.value)
    assert "nothing is committed; deleted the 1 file(s) it wrote" in str(e.value)
    assert files_under(table_path) == before
    assert Table.open(str(table_path)).latest_snapshot().id == 10


def test_bad_input_is_refused_before_spark_or_io(spark, table_path):
    from paimon_commit.errors import OptionError
    t = _table(table_path)
    _fill(t, n=5, hrs=(1,))
    before = files_under(table_path)
    with pytest.raises(OptionError, match="target-file-size"):
        compact(spark, str(table_path), options={"target-file-size": "big"})
    with pytest.raises(OptionError, match="parallelism must be a positive integer, got 0"):
        compact(spark, str(table_path), parallelism=0)
    with pytest.raises(OptionError, match=r"no data files in partition\(s\) hr=7 in snapshot"):
        compact(spark, str(table_path), partitions=[{"hr": 7}])
    assert files_under(table_path) == before
    assert OPTS["target-file-size"] == "64 kb"


def test_files_of_attempts_the_driver_never_saw_are_removed_after_the_commit(spark, table_path):
    # A speculative duplicate (or a retried attempt) writes the same bin again under the run's
    # marker; the driver commits the files it was handed and deletes the others.
    t = _table(table_path)
    ids = _fill(t, n=5, hrs=(1,))
    planted = []

    class WithADuplicateAttempt(DistributedCompaction):
        def rewrite(self, plan):
            out = super().rewrite(plan)
            d = os.path.dirname(out[0].paths[0])
            dup = os.path.join(d, f"{self.marker}duplicate-attempt-0.parquet")
            shutil.copyfile(out[0].paths[0], dup)
            planted.append(dup)
            return out

    r = WithADuplicateAttempt(t.store, spark).run()
    assert r.snapshot_id == 6 and r.written_files == 1
    assert not os.path.exists(planted[0])
    t = Table.open(str(table_path))
    live = [f.path for f in t.live_files()]
    assert len(live) == 1 and os.path.exists(live[0])
    assert os.path.basename(live[0]).startswith("data-compact-")
    assert [x["id"] for x in rows(pp_read(table_path))] == sorted(ids)
    assert_intact(table_path)
