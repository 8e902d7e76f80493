"""Planning a compaction of a bucket-unaware append table: which small files of which
partition are rewritten together.

The rules are Paimon Java's (`AppendCompactCoordinator` in a batch run, as Spark's
`compact` procedure and Flink's dedicated batch compact job use it):

* A file is *small* when its size is below `target-file-size * compaction.small-file-ratio`
  (256 MB and 0.7 by default for append tables). Files between that and the target are
  left alone, so that a file a compaction just wrote is not rewritten again only because
  compression made it come out a little under the target.
* One run looks at no more than `compaction.file-num-limit` small files (in manifest
  order, all partitions together); when more remain, the result says so and another run
  picks them up.
* Per partition, the small files are sorted by size and packed into bins: every file costs
  its size plus `source.split.open-file-cost` (4 MB); a bin is closed once it holds more
  than one file and its cost reaches twice the target. The files left over form a last bin
  only if they are at least `compaction.min.file-num` (5); otherwise they wait.

Everything here is pure: entries and options in, tasks out. Reading and writing data and
committing are in `job.py`.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from paimon_commit.format.manifest import ManifestEntry
from paimon_commit.format.schema import TableSchema
from paimon_commit.options import ConfigOption, CoreOptions

__all__ = ["CompactOptions", "CompactTask", "CompactPlan", "plan_compaction",
           "COMPACT_OPTIONS", "evolution_problem"]


# Paimon's names and defaults for append tables, declared with every other option in
# options.py (validated wherever table options are); these are read only by compaction.
SMALL_FILE_RATIO = CoreOptions.COMPACTION_SMALL_FILE_RATIO
MIN_FILE_NUM = CoreOptions.COMPACTION_MIN_FILE_NUM
FILE_NUM_LIMIT = CoreOptions.COMPACTION_FILE_NUM_LIMIT
OPEN_FILE_COST = CoreOptions.SOURCE_SPLIT_OPEN_FILE_COST
COMPACT_OPTIONS: Tuple[ConfigOption, ...] = (SMALL_FILE_RATIO, MIN_FILE_NUM, FILE_NUM_LIMIT,
                                             OPEN_FILE_COST)


@dataclass(frozen=True)
class CompactOptions:
    target_file_size: int
    small_file_ratio: float
    min_file_num: int
    file_num_limit: int
    open_file_cost: int

    @property
    def small_file_size(self) -> int:
        """Files below this size are compacted (Paimon's compactionFileSize)."""
        return int(self.target_file_size * self.small_file_ratio)

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> "CompactOptions":
        """From raw option strings (table options with dynamic ones on top); OptionError
        names the first bad one. Only parsing: no I/O."""
        target = CoreOptions.TARGET_FILE_SIZE.value(options)
        return cls(target, SMALL_FILE_RATIO.value(options), MIN_FILE_NUM.value(options),
                   FILE_NUM_LIMIT.value(options), OPEN_FILE_COST.value(options))


@dataclass(frozen=True)
class CompactTask:
    """One bin: small files of one partition rewritten together (Paimon's AppendCompactTask)."""
    partition: bytes                 # the serialized partition row, as in the manifests
    values: Tuple[Any, ...]          # the same partition, decoded
    files: Tuple[ManifestEntry, ...]  # live ADD entries to rewrite

    @property
    def input_bytes(self) -> int:
        return sum(e.file.file_size for e in self.files)

    @property
    def input_rows(self) -> int:
        return sum(e.file.row_count for e in self.files)


@dataclass(frozen=True)
class CompactPlan:
    base_snapshot_id: Optional[int]  # the snapshot whose live files were planned
    tasks: Tuple[CompactTask, ...]
    # partition row -> (live data files, their bytes) in the base snapshot, for the result
    live: Mapping[bytes, Tuple[int, int]]
    remaining: bool = False           # more small files than compaction.file-num-limit
    skipped: Tuple[Tuple[str, str], ...] = ()  # (file name, why) not compacted
    # (base, delta) manifest lists of the base snapshot: a commit building on this very
    # snapshot knows the inputs are live without reading its manifests again
    base_lists: Tuple[str, ...] = ()


def evolution_problem(old: TableSchema, new: TableSchema) -> Optional[str]:
    """Why rows of a file written with schema `old` cannot be rewritten as rows of `new`
    without changing them, or None. Columns are matched by field id (a renamed column keeps
    its id); a column added later reads as null. A changed type would need Paimon's cast
    rules, which we do not reproduce: such files are left for Paimon to compact."""
    by_id = {f.id: f for f in old.fields}
    for f in new.fields:
        o = by_id.get(f.id)
        if o is None:
            continue
        if _strip_not_null(o.type) != _strip_not_null(f.type):
            return (f"column {f.name!r} changed type from {_type_str(o.type)} to "
                    f"{_type_str(f.type)} since schema {old.id}")
        if _is_not_null(f.type) and not _is_not_null(o.type):
            return f"column {f.name!r} became NOT NULL since schema {old.id}"
    for f in new.fields:
        if f.id not in by_id and _is_not_null(f.type):
            return f"column {f.name!r} was added as NOT NULL after schema {old.id}"
    return None


def _is_not_null(t: Any) -> bool:
    s = t.get("type", "") if isinstance(t, dict) else t
    return str(s).endswith("NOT NULL")


def _strip_not_null(t: Any) -> str:
    s = json.dumps(t, sort_keys=True) if isinstance(t, dict) else str(t)
    if not isinstance(t, dict) and s.endswith(" NOT NULL"):
        s = s[:-len(" NOT NULL")]
    elif isinstance(t, dict) and _is_not_null(t):
        top = dict(t)
        top["type"] = str(top["type"])[:-len(" NOT NULL")]
        s = json.dumps(top, sort_keys=True)
    return s


def _type_str(t: Any) -> str:
    return json.dumps(t) if isinstance(t, dict) else str(t)


def plan_compaction(entries: Sequence[ManifestEntry], options: CompactOptions,
                    decode: Callable[[bytes], Tuple[Any, ...]],
                    wanted: Callable[[Tuple[Any, ...]], bool],
                    schema_problem: Callable[[int], Optional[str]],
                    base_snapshot_id: Optional[int]) -> CompactPlan:
    """The tasks of one batch run over the live `entries` of the base snapshot.

    `wanted(values)` selects partitions; `schema_problem(schema_id)` says why files of that
    schema must not be rewritten (None: they can be)."""
    small = options.small_file_size
    live: Dict[bytes, List[int]] = {}
    by_partition: Dict[bytes, List[ManifestEntry]] = {}
    skipped: List[Tuple[str, str]] = []
    scanned = 0
    remaining = False
    for e in entries:
        values = decode(e.partition)
        if not wanted(values):
            continue
        count = live.setdefault(e.partition, [0, 0])
        count[0] += 1
        count[1] += e.file.file_size
        # Unaware-bucket tables keep every file in bucket 0 (Paimon's compatibility rule);
        # anything else is not ours to move.
        if e.bucket != 0 or e.file.file_size >= small:
            continue
        if scanned >= options.file_num_limit:
            remaining = True
            continue
        scanned += 1
        problem = schema_problem(e.file.schema_id)
        if problem is not None:
            skipped.append((e.file.file_name, problem))
            continue
        by_partition.setdefault(e.partition, []).append(e)
    tasks: List[CompactTask] = []
    for partition, files in by_partition.items():
        for bin_ in _pack(files, options):
            tasks.append(CompactTask(partition, decode(partition), tuple(bin_)))
    return CompactPlan(base_snapshot_id, tuple(tasks),
                       {p: (c[0], c[1]) for p, c in live.items()}, remaining, tuple(skipped))


def _pack(files: List[ManifestEntry], o: CompactOptions) -> List[List[ManifestEntry]]:
    """Paimon's bin packing of one partition's small files (smallest first)."""
    ordered = sorted(files, key=lambda e: (e.file.file_size, e.file.file_name))
    bins: List[List[ManifestEntry]] = []
    current: List[ManifestEntry] = []
    cost = 0
    for e in ordered:
        current.append(e)
        cost += e.file.file_size + o.open_file_cost
        if len(current) > 1 and cost >= 2 * o.target_file_size:
            bins.append(current)
            current, cost = [], 0
    if len(current) >= max(o.min_file_num, 2):  # one file alone is never rewritten
        bins.append(current)
    return bins
