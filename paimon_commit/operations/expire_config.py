"""ExpireConfig: the retention of snapshots and long-lived changelogs (Paimon's
`snapshot.*` and `changelog.*` options), validated on construction, before any I/O."""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Mapping, Optional

from ..errors import OptionError
from ..options import INT_MAX

__all__ = ["ExpireConfig"]

_CHANGELOG_OPTIONS = (("changelog_retain_min", "changelog.num-retained.min"),
                      ("changelog_retain_max", "changelog.num-retained.max"),
                      ("changelog_time_retained_ms", "changelog.time-retained"),
                      ("changelog_producer", "changelog-producer"))


@dataclass(frozen=True)
class ExpireConfig:
    """Retention of snapshots (and of changelogs, which default to the snapshot values).

    A changelog retained longer than snapshots (any changelog value above its snapshot
    value) makes the lifecycle *decoupled*, as in Paimon."""
    retain_min: int = 10
    retain_max: int = INT_MAX
    time_retained_ms: int = 3_600_000
    max_deletes: int = 10
    older_than_ms: Optional[int] = None   # explicit cutoff; default now - time_retained
    clean_empty_directories: bool = False
    thread_num: Optional[int] = None
    changelog_retain_min: Optional[int] = None
    changelog_retain_max: Optional[int] = None
    changelog_time_retained_ms: Optional[int] = None
    changelog_producer: Optional[str] = None   # None: the table's `changelog-producer`

    def __post_init__(self) -> None:
        def bad(name: str, value: Any, rule: str) -> None:
            raise OptionError(f"option '{name}' = {value!r}: {rule}")
        for name, value in (("snapshot.num-retained.min", self.retain_min),
                            ("snapshot.num-retained.max", self.retain_max),
                            ("snapshot.time-retained", self.time_retained_ms),
                            ("snapshot.expire.limit", self.max_deletes),
                            ("changelog.num-retained.min", self.cl_min),
                            ("changelog.num-retained.max", self.cl_max),
                            ("changelog.time-retained", self.cl_time_ms)):
            if isinstance(value, bool) or not isinstance(value, int):
                bad(name, value, "must be an integer")
        for prefix, lo, hi in (("snapshot", self.retain_min, self.retain_max),
                               ("changelog", self.cl_min, self.cl_max)):
            if lo < 1:
                bad(f"{prefix}.num-retained.min", lo, "must be >= 1")
            if hi < lo:
                raise OptionError(f"option '{prefix}.num-retained.max' = {hi} must be >= "
                                  f"'{prefix}.num-retained.min' = {lo}")
        if self.time_retained_ms < 0:
            bad("snapshot.time-retained", self.time_retained_ms, "must be >= 0")
        if self.cl_time_ms < 0:
            bad("changelog.time-retained", self.cl_time_ms, "must be >= 0")
        if self.max_deletes < 0:
            bad("snapshot.expire.limit", self.max_deletes, "must be >= 0")
        if self.thread_num is not None and self.thread_num < 1:
            bad("file-operation.thread-num", self.thread_num, "must be >= 1")

    @property
    def cl_min(self) -> int:
        """changelog.num-retained.min, falling back to the snapshot value (Paimon)."""
        return self.retain_min if self.changelog_retain_min is None else self.changelog_retain_min

    @property
    def cl_max(self) -> int:
        """changelog.num-retained.max, falling back to the snapshot value (Paimon)."""
        return self.retain_max if self.changelog_retain_max is None else self.changelog_retain_max

    @property
    def cl_time_ms(self) -> int:
        """changelog.time-retained, falling back to the snapshot value (Paimon)."""
        return self.time_retained_ms if self.changelog_time_retained_ms is None \
            else self.changelog_time_retained_ms

    @property
    def changelog_decoupled(self) -> bool:
        """Whether changelogs outlive snapshots (then expiring snapshots become long-lived
        changelogs, expired separately)."""
        return self.cl_max > self.retain_max or self.cl_min > self.retain_min \
            or self.cl_time_ms > self.time_retained_ms

    @classmethod
    def from_options(cls, options: Mapping[str, Any], **overrides: Any) -> "ExpireConfig":
        """`options` are parsed table options (FileStore.options); overrides that are None
        fall back to them."""
        values = dict(
            retain_min=options["snapshot.num-retained.min"],
            retain_max=options["snapshot.num-retained.max"],
            time_retained_ms=options["snapshot.time-retained"],
            max_deletes=options["snapshot.expire.limit"],
            clean_empty_directories=options["snapshot.clean-empty-directories"],
            thread_num=options["file-operation.thread-num"],
            changelog_retain_min=options.get("changelog.num-retained.min"),
            changelog_retain_max=options.get("changelog.num-retained.max"),
            changelog_time_retained_ms=options.get("changelog.time-retained"),
            changelog_producer=options.get("changelog-producer"),
        )
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)


    def with_table_changelog(self, options: Mapping[str, Any]) -> "ExpireConfig":
        """This config, with the changelog values it does not set taken from the table's
        parsed `options` (`changelog-producer` defaults to none)."""
        table = {k: options.get(o) for k, o in _CHANGELOG_OPTIONS}
        table["changelog_producer"] = table["changelog_producer"] or "none"
        return replace(self, **{k: v for k, v in table.items()
                                if v is not None and getattr(self, k) is None})
