"""Warehouse maintenance on Spark: tables spread over executors, same results as local."""
import pytest

from conftest import files_under
from invariants import assert_intact
from operations.test_warehouse import age, warehouse  # noqa: F401 - fixture

from paimon_commit import Table
from paimon_commit.spark.maintain import maintain_warehouse_spark

pytestmark = pytest.mark.slow


def plant_orphan(a):
    orphan = a / "dt=19723" / "hr=1" / "bucket-0" / "data-orphan.parquet"
    orphan.write_text("junk")
    age(a)
    return orphan


def test_spark_maintain_matches_local(spark, warehouse):  # noqa: F811
    a = warehouse / "sales.db" / "a"
    orphan = plant_orphan(a)
    results = {r.table: r for r in maintain_warehouse_spark(
        str(warehouse), spark, orphans=True, parallelism=2)}
    assert {k: r.status for k, r in results.items()} == {
        "logs.badopt": "skipped", "logs.broken": "skipped", "logs.c": "ok", "sales.a": "ok",
        "sales.b": "ok"}
    assert "option 'tag.creation-period'" in results["logs.badopt"].reason
    assert results["sales.a"].snapshots_expired == 4
    assert results["sales.a"].orphans_deleted == 1 and not orphan.exists()
    assert results["sales.b"].tags_expired == ["old"]
    assert [s.id for s in Table.open(str(a)).snapshots()] == [5, 6]
    assert_intact(a, {6: [1, 2, 3, 4, 5, 6]})
    assert (warehouse / "logs.db" / "broken" / "schema" / "schema-0").read_text() == "{ not json"


def test_spark_maintain_distributed_orphans(spark, warehouse):  # noqa: F811
    a = warehouse / "sales.db" / "a"
    orphan = plant_orphan(a)
    [r] = maintain_warehouse_spark(str(warehouse), spark, database="sales", table_glob="a",
                                   orphans=True, orphan_mode="distributed", parallelism=2)
    assert (r.table, r.status, r.snapshots_expired, r.orphans_deleted) == ("sales.a", "ok", 4, 1)
    assert not orphan.exists()
    assert_intact(a, {6: [1, 2, 3, 4, 5, 6]})


def test_spark_maintain_bad_mode_before_any_io(spark, tmp_path):
    with pytest.raises(ValueError, match="orphan_mode must be"):
        maintain_warehouse_spark(str(tmp_path / "nowhere"), spark, orphan_mode="fast")
    assert files_under(tmp_path) == []
