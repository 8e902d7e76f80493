"""Paimon data types exactly as they appear in schema JSON, and their Arrow and Python forms.

A type is what the schema file holds: a ``str`` for atomic types (``"BIGINT"``,
``"DECIMAL(10, 2) NOT NULL"``) and a ``dict`` for nested ones (``{"type": "ARRAY", ...}``).
Atomic strings are parsed into :class:`AtomicType`; nested dicts stay dicts.

Spelling of local-zoned timestamps: we *write* ``TIMESTAMP_LTZ(p)`` and *read* both that and
Java's ``TIMESTAMP(p) WITH LOCAL TIME ZONE``. pypaimon (our test oracle) writes
``TIMESTAMP_LTZ(p)``, so tables we create look like tables it creates; pypaimon parses Java's
spelling too, and Java's type parser accepts ``TIMESTAMP_LTZ`` as a keyword.
"""

from __future__ import annotations

import datetime
import decimal
import functools
import math
import re
import struct
from dataclasses import dataclass, replace
from typing import Any, Callable, Dict, List, Optional, Union

import pyarrow as pa

__all__ = [
    "MAX_LENGTH",
    "AtomicType",
    "PaimonType",
    "parse_atomic",
    "as_atomic",
    "type_root",
    "type_nullable",
    "FieldIdCounter",
    "arrow_to_paimon",
    "arrow_schema_to_paimon_fields",
    "paimon_to_arrow",
    "paimon_fields_to_arrow_schema",
    "check_python_value",
    "parse_python_value",
    "decimal_to_unscaled",
    "INTEGER_RANGES",
    "STRING_ROOTS",
    "BINARY_ROOTS",
    "TIMESTAMP_ROOTS",
    "NESTED_ROOTS",
]

#: Length of ``STRING`` (= ``VARCHAR(MAX_LENGTH)``) and ``BYTES`` (= ``VARBINARY(MAX_LENGTH)``).
MAX_LENGTH = 2147483647

PaimonType = Union[str, Dict[str, Any]]

INTEGER_RANGES = {
    "TINYINT": (-(2 ** 7), 2 ** 7 - 1),
    "SMALLINT": (-(2 ** 15), 2 ** 15 - 1),
    "INT": (-(2 ** 31), 2 ** 31 - 1),
    "BIGINT": (-(2 ** 63), 2 ** 63 - 1),
}
STRING_ROOTS = frozenset({"CHAR", "VARCHAR"})
BINARY_ROOTS = frozenset({"BINARY", "VARBINARY"})
TIMESTAMP_ROOTS = frozenset({"TIMESTAMP", "TIMESTAMP_LTZ"})
NESTED_ROOTS = frozenset({"ARRAY", "MAP", "ROW", "MULTISET"})
# Atomic roots that exist in Paimon but that this library does not read or write.
_KNOWN_UNSUPPORTED_ATOMIC = frozenset({"VARIANT", "BLOB"})
# Nested roots pypaimon can write that this library does not support.
_KNOWN_UNSUPPORTED_NESTED = frozenset({"VECTOR"})

@dataclass(frozen=True)
class AtomicType:
    """A parsed atomic Paimon type.

    ``precision``: DECIMAL, TIME, TIMESTAMP, TIMESTAMP_LTZ. ``scale``: DECIMAL.
    ``length``: CHAR, VARCHAR, BINARY, VARBINARY (STRING/BYTES have length MAX_LENGTH).
    Parameters that do not apply are None.
    """

    root: str
    precision: Optional[int] = None
    scale: Optional[int] = None
    length: Optional[int] = None
    nullable: bool = True

    def to_json(self) -> str:
        """The schema-JSON spelling, with ``" NOT NULL"`` when not nullable."""
        text = self.type_string()
        return text if self.nullable else text + " NOT NULL"

    def type_string(self) -> str:
        """The spelling without nullability, e.g. for messages."""
        root = self.root
        if root == "DECIMAL":
            return "DECIMAL(%d, %d)" % (self.precision, self.scale)
        if root in ("TIME", "TIMESTAMP", "TIMESTAMP_LTZ"):
            return "%s(%d)" % (root, self.precision)
        if root == "VARCHAR" and self.length == MAX_LENGTH:
            return "STRING"
        if root == "VARBINARY" and self.length == MAX_LENGTH:
            return "BYTES"
        if root in ("CHAR", "VARCHAR", "BINARY", "VARBINARY"):
            return "%s(%d)" % (root, self.length)
        return root

    def with_nullable(self, nullable: bool) -> "AtomicType":
        return replace(self, nullable=nullable)

    def __str__(self) -> str:
        return self.to_json()


# --------------------------------------------------------------------------------------------
# Parsing atomic type strings
# --------------------------------------------------------------------------------------------

_TOKEN_RE = re.compile(r"\s*(?:([A-Za-z_][A-Za-z0-9_]*)|(\d+)|([(),]))")


def _tokenize(text: str) -> List[str]:
    tokens = []
    pos = 0
    end = len(text.rstrip())
    while pos < end:
        m = _TOKEN_RE.match(text, pos)
        if m is None or m.end() == pos:
            raise ValueError("unexpected character at position %d" % pos)
        ident, number, punct = m.groups()
        tokens.append(ident.upper() if ident is not None else (number if number is not None else punct))
        pos = m.end()
    return tokens


class _Tokens:
    def __init__(self, tokens: List[str]):
        self.tokens = tokens
        self.pos = 0

    def peek(self, offset: int = 0) -> Optional[str]:
        i = self.pos + offset
        return self.tokens[i] if i < len(self.tokens) else None

    def take(self, expected: Optional[str] = None) -> str:
        tok = self.peek()
        if tok is None:
            raise ValueError("unexpected end of type")
        if expected is not None and tok != expected:
            raise ValueError("expected %r but found %r" % (expected, tok))
        self.pos += 1
        return tok

    def accept(self, *words: str) -> bool:
        """Consume ``words`` if they come next, all of them."""
        for i, w in enumerate(words):
            if self.peek(i) != w:
                return False
        self.pos += len(words)
        return True

    def params(self, max_count: int) -> List[int]:
        if not self.accept("("):
            return []
        values = []
        while True:
            tok = self.take()
            if not tok.isdigit():
                raise ValueError("expected a number but found %r" % tok)
            values.append(int(tok))
            if self.accept(")"):
                break
            self.take(",")
        if len(values) > max_count:
            raise ValueError("too many parameters")
        return values


def _check_range(name: str, value: int, low: int, high: int) -> int:
    if not low <= value <= high:
        raise ValueError("%s %d must be between %d and %d" % (name, value, low, high))
    return value


def _parse_atomic_tokens(tk: _Tokens) -> AtomicType:
    word = tk.take()
    if word in ("BOOLEAN", "TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DATE"):
        return AtomicType(word)
    if word == "INTEGER":
        return AtomicType("INT")
    if word == "DOUBLE":
        tk.accept("PRECISION")
        return AtomicType("DOUBLE")
    if word == "STRING":
        return AtomicType("VARCHAR", length=MAX_LENGTH)
    if word == "BYTES":
        return AtomicType("VARBINARY", length=MAX_LENGTH)
    if word in ("DECIMAL", "DEC", "NUMERIC"):
        # Java's defaults: DECIMAL = DECIMAL(10, 0), DECIMAL(p) = DECIMAL(p, 0).
        params = tk.params(2)
        precision = _check_range("DECIMAL precision", params[0], 1, 38) if params else 10
        scale = params[1] if len(params) > 1 else 0
        _check_range("DECIMAL scale", scale, 0, precision)
        return AtomicType("DECIMAL", precision=precision, scale=scale)
    if word in ("CHAR", "VARCHAR", "BINARY", "VARBINARY"):
        params = tk.params(1)
        length = _check_range("%s length" % word, params[0], 1, MAX_LENGTH) if params else 1
        return AtomicType(word, length=length)
    if word == "TIME":
        params = tk.params(1)
        precision = _check_range("TIME precision", params[0], 0, 9) if params else 0
        tk.accept("WITHOUT", "TIME", "ZONE")
        return AtomicType("TIME", precision=precision)
    if word in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        params = tk.params(1)
        precision = _check_range("TIMESTAMP precision", params[0], 0, 9) if params else 6
        root = word
        if word == "TIMESTAMP":
            if tk.accept("WITH", "LOCAL", "TIME", "ZONE"):
                root = "TIMESTAMP_LTZ"
            else:
                tk.accept("WITHOUT", "TIME", "ZONE")
        return AtomicType(root, precision=precision)
    if word in _KNOWN_UNSUPPORTED_ATOMIC or word in NESTED_ROOTS or word in _KNOWN_UNSUPPORTED_NESTED:
        raise ValueError("type %s is not supported by paimon_commit" % word)
    raise ValueError("unknown type %r" % word)


def parse_atomic(type_str: str) -> AtomicType:
    """Parse an atomic type string such as ``"DECIMAL(10, 2) NOT NULL"``.

    Accepts Java's aliases and defaults (INTEGER, DEC/NUMERIC, ``DOUBLE PRECISION``, a bare
    ``TIMESTAMP`` = ``TIMESTAMP(6)``, ``VARCHAR`` = ``VARCHAR(1)``, ...) and is case-insensitive,
    like Java's parser. Raises ValueError naming the string for anything else. Cached.
    """
    if not isinstance(type_str, str):
        raise ValueError("not an atomic Paimon type: %r" % (type_str,))
    return _parse_atomic_cached(type_str)


@functools.lru_cache(maxsize=4096)
def _parse_atomic_cached(type_str: str) -> AtomicType:
    try:
        tk = _Tokens(_tokenize(type_str))
        atomic = _parse_atomic_tokens(tk)
        nullable = True
        if tk.accept("NOT", "NULL"):
            nullable = False
        else:
            tk.accept("NULL")
        if tk.peek() is not None:
            raise ValueError("unexpected %r" % tk.peek())
    except ValueError as e:
        raise ValueError("invalid Paimon type %r: %s" % (type_str, e)) from None
    return atomic if nullable else replace(atomic, nullable=False)


def as_atomic(t: Union[str, AtomicType]) -> AtomicType:
    """``t`` as an AtomicType (strings are parsed, with caching)."""
    if isinstance(t, AtomicType):
        return t
    return parse_atomic(t)


def _nested_type_words(t: dict) -> List[str]:
    type_str = t.get("type")
    if not isinstance(type_str, str):
        raise ValueError("invalid Paimon type %r: missing 'type' string" % (t,))
    return type_str.upper().split()


def type_root(t: Union[PaimonType, AtomicType]) -> str:
    """Root of a type: the AtomicType root (``"VARCHAR"`` for STRING) or ARRAY/MAP/ROW/MULTISET.

    Also returns VARIANT, BLOB (strings) and VECTOR (dicts), which are valid Paimon types this
    library does not support, so callers can name them in an error. Raises ValueError otherwise.
    """
    if isinstance(t, AtomicType):
        return t.root
    if isinstance(t, dict):
        words = _nested_type_words(t)
        if words and (words[0] in NESTED_ROOTS or words[0] in _KNOWN_UNSUPPORTED_NESTED):
            return words[0]
        raise ValueError("invalid Paimon type %r" % (t,))
    if isinstance(t, str):
        words = t.upper().split()
        if words and words[0] in _KNOWN_UNSUPPORTED_ATOMIC:
            return words[0]
        return parse_atomic(t).root
    raise ValueError("invalid Paimon type %r" % (t,))


def type_nullable(t: Union[PaimonType, AtomicType]) -> bool:
    """Whether the type admits nulls (no ``NOT NULL`` suffix).

    For nested dicts the ``type`` string decides; pypaimon's extra ``"nullable"`` key is ignored,
    as Java ignores it.
    """
    if isinstance(t, AtomicType):
        return t.nullable
    if isinstance(t, dict):
        words = _nested_type_words(t)
        return words[-2:] != ["NOT", "NULL"]
    if isinstance(t, str):
        words = t.upper().split()
        if words and words[0] in _KNOWN_UNSUPPORTED_ATOMIC:
            return words[-2:] != ["NOT", "NULL"]
        return parse_atomic(t).nullable
    raise ValueError("invalid Paimon type %r" % (t,))


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


# --------------------------------------------------------------------------------------------
# Python values
# --------------------------------------------------------------------------------------------

_FLOAT32 = struct.Struct("<f")


def _describe(value: Any) -> str:
    return "%r (%s)" % (value, type(value).__name__)


def _type_error(what: str, a: AtomicType, value: Any) -> TypeError:
    return TypeError("%s expects %s, got %s" % (what, a.type_string(), _describe(value)))


def _value_error(what: str, a: AtomicType, value: Any, reason: str) -> ValueError:
    return ValueError("%s expects %s, got %s: %s" % (what, a.type_string(), _describe(value), reason))


def decimal_to_unscaled(value: Union[decimal.Decimal, int], a: AtomicType, what: str) -> int:
    """The unscaled integer of ``value`` at the type's scale; exact, or ValueError.

    Rounding is refused: Java would round HALF_UP and pypaimon silently writes null on overflow,
    either of which would change a partition value without telling anyone.
    """
    if isinstance(value, bool) or not isinstance(value, (int, decimal.Decimal)):
        raise _type_error(what, a, value)
    if isinstance(value, int):
        unscaled = value * 10 ** a.scale
    else:
        if not value.is_finite():
            raise _value_error(what, a, value, "not a finite number")
        sign, digits, exponent = value.as_tuple()
        coefficient = int("".join(map(str, digits))) if digits else 0
        shift = exponent + a.scale
        if shift >= 0:
            coefficient *= 10 ** shift
        else:
            coefficient, remainder = divmod(coefficient, 10 ** (-shift))
            if remainder:
                raise _value_error(what, a, value, "more than %d fractional digits" % a.scale)
        unscaled = -coefficient if sign else coefficient
    if abs(unscaled) >= 10 ** a.precision:
        raise _value_error(what, a, value, "more than %d digits" % a.precision)
    return unscaled


def check_python_value(value: Any, t: Union[str, AtomicType], what: str) -> None:
    """Raise TypeError/ValueError unless ``value`` is a valid Python value for atomic type ``t``.

    Python forms: BOOLEAN bool; TINYINT..BIGINT int (not bool), range-checked; FLOAT/DOUBLE
    float or int; CHAR/VARCHAR/STRING str; BINARY/VARBINARY/BYTES bytes or bytearray; DATE
    date (not datetime); TIME time without tzinfo; TIMESTAMP naive datetime; TIMESTAMP_LTZ
    datetime (naive means UTC); DECIMAL Decimal or int that fits exactly.

    None is allowed unless the type is NOT NULL. Extra precision in a TIMESTAMP(p<6) value is
    refused rather than truncated, because the partition directory and the BinaryRow must agree.
    TIME values may carry milliseconds whatever the precision (pypaimon writes Arrow time32[ms]
    into TIME(0) columns); sub-millisecond parts are dropped, as Paimon stores milliseconds.
    Declared CHAR/VARCHAR/BINARY lengths are not enforced (neither Java's BinaryRow nor
    pypaimon does).
    """
    a = as_atomic(t)
    if value is None:
        if not a.nullable:
            raise ValueError("%s expects %s, got None" % (what, a.to_json()))
        return
    root = a.root
    if root in INTEGER_RANGES:
        if type(value) is not int and (isinstance(value, bool) or not isinstance(value, int)):
            raise _type_error(what, a, value)
        low, high = INTEGER_RANGES[root]
        if not low <= value <= high:
            raise _value_error(what, a, value, "out of range [%d, %d]" % (low, high))
    elif root in STRING_ROOTS:
        if not isinstance(value, str):
            raise _type_error(what, a, value)
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as e:
            raise _value_error(what, a, value, "not encodable as UTF-8 (%s)" % e.reason) from None
    elif root == "BOOLEAN":
        if not isinstance(value, bool):
            raise _type_error(what, a, value)
    elif root in ("FLOAT", "DOUBLE"):
        if isinstance(value, bool) or not isinstance(value, (float, int)):
            raise _type_error(what, a, value)
        try:
            f = float(value)
            if root == "FLOAT" and math.isfinite(f):
                _FLOAT32.pack(f)
        except OverflowError:
            raise _value_error(what, a, value, "out of range for %s" % root) from None
    elif root == "DATE":
        if isinstance(value, datetime.datetime) or not isinstance(value, datetime.date):
            raise _type_error(what, a, value)
    elif root == "TIME":
        if not isinstance(value, datetime.time):
            raise _type_error(what, a, value)
        if value.tzinfo is not None:
            raise _value_error(what, a, value, "TIME has no time zone")
    elif root in TIMESTAMP_ROOTS:
        if not isinstance(value, datetime.datetime):
            raise _type_error(what, a, value)
        if root == "TIMESTAMP" and value.tzinfo is not None:
            raise _value_error(what, a, value,
                               "TIMESTAMP is zone-less; pass a naive datetime (or use TIMESTAMP_LTZ)")
        if a.precision < 6 and value.microsecond % 10 ** (6 - a.precision):
            raise _value_error(what, a, value, "more than %d fractional second digits" % a.precision)
    elif root == "DECIMAL":
        decimal_to_unscaled(value, a, what)
    elif root in BINARY_ROOTS:
        if not isinstance(value, (bytes, bytearray)):
            raise _type_error(what, a, value)
    else:  # pragma: no cover - parse_atomic only yields the roots above
        raise ValueError("%s has unsupported type %s" % (what, a))


_INT_TEXT = re.compile(r"[+-]?[0-9]+")
_FLOAT_TEXT = re.compile(r"[+-]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|nan|inf|infinity)",
                         re.IGNORECASE)
_EPOCH_DATE = datetime.date(1970, 1, 1)


def _parse_iso_datetime(text: str) -> datetime.datetime:
    # Python < 3.11 fromisoformat rejects a trailing "Z".
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    return datetime.datetime.fromisoformat(text)


def _parse_text(text: str, a: AtomicType) -> Any:
    root = a.root
    s = text.strip()
    if root in STRING_ROOTS:
        return text
    if root in INTEGER_RANGES:
        if not _INT_TEXT.fullmatch(s):
            raise ValueError("not an integer")
        return int(s)
    if root == "BOOLEAN":
        if s.lower() == "true":
            return True
        if s.lower() == "false":
            return False
        raise ValueError("expected true or false")
    if root in ("FLOAT", "DOUBLE"):
        if not _FLOAT_TEXT.fullmatch(s):
            raise ValueError("not a number")
        return float(s)
    if root == "DECIMAL":
        try:
            return decimal.Decimal(s)
        except decimal.InvalidOperation:
            raise ValueError("not a decimal number") from None
    if root == "DATE":
        if _INT_TEXT.fullmatch(s):
            try:
                return _EPOCH_DATE + datetime.timedelta(days=int(s))
            except OverflowError:
                raise ValueError("day number out of range") from None
        return datetime.date.fromisoformat(s)
    if root == "TIME":
        if _INT_TEXT.fullmatch(s):
            millis = int(s)
            if not 0 <= millis < 86400000:
                raise ValueError("milliseconds of the day out of range")
            seconds, ms = divmod(millis, 1000)
            return datetime.time(seconds // 3600, seconds // 60 % 60, seconds % 60, ms * 1000)
        return datetime.time.fromisoformat(s)
    if root in TIMESTAMP_ROOTS:
        value = _parse_iso_datetime(s)
        if root == "TIMESTAMP_LTZ":
            if value.tzinfo is None:
                value = value.replace(tzinfo=datetime.timezone.utc)
            else:
                value = value.astimezone(datetime.timezone.utc)
        return value
    if root in BINARY_ROOTS:
        hex_text = s[2:] if s[:2] in ("0x", "0X") else s
        return bytes.fromhex(hex_text)
    raise ValueError("unsupported type")  # pragma: no cover


def parse_python_value(text: str, t: Union[str, AtomicType]) -> Any:
    """Parse command-line text into the Python value of atomic type ``t``.

    DATE: ``2024-01-01`` or a day number since 1970-01-01 (``19723``, as in partition
    directories). TIME: ``10:00:01.5`` or milliseconds of the day. TIMESTAMP: ISO 8601
    (``2024-01-01 10:00:00``, ``2024-01-01T10:00``); TIMESTAMP_LTZ also takes an offset or ``Z``
    and returns an aware UTC datetime (naive text means UTC). BOOLEAN: true/false (any case).
    BINARY types: hex, optionally ``0x``-prefixed. Strings are returned unchanged.
    Raises ValueError naming the text and the type.
    """
    a = as_atomic(t)
    if not isinstance(text, str):
        raise TypeError("parse_python_value expects text, got %s" % _describe(text))
    try:
        value = _parse_text(text, a)
    except ValueError as e:
        raise ValueError("cannot parse %r as %s: %s" % (text, a.type_string(), e)) from None
    check_python_value(value, a.with_nullable(True), "value %r" % text)
    return value
