"""Paimon types <-> Arrow types, as pypaimon maps them, so that tables we create look like
tables pypaimon creates and we read what it reads.

The rest of the library imports these names from :mod:`paimon_commit.format.types`.
"""

from __future__ import annotations

import array
import datetime as _dt
import struct
from typing import Any, Callable, Dict, List, Optional, Union

import pyarrow as pa

from .atomic_types import (
    BINARY_ROOTS,
    STRING_ROOTS,
    TIMESTAMP_ROOTS,
    AtomicType,
    PaimonType,
    as_atomic,
    type_nullable,
    type_root,
)

__all__ = [
    "FieldIdCounter",
    "arrow_to_paimon",
    "arrow_schema_to_paimon_fields",
    "paimon_to_arrow",
    "constant_array",
    "paimon_fields_to_arrow_schema",
]


# --------------------------------------------------------------------------------------------
# Arrow -> Paimon
# --------------------------------------------------------------------------------------------

class FieldIdCounter:
    """Allocates field ids: each call returns the next id; ``highest`` is the last one given.

    Pass an instance as ``next_id`` to :func:`arrow_to_paimon`.
    """

    __slots__ = ("_next",)

    def __init__(self, first_id: int = 0):
        self._next = first_id

    def __call__(self) -> int:
        value = self._next
        self._next += 1
        return value

    @property
    def highest(self) -> int:
        """The highest id allocated so far (``first_id - 1`` before the first call)."""
        return self._next - 1

    def __repr__(self) -> str:
        return "FieldIdCounter(next=%d)" % self._next


def _nested_type_string(root: str, nullable: bool) -> str:
    return root if nullable else root + " NOT NULL"


def _is_variant_struct(dt: pa.StructType) -> bool:
    # pypaimon reads struct<value: binary NOT NULL, metadata: binary NOT NULL> as VARIANT.
    if dt.num_fields != 2:
        return False
    names = {dt.field(i).name for i in range(2)}
    return names == {"value", "metadata"} and all(
        pa.types.is_binary(dt.field(i).type) and not dt.field(i).nullable for i in range(2))


def arrow_to_paimon(dt: pa.DataType, nullable: bool = True,
                    next_id: Optional[Callable[[], int]] = None) -> PaimonType:
    """The schema-JSON type pypaimon writes for an Arrow type.

    ``next_id`` allocates field ids for nested ROW fields (e.g. ``itertools.count(5).__next__``);
    it is required only when ``dt`` contains a struct. Like pypaimon, a ROW field's id is
    allocated *after* the ids inside its own type (depth first, children before parent).
    Nested dicts carry pypaimon's ``"nullable"`` key, which Java ignores.

    Mapping (pypaimon's): int8..int64 -> TINYINT..BIGINT, float32/64 -> FLOAT/DOUBLE,
    string/large_string -> STRING, binary -> BYTES, fixed_size_binary(n) -> BINARY(n),
    decimal128/256(p, s) -> DECIMAL(p, s), timestamp s/ms/us/ns -> TIMESTAMP(0/3/6/9) or
    TIMESTAMP_LTZ(p) when it has any time zone, date32 -> DATE, any time32/time64 -> TIME(0)
    (pypaimon's choice, even for millisecond or finer units), list/large_list -> ARRAY,
    map -> MAP, struct -> ROW.

    Raises ValueError for types pypaimon rejects (unsigned ints, float16, date64, duration,
    dictionary, null, views) and for those pypaimon maps to types this library does not
    support: large_binary (BLOB), fixed_size_list (VECTOR), the VARIANT struct shape.
    """
    t = pa.types
    name = None
    if t.is_int8(dt):
        name = "TINYINT"
    elif t.is_int16(dt):
        name = "SMALLINT"
    elif t.is_int32(dt):
        name = "INT"
    elif t.is_int64(dt):
        name = "BIGINT"
    elif t.is_float32(dt):
        name = "FLOAT"
    elif t.is_float64(dt):
        name = "DOUBLE"
    elif t.is_boolean(dt):
        name = "BOOLEAN"
    elif t.is_string(dt) or t.is_large_string(dt):
        name = "STRING"
    elif t.is_fixed_size_binary(dt) and not t.is_decimal(dt):
        name = "BINARY(%d)" % dt.byte_width
    elif t.is_binary(dt):
        name = "BYTES"
    elif t.is_large_binary(dt):
        raise ValueError("Arrow type %s is unsupported: pypaimon maps large_binary to BLOB; "
                         "cast it to binary for a BYTES column" % dt)
    elif t.is_decimal(dt):
        if dt.precision > 38:
            raise ValueError("Arrow type %s is unsupported: Paimon DECIMAL precision is at most 38" % dt)
        name = "DECIMAL(%d, %d)" % (dt.precision, dt.scale)
    elif t.is_timestamp(dt):
        precision = {"s": 0, "ms": 3, "us": 6, "ns": 9}[dt.unit]
        name = ("TIMESTAMP(%d)" if dt.tz is None else "TIMESTAMP_LTZ(%d)") % precision
    elif t.is_date32(dt):
        name = "DATE"
    elif t.is_time(dt):
        name = "TIME(0)"
    elif t.is_fixed_size_list(dt):
        raise ValueError("Arrow type %s is unsupported: pypaimon maps fixed_size_list to VECTOR" % dt)
    elif t.is_list(dt) or t.is_large_list(dt):
        element = arrow_to_paimon(dt.value_type, dt.value_field.nullable, next_id)
        return {"type": _nested_type_string("ARRAY", nullable), "element": element,
                "nullable": nullable}
    elif t.is_map(dt):
        key = arrow_to_paimon(dt.key_type, dt.key_field.nullable, next_id)
        value = arrow_to_paimon(dt.item_type, dt.item_field.nullable, next_id)
        return {"type": _nested_type_string("MAP", nullable), "key": key, "value": value,
                "nullable": nullable}
    elif t.is_struct(dt):
        if _is_variant_struct(dt):
            raise ValueError("Arrow type %s is unsupported: pypaimon reads this struct shape as "
                             "VARIANT" % dt)
        if next_id is None:
            raise ValueError("arrow_to_paimon needs next_id to allocate ids for the fields of %s" % dt)
        fields = []
        for i in range(dt.num_fields):
            child = dt.field(i)
            child_type = arrow_to_paimon(child.type, child.nullable, next_id)
            fields.append({"id": next_id(), "name": child.name, "type": child_type})
        return {"type": _nested_type_string("ROW", nullable), "fields": fields, "nullable": nullable}
    if name is None:
        raise ValueError("Arrow type %s has no Paimon equivalent" % dt)
    return name if nullable else name + " NOT NULL"


def arrow_schema_to_paimon_fields(schema: pa.Schema, first_id: int = 0) -> List[Dict[str, Any]]:
    """Schema-JSON fields for an Arrow schema, with ids as pypaimon assigns them.

    Each top-level field takes the next id before the ids inside its type, so a flat schema
    gets 0, 1, 2, ... . A ``b"description"`` metadata entry becomes the field's description.
    """
    next_id = FieldIdCounter(first_id)
    fields = []
    for f in schema:
        field_id = next_id()
        field: Dict[str, Any] = {"id": field_id, "name": f.name,
                                 "type": arrow_to_paimon(f.type, f.nullable, next_id)}
        if f.metadata and b"description" in f.metadata:
            field["description"] = f.metadata[b"description"].decode("utf-8")
        fields.append(field)
    return fields


# --------------------------------------------------------------------------------------------
# Paimon -> Arrow
# --------------------------------------------------------------------------------------------

def _atomic_to_arrow(a: AtomicType) -> pa.DataType:
    root = a.root
    if root == "TINYINT":
        return pa.int8()
    if root == "SMALLINT":
        return pa.int16()
    if root == "INT":
        return pa.int32()
    if root == "BIGINT":
        return pa.int64()
    if root == "FLOAT":
        return pa.float32()
    if root == "DOUBLE":
        return pa.float64()
    if root == "BOOLEAN":
        return pa.bool_()
    if root in STRING_ROOTS:
        return pa.string()
    if root in BINARY_ROOTS:
        # pypaimon reads BINARY(n) as variable-length binary, not fixed_size_binary.
        return pa.binary()
    if root == "DECIMAL":
        return pa.decimal128(a.precision, a.scale)
    if root in TIMESTAMP_ROOTS:
        p = a.precision
        unit = "s" if p == 0 else "ms" if p <= 3 else "us" if p <= 6 else "ns"
        return pa.timestamp(unit, tz="UTC" if root == "TIMESTAMP_LTZ" else None)
    if root == "DATE":
        return pa.date32()
    if root == "TIME":
        # Paimon stores TIME as int32 milliseconds of the day, whatever the precision.
        return pa.time32("ms")
    raise ValueError("no Arrow type for %s" % a)  # pragma: no cover - all roots handled


def _field_list(t: dict) -> List[Dict[str, Any]]:
    fields = t.get("fields")
    if not isinstance(fields, list):
        raise ValueError("invalid ROW type %r: missing 'fields' list" % (t,))
    return fields


def _required(t: dict, key: str) -> Any:
    if key not in t:
        raise ValueError("invalid %s type %r: missing %r" % (type_root(t), t, key))
    return t[key]


def paimon_to_arrow(t: Union[PaimonType, AtomicType]) -> pa.DataType:
    """The Arrow type pypaimon uses for a Paimon type (``PyarrowFieldParser.from_paimon_type``).

    STRING/CHAR/VARCHAR -> string (not large_string), BINARY/VARBINARY/BYTES -> binary,
    DECIMAL -> decimal128, TIMESTAMP(p) -> s/ms/us/ns by precision (LTZ with tz="UTC"),
    DATE -> date32, TIME -> time32[ms]. MULTISET, which pypaimon cannot read, maps like Java's
    Arrow conversion: map<element NOT NULL, int32 NOT NULL>.
    """
    if isinstance(t, dict):
        root = type_root(t)
        if root == "ARRAY":
            element = _required(t, "element")
            return pa.list_(pa.field("item", paimon_to_arrow(element), nullable=type_nullable(element)))
        if root == "MAP":
            key, value = _required(t, "key"), _required(t, "value")
            return pa.map_(pa.field("key", paimon_to_arrow(key), nullable=False),
                           pa.field("value", paimon_to_arrow(value), nullable=type_nullable(value)))
        if root == "MULTISET":
            element = _required(t, "element")
            return pa.map_(pa.field("key", paimon_to_arrow(element), nullable=False),
                           pa.field("value", pa.int32(), nullable=False))
        if root == "ROW":
            return pa.struct([_field_to_arrow(f, with_description=False) for f in _field_list(t)])
        raise ValueError("type %s is not supported by paimon_commit" % root)
    return _atomic_to_arrow(as_atomic(t))


def _field_to_arrow(field: Dict[str, Any], with_description: bool = True) -> pa.Field:
    if not isinstance(field, dict) or "name" not in field or "type" not in field:
        raise ValueError("invalid Paimon field %r" % (field,))
    ftype = field["type"]
    metadata = None
    if with_description and field.get("description"):
        metadata = {b"description": field["description"].encode("utf-8")}
    return pa.field(field["name"], paimon_to_arrow(ftype), nullable=type_nullable(ftype),
                    metadata=metadata)


def paimon_fields_to_arrow_schema(fields: List[Dict[str, Any]]) -> pa.Schema:
    """Arrow schema for schema-JSON fields, as pypaimon builds it (descriptions as metadata)."""
    return pa.schema([_field_to_arrow(f) for f in fields])


# --- constant columns ----------------------------------------------------------------------
_EPOCH = _dt.date(1970, 1, 1)
_FIXED = {pa.int8(): "<b", pa.int16(): "<h", pa.int32(): "<i", pa.int64(): "<q",
          pa.uint8(): "<B", pa.uint16(): "<H", pa.uint32(): "<I", pa.uint64(): "<Q",
          pa.float32(): "<f", pa.float64(): "<d"}


def constant_array(value: Any, type_: pa.DataType, n: int) -> pa.Array:
    """`n` copies of the Python `value` as an array of `type_` (a partition column filled
    from its partition). Built from buffers for the common partition types: any conversion
    of a Python value by pyarrow (pa.scalar, pa.array) imports pandas when it is installed,
    to recognise pandas objects, which cost a compaction worker 40 MB and half a second.
    Other types go through pa.scalar."""
    if value is None:
        return pa.nulls(n, type_)
    try:
        if type_ in _FIXED and not isinstance(value, bool) and \
                isinstance(value, (int, float)):
            data = struct.pack(_FIXED[type_], value) * n
            return pa.Array.from_buffers(type_, n, [None, pa.py_buffer(data)])
        if type_ == pa.bool_() and isinstance(value, bool):
            data = (b"\xff" if value else b"\x00") * ((n + 7) // 8)
            return pa.Array.from_buffers(type_, n, [None, pa.py_buffer(data)])
        if type_ == pa.date32() and type(value) is _dt.date:
            data = struct.pack("<i", (value - _EPOCH).days) * n
            return pa.Array.from_buffers(type_, n, [None, pa.py_buffer(data)])
        if type_ in (pa.string(), pa.large_string(), pa.binary(), pa.large_binary()) and \
                isinstance(value, (str, bytes)) and \
                isinstance(value, str) == (type_ in (pa.string(), pa.large_string())):
            raw = value.encode("utf-8") if isinstance(value, str) else value
            large = type_ in (pa.large_string(), pa.large_binary())
            offsets = array.array("q" if large else "i", range(0, (n + 1) * len(raw), len(raw))
                                  if raw else [0] * (n + 1))
            if not large and len(raw) * n >= 1 << 31:
                raise OverflowError("more than 2 GB in one string column")
            return pa.Array.from_buffers(type_, n, [None, pa.py_buffer(offsets.tobytes()),
                                                    pa.py_buffer(raw * n)])
    except (struct.error, OverflowError):
        pass   # pa.scalar below says what is wrong with the value
    return pa.repeat(pa.scalar(value, type=type_), n)
