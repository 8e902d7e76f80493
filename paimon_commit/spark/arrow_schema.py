"""Spark schemas as Arrow schemas and back, for the batch and the streaming data source
(both need them; kept here so that neither imports the other)."""
from __future__ import annotations

import pyarrow as pa
from pyspark.sql.types import StructType

__all__ = ["to_arrow_schema", "from_arrow_schema"]


def to_arrow_schema(schema: StructType) -> pa.Schema:
    from pyspark.sql.pandas.types import to_arrow_schema as spark_to_arrow
    arrow = spark_to_arrow(schema)
    # Spark TimestampType is an instant (LTZ); keep Paimon's TIMESTAMP_LTZ spelling via UTC.
    fields = []
    for f in arrow:
        t = f.type
        if pa.types.is_timestamp(t) and t.tz is not None:
            t = pa.timestamp(t.unit, tz="UTC")
        fields.append(pa.field(f.name, t, f.nullable))
    return pa.schema(fields)


def from_arrow_schema(schema: pa.Schema) -> StructType:
    from pyspark.sql.pandas.types import from_arrow_schema as spark_from_arrow
    return spark_from_arrow(schema)
