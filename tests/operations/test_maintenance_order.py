"""Post-commit maintenance runs in one order (operations/maintenance_order.py) after commits and
in warehouse maintenance: tags, partitions, consumers, then snapshots."""
import datetime
import json
import os
import shutil
import time

from conftest import SCHEMA, files_under, make_rows
from invariants import assert_intact

from paimon_commit import Table
from paimon_commit.format.snapshot import Tag
from paimon_commit.tags import TagManager
from paimon_commit.warehouse import maintain_table

TODAY = datetime.date.today()
DAY = 86_400_000
OPTIONS = {"snapshot.num-retained.min": "1", "snapshot.time-retained": "0 ms",
           "partition.expiration-time": "30 d", "consumer.expiration-time": "1 h"}


def _table_with_work_for_every_step(path):
    """Three snapshots of the long-expired partition dt=2024-01-01 (written without
    maintenance), an expired tag on the first, and a reader's consumer, idle for two hours,
    that still holds snapshot 1. One run frees every file of the old partition only if
    partition and consumer expiration run before snapshot expiration."""
    t = Table.create(str(path), SCHEMA, ["dt", "hr"], OPTIONS)
    with t.new_commit(options={"write-only": "true"}) as c:
        for i in range(1, 4):
            w = t.new_writer()
            w.write_arrow(make_rows([i]))
            c.commit(w.prepare_commit(), i)
    TagManager(t.store.io, t.store.root).create(
        Tag("old", t.snapshot(1), datetime.datetime(2001, 1, 1), DAY))
    consumer = path / "consumer" / "consumer-reader"
    consumer.parent.mkdir()
    consumer.write_text(json.dumps({"nextSnapshot": 1}))
    idle = time.time() - 2 * 3600
    os.utime(consumer, (idle, idle))
    return t


def _only_today_is_left(path, rows_today):
    t = Table.open(str(path))
    assert [s.id for s in t.snapshots()] == [t.latest_snapshot().id]
    assert t.tags() == [] and not os.listdir(path / "consumer")
    assert not [f for f in files_under(path) if f.startswith("dt=2024-01-01")]
    assert sorted(t.read_arrow().column("id").to_pylist()) == rows_today
    assert_intact(path)


def test_a_commit_and_warehouse_maintenance_free_everything_in_one_run(tmp_path):
    commit_path = tmp_path / "wh" / "db.db" / "t"
    t = _table_with_work_for_every_step(commit_path)
    warehouse_path = tmp_path / "copy" / "db.db" / "t"
    shutil.copytree(commit_path, warehouse_path, symlinks=True)

    with t.new_commit() as c:   # post-commit maintenance after this commit
        w = t.new_writer()
        w.write_arrow(make_rows([10], dt=TODAY))
        c.commit(w.prepare_commit(), 10)
    m = c.last_maintenance
    assert (m.tags.expired, m.consumers_expired) == (["old"], ["reader"])
    assert [p["dt"] for p in m.partitions.to_dict()["expired_partitions"]] == ["2024-01-01"]
    _only_today_is_left(commit_path, [10])

    r = maintain_table(str(warehouse_path))
    assert r.status == "ok", r.reason
    assert (r.tags_expired, r.consumers_expired) == (["old"], ["reader"])
    assert r.partitions_expired == [{"dt": "2024-01-01", "hr": "1"}]
    _only_today_is_left(warehouse_path, [])


def test_warehouse_maintenance_reports_every_step_in_the_shared_order(tmp_path):
    # Regression: consumer expiration ran without a progress event (a terminal bar showed
    # the snapshot step's predecessor the whole time).
    path = tmp_path / "wh" / "db.db" / "t"
    _table_with_work_for_every_step(path)
    events = []
    r = maintain_table(str(path), "db.t", progress=events.append)
    assert r.status == "ok", r.reason
    phases = [e.phase for e in events]
    assert phases == ["reading metadata", "tag expiration", "partition expiration",
                      "consumer expiration", "snapshot expiration"]
    from paimon_commit.operations import maintenance_order
    # Compaction (first) runs only when asked; the batch tag only after batch commits.
    assert phases[1:] == [s for s in maintenance_order.ORDER
                          if s not in (maintenance_order.COMPACTION, maintenance_order.BATCH_TAG)]
    assert [e.unit for e in events[1:]] == ["tags", "partitions", "consumers", "snapshots"]
