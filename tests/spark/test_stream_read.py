"""Streaming reads (`readStream.format("paimon")`): each row exactly once; COMPACT snapshots,
which rewrite rows already delivered, are skipped as Paimon's streaming scan skips them."""
import collections

import pytest

from conftest import D1, make_rows, write
from operations.test_compact import _fill, _table
from oracle import pp_write

from paimon_commit import ExpireConfig, ExpireSnapshots, Table
from paimon_commit.operations.compact import compact_table

pytestmark = pytest.mark.slow


def _start(spark, table_path, ckpt, **options):
    from paimon_commit.spark import register
    register(spark)
    seen = []

    def collect(df, batch_id):
        seen.extend(r["id"] for r in df.select("id").collect())
    reader = spark.readStream.format("paimon")
    for k, v in options.items():
        reader = reader.option(k, v)
    q = reader.load(str(table_path)).writeStream.foreachBatch(collect) \
        .option("checkpointLocation", str(ckpt)).start()
    return q, seen


def test_stream_sends_each_row_once_across_a_compaction(spark, table_path, tmp_path):
    t = _table(table_path)
    ids = _fill(t, n=5, hrs=(1, 2))                      # snapshots 1..10
    q, seen = _start(spark, table_path, tmp_path / "ckpt")
    try:
        q.processAllAvailable()
        assert sorted(seen) == sorted(ids)               # the first batch: snapshot 10 in full
        write(t, make_rows(range(500, 505), hr=1))       # 11
        q.processAllAvailable()
        r = compact_table(str(table_path))               # 12: rewrites every row of hr=1, 2
        assert r.snapshot_id == 12 and r.rewritten_files == 11
        assert Table.open(str(table_path)).snapshot(12).commit_kind == "COMPACT"
        q.processAllAvailable()
        write(t, make_rows(range(600, 603), hr=2))       # 13
        q.processAllAvailable()
    finally:
        q.stop()
    expected = ids + list(range(500, 505)) + list(range(600, 603))
    counts = collections.Counter(seen)
    assert [i for i, n in counts.items() if n > 1] == []  # nothing sent twice
    assert sorted(seen) == sorted(expected)               # nothing lost


def test_stream_skips_overwrites_unless_asked(spark, table_path, tmp_path):
    # Paimon's default: an OVERWRITE snapshot is not read by a stream
    # (streaming-read-overwrite=false); with the option its new rows are.
    for read_overwrite in (False, True):
        path = tmp_path / str(read_overwrite) / "wh" / "db.db" / "t"
        path.parent.mkdir(parents=True)
        t = _table(path)
        write(t, make_rows([1, 2], hr=1))
        q, seen = _start(spark, path, tmp_path / f"ckpt-{read_overwrite}",
                         **{"streaming-read-overwrite": str(read_overwrite).lower()})
        try:
            q.processAllAvailable()
            pp_write(path, make_rows([7], hr=1), overwrite={"dt": D1, "hr": 1})
            write(t, make_rows([9], hr=2))
            q.processAllAvailable()
        finally:
            q.stop()
        assert sorted(seen) == ([1, 2, 7, 9] if read_overwrite else [1, 2, 9])


def test_stream_behind_an_expired_snapshot_fails_clearly(spark, table_path, tmp_path):
    t = _table(table_path)
    write(t, make_rows([1], hr=1))
    q, seen = _start(spark, table_path, tmp_path / "ckpt")
    try:
        q.processAllAvailable()
        q.stop()
        for i in range(2, 6):
            write(t, make_rows([i], hr=1))
        ExpireSnapshots(t.store, ExpireConfig(retain_min=1, retain_max=1,
                                              time_retained_ms=0)).expire()
        assert [s.id for s in Table.open(str(table_path)).snapshots()] == [5]
        q, more = _start(spark, table_path, tmp_path / "ckpt")
        with pytest.raises(Exception) as e:
            q.processAllAvailable()
        assert "snapshot 2 of" in str(e.value) and "was expired before this stream read it" \
            in str(e.value)
        assert more == []
    finally:
        q.stop()
    assert seen == [1]
