"""PySpark integration: the `paimon` data source and distributed maintenance.

    from paimon_commit.spark import register
    register(spark)
    df.write.format("paimon").mode("append").save("/data/wh/db.db/events")
"""


def register(spark) -> None:
    """Make `format("paimon")` available in `spark`."""
    from .datasource import register as _register
    _register(spark)


__all__ = ["register"]
