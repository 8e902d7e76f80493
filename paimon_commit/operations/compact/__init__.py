"""Compaction of bucket-unaware append tables (see docs/compaction.md).

    plan.py     which small files are rewritten together (pure: entries in, bins out)
    rewrite.py  one bin: read its files, write their rows as new files
    pool.py     the bins spread over forked worker processes or threads
    spawn.py    the bins on this thread and in spawned workers (a process that cannot fork)
    worker.py   one bin in a worker process, and what it sends back
    result.py   what a compaction did, and its errors
    job.py      plan, rewrite and commit one COMPACT snapshot (AppendCompaction)

Callers import from here; the modules are for the library itself and its tests."""
from .job import COMPACT_SOURCE, AppendCompaction, compact_table
from .plan import CompactOptions, CompactPlan, CompactTask, plan_compaction
from .result import CompactionConflictError, CompactionError, CompactResult, \
    PartitionCompaction

__all__ = ["compact_table", "AppendCompaction", "CompactResult", "PartitionCompaction",
           "CompactionConflictError", "CompactionError", "COMPACT_SOURCE", "CompactOptions",
           "CompactPlan", "CompactTask", "plan_compaction"]
