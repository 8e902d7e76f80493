"""Partition-scoped orphan cleanup: which partition directories a run lists, and which
manifests it must read to know what is used there.

A scope is one or more patterns (`remove-orphan-files TABLE --partition 'dt=2024-01-*'`,
`CleanContext(partitions=[...])`). A pattern is `key=glob` terms joined by `/`, the way the
partition directories nest (`dt=2024-01-*/hr=0?`), in any order; a key left out matches every
value. Globs are shell-style (`*`, `?`, `[...]`, case-sensitive) and match the value as it
reads unescaped in the directory name (`dt=2024-01-01`; NULL and blank values: the table's
`partition.default-name`) or, for a DATE column, which Paimon's legacy naming writes as days
since 1970 (`dt=19723`), either that number or the date (`dt=2024-01-*`). Several patterns
mean their union.

A scoped run lists only the matching partition directories, none of the table's metadata
directories (manifest/, snapshot/, ...: never candidates in a scoped run), and reads every
snapshot, tag, long-lived changelog and branch as a full run does, with their manifest lists;
of the manifests those name it reads only the ones whose partition statistics (the manifest
list's `_PARTITION_STATS`: min, max and null count of each partition column over the manifest's
entries) can hold a partition that was listed. A file of a listed partition is only ever named
by an entry of that partition, and such an entry lies within its manifest's statistics, so no
manifest left unread names a listed file. In doubt a manifest is read: statistics that cannot
be decoded, a directory value that does not name exactly one typed value (`07` for an INT,
the default partition name, a value with a `%` in it, which an older unescaping writer may
have written literally, a string value that is not plain printable ASCII (`_typed`), a type
other than integers, strings, DATE and BOOLEAN), an unknown null count.

Default names: an entry whose value is NULL (or, for a string column, empty or whitespace-only)
lives in the directory its *writer's* `partition.default-name` named, which need not be the
table's current one: the option can be altered (an old `dt=__DEFAULT_PARTITION__` then reads
as the string '__DEFAULT_PARTITION__'), and a Paimon job can write with a default name of its
own (a dynamic option, no schema change). Such entries are outside min/max (statistics skip
NULLs), so any listed directory value may be theirs: a manifest whose null count of a column is
not zero (or unknown: absent, too short, None) may hold every value of that column, and for a
string column so may one whose min..max can contain an empty or whitespace-only string. Only
manifests with zero null counts and no possible blank value are pruned by their range
(`tests/operations/test_orphan_scope.py::test_a_null_partition_written_under_another_default_name_is_kept`,
`::test_a_blank_partition_written_under_another_default_name_is_kept`,
`::test_may_hold_reads_a_manifest_with_nulls_or_blanks_for_any_value`).

What a scoped run deletes is what a full run deletes inside the scope: the same listing of
those directories, the same used names for them (Paimon compares names; the names a full run
reads besides are those of other partitions' files, which UUIDs keep apart).
"""
from __future__ import annotations

import bisect
import datetime
import re
import unicodedata
from fnmatch import fnmatchcase
from typing import Any, Dict, List, Sequence, Tuple

from ..errors import OptionError
from ..format import paths as P

__all__ = ["parse_partition_patterns", "PartitionScope", "describe_patterns"]

_UNKNOWN = object()   # a directory value that names no single typed value: always "may hold"
# The string directory values pruning trusts (_typed): printable ASCII without `%`.
_PLAIN = re.compile(r"[\x20-\x24\x26-\x7e]+")


def parse_partition_patterns(patterns: Any, what: str = "partitions") -> List[Dict[str, str]]:
    """[{key: glob}] of each pattern; OptionError naming the bad one (no I/O)."""
    if isinstance(patterns, (str, bytes)) or not isinstance(patterns, (list, tuple)):
        raise OptionError(f"{what} must be a list of partition patterns such as "
                          f"['dt=2024-01-*'], got {patterns!r}")
    if not patterns:
        raise OptionError(f"{what} is empty: give at least one partition pattern such as "
                          f"'dt=2024-01-*' (or none at all to clean the whole table)")
    out = []
    for text in patterns:
        if not isinstance(text, str):
            raise OptionError(f"partition pattern {text!r} is not a string")
        terms: Dict[str, str] = {}
        for term in text.split("/"):
            key, eq, glob = term.partition("=")
            key = key.strip()
            if not eq or not key or not glob:
                raise OptionError(
                    f"partition pattern {text!r}: {term!r} is not key=glob (several keys: "
                    f"'dt=2024-01-*/hr=0?')")
            if key in terms:
                raise OptionError(f"partition pattern {text!r} names {key!r} twice")
            terms[key] = glob
        out.append(terms)
    return out


def describe_patterns(patterns: Sequence[Dict[str, str]]) -> str:
    return ", ".join("/".join(f"{k}={g}" for k, g in p.items()) for p in patterns)


class PartitionScope:
    """The patterns of one scoped run against one table's partition keys and types."""

    def __init__(self, patterns: List[Dict[str, str]], keys: Sequence[str],
                 types: Sequence[Any], default_name: str, table: str):
        keys = list(keys)
        if not keys:
            raise OptionError(f"{table} is not partitioned: a partition pattern "
                              f"({describe_patterns(patterns)}) cannot scope its orphan "
                              f"cleanup; run it without one")
        for p in patterns:
            for k in p:
                if k not in keys:
                    raise OptionError(
                        f"partition pattern {describe_patterns([p])!r} names {k!r}, which is "
                        f"not a partition key of {table} (its partition keys: "
                        f"{', '.join(keys)})")
        self.patterns = patterns
        self.keys = keys
        self.types = list(types)
        self.default_name = default_name
        # Whether the storage may fold the case of names (macOS, Windows, SMB: the values
        # 'A' and 'a' share one directory, spelled as its first writer made it): then a
        # listed string value with a cased letter names no single value (audit issue27c c1).
        # True in doubt; the cleaner says False for storage that names keys exactly.
        self.fold_case = True
        self._partitions: List[Tuple[Any, ...]] = []   # listed, typed (or _UNKNOWN)
        from ..format.atomic_types import as_atomic
        self._is_date = {k: as_atomic(t).root == "DATE" for k, t in zip(self.keys, self.types)}

    def all(self) -> Tuple[int, ...]:
        return tuple(range(len(self.patterns)))

    def match(self, key: str, dir_value: str, active: Tuple[int, ...]) -> Tuple[int, ...]:
        """The patterns of `active` that a directory `key=dir_value` (escaped) satisfies: the
        glob matches the unescaped value, or for a DATE column its date (`2024-01-01` for
        `dt=19723`, Paimon's legacy name of it)."""
        value = P.unescape_path_name(dir_value)
        forms = [value]
        if self._is_date.get(key):
            typed = self._typed(value, self.types[self.keys.index(key)])
            if isinstance(typed, datetime.date):
                forms.append(typed.isoformat())
        return tuple(i for i in active if key not in self.patterns[i]
                     or any(fnmatchcase(f, self.patterns[i][key]) for f in forms))

    def decided_at(self, depth: int, active: Tuple[int, ...]) -> bool:
        """Whether a directory `depth` keys deep (1: the first key) is inside the scope as a
        whole: some pattern it satisfies constrains no deeper key."""
        deeper = set(self.keys[depth:])
        return any(not deeper & set(self.patterns[i]) for i in active)

    # --- manifests --------------------------------------------------------------------------
    def add_partition(self, dir_values: Sequence[str]) -> None:
        """A partition directory that was listed (its escaped values, one per key). A value
        with a `%` in it names no single value: _UNKNOWN. An older writer (pypaimon before
        its canonical paths) wrote values unescaped, so `v=a%3Ab` is both how Paimon escapes
        'a:b' and how such a writer spells the value 'a%3Ab' (audit issue27d h1), and
        `v=a%20b`, not Paimon's spelling of anything, holds 'a%20b' (audit issue25e e1). A
        value without `%` that Paimon would spell otherwise (`a:b`, unescaped) names no
        single value either."""
        self._partitions.append(tuple(
            self._typed(text, t) if "%" not in v and P.escape_path_name(text) == v
            else _UNKNOWN
            for v, t, text in ((v, t, P.unescape_path_name(v))
                               for v, t in zip(dir_values, self.types))))

    @property
    def partitions(self) -> int:
        return len(self._partitions)

    def _typed(self, text: str, t: Any) -> Any:
        """The one typed value a directory value names, or _UNKNOWN."""
        if text == self.default_name:
            return _UNKNOWN   # NULL, a blank string or that very string
        from ..format.atomic_types import INTEGER_RANGES, STRING_ROOTS, as_atomic
        try:
            root = as_atomic(t).root
            if root in INTEGER_RANGES:
                value: Any = int(text)
            elif root in STRING_ROOTS:
                # Only a plain ASCII name is trusted to be the value written: every review
                # of this pruning found one more way a file system or a writer turns a
                # value into another name (escapes, audit issue25e e1 and issue27d h1; NFD
                # normalization on HFS+, issue25f f2; case folding, issue27c c1), and the
                # non-ASCII ones are families (Windows drops trailing dots and spaces, JDKs
                # disagree on whitespace). Other names read the manifest: slower for such
                # tables, never wrong.
                if not _PLAIN.fullmatch(text) or text.endswith((" ", ".")):
                    return _UNKNOWN
                # A name the file system may have normalized (HFS+ lists every name in NFD):
                # the value written may be another form of it (audit issue25f f2).
                if unicodedata.normalize("NFC", text) != text or \
                        unicodedata.normalize("NFD", text) != text:
                    return _UNKNOWN
                if self.fold_case and (text.lower() != text or text.upper() != text or
                                       text.casefold() != text):
                    return _UNKNOWN
                value = text
            elif root == "DATE":
                value = datetime.date(1970, 1, 1) + datetime.timedelta(days=int(text))
            elif root == "BOOLEAN":
                value = {"true": True, "false": False}[text]
            else:
                return _UNKNOWN
            # exactly the directory Paimon names for it (`07` for an INT is not 7's)
            if P.partition_value_string(value, t, self.default_name) != text:
                return _UNKNOWN
            return value
        except (ValueError, KeyError, OverflowError, TypeError):
            return _UNKNOWN

    def may_hold(self, stats: Any) -> bool:
        """Whether a manifest with these partition statistics (SimpleStats) can have an
        entry of a listed partition. True in doubt. A column with NULL entries (or blank
        ones, for a string column) may hold any directory value: those entries live under
        their writer's default name, whichever that was (module docstring)."""
        if not self._partitions:
            return False
        from ..format.binary_row import deserialize_binary_row
        try:
            lo = deserialize_binary_row(stats.min_values, self.types)
            hi = deserialize_binary_row(stats.max_values, self.types)
        except Exception:   # noqa: BLE001 - undecodable statistics: read the manifest
            return True
        n = len(self.types)
        if len(lo) != n or len(hi) != n:
            return True
        nulls = getattr(stats, "null_counts", None)
        if nulls is None or len(nulls) < n:
            return True   # unknown null counts: any column may have NULL entries
        # columns whose entries may live under some default name: any value there
        anything = [self._any_default(nulls[i], lo[i], hi[i], t)
                    for i, t in enumerate(self.types)]
        for part in self._partitions:
            if all(anything[i] or self._within(v, lo[i], hi[i]) for i, v in enumerate(part)):
                return True
        return False

    @staticmethod
    def _any_default(null_count: Any, lo: Any, hi: Any, t: Any) -> bool:
        """Whether a manifest may have an entry of this column in a default-name directory:
        a NULL (null count not a known zero) or, for a string column, an empty or
        whitespace-only value within lo..hi."""
        if not isinstance(null_count, int) or isinstance(null_count, bool) or null_count != 0:
            return True
        from ..format.atomic_types import STRING_ROOTS, as_atomic
        try:
            is_string = as_atomic(t).root in STRING_ROOTS
        except Exception:   # noqa: BLE001 - in doubt
            return True
        if not is_string:
            return False
        if not isinstance(lo, str) or not isinstance(hi, str):
            return True
        return _blank_between(lo, hi)

    @staticmethod
    def _within(value: Any, lo: Any, hi: Any) -> bool:
        if value is _UNKNOWN or lo is None or hi is None:
            return True
        try:
            return lo <= value <= hi
        except TypeError:
            return True


# Every character Java's Character.isWhitespace or Python's str.isspace calls blank (all below
# U+3001), ascending: a value of them only is written to the default-name directory.
_BLANK_CHARS = [c for c in map(chr, range(0x3001))
                if c.isspace() or P._java_is_whitespace(c)]
_BLANK_SET = frozenset(_BLANK_CHARS)


def _blank_between(lo: str, hi: str) -> bool:
    """Whether some empty or whitespace-only string w has lo <= w <= hi (code point order,
    which is the UTF-8 byte order Paimon compares strings in)."""
    if lo > hi:
        return True   # not a range: in doubt
    k = 0
    while k < len(lo) and lo[k] in _BLANK_SET:
        k += 1
    if k == len(lo):
        return True   # lo itself is blank
    # the least blank string above lo: lo's blank prefix up to some j <= k, then the least
    # blank character above lo[j] (a longer shared prefix gives a smaller string)
    for j in range(k, -1, -1):
        at = bisect.bisect_right(_BLANK_CHARS, lo[j])
        if at < len(_BLANK_CHARS):
            return lo[:j] + _BLANK_CHARS[at] <= hi
    return False
