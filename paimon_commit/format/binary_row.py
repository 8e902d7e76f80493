"""Paimon BinaryRow codec: partition values, stats rows (spec §5).

Serialized form: int32 big-endian arity, then the row bytes (header + null bits, one 8-byte
little-endian slot per field, variable part). Java compares and hashes BinaryRows by their
bytes, so the encoder reproduces Java's ``BinaryRowWriter`` byte for byte, including two
details pypaimon 2.1.0 gets differently:

* DECIMAL(p > 18): the unscaled value is stored as Java ``BigInteger.toByteArray()``, the
  *minimal* two's complement. pypaimon uses one byte more for -2**7, -2**15, -2**23, ...
  (e.g. -128 -> ``ff80`` instead of ``80``).
* A *null* DECIMAL(p > 18) or TIMESTAMP(p > 3) still reserves its 16 / 8 zero bytes in the
  variable part and its slot holds ``offset << 32``: Java's code-generated projections and
  ``RowHelper`` call ``writeDecimal(pos, null, p)`` / ``writeTimestamp(pos, null, p)`` for such
  fields (``binaryWriterWriteNull``), which is how partition rows are built. pypaimon writes an
  all-zero slot and no variable bytes.

Python values are those of :func:`paimon_commit.format.types.check_python_value`.
"""

from __future__ import annotations

import datetime
import decimal
import functools
import struct
from typing import Any, Callable, List, Sequence, Tuple, Union

from paimon_commit.format.types import (
    BINARY_ROOTS,
    INTEGER_RANGES,
    STRING_ROOTS,
    TIMESTAMP_ROOTS,
    AtomicType,
    as_atomic,
    check_python_value,
    decimal_to_unscaled,
)

__all__ = [
    "EMPTY_ROW",
    "BinaryRowCodec",
    "binary_row_codec",
    "serialize_binary_row",
    "deserialize_binary_row",
    "binary_row_arity",
    "null_bits_size",
]

#: The serialized row with no fields: arity 0 and an 8-byte header.
EMPTY_ROW: bytes = b"\x00" * 12

_ARITY = struct.Struct(">i")
_U64 = struct.Struct("<Q")
_I64 = struct.Struct("<q")
_I32 = struct.Struct("<i")
_INT_STRUCTS = {
    "TINYINT": struct.Struct("<b"),
    "SMALLINT": struct.Struct("<h"),
    "INT": struct.Struct("<i"),
    "BIGINT": struct.Struct("<q"),
}
_F32 = struct.Struct("<f")
_F64 = struct.Struct("<d")

_MAX_FIX_PART_DATA_SIZE = 7
_COMPACT_DECIMAL_PRECISION = 18
_COMPACT_TIMESTAMP_PRECISION = 3
_MAX_OFFSET = 2 ** 31 - 1  # Java addresses the row with int offsets
_EPOCH_ORDINAL = datetime.date(1970, 1, 1).toordinal()
_EPOCH = datetime.datetime(1970, 1, 1)
_EPOCH_UTC = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
_ZEROS = bytes(16)
_MILLIS_PER_DAY = 86400 * 1000

# An encoder writes one non-null value: (value, buffer, slot offset, variable parts, cursor)
# -> new cursor. The cursor is the offset of the next variable-part byte, counted from the
# start of the row bytes (after the 4-byte arity), which is what slots store.
Encoder = Callable[[Any, bytearray, int, List[bytes], int], int]
# A decoder reads one non-null value: (data, slot offset in data, row length) -> value.
Decoder = Callable[[bytes, int, int], Any]


def null_bits_size(arity: int) -> int:
    """Size of the header + null bitset: 8 bytes for arity 0..55, 16 for 56..119, ..."""
    return ((arity + 63 + 8) // 64) * 8


def _java_unscaled_bytes(unscaled: int) -> bytes:
    """``BigInteger.toByteArray()``: minimal big-endian two's complement, at least one byte."""
    bits = (unscaled if unscaled >= 0 else ~unscaled).bit_length()
    return unscaled.to_bytes(bits // 8 + 1, "big", signed=True)


def _fail(value: Any, a: AtomicType, what: str) -> Exception:
    """The error check_python_value gives for a value the fast path refused."""
    try:
        check_python_value(value, a, what)
    except (TypeError, ValueError) as e:
        return e
    return ValueError("%s: cannot encode %r as %s" % (what, value, a.type_string()))


def _write_bytes(b: bytes, buf: bytearray, off: int, var: List[bytes], cursor: int) -> int:
    n = len(b)
    if n <= _MAX_FIX_PART_DATA_SIZE:
        buf[off:off + n] = b
        buf[off + 7] = 0x80 | n
        return cursor
    if cursor > _MAX_OFFSET or n > 0xFFFFFFFF:
        raise ValueError("BinaryRow too large: variable part exceeds 2 GiB")
    var.append(b)
    pad = -n & 7
    if pad:
        var.append(_ZEROS[:pad])
    _U64.pack_into(buf, off, (cursor << 32) | n)
    return cursor + n + pad


def _datetime_micros(v: datetime.datetime) -> int:
    delta = v - (_EPOCH if v.tzinfo is None else _EPOCH_UTC)
    return (delta.days * 86400 + delta.seconds) * 1000000 + delta.microseconds


def _make_encoder(a: AtomicType, what: str) -> Encoder:
    root = a.root

    if root in INTEGER_RANGES:
        pack = _INT_STRUCTS[root].pack_into
        low, high = INTEGER_RANGES[root]

        def enc_int(v, buf, off, var, cursor):
            if type(v) is not int or not low <= v <= high:
                raise _fail(v, a, what)
            pack(buf, off, v)
            return cursor
        return enc_int

    if root in STRING_ROOTS:
        def enc_str(v, buf, off, var, cursor):
            if type(v) is not str and not isinstance(v, str):
                raise _fail(v, a, what)
            try:
                b = v.encode("utf-8")
            except UnicodeEncodeError:
                raise _fail(v, a, what) from None
            return _write_bytes(b, buf, off, var, cursor)
        return enc_str

    if root in BINARY_ROOTS:
        def enc_bin(v, buf, off, var, cursor):
            if not isinstance(v, (bytes, bytearray)):
                raise _fail(v, a, what)
            return _write_bytes(bytes(v), buf, off, var, cursor)
        return enc_bin

    if root == "BOOLEAN":
        def enc_bool(v, buf, off, var, cursor):
            if v is True:
                buf[off] = 1
            elif v is not False:
                raise _fail(v, a, what)
            return cursor
        return enc_bool

    if root in ("FLOAT", "DOUBLE"):
        pack = (_F32 if root == "FLOAT" else _F64).pack_into

        def enc_float(v, buf, off, var, cursor):
            if type(v) is not float and (isinstance(v, bool) or not isinstance(v, (int, float))):
                raise _fail(v, a, what)
            try:
                pack(buf, off, float(v))
            except OverflowError:
                raise _fail(v, a, what) from None
            return cursor
        return enc_float

    if root == "DATE":
        def enc_date(v, buf, off, var, cursor):
            if type(v) is not datetime.date and (
                    isinstance(v, datetime.datetime) or not isinstance(v, datetime.date)):
                raise _fail(v, a, what)
            _I32.pack_into(buf, off, v.toordinal() - _EPOCH_ORDINAL)
            return cursor
        return enc_date

    if root == "TIME":
        def enc_time(v, buf, off, var, cursor):
            if not isinstance(v, datetime.time) or v.tzinfo is not None:
                raise _fail(v, a, what)
            millis = ((v.hour * 60 + v.minute) * 60 + v.second) * 1000 + v.microsecond // 1000
            _I32.pack_into(buf, off, millis)
            return cursor
        return enc_time

    if root == "DECIMAL":
        if a.precision <= _COMPACT_DECIMAL_PRECISION:
            def enc_decimal_compact(v, buf, off, var, cursor):
                _I64.pack_into(buf, off, decimal_to_unscaled(v, a, what))
                return cursor
            return enc_decimal_compact

        def enc_decimal(v, buf, off, var, cursor):
            b = _java_unscaled_bytes(decimal_to_unscaled(v, a, what))
            if cursor > _MAX_OFFSET:
                raise ValueError("BinaryRow too large: variable part exceeds 2 GiB")
            var.append(b + _ZEROS[:16 - len(b)])
            _U64.pack_into(buf, off, (cursor << 32) | len(b))
            return cursor + 16
        return enc_decimal

    if root in TIMESTAMP_ROOTS:
        is_ltz = root == "TIMESTAMP_LTZ"
        unit = 10 ** (6 - a.precision) if a.precision < 6 else 1

        def micros_of(v):
            if not isinstance(v, datetime.datetime) or (v.tzinfo is not None and not is_ltz) \
                    or v.microsecond % unit:
                raise _fail(v, a, what)
            return _datetime_micros(v)

        if a.precision <= _COMPACT_TIMESTAMP_PRECISION:
            def enc_ts_compact(v, buf, off, var, cursor):
                _I64.pack_into(buf, off, micros_of(v) // 1000)
                return cursor
            return enc_ts_compact

        def enc_ts(v, buf, off, var, cursor):
            millis, micros_of_milli = divmod(micros_of(v), 1000)
            if cursor > _MAX_OFFSET:
                raise ValueError("BinaryRow too large: variable part exceeds 2 GiB")
            var.append(_I64.pack(millis))
            _U64.pack_into(buf, off, (cursor << 32) | (micros_of_milli * 1000))
            return cursor + 8
        return enc_ts

    raise ValueError("BinaryRow cannot encode type %s" % a)  # pragma: no cover


class _Corrupt(Exception):
    """Internal: a decoder found bytes that cannot be a valid value."""


def _var_bounds(data: bytes, offset: int, length: int, row_len: int, fixed_size: int) -> int:
    if offset < fixed_size or offset + length > row_len:
        raise _Corrupt("variable-part reference (offset %d, length %d) outside the row's %d bytes"
                       % (offset, length, row_len))
    return 4 + offset


def _make_decoder(a: AtomicType, fixed_size: int) -> Decoder:
    root = a.root

    if root in INTEGER_RANGES:
        unpack = _INT_STRUCTS[root].unpack_from
        return lambda data, off, row_len: unpack(data, off)[0]

    if root in STRING_ROOTS or root in BINARY_ROOTS:
        is_string = root in STRING_ROOTS

        def dec_bytes(data, off, row_len):
            slot = _U64.unpack_from(data, off)[0]
            if slot >> 63:
                n = (slot >> 56) & 0x7F
                if n > _MAX_FIX_PART_DATA_SIZE:
                    raise _Corrupt("inline length %d > 7" % n)
                b = bytes(data[off:off + n])
            else:
                n = slot & 0xFFFFFFFF
                start = _var_bounds(data, slot >> 32, n, row_len, fixed_size)
                b = bytes(data[start:start + n])
            if not is_string:
                return b
            try:
                return b.decode("utf-8")
            except UnicodeDecodeError as e:
                raise _Corrupt("string is not valid UTF-8 (%s)" % e.reason) from None
        return dec_bytes

    if root == "BOOLEAN":
        return lambda data, off, row_len: data[off] != 0

    if root == "FLOAT":
        return lambda data, off, row_len: _F32.unpack_from(data, off)[0]

    if root == "DOUBLE":
        return lambda data, off, row_len: _F64.unpack_from(data, off)[0]

    if root == "DATE":
        def dec_date(data, off, row_len):
            days = _I32.unpack_from(data, off)[0]
            try:
                return datetime.date.fromordinal(days + _EPOCH_ORDINAL)
            except (ValueError, OverflowError):
                raise _Corrupt("DATE %d days is outside Python's date range" % days) from None
        return dec_date

    if root == "TIME":
        def dec_time(data, off, row_len):
            millis = _I32.unpack_from(data, off)[0]
            if not 0 <= millis < _MILLIS_PER_DAY:
                raise _Corrupt("TIME %d ms is not a time of day" % millis)
            seconds, ms = divmod(millis, 1000)
            return datetime.time(seconds // 3600, seconds // 60 % 60, seconds % 60, ms * 1000)
        return dec_time

    if root == "DECIMAL":
        precision, scale = a.precision, a.scale
        limit = 10 ** precision

        def to_decimal(unscaled):
            if abs(unscaled) >= limit:
                raise _Corrupt("unscaled value %d has more than %d digits" % (unscaled, precision))
            return decimal.Decimal("%dE-%d" % (unscaled, scale))

        if precision <= _COMPACT_DECIMAL_PRECISION:
            return lambda data, off, row_len: to_decimal(_I64.unpack_from(data, off)[0])

        def dec_decimal(data, off, row_len):
            slot = _U64.unpack_from(data, off)[0]
            n = slot & 0xFFFFFFFF
            if not 1 <= n <= 16:
                raise _Corrupt("DECIMAL byte length %d is not in 1..16" % n)
            start = _var_bounds(data, slot >> 32, n, row_len, fixed_size)
            return to_decimal(int.from_bytes(data[start:start + n], "big", signed=True))
        return dec_decimal

    if root in TIMESTAMP_ROOTS:
        epoch = _EPOCH_UTC if root == "TIMESTAMP_LTZ" else _EPOCH

        def to_datetime(millis, nano_of_milli):
            try:
                return epoch + datetime.timedelta(microseconds=millis * 1000 + nano_of_milli // 1000)
            except OverflowError:
                raise _Corrupt("timestamp %d ms is outside Python's datetime range" % millis) from None

        if a.precision <= _COMPACT_TIMESTAMP_PRECISION:
            return lambda data, off, row_len: to_datetime(_I64.unpack_from(data, off)[0], 0)

        def dec_ts(data, off, row_len):
            slot = _U64.unpack_from(data, off)[0]
            nano = slot & 0xFFFFFFFF
            if nano >= 1000000:
                raise _Corrupt("nanoOfMillisecond %d >= 1000000" % nano)
            start = _var_bounds(data, slot >> 32, 8, row_len, fixed_size)
            # Python datetimes hold microseconds: the last 3 nano digits of TIMESTAMP(7..9) are lost.
            return to_datetime(_I64.unpack_from(data, start)[0], nano)
        return dec_ts

    raise ValueError("BinaryRow cannot decode type %s" % a)  # pragma: no cover


class BinaryRowCodec:
    """Encoder/decoder for one list of atomic types; build once and reuse on hot paths."""

    __slots__ = ("types", "arity", "header_size", "fixed_size", "_encoders", "_decoders",
                 "_null_reserve", "_null_masks")

    def __init__(self, types: Sequence[Union[str, AtomicType]]):
        self.types: Tuple[AtomicType, ...] = tuple(as_atomic(t) for t in types)
        self.arity = len(self.types)
        self.header_size = null_bits_size(self.arity)
        #: header + slots: the offset of the variable part within the row bytes
        self.fixed_size = self.header_size + 8 * self.arity
        self._encoders = [_make_encoder(t, "BinaryRow field %d (%s)" % (i, t.type_string()))
                          for i, t in enumerate(self.types)]
        self._decoders = [_make_decoder(t, self.fixed_size) for t in self.types]
        # Bytes a null value still reserves in the variable part (see module docstring).
        self._null_reserve = [
            16 if t.root == "DECIMAL" and t.precision > _COMPACT_DECIMAL_PRECISION
            else 8 if t.root in TIMESTAMP_ROOTS and t.precision > _COMPACT_TIMESTAMP_PRECISION
            else 0
            for t in self.types]
        # (absolute byte index in the serialized form, bit mask) of each field's null bit
        self._null_masks = [(4 + ((i + 8) >> 3), 1 << ((i + 8) & 7)) for i in range(self.arity)]

    def serialize(self, values: Sequence[Any]) -> bytes:
        if len(values) != self.arity:
            raise ValueError("BinaryRow of %d types given %d values" % (self.arity, len(values)))
        buf = bytearray(4 + self.fixed_size)
        _ARITY.pack_into(buf, 0, self.arity)
        var: List[bytes] = []
        cursor = self.fixed_size
        off = 4 + self.header_size
        for i, v in enumerate(values):
            if v is None:
                byte_index, mask = self._null_masks[i]
                buf[byte_index] |= mask
                reserve = self._null_reserve[i]
                if reserve:
                    var.append(_ZEROS[:reserve])
                    _U64.pack_into(buf, off, cursor << 32)
                    cursor += reserve
            else:
                cursor = self._encoders[i](v, buf, off, var, cursor)
            off += 8
        if var:
            return bytes(buf) + b"".join(var)
        return bytes(buf)

    def deserialize(self, data: Union[bytes, bytearray, memoryview]) -> Tuple[Any, ...]:
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError("BinaryRow data must be bytes, got %s" % type(data).__name__)
        n = len(data)
        if n < 4 + self.fixed_size:
            if n >= 4:
                arity = _ARITY.unpack_from(data, 0)[0]
                if arity != self.arity:
                    raise ValueError("BinaryRow has arity %d but %d types were given"
                                     % (arity, self.arity))
            raise ValueError("BinaryRow is truncated: %d bytes, %d fields need at least %d"
                             % (n, self.arity, 4 + self.fixed_size))
        arity = _ARITY.unpack_from(data, 0)[0]
        if arity != self.arity:
            raise ValueError("BinaryRow has arity %d but %d types were given" % (arity, self.arity))
        if data[4] > 3:
            raise ValueError("BinaryRow has invalid row kind byte %d" % data[4])
        row_len = n - 4
        values = []
        off = 4 + self.header_size
        try:
            for i, dec in enumerate(self._decoders):
                byte_index, mask = self._null_masks[i]
                if data[byte_index] & mask:
                    values.append(None)
                else:
                    values.append(dec(data, off, row_len))
                off += 8
        except _Corrupt as e:
            raise ValueError("BinaryRow field %d (%s) is corrupt: %s"
                             % (i, self.types[i].type_string(), e)) from None
        except (struct.error, IndexError, OverflowError, ValueError) as e:
            raise ValueError("BinaryRow field %d (%s) is corrupt: %s"
                             % (i, self.types[i].type_string(), e)) from None
        return tuple(values)

    def __repr__(self) -> str:
        return "BinaryRowCodec(%s)" % ", ".join(t.to_json() for t in self.types)


@functools.lru_cache(maxsize=512)
def _cached_codec(types: Tuple[Union[str, AtomicType], ...]) -> BinaryRowCodec:
    return BinaryRowCodec(types)


def binary_row_codec(types: Sequence[Union[str, AtomicType]]) -> BinaryRowCodec:
    """A cached codec for ``types`` (type strings and/or AtomicTypes)."""
    key = tuple(types)
    try:
        return _cached_codec(key)
    except TypeError:
        # Unhashable entries (e.g. a nested type dict): let the constructor name the problem.
        return BinaryRowCodec(key)


def serialize_binary_row(values: Sequence[Any], types: Sequence[Union[str, AtomicType]]) -> bytes:
    """Serialize ``values`` (Python values, None for null) as a Paimon BinaryRow."""
    return binary_row_codec(types).serialize(values)


def deserialize_binary_row(data: Union[bytes, bytearray, memoryview],
                           types: Sequence[Union[str, AtomicType]]) -> Tuple[Any, ...]:
    """Decode a serialized BinaryRow; ValueError if it does not match ``types`` or is corrupt."""
    return binary_row_codec(types).deserialize(data)


def binary_row_arity(data: Union[bytes, bytearray, memoryview]) -> int:
    """The field count stored in a serialized BinaryRow (ValueError if shorter than 4 bytes)."""
    if len(data) < 4:
        raise ValueError("BinaryRow is truncated: %d bytes" % len(data))
    return _ARITY.unpack_from(data, 0)[0]
