"""Distributed orphan cleanup gives the same result as the local mode."""
import shutil

import pytest

from conftest import make_rows, write
from invariants import assert_intact
from operations.test_orphan import age, plant

from paimon_commit.operations.orphan import CleanContext, OrphanCleanAborted, OrphanFilesCleaner
from paimon_commit.spark.orphan import DistributedOrphanFilesCleaner

pytestmark = pytest.mark.slow


def build(table, table_path):
    """Returns the number of orphans planted."""
    for i in range(1, 9):
        write(table, make_rows([i, 100 + i], hr=i % 4))
    table.create_tag("t3", 3)
    with table.new_commit() as c:
        c.drop_partitions([{"hr": 0}])
        c.expire_snapshots(retain_min=2, time_retained_ms=0)
    planted = len(plant(table_path))
    for hr in range(4):
        d = table_path / "dt=19723" / f"hr={hr}" / "bucket-0"
        d.mkdir(parents=True, exist_ok=True)
        for j in range(5):
            (d / f"data-orphan-{hr}-{j}.parquet").write_text("o" * j)
            planted += 1
    age(table_path)
    return planted


def test_distributed_equals_local(spark, table, table_path, tmp_path):
    planted = build(table, table_path)
    copy = tmp_path / "copy" / "db.db" / "t"
    shutil.copytree(table_path, copy)
    local_dry = OrphanFilesCleaner(CleanContext(str(table_path), dry_run=True)).clean()
    dist_dry = DistributedOrphanFilesCleaner(CleanContext(str(copy), dry_run=True),
                                             spark).clean()
    assert dist_dry.deleted_paths == local_dry.deleted_paths
    assert dist_dry.by_kind == local_dry.by_kind
    assert len(local_dry.deleted_paths) == planted
    local = OrphanFilesCleaner(CleanContext(str(table_path))).clean()
    dist = DistributedOrphanFilesCleaner(CleanContext(str(copy)), spark).clean()
    assert dist.deleted_paths == local.deleted_paths == local_dry.deleted_paths
    assert dist.deleted_dirs == local.deleted_dirs
    assert sorted(p.relative_to(copy) for p in copy.rglob("*")) == \
        sorted(p.relative_to(table_path) for p in table_path.rglob("*"))
    assert_intact(copy, expected_by_tag={"t3": [1, 2, 3, 101, 102, 103]})


def test_distributed_partition_scoped_equals_local(spark, table, table_path, tmp_path):
    # A scoped run on Spark deletes what the local scoped run deletes: only the matching
    # partitions' orphans, no metadata file, the same manifests read.
    build(table, table_path)
    copy = tmp_path / "copy" / "db.db" / "t"
    shutil.copytree(table_path, copy)
    scope = ["hr=[12]"]
    local = OrphanFilesCleaner(CleanContext(str(table_path), partitions=scope)).clean()
    dist = DistributedOrphanFilesCleaner(CleanContext(str(copy), partitions=scope),
                                         spark).clean()
    assert local.deleted_paths and dist.deleted_paths == local.deleted_paths
    assert all(p.startswith(("dt=19723/hr=1/", "dt=19723/hr=2/")) for p in local.deleted_paths)
    assert (dist.manifests_read, dist.manifests_skipped) == \
        (local.manifests_read, local.manifests_skipped)
    assert sorted(p.relative_to(copy) for p in copy.rglob("*")) == \
        sorted(p.relative_to(table_path) for p in table_path.rglob("*"))
    assert (copy / "manifest" / "manifest-lostrace-0").exists()
    assert_intact(copy, expected_by_tag={"t3": [1, 2, 3, 101, 102, 103]})


def test_distributed_aborts_on_unreadable_manifest(spark, table, table_path):
    build(table, table_path)
    s = table.latest_snapshot()
    name = table.store.manifests.read_list(s.base_manifest_list)[0].file_name
    (table_path / "manifest" / name).write_bytes(b"garbage")
    before = sorted(p for p in table_path.rglob("*"))
    with pytest.raises(OrphanCleanAborted):
        DistributedOrphanFilesCleaner(CleanContext(str(table_path)), spark).clean()
    assert sorted(p for p in table_path.rglob("*")) == before


def test_cli_distributed_mode(spark, table, table_path, capsys):
    import json

    from paimon_commit.cli import main
    planted = build(table, table_path)
    assert main(["remove-orphan-files", str(table_path), "--mode", "distributed",
                 "--parallelism", "2", "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["deleted_files"] == planted and not r["dry_run"]
    assert_intact(table_path)


def _cli_with_io(monkeypatch, io_class):
    """Make the CLI open the table with `io_class` (a LocalFileIO subclass local to a test:
    Spark pickles it by value, so the executors run it too)."""
    from paimon_commit.cli import context
    real = context.open_io

    def open_io(path):
        io = real(path)
        out = io_class(io.root)
        out.deletion_log = io.deletion_log
        return out
    monkeypatch.setattr(context, "open_io", open_io)


def test_cli_distributed_delete_job_failing_exits_1_and_lists_what_went(
        spark, table, table_path, capsys, monkeypatch):
    # Regression: a task failing on an executor after another delete raised Spark's own
    # exception out of `main` (a traceback, no list of what had been deleted).
    import json

    from conftest import files_under
    from paimon_commit.cli import main
    from paimon_commit.io.local import LocalFileIO
    planted = build(table, table_path)

    class ExecutorLostAtTheSecondDelete(LocalFileIO):
        unlinked = 0

        def _unlink(self, norm):
            if "/.maintenance/" in norm:   # the lease's own records (pruned), not orphans
                return super()._unlink(norm)
            self.unlinked += 1
            if self.unlinked == 2:
                raise RuntimeError(f"executor lost while deleting {norm}")
            return super()._unlink(norm)
    _cli_with_io(monkeypatch, ExecutorLostAtTheSecondDelete)
    before = set(files_under(table_path))
    code = main(["remove-orphan-files", str(table_path), "--mode", "distributed",
                 "--parallelism", "1", "--json"])
    out, err = capsys.readouterr()
    assert code == 1, err
    r = json.loads(out)
    gone = before - set(files_under(table_path))
    assert r["deleted_files"] == len(gone) == 1 and set(r["files"]) == gone
    assert f"1 of {planted} had been deleted" in r["error"]
    assert "RuntimeError: executor lost while deleting" in r["error"]
    assert "1 path(s) had been deleted before the failure" in err
    assert_intact(table_path, expected_by_tag={"t3": [1, 2, 3, 101, 102, 103]})


def test_cli_distributed_failure_after_executor_deletes_is_not_invalid_input(
        spark, table, table_path, capsys, monkeypatch):
    # Regression: the executors' deletes bypassed the CLI's deletion log, so a failure after
    # them exited 2 ("invalid input, nothing touched") and listed nothing.
    import json

    from conftest import files_under
    from paimon_commit.cli import main
    from paimon_commit.io.local import LocalFileIO
    planted = build(table, table_path)

    class RmdirFails(LocalFileIO):
        def _rmdir(self, norm):
            raise ValueError(f"injected failure removing {norm}")
    _cli_with_io(monkeypatch, RmdirFails)
    before = set(files_under(table_path))
    code = main(["remove-orphan-files", str(table_path), "--mode", "distributed",
                 "--parallelism", "2", "--json"])
    out, err = capsys.readouterr()
    assert code == 1, err
    r = json.loads(out)
    gone = before - set(files_under(table_path))
    assert r["deleted_files"] == len(gone) == planted and set(r["files"]) == gone
    assert "injected failure removing" in r["error"]
    assert f"{planted} path(s) had been deleted before the failure" in err
    assert_intact(table_path, expected_by_tag={"t3": [1, 2, 3, 101, 102, 103]})


def test_distributed_keeps_what_a_commit_published_since_the_plan(spark, table, table_path,
                                                                  tmp_path):
    # Audit a5 on Spark: the job's commit, rolled back, is published again by the job
    # restarted in another process between the plan and the delete job: its file is kept.
    from operations.test_orphan_recheck import (_cutoff, age_everything,
                                                commit_in_another_process, data_file,
                                                ids_read)
    write(table, make_rows([1]))
    w = table.new_writer()
    w.write_arrow(make_rows([2]))
    msgs = w.prepare_commit()
    with table.new_commit(commit_user="job") as c:
        assert c.commit(msgs, 7) == 2
    table.rollback_to(snapshot_id=1)
    age_everything(table_path)
    f = data_file(table_path, msgs)

    class _AfterPlan(DistributedOrphanFilesCleaner):
        def find_orphans(self, executor, result):
            out = super().find_orphans(executor, result)
            assert f in [c.status.path for c in out[0]]
            assert commit_in_another_process(tmp_path, table_path, msgs, "job", 7) == 2
            return out

    r = _AfterPlan(CleanContext(str(table_path), older_than_ms=_cutoff()), spark=spark,
                   parallelism=2).clean()
    assert r.complete
    assert "dt=19723/hr=1/bucket-0/" + msgs[0].new_files[0].file_name not in r.deleted_paths
    assert any(p.startswith("manifest/manifest-list-") for p in r.deleted_paths)
    assert ids_read(table_path) == [1, 2]
    assert_intact(table_path, {2: [1, 2]})
