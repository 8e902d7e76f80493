"""Table options: names, defaults, parsing and validation in one place.

Option values live in schema JSON as strings (Paimon's convention). Every option the library
acts on is declared here once; operations read them through typed config objects that are
built and validated before any I/O.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable, Dict, Mapping, Optional

from .errors import OptionError

__all__ = [
    "ConfigOption",
    "CoreOptions",
    "OPTIONS",
    "parse_duration_ms",
    "parse_memory_size",
    "format_duration_ms",
]

_DURATION_UNITS = {
    "ns": 1e-6, "nano": 1e-6, "nanos": 1e-6, "nanosecond": 1e-6, "nanoseconds": 1e-6,
    "us": 1e-3, "µs": 1e-3, "micro": 1e-3, "micros": 1e-3, "microsecond": 1e-3,
    "microseconds": 1e-3,
    "ms": 1, "milli": 1, "millis": 1, "millisecond": 1, "milliseconds": 1,
    "s": 1000, "sec": 1000, "secs": 1000, "second": 1000, "seconds": 1000,
    "m": 60_000, "min": 60_000, "mins": 60_000, "minute": 60_000, "minutes": 60_000,
    "h": 3_600_000, "hour": 3_600_000, "hours": 3_600_000,
    "d": 86_400_000, "day": 86_400_000, "days": 86_400_000,
}
_DURATION_RE = re.compile(r"^\s*(-?\d+)\s*([a-zµ]*)\s*$", re.IGNORECASE)

_SIZE_UNITS = {
    "": 1, "b": 1, "bytes": 1,
    "k": 1 << 10, "kb": 1 << 10, "kibibytes": 1 << 10,
    "m": 1 << 20, "mb": 1 << 20, "mebibytes": 1 << 20,
    "g": 1 << 30, "gb": 1 << 30, "gibibytes": 1 << 30,
    "t": 1 << 40, "tb": 1 << 40, "tebibytes": 1 << 40,
}
_SIZE_RE = re.compile(r"^\s*(\d+)\s*([a-z]*)\s*$", re.IGNORECASE)

INT_MAX = 2147483647


def parse_duration_ms(text: Any, what: str = "duration") -> int:
    """Parse Paimon's duration syntax ('500 ms', '30 s', '10 min', '1 h', '7 d') to ms.

    A bare number is milliseconds, as in Flink/Paimon's TimeUtils.
    """
    if isinstance(text, bool):
        raise OptionError(f"{what}: invalid duration {text!r}")
    if isinstance(text, int):
        return text
    m = _DURATION_RE.match(str(text))
    if not m:
        raise OptionError(
            f"{what}: invalid duration {text!r} (expected e.g. '500 ms', '30 s', '10 min', "
            f"'1 h', '7 d')")
    value, unit = int(m.group(1)), m.group(2).lower()
    factor = _DURATION_UNITS.get(unit or "ms")
    if factor is None:
        raise OptionError(f"{what}: unknown time unit {m.group(2)!r} in {text!r}")
    return int(value * factor)


def format_duration_ms(ms: int) -> str:
    for unit, factor in (("d", 86_400_000), ("h", 3_600_000), ("min", 60_000), ("s", 1000)):
        if ms and ms % factor == 0:
            return f"{ms // factor} {unit}"
    return f"{ms} ms"


def parse_memory_size(text: Any, what: str = "size") -> int:
    if isinstance(text, int) and not isinstance(text, bool):
        return text
    m = _SIZE_RE.match(str(text))
    if not m or m.group(2).lower() not in _SIZE_UNITS:
        raise OptionError(f"{what}: invalid memory size {text!r} (expected e.g. '8 mb')")
    return int(m.group(1)) * _SIZE_UNITS[m.group(2).lower()]


def _parse_int(text: Any, what: str) -> int:
    if isinstance(text, bool):
        raise OptionError(f"{what}: expected an integer, got {text!r}")
    if isinstance(text, int):
        return text
    try:
        return int(str(text).strip())
    except ValueError:
        raise OptionError(f"{what}: expected an integer, got {text!r}") from None


def _parse_bool(text: Any, what: str) -> bool:
    if isinstance(text, bool):
        return text
    s = str(text).strip().lower()
    if s in ("true", "false"):
        return s == "true"
    raise OptionError(f"{what}: expected 'true' or 'false', got {text!r}")


def _parse_float(text: Any, what: str) -> float:
    if isinstance(text, bool):
        raise OptionError(f"{what}: expected a number, got {text!r}")
    if isinstance(text, (int, float)):
        return float(text)
    try:
        return float(str(text).strip())
    except ValueError:
        raise OptionError(f"{what}: expected a number, got {text!r}") from None


def _parse_str(text: Any, what: str) -> str:
    return str(text)


@dataclass(frozen=True)
class ConfigOption:
    key: str
    default: Any
    parse: Callable[[Any, str], Any]
    check: Optional[Callable[[Any], Optional[str]]] = None  # returns a problem or None
    description: str = ""

    def value(self, options: Mapping[str, Any]) -> Any:
        raw = options.get(self.key)
        if raw is None:
            return self.default
        v = self.parse(raw, f"option '{self.key}'")
        if self.check is not None:
            problem = self.check(v)
            if problem:
                raise OptionError(f"option '{self.key}' = {raw!r}: {problem}")
        return v


def _at_least(n: int) -> Callable[[int], Optional[str]]:
    return lambda v: None if v >= n else f"must be >= {n}"


def _enum(*choices: str) -> Callable[[Any, str], str]:
    def parse(text: Any, what: str) -> str:
        s = str(text).strip().lower()
        if s not in choices:
            raise OptionError(f"{what}: {text!r} is not one of {', '.join(choices)}")
        return s
    return parse


class CoreOptions:
    """Declared options. Attribute names follow Paimon's CoreOptions where it has one."""

    BUCKET = ConfigOption("bucket", -1, _parse_int,
                          lambda v: None if v in (-1, -2) or v >= 1 else
                          "must be -1 (unaware/dynamic), -2 (postpone) or >= 1",
                          "Bucket count; -1 = bucket-unaware append table (bucket-0 on disk) or "
                          "dynamic-bucket primary-key table. This library writes bucket -1 "
                          "append tables and maintains every kind.")
    FILE_FORMAT = ConfigOption("file.format", "parquet", _enum("parquet", "orc", "avro"),
                               description="Data file format. This library writes parquet.")
    FILE_COMPRESSION = ConfigOption("file.compression", "zstd", _enum(
        "zstd", "snappy", "gzip", "lz4", "brotli", "none", "uncompressed"),
        description="Data file compression.")
    MANIFEST_FORMAT = ConfigOption("manifest.format", "avro", _enum("avro"),
                                   description="Manifest format (only avro).")
    MANIFEST_COMPRESSION = ConfigOption("manifest.compression", "zstd", _enum(
        "zstd", "null", "none", "deflate", "snappy", "bzip2", "xz"),
        description="Avro codec of manifests and manifest lists.")
    MANIFEST_TARGET_FILE_SIZE = ConfigOption("manifest.target-file-size", 8 << 20,
                                             parse_memory_size, _at_least(1),
                                             "Suggested manifest file size.")
    MANIFEST_MERGE_MIN_COUNT = ConfigOption("manifest.merge-min-count", 30, _parse_int,
                                            _at_least(1),
                                            "Small manifests merged once this many pile up.")
    MANIFEST_FULL_COMPACTION_SIZE = ConfigOption(
        "manifest.full-compaction-threshold-size", 16 << 20, parse_memory_size, _at_least(1),
        "Size of manifests holding DELETE entries that triggers a full manifest compaction.")
    COMMIT_MAX_RETRIES = ConfigOption("commit.max-retries", 10, _parse_int, _at_least(0),
                                      "Retries after failed attempts (races lost to another "
                                      "writer do not count).")
    COMMIT_SINGLE_WRITER = ConfigOption(
        "commit.single-writer", False, _parse_bool,
        description="Only one process commits to this table: allows object stores that cannot "
                    "prove an atomic create-if-absent (see README, Storage).")
    COMMIT_TIMEOUT = ConfigOption("commit.timeout", None, parse_duration_ms, _at_least(0),
                                  "Total time a commit may spend retrying (unbounded).")
    COMMIT_MIN_RETRY_WAIT = ConfigOption("commit.min-retry-wait", 10, parse_duration_ms,
                                         _at_least(0), "First backoff between retries.")
    COMMIT_MAX_RETRY_WAIT = ConfigOption("commit.max-retry-wait", 10_000, parse_duration_ms,
                                         _at_least(0), "Largest backoff between retries.")
    IGNORE_EMPTY_COMMIT = ConfigOption("snapshot.ignore-empty-commit", True, _parse_bool,
                                       description="Skip commits with no files.")
    DYNAMIC_PARTITION_OVERWRITE = ConfigOption(
        "dynamic-partition-overwrite", True, _parse_bool,
        description="Overwrite replaces only the partitions present in the new data.")
    PARTITION_DEFAULT_NAME = ConfigOption(
        "partition.default-name", "__DEFAULT_PARTITION__", _parse_str,
        lambda v: None if v.strip() else "must not be empty",
        "Directory value for null or empty partition values.")
    DATA_FILE_PREFIX = ConfigOption("data-file.prefix", "data-", _parse_str,
                                    lambda v: None if v and "/" not in v else
                                    "must be a non-empty name without '/'",
                                    "Prefix of data file names.")
    TARGET_FILE_SIZE = ConfigOption("target-file-size", 256 << 20, parse_memory_size,
                                    _at_least(1), "Rolling size of data files (approximate).")
    FILE_OPERATION_THREAD_NUM = ConfigOption("file-operation.thread-num", None, _parse_int,
                                             _at_least(1),
                                             "Threads for parallel deletes (default: CPUs).")
    WRITE_ONLY = ConfigOption("write-only", False, _parse_bool,
                              description="Skip all post-commit maintenance, compaction "
                                          "included (an explicit compaction still runs).")
    # Compaction of bucket-unaware append tables (operations/compact/plan.py), Paimon's names
    # and defaults for append tables; target-file-size (above) is the size it writes.
    COMPACTION_SMALL_FILE_RATIO = ConfigOption(
        "compaction.small-file-ratio", 0.7, _parse_float,
        lambda v: None if 0 < v <= 1 else "must be > 0 and <= 1",
        "Files smaller than target-file-size times this ratio are compacted (above 1, "
        "every file a compaction writes would be rewritten again by the next one).")
    COMPACTION_MIN_FILE_NUM = ConfigOption(
        "compaction.min.file-num", 5, _parse_int, _at_least(1),
        "Fewest small files of a partition that make a compaction task.")
    COMPACTION_FILE_NUM_LIMIT = ConfigOption(
        "compaction.file-num-limit", 100_000, _parse_int, _at_least(1),
        "Most small files one compaction run looks at.")
    SOURCE_SPLIT_OPEN_FILE_COST = ConfigOption(
        "source.split.open-file-cost", 4 << 20, parse_memory_size, _at_least(0),
        "Cost of opening a file, added to its size when files are packed into bins.")
    # Not a Paimon option: Paimon's writers compact as they write unless write-only is set;
    # this library's writers do not, and compaction after commits is asked for explicitly.
    COMPACTION_POST_COMMIT = ConfigOption(
        "compaction.post-commit.enabled", False, _parse_bool,
        description="Compact the partitions a commit wrote to, as post-commit maintenance "
                    "(never with write-only).")
    # Maintenance (snapshot / partition / consumer expiration).
    SNAPSHOT_NUM_RETAINED_MIN = ConfigOption("snapshot.num-retained.min", 10, _parse_int,
                                             _at_least(1), "Snapshots always kept.")
    SNAPSHOT_NUM_RETAINED_MAX = ConfigOption("snapshot.num-retained.max", INT_MAX, _parse_int,
                                             _at_least(1), "Snapshots kept at most.")
    SNAPSHOT_TIME_RETAINED = ConfigOption("snapshot.time-retained", 3_600_000,
                                          parse_duration_ms, _at_least(0),
                                          "How long a replaced snapshot stays readable.")
    SNAPSHOT_EXPIRE_LIMIT = ConfigOption("snapshot.expire.limit", 10, _parse_int, _at_least(0),
                                         "Snapshots expired per run at most; 0 disables.")
    SNAPSHOT_CLEAN_EMPTY_DIRECTORIES = ConfigOption(
        "snapshot.clean-empty-directories", False, _parse_bool,
        description="Remove partition/bucket directories emptied by expiration.")
    # Changelog lifecycle: unset = the snapshot value; retained longer than snapshots, an
    # expired snapshot lives on as changelog/changelog-<id> until changelog expiration.
    CHANGELOG_NUM_RETAINED_MIN = ConfigOption("changelog.num-retained.min", None, _parse_int,
                                              _at_least(1), "Changelogs always kept.")
    CHANGELOG_NUM_RETAINED_MAX = ConfigOption("changelog.num-retained.max", None, _parse_int,
                                              _at_least(1), "Changelogs kept at most.")
    CHANGELOG_TIME_RETAINED = ConfigOption("changelog.time-retained", None, parse_duration_ms,
                                           _at_least(0), "How long a changelog stays readable.")
    CHANGELOG_PRODUCER = ConfigOption(
        "changelog-producer", "none", _enum("none", "input", "full-compaction", "lookup"),
        description="How a primary-key table produces changelog files (none: the deltas are "
                    "the changelog).")
    SNAPSHOT_EXPIRE_EXECUTION_MODE = ConfigOption(
        "snapshot.expire.execution-mode", "sync", _enum("sync", "async"),
        description="Run post-commit maintenance in the committing thread or one background "
                    "thread.")
    CONSUMER_EXPIRATION_TIME = ConfigOption("consumer.expiration-time", None, parse_duration_ms,
                                            _at_least(1),
                                            "Consumers idle longer than this are removed.")
    PARTITION_EXPIRATION_TIME = ConfigOption("partition.expiration-time", None,
                                             parse_duration_ms, _at_least(1),
                                             "Partitions older than this are dropped.")
    PARTITION_EXPIRATION_CHECK_INTERVAL = ConfigOption(
        "partition.expiration-check-interval", 3_600_000, parse_duration_ms, _at_least(0),
        "Minimum time between partition expiration checks; 0 = every commit.")
    PARTITION_EXPIRATION_STRATEGY = ConfigOption(
        "partition.expiration-strategy", "values-time", _enum("values-time", "update-time"),
        description="How a partition's time is determined.")
    PARTITION_TIMESTAMP_FORMATTER = ConfigOption("partition.timestamp-formatter", None,
                                                 _parse_str,
                                                 description="Java DateTimeFormatter pattern.")
    PARTITION_TIMESTAMP_PATTERN = ConfigOption("partition.timestamp-pattern", None, _parse_str,
                                               description="e.g. '$dt $hour:00:00'.")
    PARTITION_EXPIRATION_MAX_NUM = ConfigOption("partition.expiration-max-num", 100, _parse_int,
                                                _at_least(1),
                                                "Partitions dropped per check at most.")
    PARTITION_EXPIRATION_BATCH_SIZE = ConfigOption("partition.expiration-batch-size", None,
                                                   _parse_int, _at_least(1),
                                                   "Partitions per drop commit.")
    # Tag lifecycle (Paimon's names and defaults; operations/tag_lifecycle.py acts on them).
    TAG_AUTOMATIC_CREATION = ConfigOption(
        "tag.automatic-creation", "none", _enum("none", "process-time", "watermark", "batch"),
        description="Create tags automatically after commits: per period from the snapshot's "
                    "commit time or watermark, or one per batch commit.")
    TAG_CREATION_PERIOD = ConfigOption("tag.creation-period", "daily",
                                       _enum("daily", "hourly", "two-hours"),
                                       description="Period of automatically created tags.")
    TAG_CREATION_DELAY = ConfigOption("tag.creation-delay", 0, parse_duration_ms, _at_least(0),
                                      "Wait this long after a period ends before tagging it.")
    TAG_PERIOD_FORMATTER = ConfigOption(
        "tag.period-formatter", "with_dashes",
        _enum("with_dashes", "without_dashes", "without_dashes_and_spaces"),
        description="Date format of automatic tag names ('yyyy-MM-dd HH', 'yyyyMMdd HH', "
                    "'yyyyMMddHH').")
    TAG_NUM_RETAINED_MAX = ConfigOption("tag.num-retained-max", None, _parse_int, _at_least(1),
                                        "Automatic tags kept at most (oldest deleted first).")
    TAG_DEFAULT_TIME_RETAINED = ConfigOption("tag.default-time-retained", None,
                                             parse_duration_ms, _at_least(1),
                                             "Retention given to newly created tags.")
    TAG_TIME_EXPIRE_ENABLED = ConfigOption("tag.time-expire-enabled", True, _parse_bool,
                                           description="Expire tags past their retention after "
                                                       "commits.")
    TAG_AUTOMATIC_COMPLETION = ConfigOption("tag.automatic-completion", False, _parse_bool,
                                            description="Create the tags of skipped periods.")
    TAG_BATCH_CUSTOMIZED_NAME = ConfigOption("tag.batch.customized-name", None, _parse_str,
                                             lambda v: None if v.strip() else
                                             "must not be empty",
                                             "Tag name for 'batch' automatic creation.")
    SINK_WATERMARK_TIME_ZONE = ConfigOption(
        "sink.watermark-time-zone", "UTC", _parse_str,
        lambda v: None if _is_time_zone(v) else "unknown time zone",
        "Time zone of snapshot watermarks (tag creation in 'watermark' mode).")


OPTIONS: Dict[str, ConfigOption] = {
    o.key: o for o in vars(CoreOptions).values() if isinstance(o, ConfigOption)
}


def validate_options(options: Mapping[str, Any]) -> Dict[str, Any]:
    """Parse every known option (raising OptionError on the first bad one) and check the
    cross-option rules. Unknown keys are kept: Paimon tables carry options we do not act on."""
    parsed = {key: opt.value(options) for key, opt in OPTIONS.items()}
    lo, hi = parsed["snapshot.num-retained.min"], parsed["snapshot.num-retained.max"]
    if hi < lo:
        raise OptionError(
            f"option 'snapshot.num-retained.max' = {hi} must be >= "
            f"'snapshot.num-retained.min' = {lo}")
    lo, hi = parsed["commit.min-retry-wait"], parsed["commit.max-retry-wait"]
    if hi < lo:
        raise OptionError(
            f"option 'commit.max-retry-wait' = {hi} ms must be >= "
            f"'commit.min-retry-wait' = {lo} ms")
    _check_tag_options(parsed)
    return parsed


def _is_time_zone(name: str) -> bool:
    import zoneinfo
    try:
        zoneinfo.ZoneInfo(name)
        return True
    except (ValueError, zoneinfo.ZoneInfoNotFoundError):
        return False


def _check_tag_options(parsed: Mapping[str, Any]) -> None:
    """Cross-option rules of the tag lifecycle, checked before any I/O."""
    if parsed["tag.automatic-creation"] in ("process-time", "watermark"):
        period = parsed["tag.creation-period"]
        period_ms = {"daily": 86_400_000, "hourly": 3_600_000, "two-hours": 7_200_000}[period]
        if parsed["tag.creation-delay"] >= period_ms:
            raise OptionError(
                f"option 'tag.creation-delay' = {format_duration_ms(parsed['tag.creation-delay'])}"
                f" must be shorter than 'tag.creation-period' = {period}")
        fmt = parsed["tag.period-formatter"]
        if (period == "daily" and fmt != "with_dashes") or \
                (period == "hourly" and fmt == "without_dashes_and_spaces"):
            raise OptionError(
                f"option 'tag.period-formatter' = {fmt!r} with 'tag.creation-period' = {period} "
                f"makes all-digit tag names (such as '20240101'), which time travel resolves as "
                f"snapshot ids; this library refuses them: use 'with_dashes'")
