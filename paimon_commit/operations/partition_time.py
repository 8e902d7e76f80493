"""The time of a partition for partition expiration (values-time): Java's lenient default
format, `partition.timestamp-formatter` (a subset of DateTimeFormatter) and
`partition.timestamp-pattern` (`$key` tokens replaced by partition values)."""
from __future__ import annotations

import datetime
import re
from typing import List, Mapping, Optional, Sequence

from ..errors import OptionError
from ..options import CoreOptions

__all__ = ["NoPartitionTime", "parse_default_time", "TimestampFormatter", "TimePattern"]


class NoPartitionTime(ValueError):
    """A partition has no usable time; it is kept and reported as skipped."""


# Java's lenient default (PartitionTimeExtractor.TIMESTAMP_FORMATTER / DATE_FORMATTER):
# y-M-d with an optional ' H:m:s[.fraction]'. The 'T' separator is our addition.
_DEFAULT_RE = re.compile(
    r"(\d{1,10})-(\d{1,2})-(\d{1,2})"
    r"(?:[ T](\d{1,2}):(\d{1,2}):(\d{1,2})(?:\.(\d{1,9}))?)?")

# Formatter letter runs we understand, as regex fragments. Single letters are variable width
# like Java's, so an INT hour of 5 parses with 'H'.
_FORMAT_FIELDS = {
    "yyyy": ("year", r"\d{4}"),
    "MM": ("month", r"\d{2}"), "M": ("month", r"\d{1,2}"),
    "dd": ("day", r"\d{2}"), "d": ("day", r"\d{1,2}"),
    "HH": ("hour", r"\d{2}"), "H": ("hour", r"\d{1,2}"),
    "mm": ("minute", r"\d{2}"), "m": ("minute", r"\d{1,2}"),
    "ss": ("second", r"\d{2}"), "s": ("second", r"\d{1,2}"),
}
_SUPPORTED_LETTERS = "yyyy, MM, dd, HH, mm, ss (or M, d, H, m, s)"
# Java reserves these for optional sections and future use; we do not implement them.
_RESERVED_CHARS = set("[]{}#")


def _datetime(year: int, month: int, day: int, hour: int = 0, minute: int = 0,
              second: int = 0, micros: int = 0) -> datetime.datetime:
    try:
        return datetime.datetime(year, month, day, hour, minute, second, micros)
    except ValueError as e:
        raise NoPartitionTime(str(e)) from None


def _fraction_micros(digits: Optional[str]) -> int:
    # Truncated to microseconds: the cutoff has millisecond resolution, so nothing changes.
    return int((digits or "0")[:6].ljust(6, "0"))


def parse_default_time(text: str) -> datetime.datetime:
    """`yyyy-MM-dd`, `yyyy-MM-dd HH:mm:ss[.fraction]` or `yyyy-MM-ddTHH:mm:ss[.fraction]`
    (single-digit fields allowed), as Java's lenient default; a date means its midnight."""
    m = _DEFAULT_RE.fullmatch(text)
    if not m:
        raise NoPartitionTime(f"{text!r} is not yyyy-MM-dd[ HH:mm:ss[.fraction]]")
    y, mo, d, h, mi, s, frac = m.groups()
    if h is None:
        return _datetime(int(y), int(mo), int(d))
    return _datetime(int(y), int(mo), int(d), int(h), int(mi), int(s), _fraction_micros(frac))


class TimestampFormatter:
    """A Java DateTimeFormatter pattern restricted to fixed numeric fields and literals.

    Raises OptionError (naming `partition.timestamp-formatter`) for anything else, so that a
    pattern we would parse differently from Java never silently expires the wrong partitions.
    """

    def __init__(self, pattern: str):
        self.pattern = pattern
        self.fields: List[str] = []
        self._regex = re.compile(self._compile(pattern))
        present = set(self.fields)
        if not {"year", "month", "day"} <= present:
            self._fail("must contain the year (yyyy), month (MM) and day (dd), otherwise no "
                       "partition value can ever be read as a time")
        # Java leaves a time without its hour (or a second without its minute) unresolved and
        # falls back to midnight; refusing it is clearer than ignoring the fields.
        if ("minute" in present and "hour" not in present) or \
                ("second" in present and "minute" not in present):
            self._fail("time fields must be HH, HH:mm or HH:mm:ss (a minute needs the hour, a "
                       "second needs the minute)")

    def _fail(self, problem: str) -> None:
        raise OptionError(f"option '{CoreOptions.PARTITION_TIMESTAMP_FORMATTER.key}' = "
                          f"{self.pattern!r}: {problem}")

    def _compile(self, pattern: str) -> str:
        if not pattern:
            self._fail("must not be empty")
        out: List[str] = []
        i, n = 0, len(pattern)
        while i < n:
            c = pattern[i]
            if c == "'":
                # '' is a quote; 'text' is literal text in which '' is a quote.
                if i + 1 < n and pattern[i + 1] == "'":
                    out.append(re.escape("'"))
                    i += 2
                    continue
                j, literal = i + 1, []
                while True:
                    if j >= n:
                        self._fail(f"unterminated quoted literal at position {i}")
                    if pattern[j] == "'":
                        if j + 1 < n and pattern[j + 1] == "'":
                            literal.append("'")
                            j += 2
                            continue
                        break
                    literal.append(pattern[j])
                    j += 1
                out.append(re.escape("".join(literal)))
                i = j + 1
            elif c.isascii() and c.isalpha():
                j = i
                while j < n and pattern[j] == c:
                    j += 1
                run = pattern[i:j]
                spec = _FORMAT_FIELDS.get(run)
                if spec is None:
                    self._fail(f"unsupported pattern letters {run!r} at position {i}; "
                               f"supported: {_SUPPORTED_LETTERS}, separators and quoted "
                               f"literals such as 'T'")
                name, rx = spec
                if name in self.fields:
                    self._fail(f"field {run!r} at position {i} repeats the {name}")
                self.fields.append(name)
                out.append(f"(?P<{name}>{rx})")
                i = j
            elif c in _RESERVED_CHARS:
                self._fail(f"unsupported character {c!r} at position {i} (optional sections "
                           f"and reserved characters are not implemented); quote it as '{c}'")
            else:
                out.append(re.escape(c))
                i += 1
        return "".join(out)

    def parse(self, text: str) -> datetime.datetime:
        m = self._regex.fullmatch(text)
        if not m:
            raise NoPartitionTime(f"{text!r} does not match the formatter {self.pattern!r}")
        g = {k: int(v) for k, v in m.groupdict().items()}
        return _datetime(g["year"], g["month"], g["day"], g.get("hour", 0), g.get("minute", 0),
                         g.get("second", 0))


class TimePattern:
    """`partition.timestamp-pattern`: `$key` tokens replaced by partition values."""

    def __init__(self, pattern: str, keys: Sequence[str]):
        option = CoreOptions.PARTITION_TIMESTAMP_PATTERN.key
        # Longest key first, so that '$dth' is not read as '$dt' followed by 'h'. One regex
        # pass, so a value containing '$hour' is never substituted again.
        ordered = sorted(keys, key=len, reverse=True)
        self._token = re.compile(r"\$(" + "|".join(re.escape(k) for k in ordered) + ")")
        self.pattern = pattern
        self.referenced = sorted({m.group(1) for m in self._token.finditer(pattern)},
                                 key=list(keys).index)
        rest = self._token.sub("", pattern)
        if "$" in rest:
            unknown = re.search(r"\$(\w*)", rest).group(0)
            raise OptionError(f"option '{option}' = {pattern!r}: {unknown!r} is not a partition "
                              f"key (partition keys: {list(keys)})")
        if not self.referenced:
            raise OptionError(f"option '{option}' = {pattern!r}: references no partition key; "
                              f"use $<key> tokens (partition keys: {list(keys)})")
        only = self._token.fullmatch(pattern)
        self.single_key: Optional[str] = only.group(1) if only else None

    def substitute(self, texts: Mapping[str, str]) -> str:
        return self._token.sub(lambda m: texts[m.group(1)], self.pattern)
