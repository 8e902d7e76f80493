"""Table layout: partition and bucket directory names, metadata file names (spec §1.2).

Everything here builds or parses *names*, relative to the table root; nothing touches a file
system. Partition directories follow Java's legacy naming (``partition.legacy-name = true``,
the default), which is also what pypaimon 2.1.0 writes.
"""

from __future__ import annotations

import datetime
import re
import struct
import unicodedata
import uuid as _uuid
from decimal import Decimal
from typing import Any, Optional, Sequence, Union

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
    "DEFAULT_PARTITION_NAME",
    "SCHEMA_DIR", "SNAPSHOT_DIR", "MANIFEST_DIR", "TAG_DIR", "CONSUMER_DIR", "CHANGELOG_DIR",
    "BRANCH_DIR", "INDEX_DIR", "STATISTICS_DIR", "LATEST_HINT", "EARLIEST_HINT",
    "SNAPSHOT_PREFIX", "SCHEMA_PREFIX", "TAG_PREFIX", "CONSUMER_PREFIX", "CHANGELOG_PREFIX",
    "MANIFEST_PREFIX", "MANIFEST_LIST_PREFIX", "INDEX_MANIFEST_PREFIX", "BUCKET_PREFIX",
    "DATA_FILE_PREFIX",
    "escape_path_name", "unescape_path_name",
    "partition_value_string", "non_legacy_name_supported", "partition_path", "bucket_dir", "is_bucket_dir", "data_dir",
    "snapshot_file_name", "parse_snapshot_id",
    "schema_file_name", "parse_schema_id",
    "changelog_file_name", "parse_changelog_id",
    "tag_file_name", "parse_tag_name",
    "consumer_file_name", "parse_consumer_id",
    "new_manifest_name", "new_manifest_list_name",
    "data_file_name", "temp_file_name", "is_temp_file",
    "validate_bare_file_name",
]

DEFAULT_PARTITION_NAME = "__DEFAULT_PARTITION__"

SCHEMA_DIR = "schema"
SNAPSHOT_DIR = "snapshot"
MANIFEST_DIR = "manifest"
TAG_DIR = "tag"
CONSUMER_DIR = "consumer"
CHANGELOG_DIR = "changelog"
BRANCH_DIR = "branch"
INDEX_DIR = "index"
STATISTICS_DIR = "statistics"
LATEST_HINT = "LATEST"
EARLIEST_HINT = "EARLIEST"

SNAPSHOT_PREFIX = "snapshot-"
SCHEMA_PREFIX = "schema-"
TAG_PREFIX = "tag-"
CONSUMER_PREFIX = "consumer-"
CHANGELOG_PREFIX = "changelog-"
MANIFEST_PREFIX = "manifest-"
MANIFEST_LIST_PREFIX = "manifest-list-"
INDEX_MANIFEST_PREFIX = "index-manifest-"
BUCKET_PREFIX = "bucket-"
DATA_FILE_PREFIX = "data-"

_POSTPONE_BUCKET = -2
_MAX_LONG = 2 ** 63 - 1

# --------------------------------------------------------------------------------------------
# Escaping (Java PartitionPathUtils.escapePathName / unescapePathName)
# --------------------------------------------------------------------------------------------

_CHARS_TO_ESCAPE = frozenset([chr(c) for c in range(0x20)] + ["\x7f"] + list("\"#%'*/:=?\\{}[]^"))
_ESCAPE_TABLE = {ord(c): "%%%02X" % ord(c) for c in _CHARS_TO_ESCAPE}
_UNESCAPE_RE = re.compile(r"%([0-9A-Fa-f]{2})")


def escape_path_name(s: str) -> str:
    """Escape a partition key or value for a directory name.

    0x00-0x1F, 0x7F and ``" # % ' * / : = ? \\ { } [ ] ^`` become ``%XX`` (uppercase hex);
    spaces and non-ASCII characters are kept. Empty names are refused, as in Java.
    """
    if not isinstance(s, str):
        raise TypeError("escape_path_name expects str, got %r" % (s,))
    if not s:
        raise ValueError("a partition path component must not be empty")
    return s.translate(_ESCAPE_TABLE)


def unescape_path_name(s: str) -> str:
    """Inverse of :func:`escape_path_name`: every ``%XX`` (two hex digits) becomes its character.

    Java's (Hive's) ``unescapePathName`` skips a ``%XX`` at the very end of the string
    (``i + 2 < length``); we decode it, so that this is an exact inverse of escaping.
    """
    return _UNESCAPE_RE.sub(lambda m: chr(int(m.group(1), 16)), s)


# --------------------------------------------------------------------------------------------
# Partition directory names
# --------------------------------------------------------------------------------------------

_JAVA_EXTRA_WHITESPACE = frozenset("\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f")
_JAVA_NON_BREAKING = frozenset("\u00a0\u2007\u202f")


def _java_is_whitespace(c: str) -> bool:
    # java.lang.Character.isWhitespace
    if c in _JAVA_EXTRA_WHITESPACE:
        return True
    return unicodedata.category(c) in ("Zs", "Zl", "Zp") and c not in _JAVA_NON_BREAKING


def _is_blank(s: str) -> bool:
    """Whether Java (StringUtils.isNullOrWhitespaceOnly) maps ``s`` to the default partition.

    pypaimon uses Python's ``str.isspace``, which disagrees for U+0085, U+00A0, U+2007 and
    U+202F. Where they disagree the two implementations would look in different directories,
    so such values are refused rather than silently unreadable by one of them.
    """
    if not s:
        return True
    java_blank = all(_java_is_whitespace(c) for c in s)
    if java_blank != s.isspace():
        raise ValueError("partition value %r is blank for %s but not for %s; refusing it because "
                         "they would put it in different directories"
                         % (s, "Python/pypaimon" if s.isspace() else "Java",
                            "Java" if s.isspace() else "Python/pypaimon"))
    return java_blank


def _java_floating_string(value: float, single_precision: bool) -> str:
    """Java ``Float/Double.toString`` in its JDK 19+ (shortest round trip) form.

    Same algorithm as pypaimon's ``_floating_partition_string``: Java switches to
    ``1.0E10`` notation outside [1e-3, 1e7). Older JDKs may print other digits for some
    values; that is a Java-side inconsistency we cannot fix.
    """
    encoding = ">f" if single_precision else ">d"
    bits = struct.pack(encoding, value)
    value = struct.unpack(encoding, bits)[0]
    for precision in range(2, 10 if single_precision else 18):
        text = format(value, ".%dg" % precision)
        try:
            if struct.pack(encoding, float(text)) != bits:
                continue
        except OverflowError:
            continue
        d = Decimal(text)
        if d.is_zero() or Decimal("0.001") <= abs(d) < Decimal("1e7"):
            text = format(d, "f")
            if "." in text:
                text = text.rstrip("0").rstrip(".")
            if "." not in text:
                text += ".0"
        else:
            mantissa, exponent = format(d, "e").split("e")
            if "." in mantissa:
                mantissa = mantissa.rstrip("0").rstrip(".")
            if "." not in mantissa:
                mantissa += ".0"
            text = "%sE%d" % (mantissa, int(exponent))
        return text
    return repr(value)  # pragma: no cover - 9 / 17 significant digits always round-trip


def _java_local_date_time_string(v: datetime.datetime) -> str:
    # java.time.LocalDateTime.toString(): seconds only when non-zero, fraction in groups of 3.
    text = "%04d-%02d-%02dT%02d:%02d" % (v.year, v.month, v.day, v.hour, v.minute)
    if v.second or v.microsecond:
        text += ":%02d" % v.second
        if v.microsecond:
            if v.microsecond % 1000 == 0:
                text += ".%03d" % (v.microsecond // 1000)
            else:
                text += ".%06d" % v.microsecond
    return text


def _java_decimal_plain_string(unscaled: int, scale: int) -> str:
    # BigDecimal.toPlainString() at the column's scale: 1.5 in DECIMAL(10, 2) is "1.50".
    digits = str(abs(unscaled))
    if scale:
        digits = digits.rjust(scale + 1, "0")
        digits = digits[:-scale] + "." + digits[-scale:]
    return "-" + digits if unscaled < 0 else digits


# Partition types whose directory value `partition.legacy-name = false` spells with certainty
# (Java casts the value to a string, pypaimon 2.1.0 `cast_value_to_string`): the same as the
# legacy name for strings, integers and BOOLEAN; DATE as ISO `yyyy-MM-dd`. Every other type
# (TIMESTAMP, TIMESTAMP_LTZ in the JVM's time zone, TIME, DECIMAL, FLOAT/DOUBLE, ...) is refused
# by FileStore.layout_refusal rather than guessed.
NON_LEGACY_DATE = "DATE"


def non_legacy_name_supported(t: Union[str, AtomicType]) -> bool:
    """Whether partition_value_string(..., legacy=False) can spell a value of type `t`."""
    root = as_atomic(t).root
    return root in STRING_ROOTS or root in INTEGER_RANGES or root in ("BOOLEAN", NON_LEGACY_DATE)


def partition_value_string(value: Any, t: Union[str, AtomicType],
                           default_name: str = DEFAULT_PARTITION_NAME,
                           what: str = "partition value", legacy: bool = True) -> str:
    """The unescaped directory value of one partition field.

    With ``legacy=False`` (table option ``partition.legacy-name = false``) only the types of
    non_legacy_name_supported are spelled: as below, except DATE as ``2024-01-01``; any other
    type raises ValueError.

    Legacy naming:

    Java's ``toString()`` of the internal value: strings as themselves, integers in decimal,
    BOOLEAN ``true``/``false``, DATE as days since 1970-01-01, TIME as milliseconds of the day,
    DECIMAL as plain digits at the column's scale (``1.50``), TIMESTAMP as
    ``LocalDateTime.toString()`` (``2024-01-01T10:00``, ``...T10:00:05.123``; TIMESTAMP_LTZ in
    UTC), FLOAT/DOUBLE as Java prints them (``1.5``, ``1.0E10``). None, empty and
    whitespace-only strings become ``default_name``. Matches pypaimon 2.1.0's directories.

    Refused (ValueError): NaN/infinite FLOAT/DOUBLE (pypaimon writes ``nan``, Java ``NaN``),
    BINARY/VARBINARY/BYTES (Java's legacy name is a ``[B@hash`` object identity, pypaimon's is
    Python's ``b'..'`` repr), and strings Java and Python disagree are blank.
    """
    a = as_atomic(t)
    if not legacy and not non_legacy_name_supported(a):
        raise ValueError("%s of type %s: this library cannot spell its directory name under "
                         "option 'partition.legacy-name' = 'false'" % (what, a.type_string()))
    if value is None:
        return default_name
    check_python_value(value, a.with_nullable(True), what)
    root = a.root
    if not legacy and root == NON_LEGACY_DATE:
        return "%04d-%02d-%02d" % (value.year, value.month, value.day)
    if root in STRING_ROOTS:
        return default_name if _is_blank(value) else value
    if root in INTEGER_RANGES:
        return str(value)
    if root == "BOOLEAN":
        return "true" if value else "false"
    if root == "DATE":
        return str((value - datetime.date(1970, 1, 1)).days)
    if root == "TIME":
        return str(((value.hour * 60 + value.minute) * 60 + value.second) * 1000
                   + value.microsecond // 1000)
    if root == "DECIMAL":
        return _java_decimal_plain_string(decimal_to_unscaled(value, a, what), a.scale)
    if root in TIMESTAMP_ROOTS:
        if value.tzinfo is not None:
            value = value.astimezone(datetime.timezone.utc).replace(tzinfo=None)
        return _java_local_date_time_string(value)
    if root in ("FLOAT", "DOUBLE"):
        f = float(value)
        if f != f or f in (float("inf"), float("-inf")):
            raise ValueError("%s %r of type %s cannot name a directory: Java and pypaimon spell "
                         "it differently" % (what, value, a.type_string()))
        return _java_floating_string(f, root == "FLOAT")
    if root in BINARY_ROOTS:
        raise ValueError("%s of type %s cannot name a directory: Java's legacy name is an "
                         "object identity" % (what, a.type_string()))
    raise ValueError("unsupported partition type %s" % a)  # pragma: no cover


def partition_path(keys: Sequence[str], values: Sequence[Any], types: Sequence[Union[str, AtomicType]],
                   default_name: str = DEFAULT_PARTITION_NAME, legacy: bool = True) -> str:
    """``k1=v1/k2=v2`` (escaped), or ``""`` for an unpartitioned table. ``legacy``: the
    table's ``partition.legacy-name`` (partition_value_string)."""
    if not len(keys) == len(values) == len(types):
        raise ValueError("partition_path got %d keys, %d values and %d types"
                         % (len(keys), len(values), len(types)))
    return "/".join(
        "%s=%s" % (escape_path_name(k), escape_path_name(
            partition_value_string(v, t, default_name, "partition key %r" % (k,), legacy)))
        for k, v, t in zip(keys, values, types))


def bucket_dir(bucket: int) -> str:
    """``bucket-<b>``; ``bucket-postpone`` for bucket -2 (postpone mode)."""
    if isinstance(bucket, bool) or not isinstance(bucket, int):
        raise TypeError("bucket must be an int, got %r" % (bucket,))
    if bucket == _POSTPONE_BUCKET:
        return BUCKET_PREFIX + "postpone"
    if bucket < 0:
        raise ValueError("invalid bucket %d (bucket-unaware tables write bucket 0)" % bucket)
    return BUCKET_PREFIX + str(bucket)


def is_bucket_dir(name: str) -> bool:
    """Whether a directory name is one `bucket_dir` writes (``bucket-<n>``, ``bucket-postpone``)."""
    rest = name[len(BUCKET_PREFIX):] if name.startswith(BUCKET_PREFIX) else None
    return rest is not None and (rest.isdigit() or rest == "postpone")


def data_dir(partition_path: str, bucket: int) -> str:
    """Directory of a partition's bucket relative to the table root: ``dt=19723/bucket-0``."""
    return partition_path + "/" + bucket_dir(bucket) if partition_path else bucket_dir(bucket)


# --------------------------------------------------------------------------------------------
# Metadata file names
# --------------------------------------------------------------------------------------------

# Leading zeros are refused: Java's Long.parseLong would read "snapshot-01" as 1, so accepting
# it would give two files the same id. A name Java would never write is not a snapshot for us.
_ID_RE = re.compile(r"(?:0|[1-9][0-9]*)")


def _id_file_name(prefix: str, file_id: int) -> str:
    if isinstance(file_id, bool) or not isinstance(file_id, int):
        raise TypeError("%sid must be an int, got %r" % (prefix, file_id))
    if not 0 <= file_id <= _MAX_LONG:
        raise ValueError("%sid out of range: %d" % (prefix, file_id))
    return prefix + str(file_id)


def _parse_id(prefix: str, name: str) -> Optional[int]:
    if not isinstance(name, str) or not name.startswith(prefix):
        return None
    digits = name[len(prefix):]
    if not _ID_RE.fullmatch(digits):  # str.isdigit would accept non-ASCII digits
        return None
    value = int(digits)
    return value if value <= _MAX_LONG else None


def snapshot_file_name(snapshot_id: int) -> str:
    """``snapshot-<id>``."""
    return _id_file_name(SNAPSHOT_PREFIX, snapshot_id)


def parse_snapshot_id(name: str) -> Optional[int]:
    """The id of ``snapshot-<id>``, else None (hints, temp files, ``snapshot-01``, ``snapshot-+1``)."""
    return _parse_id(SNAPSHOT_PREFIX, name)


def schema_file_name(schema_id: int) -> str:
    """``schema-<id>``."""
    return _id_file_name(SCHEMA_PREFIX, schema_id)


def parse_schema_id(name: str) -> Optional[int]:
    """The id of ``schema-<id>``, else None (same rules as :func:`parse_snapshot_id`)."""
    return _parse_id(SCHEMA_PREFIX, name)


def changelog_file_name(snapshot_id: int) -> str:
    """``changelog-<id>`` (in ``changelog/``)."""
    return _id_file_name(CHANGELOG_PREFIX, snapshot_id)


def parse_changelog_id(name: str) -> Optional[int]:
    """The id of ``changelog-<id>``, else None."""
    return _parse_id(CHANGELOG_PREFIX, name)


def _named_file_name(prefix: str, name: str, what: str) -> str:
    if not isinstance(name, str):
        raise TypeError("%s must be a str, got %r" % (what, name))
    if not name.strip():
        raise ValueError("%s must not be blank: %r" % (what, name))
    return validate_bare_file_name(prefix + name, what)


def tag_file_name(tag_name: str) -> str:
    """``tag-<name>``; ValueError for blank names or names that are not a bare file name."""
    return _named_file_name(TAG_PREFIX, tag_name, "tag name")


def parse_tag_name(file_name: str) -> Optional[str]:
    """The tag name of ``tag-<name>``, else None."""
    if isinstance(file_name, str) and file_name.startswith(TAG_PREFIX) and len(file_name) > len(TAG_PREFIX):
        return file_name[len(TAG_PREFIX):]
    return None


def consumer_file_name(consumer_id: str) -> str:
    """``consumer-<id>``; ValueError for blank ids or ids that are not a bare file name."""
    return _named_file_name(CONSUMER_PREFIX, consumer_id, "consumer id")


def parse_consumer_id(file_name: str) -> Optional[str]:
    """The consumer id of ``consumer-<id>``, else None."""
    if (isinstance(file_name, str) and file_name.startswith(CONSUMER_PREFIX)
            and len(file_name) > len(CONSUMER_PREFIX)):
        return file_name[len(CONSUMER_PREFIX):]
    return None


def _check_counter(n: int) -> None:
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValueError("file counter must be a non-negative int, got %r" % (n,))


def _check_uuid(u: Union[str, _uuid.UUID]) -> str:
    text = str(u)
    validate_bare_file_name(text, "uuid")
    return text


def new_manifest_name(uuid: Union[str, _uuid.UUID], n: int) -> str:
    """``manifest-<uuid>-<n>``."""
    _check_counter(n)
    return "%s%s-%d" % (MANIFEST_PREFIX, _check_uuid(uuid), n)


def new_manifest_list_name(uuid: Union[str, _uuid.UUID], n: int) -> str:
    """``manifest-list-<uuid>-<n>``."""
    _check_counter(n)
    return "%s%s-%d" % (MANIFEST_LIST_PREFIX, _check_uuid(uuid), n)


def data_file_name(prefix: str, uuid: Union[str, _uuid.UUID], counter: int, ext: str) -> str:
    """``<prefix><uuid>-<counter>.<ext>``, e.g. ``data-<uuid>-0.parquet``.

    ``ext`` has no leading dot (``parquet``, or ``zstd.parquet`` with compression in the
    suffix). Java picks the reader from the name's extension, so keep it ending in the format.
    """
    _check_counter(counter)
    if not isinstance(ext, str) or not ext or ext.startswith("."):
        raise ValueError("file extension must be non-empty and without a leading dot: %r" % (ext,))
    return validate_bare_file_name("%s%s-%d.%s" % (prefix, _check_uuid(uuid), counter, ext),
                                   "data file name")


def temp_file_name(final_name: str, uuid: Optional[Union[str, _uuid.UUID]] = None) -> str:
    """``.<final_name>.<uuid4>.tmp``: hidden, so readers' anchored patterns skip it."""
    validate_bare_file_name(final_name, "file name")
    return ".%s.%s.tmp" % (final_name, _uuid.uuid4() if uuid is None else _check_uuid(uuid))


def is_temp_file(name: str) -> bool:
    """Whether ``name`` is an in-progress atomic write: starts with ``.`` and ends in ``.tmp``."""
    return isinstance(name, str) and name.startswith(".") and name.endswith(".tmp")


_DRIVE_RE = re.compile(r"[A-Za-z]:")


def validate_bare_file_name(name: str, what: str) -> str:
    """Return ``name`` if it is a plain file name; ValueError otherwise.

    Use on every name read from metadata before building a path from it: refuses '', '.',
    '..', anything containing '/', '\\\\' or NUL, and Windows drive prefixes like ``C:``.
    """
    if not isinstance(name, str):
        raise ValueError("%s must be a string, got %r" % (what, name))
    if name in ("", ".", ".."):
        raise ValueError("%s %r is not a file name" % (what, name))
    if "/" in name or "\\" in name or "\x00" in name:
        raise ValueError("%s %r must not contain '/', '\\' or NUL" % (what, name))
    if _DRIVE_RE.match(name):
        raise ValueError("%s %r must not start with a drive letter" % (what, name))
    return name
