"""`repair` computes every data file path with the schema of its handle. An ALTER of the table
(a new schema file, by another engine) and a write under it that land after repair's first
look at the schema history (while `repair --apply` waits for the maintenance lease, while it
runs its long check, between its plan and a commit attempt) made a file written under the new
schema look missing at the path the old one gives: repair gave it up although it exists, and
published its snapshot under the older schema (audit issue25d d2). Repair now reads the schema
history again under the lease, after the check and in every commit attempt, and refuses with
nothing written when a newer schema appeared. Real tables in tmp dirs; the ALTER is a schema
file written as Paimon writes one, the write is this library's (it honours the new
`partition.default-name`)."""
import json
import os
import threading

import pyarrow as pa
import pytest

from conftest import files_under, without_bill

from paimon_commit import Table
from paimon_commit.cli import main as cli_main
from paimon_commit.operations import repair as repair_module
from paimon_commit.operations.repair import RepairError

SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.string())])


def write(table, ids, p):
    w = table.new_writer()
    w.write_arrow(pa.table({"id": ids, "p": [p] * len(ids)}, schema=SCHEMA))
    with table.new_commit() as c:
        return c.commit(w.prepare_commit())


def alter(table_path, **options):
    """ALTER TABLE ... SET (options): the next schema file, as Paimon writes one."""
    sd = table_path / "schema"
    last = max(int(n.split("-")[1]) for n in os.listdir(sd))
    doc = json.loads((sd / f"schema-{last}").read_text())
    doc["id"] = last + 1
    doc["options"].update(options)
    (sd / f"schema-{last + 1}").write_text(json.dumps(doc))


def alter_and_write(table_path):
    """Another engine: ALTER the null partition's directory name, then write a null row (id
    9), which lands in p=NULLP/bucket-0."""
    alter(table_path, **{"partition.default-name": "NULLP"})
    write(Table.open(str(table_path)), [9], None)


def data_files(table_path):
    return sorted(f for f in files_under(table_path) if "/bucket-" in f)


def snapshot_ids(table_path):
    return sorted(int(n.split("-")[1]) for n in os.listdir(table_path / "snapshot")
                  if n.startswith("snapshot-"))


@pytest.fixture
def table(table_path):
    """Snapshot 1: ids 1..3 with a null partition value (p=__DEFAULT_PARTITION__); snapshot 2:
    id 4 in p=a, whose file is then lost (deleted by hand): something for repair to do."""
    t = Table.create(str(table_path), SCHEMA, partition_keys=["p"])
    write(t, [1, 2, 3], None)
    write(t, [4], "a")
    (lost,) = [f for f in data_files(table_path) if f.startswith("p=a/")]
    os.unlink(table_path / lost)
    return t


def refused(table_path):
    return (f"error: cannot repair {table_path}: its schema changed while repair ran (schema "
            f"1 is newer than schema 0, with which repair computed the paths of the data "
            f"files): files written under it may be where schema 0 does not look. Nothing was "
            f"written; run repair again (open the table again first)\n")


def test_an_alter_and_a_write_while_repair_waits_for_the_lease(table, table_path, capsys,
                                                              monkeypatch):
    # `repair --apply` waits for another maintainer's lease; meanwhile another engine ALTERs
    # the table and writes id 9 to p=NULLP/bucket-0. Before: repair, its paths computed with
    # schema 0, looked for that file in p=__DEFAULT_PARTITION__/bucket-0 (listed: the old null
    # rows are there), gave it up and published snapshot 4 under schema 0: "committed snapshot
    # 4 (OVERWRITE) without 2 missing data file(s)", id 9 lost although its file exists.
    from tests.operations.test_lease import Holder
    holder = Holder(table)
    waiting = threading.Event()
    real_lease = repair_module.maintenance_lease

    def lease(store, op, **kw):
        waiting.set()   # repair checked the schema history and now waits for the holder
        return real_lease(store, op, **kw)

    monkeypatch.setattr(repair_module, "maintenance_lease", lease)
    result = {}
    run = threading.Thread(target=lambda: result.setdefault("code", cli_main(
        ["repair", str(table_path), "--apply", "--lease-wait", "60 s"])))
    run.start()
    try:
        assert waiting.wait(30)
        alter_and_write(table_path)
    finally:
        holder.release()
        run.join(60)
    out = capsys.readouterr()
    assert (result["code"], without_bill(out.out)) == (1, "")
    assert out.err == refused(table_path)
    # Nothing published: the writer's snapshot 3 is the latest and names id 9's file, which
    # is on disk (as are the null rows written before the ALTER).
    assert snapshot_ids(table_path) == [1, 2, 3]
    latest = Table.open(str(table_path)).store.snapshots.latest_snapshot()
    assert (latest.id, latest.schema_id, latest.total_record_count) == (3, 1, 5)
    assert [f.rpartition("/")[0] for f in data_files(table_path)] == \
        ["p=NULLP/bucket-0", "p=__DEFAULT_PARTITION__/bucket-0"]


def test_an_alter_and_a_write_during_the_check(table, table_path, monkeypatch):
    # The same, landing while repair --apply runs its check (after the lease was taken): the
    # check reads snapshot 3, whose id 9 it looks for at the old path. The plan refuses.
    real_check = repair_module.check_table

    def check(store, progress=None):
        alter_and_write(table_path)
        return real_check(store, progress)

    monkeypatch.setattr(repair_module, "check_table", check)
    handle = Table.open(str(table_path))
    with pytest.raises(RepairError) as e:
        handle.repair(apply=True)
    assert f"error: {e.value}\n" == refused(table_path)
    assert snapshot_ids(table_path) == [1, 2, 3]
    live = Table.open(str(table_path)).store.snapshots.latest_snapshot()
    assert (live.schema_id, live.total_record_count) == (1, 5)
    assert len(data_files(table_path)) == 2


def test_an_alter_and_a_write_between_the_plan_and_a_commit_attempt(table, table_path,
                                                                   monkeypatch):
    # Between the plan (which gives up the lost file of id 4) and the commit: the attempt
    # finds snapshot 3 of schema 1 to build on. Before: it published snapshot 4 under schema
    # 0 on top of it. Now the attempt refuses and nothing is committed.
    real_pick = repair_module._Repair._pick
    calls = []

    def pick(self, latest, live):
        calls.append(latest.id)
        if len(calls) == 2:   # the first commit attempt
            alter_and_write(table_path)
            latest = self.store.snapshots.latest_snapshot()
            live = self.store.live_entries(latest)
        return real_pick(self, latest, live)

    monkeypatch.setattr(repair_module._Repair, "_pick", pick)
    with pytest.raises(RepairError) as e:
        Table.open(str(table_path)).repair(apply=True)
    assert f"error: {e.value}\n" == refused(table_path)
    assert calls == [2, 2]
    assert snapshot_ids(table_path) == [1, 2, 3]
    latest = Table.open(str(table_path)).store.snapshots.latest_snapshot()
    assert (latest.schema_id, latest.total_record_count) == (1, 5)


def test_a_rival_commit_under_a_newer_schema_during_the_publish_is_refused_on_retry(
        table, table_path, monkeypatch):
    # The ALTER and the write land after the attempt chose its files, right before it
    # publishes: the publish loses the race to snapshot 3, and the retry refuses.
    from paimon_commit.snapshots import SnapshotManager
    real_try = SnapshotManager.try_commit
    done = []

    def try_commit(self, snapshot, *a, **kw):
        if not done and snapshot.commit_user.startswith("repair-"):
            done.append(1)
            alter_and_write(table_path)
        return real_try(self, snapshot, *a, **kw)

    monkeypatch.setattr(SnapshotManager, "try_commit", try_commit)
    with pytest.raises(RepairError) as e:
        Table.open(str(table_path)).repair(apply=True)
    assert done and f"error: {e.value}\n" == refused(table_path)
    assert snapshot_ids(table_path) == [1, 2, 3]
    latest = Table.open(str(table_path)).store.snapshots.latest_snapshot()
    assert (latest.schema_id, latest.total_record_count) == (1, 5)


def test_a_repair_after_the_refusal_with_an_unchanged_layout_runs(table, table_path):
    # A newer schema that moves no file (here: a retention option) refuses only the run that
    # saw it appear; a new handle repairs.
    alter(table_path, **{"snapshot.num-retained.max": "100"})
    r = Table.open(str(table_path)).repair(apply=True)
    assert r.snapshot_id == 3 and [f.path for f in r.files][0].startswith("p=a/bucket-0/")
    assert sorted(Table.open(str(table_path)).read_arrow().column("id").to_pylist()) == \
        [1, 2, 3]
