"""Paimon atomic data types as schema JSON spells them, parsed.

A type is what the schema file holds: a ``str`` for atomic types (``"BIGINT"``,
``"DECIMAL(10, 2) NOT NULL"``) and a ``dict`` for nested ones (``{"type": "ARRAY", ...}``).
Atomic strings are parsed into :class:`AtomicType`; nested dicts stay dicts.

Spelling of local-zoned timestamps: we *write* ``TIMESTAMP_LTZ(p)`` and *read* both that and
Java's ``TIMESTAMP(p) WITH LOCAL TIME ZONE``. pypaimon (our test oracle) writes
``TIMESTAMP_LTZ(p)``, so tables we create look like tables it creates; pypaimon parses Java's
spelling too, and Java's type parser accepts ``TIMESTAMP_LTZ`` as a keyword.

The rest of the library imports these names from :mod:`paimon_commit.format.types`.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, replace
from typing import Any, Dict, List, Optional, Union

__all__ = [
    "MAX_LENGTH",
    "AtomicType",
    "PaimonType",
    "parse_atomic",
    "as_atomic",
    "type_root",
    "type_nullable",
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
