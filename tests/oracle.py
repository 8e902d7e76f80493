"""pypaimon as the independent oracle: it writes tables we must maintain and reads every table
we produce. pypaimon's filesystem catalog needs the `<warehouse>/<db>.db/<table>` layout, so
tests put tables there."""
from __future__ import annotations

import os
from typing import Any, Dict, List, Optional, Sequence

import pyarrow as pa


def split_table_path(path) -> tuple:
    path = os.path.abspath(str(path))
    table = os.path.basename(path)
    db_dir = os.path.dirname(path)
    assert db_dir.endswith(".db"), f"tests keep tables under <wh>/<db>.db/<t>: {path}"
    return os.path.dirname(db_dir), os.path.basename(db_dir)[:-3], table


def catalog(warehouse):
    from pypaimon import CatalogFactory
    return CatalogFactory.create({"warehouse": str(warehouse)})


def pp_table(path, **dynamic_options):
    wh, db, name = split_table_path(path)
    t = catalog(wh).get_table(f"{db}.{name}")
    return t.copy(dynamic_options) if dynamic_options else t


def pp_create(path, schema: pa.Schema, partition_keys: Sequence[str] = (),
              options: Optional[Dict[str, str]] = None):
    from pypaimon import Schema
    wh, db, name = split_table_path(path)
    cat = catalog(wh)
    cat.create_database(db, True)
    cat.create_table(f"{db}.{name}", Schema.from_pyarrow_schema(
        schema, partition_keys=list(partition_keys), options=options or {}), False)
    return cat.get_table(f"{db}.{name}")


def pp_write(path, data: pa.Table, overwrite: Optional[Dict[str, Any]] = None,
             **dynamic_options) -> None:
    """One pypaimon commit of `data`; `dynamic_options`: the job's own options (e.g. a
    `partition.default-name` no schema records)."""
    t = pp_table(path, **dynamic_options)
    wb = t.new_batch_write_builder()
    if overwrite is not None:
        wb = wb.overwrite(overwrite)
    w, c = wb.new_write(), wb.new_commit()
    w.write_arrow(data)
    c.commit(w.prepare_commit())
    w.close()
    c.close()


def pp_drop(path, partitions: List[Dict[str, Any]]) -> None:
    t = pp_table(path)
    c = t.new_batch_write_builder().new_commit()
    c.truncate_partitions(partitions)
    c.close()


def _opts(snapshot_id=None, tag=None) -> Dict[str, str]:
    o = {}
    if snapshot_id is not None:
        o["scan.snapshot-id"] = str(snapshot_id)
    if tag is not None:
        o["scan.tag-name"] = tag
    return o


def pp_read(path, snapshot_id: Optional[int] = None, tag: Optional[str] = None) -> pa.Table:
    t = pp_table(path, **_opts(snapshot_id, tag))
    rb = t.new_read_builder()
    return rb.new_read().to_arrow(rb.new_scan().plan().splits())


def pp_live_file_names(path, snapshot_id: Optional[int] = None) -> List[str]:
    t = pp_table(path, **_opts(snapshot_id))
    names = []
    for split in t.new_read_builder().new_scan().plan().splits():
        names.extend(f.file_name for f in split.files)
    return sorted(names)


def rows(table: pa.Table, order_by: Sequence[str] = ("id",)) -> List[Dict[str, Any]]:
    """Rows as dicts, sorted, for order-insensitive comparison."""
    data = table.to_pylist()
    return sorted(data, key=lambda r: tuple((r[k] is None, r[k]) for k in order_by))
