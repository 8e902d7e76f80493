"""Paimon data types exactly as they appear in schema JSON, and their Arrow and Python forms.

A type is what the schema file holds: a ``str`` for atomic types (``"BIGINT"``,
``"DECIMAL(10, 2) NOT NULL"``) and a ``dict`` for nested ones (``{"type": "ARRAY", ...}``).
Atomic strings are parsed into :class:`AtomicType`; nested dicts stay dicts.

The code lives in one module per concern; this module gathers their names and is the one the
rest of the library imports:

* :mod:`.atomic_types`: :class:`AtomicType`, the type-string parser, roots and nullability;
* :mod:`.arrow_types`: Paimon <-> Arrow types, as pypaimon maps them;
* :mod:`.python_values`: Python values of atomic types, checked and parsed from text.
"""

from __future__ import annotations

from .arrow_types import (
    FieldIdCounter,
    arrow_schema_to_paimon_fields,
    arrow_to_paimon,
    constant_array,
    paimon_fields_to_arrow_schema,
    paimon_to_arrow,
)
from .atomic_types import (
    BINARY_ROOTS,
    INTEGER_RANGES,
    MAX_LENGTH,
    NESTED_ROOTS,
    STRING_ROOTS,
    TIMESTAMP_ROOTS,
    AtomicType,
    PaimonType,
    as_atomic,
    parse_atomic,
    type_nullable,
    type_root,
)
from .python_values import check_python_value, decimal_to_unscaled, parse_python_value

__all__ = [
    "constant_array",
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
