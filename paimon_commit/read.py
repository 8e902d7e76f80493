"""Reading data files as rows of a table schema: what Table.read_arrow, the Spark readers
and compaction share.

Below the operations and the table (it needs only the file formats and a FileIO), so that
compaction, which reads many files itself, does not import the table it is used by."""
from __future__ import annotations

from typing import Any, Mapping

import pyarrow as pa

from .format.types import constant_array
from .io import FileIO

__all__ = ["read_data_file", "file_rows"]


def read_data_file(io: FileIO, path: str, partition: Mapping[str, Any],
                   target: pa.Schema) -> pa.Table:
    """One data file as rows of `target`: partition columns from the partition values
    (never the file's; see file_rows), columns added by schema evolution after the file was
    written as nulls."""
    return file_rows(io.read_parquet(path), partition, target)


def file_rows(t: pa.Table, partition: Mapping[str, Any], target: pa.Schema) -> pa.Table:
    """The rows of a data file already read (`t`, as stored) as rows of `target` (see
    read_data_file; compaction reads many files itself and converts them together).

    A partition column is the partition's value even where the file stores one: Paimon's
    readers (Java's, pypaimon's) never read it from the file, so a file storing a value that
    disagrees with its partition reads as its partition everywhere, and compaction writes
    that value (it used to take the stored one whenever the column was read, for a dotted
    name or a file read whole, and then refused the bin for ever)."""
    cols = []
    names = set(t.column_names)
    for field in target:
        if field.name in partition:
            cols.append(constant_array(partition[field.name], field.type, t.num_rows))
        elif field.name in names:
            col = t.column(field.name)
            if pa.types.is_timestamp(field.type) and pa.types.is_int64(col.type):
                # A plain INT64 timestamp (see writer._RollingFile): millis up to
                # precision 3, micros above, as Paimon Java stores them.
                unit = "ms" if field.type.unit in ("s", "ms") else "us"
                col = col.cast(pa.timestamp(unit, tz=field.type.tz))
            cols.append(col.cast(field.type))
        else:
            cols.append(pa.nulls(t.num_rows, type=field.type))
    return pa.Table.from_arrays(cols, schema=target)
