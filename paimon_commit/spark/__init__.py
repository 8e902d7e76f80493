"""PySpark integration: the `paimon` data source and distributed maintenance.

    from paimon_commit.spark import register
    register(spark)
    df.write.format("paimon").mode("append").save("/data/wh/db.db/events")

    from paimon_commit.spark import compact
    compact(spark, "/data/wh/db.db/events")   # executors rewrite, the driver commits once
"""
# The function, not the module of the same name (importing it binds the module first).
from .compact import compact  # noqa: E402  (pyspark itself is imported only when run)


def register(spark) -> None:
    """Make `format("paimon")` available in a SparkSession.

    Registers the Python data source (batch write, streaming write, read with partition
    pruning, time travel by `snapshot-id` or `tag`) and enables Spark's Python data source
    filter pushdown, which partition pruning needs.

    Args:
        spark: the SparkSession (PySpark >= 4.0).

    Returns:
        None. Writes to a table this library does not write (primary-key, fixed-bucket, …)
        then fail on the driver with UnsupportedTableError before any task runs.
    """
    from .datasource import register as _register
    _register(spark)


__all__ = ["register", "compact"]
