"""PySpark integration: the `paimon` data source and distributed maintenance."""
