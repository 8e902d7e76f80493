"""Limits on one maintenance run, and what a run stopped by one reports.

- A time limit (`--max-duration D`, `max_duration=` on Table, `max_duration_ms=` on the
  operations) is checked between the steps of an operation, never inside one: expiration stops
  after the chunk it is deleting has finished in the crash-safe order, orphan cleanup between
  two batches of deletions, tag expiration between two tags. A run always finishes its first
  step (so that every rerun makes progress, however short the limit), and whatever it leaves
  is what the next run plans again: nothing is half done beyond what a crash at that point
  would leave, which every run already finishes.
- Running out of memory (MemoryError, e.g. under a container's limit or RLIMIT_AS) is caught
  at the operation's top level: the run stops, reports what it did, and names the option
  that bounds the work of one run, so that the user can rerun in smaller steps.
- `--max-deletes` (snapshot.expire.limit) is a per-run quota: reaching it while more
  snapshots could expire is reported the same way (`stopped_by: "max-deletes"`).

A stopped run's result says `complete: False`, `stopped_by` (one of STOPPED_BY) and a
`message` saying what was done and how to continue; the command line prints that line and
exits with EXIT_INCOMPLETE (3) for a time or memory limit (0 for the per-run quota, as always).
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable, Optional

from ..errors import OptionError

__all__ = ["MAX_DURATION", "MEMORY", "MAX_DELETES", "STOPPED_BY", "Deadline",
           "check_max_duration_ms", "OUT_OF_MEMORY", "is_out_of_memory"]

MAX_DURATION = "max-duration"
MEMORY = "memory"
MAX_DELETES = "max-deletes"
STOPPED_BY = (MAX_DURATION, MEMORY, MAX_DELETES)


# What a memory limit raises: MemoryError, or, when the address space left cannot hold one
# more thread's stack, RuntimeError("can't start new thread") from the thread pools.
OUT_OF_MEMORY = (MemoryError, RuntimeError)


def is_out_of_memory(error: BaseException) -> bool:
    """Whether `error` (one of OUT_OF_MEMORY) is the process running out of memory."""
    return isinstance(error, MemoryError) or "can't start new thread" in str(error)


def check_max_duration_ms(value: Any, name: str = "max_duration_ms") -> Optional[int]:
    """A time limit in milliseconds: None (no limit) or an integer > 0; refused in the
    caller's words before any I/O."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise OptionError(f"{name}={value!r} must be an integer number of milliseconds")
    if value <= 0:
        raise OptionError(f"{name}={value!r} must be longer than 0")
    return value


@dataclass(frozen=True)
class Deadline:
    """When a run must stop: `at` on `clock` (monotonic: a wall-clock step does not cut a
    run short or extend it). `limit_ms` is the limit as given, for messages."""
    at: float
    limit_ms: int
    clock: Callable[[], float] = time.monotonic

    @classmethod
    def after(cls, max_duration_ms: Optional[int], name: str = "max_duration_ms",
              clock: Callable[[], float] = time.monotonic) -> Optional["Deadline"]:
        """The deadline `max_duration_ms` from now (None: no limit)."""
        ms = check_max_duration_ms(max_duration_ms, name)
        return None if ms is None else cls(clock() + ms / 1000.0, ms, clock)

    def reached(self) -> bool:
        return self.clock() >= self.at

    def remaining_ms(self) -> int:
        """Milliseconds left (at least 1: a step started now still gets its first step)."""
        return max(1, int((self.at - self.clock()) * 1000))

    def describe(self) -> str:
        return f"the time limit (max-duration {self.limit_ms / 1000:g} s)"
