"""Table schema (`schema/schema-N`, JSON version 3)."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import pyarrow as pa

from ..errors import CorruptMetadataError
from . import types as ptypes
from .snapshot import parse_json_object

__all__ = ["DataField", "TableSchema", "SCHEMA_VERSION"]

SCHEMA_VERSION = 3
# Types we can encode in a BinaryRow and a partition directory name.
_PARTITION_KEY_ROOTS = {"BOOLEAN", "TINYINT", "SMALLINT", "INT", "BIGINT", "DATE", "CHAR",
                        "VARCHAR", "DECIMAL", "FLOAT", "DOUBLE", "TIME", "TIMESTAMP",
                        "TIMESTAMP_LTZ"}


@dataclass(frozen=True)
class DataField:
    id: int
    name: str
    type: Any  # str for atomic types, dict for nested ones (as in the JSON)
    description: Optional[str] = None

    def to_dict(self) -> Dict[str, Any]:
        d: Dict[str, Any] = {"id": self.id, "name": self.name, "type": self.type}
        if self.description is not None:
            d["description"] = self.description
        return d


@dataclass(frozen=True)
class TableSchema:
    id: int
    fields: Tuple[DataField, ...]
    highest_field_id: int
    partition_keys: Tuple[str, ...]
    primary_keys: Tuple[str, ...] = ()
    options: Mapping[str, str] = field(default_factory=dict)
    comment: Optional[str] = None
    time_millis: Optional[int] = None
    version: int = SCHEMA_VERSION

    # --- derived views -------------------------------------------------------------------
    @property
    def field_names(self) -> List[str]:
        return [f.name for f in self.fields]

    def field(self, name: str) -> DataField:
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(name)

    @property
    def partition_types(self) -> List[Any]:
        return [self.field(k).type for k in self.partition_keys]

    def arrow_schema(self) -> pa.Schema:
        return pa.schema([
            pa.field(f.name, ptypes.paimon_to_arrow(f.type), nullable=_nullable(f.type))
            for f in self.fields
        ])

    # --- JSON ----------------------------------------------------------------------------
    def to_json(self) -> bytes:
        d: Dict[str, Any] = {
            "version": self.version,
            "id": self.id,
            "fields": [f.to_dict() for f in self.fields],
            "highestFieldId": self.highest_field_id,
            "partitionKeys": list(self.partition_keys),
            "primaryKeys": list(self.primary_keys),
            "options": dict(self.options),
        }
        # Java 1.x reads a JSON null comment as the string "null": omit it instead.
        if self.comment is not None:
            d["comment"] = self.comment
        if self.time_millis is not None:
            d["timeMillis"] = self.time_millis
        return json.dumps(d, indent=2).encode("utf-8")

    @classmethod
    def from_json(cls, data: bytes, path: str) -> "TableSchema":
        obj = parse_json_object(data, path)
        for key in ("id", "fields", "highestFieldId", "partitionKeys", "primaryKeys", "options"):
            if key not in obj:
                raise CorruptMetadataError(path, f"missing required key '{key}'")
        if not isinstance(obj["fields"], list) or not isinstance(obj["options"], dict):
            raise CorruptMetadataError(path, "'fields' must be a list and 'options' an object")
        try:
            fields_ = tuple(DataField(int(f["id"]), str(f["name"]), f["type"],
                                      f.get("description")) for f in obj["fields"])
        except (KeyError, TypeError, ValueError) as e:
            raise CorruptMetadataError(path, f"bad field definition ({e!r})") from None
        version = obj.get("version", 1)
        options = {str(k): str(v) for k, v in obj["options"].items()}
        if version is None or version < 2:
            # Paimon 0.7 schemas: readers inject bucket=1 and orc; we mirror that view.
            options.setdefault("bucket", "1")
            options.setdefault("file.format", "orc")
        schema = cls(
            version=version if isinstance(version, int) else 1,
            id=int(obj["id"]),
            fields=fields_,
            highest_field_id=int(obj["highestFieldId"]),
            partition_keys=tuple(obj["partitionKeys"]),
            primary_keys=tuple(obj["primaryKeys"]),
            options=options,
            comment=obj.get("comment"),
            time_millis=obj.get("timeMillis"),
        )
        names = set(schema.field_names)
        for k in schema.partition_keys:
            if k not in names:
                raise CorruptMetadataError(path, f"partition key {k!r} is not a field")
        return schema

    @classmethod
    def from_arrow(cls, arrow_schema: pa.Schema, partition_keys: Sequence[str] = (),
                   options: Optional[Mapping[str, Any]] = None, comment: Optional[str] = None,
                   time_millis: Optional[int] = None) -> "TableSchema":
        # pypaimon's id allocation, so that nested ROW ids match what it would write.
        fields_ = [DataField(d["id"], d["name"], d["type"], d.get("description"))
                   for d in ptypes.arrow_schema_to_paimon_fields(arrow_schema)]
        names = [f.name for f in fields_]
        if len(set(names)) != len(names):
            raise ValueError(f"duplicate column names in schema: {names}")
        for k in partition_keys:
            if k not in names:
                raise ValueError(f"partition key {k!r} is not a column of the schema {names}")
            root = ptypes.type_root(fields_[names.index(k)].type)
            if root not in _PARTITION_KEY_ROOTS:
                raise ValueError(f"partition key {k!r} has type {root}, which cannot be a "
                                 f"partition key")
        if len(set(partition_keys)) != len(partition_keys):
            raise ValueError(f"duplicate partition keys: {list(partition_keys)}")
        if len(partition_keys) == len(names) and names:
            raise ValueError("a table needs at least one column that is not a partition key")
        return cls(
            id=0,
            fields=tuple(fields_),
            highest_field_id=_highest_id(fields_),
            partition_keys=tuple(partition_keys),
            primary_keys=(),
            options={str(k): str(v).lower() if isinstance(v, bool) else str(v)
                     for k, v in (options or {}).items()},
            comment=comment,
            time_millis=time_millis,
        )


def _nullable(t: Any) -> bool:
    if isinstance(t, dict):
        return not str(t.get("type", "")).endswith("NOT NULL")
    return not str(t).endswith("NOT NULL")


def _highest_id(fields_: Sequence[DataField]) -> int:
    """Largest field id anywhere in the schema, nested ROW fields included."""
    best = -1

    def visit(t: Any) -> None:
        nonlocal best
        if isinstance(t, dict):
            for f in t.get("fields", ()) or ():
                best = max(best, int(f["id"]))
                visit(f["type"])
            for key in ("element", "key", "value"):
                if key in t:
                    visit(t[key])

    for f in fields_:
        best = max(best, f.id)
        visit(f.type)
    return best
