"""The order of post-commit maintenance, in one place: commits run it after each commit
(table_commit.TableCommit) and warehouse maintenance runs it on every table
(warehouse.maintain_table), each with its own steps, so the two cannot drift apart.

The order is Paimon's TableCommitImpl's since 1.4.1 (1.3.x ran consumer, snapshot, partition,
then tags), with compaction first:
0. compaction (only when asked: `compaction.post-commit.enabled` after commits, `--compact`
   for a warehouse), as Paimon's writers compact before the commit whose maintenance follows:
   the COMPACT snapshot is then what tags are taken on and what the expirations see, and the
   small files it replaces become reclaimable by snapshot expiration once no retained
   snapshot uses them;
1. tag expiration (and, after commits, automatic tag creation): a period's tag is taken on the
   snapshot that crossed the period boundary before snapshot expiration can remove that
   snapshot, and an expired tag's files are freed by the snapshot expiration of the same run;
2. partition expiration: its OVERWRITE snapshot exists before snapshots expire;
3. consumer expiration: an expired consumer no longer holds snapshots back from step 4;
4. snapshot expiration, the slowest, last of the expirations;
5. the `batch` tag (`tag.automatic-creation=batch`, after one-shot batch commits only), on the
   state the batch leaves, as Paimon's batch tag step runs after the commit.
"""
from __future__ import annotations

from typing import Callable, Mapping, Optional

__all__ = ["COMPACTION", "TAGS", "PARTITIONS", "CONSUMERS", "SNAPSHOTS", "BATCH_TAG", "ORDER",
           "run_in_order"]

COMPACTION = "compaction"
TAGS = "tag expiration"
PARTITIONS = "partition expiration"
CONSUMERS = "consumer expiration"
SNAPSHOTS = "snapshot expiration"
BATCH_TAG = "batch tag"
ORDER = (COMPACTION, TAGS, PARTITIONS, CONSUMERS, SNAPSHOTS, BATCH_TAG)


def run_in_order(steps: Mapping[str, Optional[Callable[[], None]]],
                 before_step: Optional[Callable[[str], None]] = None) -> None:
    """Run `steps` (name in ORDER -> callable; None or absent: not run) in ORDER.

    Args:
        steps: what each step does for this caller.
        before_step: called with the step's name before it runs (progress, error context).

    Raises:
        ValueError: a step name not in ORDER (before any step runs).
        Whatever a step raises; the later steps do not run.
    """
    unknown = sorted(set(steps) - set(ORDER))
    if unknown:
        raise ValueError(f"unknown maintenance step(s) {unknown}; the steps are {list(ORDER)}")
    for name in ORDER:
        step = steps.get(name)
        if step is None:
            continue
        if before_step is not None:
            before_step(name)
        step()
