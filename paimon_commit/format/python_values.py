"""Python values of atomic Paimon types (partition values, command-line text): checks and
parsing. These are the values :mod:`.binary_row` serializes.

The rest of the library imports these names from :mod:`paimon_commit.format.types`.
"""

from __future__ import annotations

import datetime
import decimal
import math
import re
import struct
from typing import Any, Union

from .atomic_types import (
    BINARY_ROOTS,
    INTEGER_RANGES,
    STRING_ROOTS,
    TIMESTAMP_ROOTS,
    AtomicType,
    as_atomic,
)

__all__ = [
    "check_python_value",
    "parse_python_value",
    "decimal_to_unscaled",
]

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


_FRACTION = re.compile(r"(T|\s|^)(\d{1,2}:\d{2}:\d{2})\.(\d+)")


def parse_iso_datetime(text: str) -> datetime.datetime:
    """datetime.fromisoformat as Python 3.11 reads it, on every supported Python: 3.10's
    rejects a trailing "Z" (UTC) and fractions of a second of other than 3 or 6 digits."""
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    text = _FRACTION.sub(lambda m: f"{m.group(1)}{m.group(2)}.{m.group(3)[:6]:0<6}", text, 1)
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
        value = parse_iso_datetime(s)
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
