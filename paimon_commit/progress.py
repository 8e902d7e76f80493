"""Progress reporting: a callback protocol for the Python API and a live bar for the CLI.

Long operations (warehouse maintenance, orphan cleanup, expiration) accept an optional
`progress` callable. It receives `ProgressEvent`s: the phase (`listing`, `reading metadata`,
`deleting`, `maintaining`, `compacting`, `committing`, ...), how much of it is done, the total when known, the unit, and
the table concerned. Callbacks run in the thread doing the work and should be quick; an
exception raised by a callback is logged and ignored, so a broken progress display never
stops (or half-finishes) a deletion.

The CLI shows events as a tqdm bar on stderr, only when stderr is a terminal and `--json` is
not given (`terminal_progress`). tqdm was chosen over rich: it has no dependencies of its own,
draws a bar with counts, rate and ETA on any file object, redraws at a bounded rate, and
degrades to nothing when disabled; rich would pull in markdown-it-py and pygments for a
feature set (tables, markup, live layouts) we do not use.
"""
from __future__ import annotations

import logging
import sys
import threading
import time
from dataclasses import dataclass
from typing import Callable, Optional

log = logging.getLogger(__name__)

__all__ = ["ProgressEvent", "ProgressCallback", "emit", "TerminalProgress",
           "terminal_progress", "Throttle"]

# Phases used by this library (callbacks must accept others too).
LISTING = "listing"
READING = "reading metadata"
DELETING = "deleting"
MAINTAINING = "maintaining"
COMPACTING = "compacting"
COMMITTING = "committing"


@dataclass(frozen=True)
class ProgressEvent:
    """One progress update.

    Attributes:
        phase: what is being done (`listing`, `reading metadata`, `deleting`, `maintaining`).
        done: units finished so far in this phase.
        total: units in this phase, or None when not known yet.
        unit: what is counted (`files`, `snapshots`, `tables`, ...).
        table: the table concerned, if any.
        message: a short free-form note (e.g. the table just finished, or a failure).
    """
    phase: str
    done: int
    total: Optional[int] = None
    unit: str = "files"
    table: Optional[str] = None
    message: Optional[str] = None


ProgressCallback = Callable[[ProgressEvent], None]


def emit(progress: Optional[ProgressCallback], phase: str, done: int,
         total: Optional[int] = None, unit: str = "files", table: Optional[str] = None,
         message: Optional[str] = None) -> None:
    """Send one event to `progress` (no-op when it is None); a failing callback is logged
    and ignored.

    Args:
        progress: the callback or None.
        phase, done, total, unit, table, message: the ProgressEvent fields.
    """
    if progress is None:
        return
    try:
        progress(ProgressEvent(phase, done, total, unit, table, message))
    except Exception as e:  # noqa: BLE001 - a display must never break the operation
        log.warning("progress callback failed (ignored): %r", e)


class Throttle:
    """Forward at most one event per `interval` seconds per phase (plus the first and the
    last of each phase), for loops that would otherwise call back per file."""

    def __init__(self, progress: Optional[ProgressCallback], interval: float = 0.1):
        self.progress = progress
        self.interval = interval
        self._last = 0.0
        self._phase: Optional[str] = None

    def __call__(self, phase: str, done: int, total: Optional[int] = None,
                 unit: str = "files", table: Optional[str] = None, force: bool = False) -> None:
        """Emit if forced, if the phase changed, at the end of the phase, or if `interval`
        passed since the last event."""
        if self.progress is None:
            return
        now = time.monotonic()
        if force or phase != self._phase or (total is not None and done >= total) or \
                now - self._last >= self.interval:
            self._phase, self._last = phase, now
            emit(self.progress, phase, done, total, unit, table)


class TerminalProgress:
    """A live tqdm bar on a stream (stderr): one bar per phase with counts, rate and ETA;
    the description shows the phase and the table. Thread-safe. Call `close()` at the end."""

    def __init__(self, stream=None, prefix: str = ""):
        self.stream = stream if stream is not None else sys.stderr
        self.prefix = prefix
        self._bar = None
        self._key = None
        self._lock = threading.Lock()

    def __call__(self, event: ProgressEvent) -> None:
        """Show `event`, starting a new bar when the phase, unit or total changes."""
        from tqdm import tqdm
        # No monitor thread: compaction forks its worker processes only while no thread but
        # pyarrow's runs (a fork beside a running thread can copy a held lock), and the bars
        # here are updated by their events anyway.
        tqdm.monitor_interval = 0
        with self._lock:
            key = (event.phase, event.unit, event.total)
            if self._bar is None or key != self._key:
                self._close_bar()
                desc = f"{self.prefix}{event.phase}"
                # A terminal that reports no size (a bare pty) has 0 rows and columns, where
                # tqdm draws nothing: assume 100 x 24 there.
                sized = _columns(self.stream) > 0
                self._bar = tqdm(total=event.total, unit=f" {event.unit}", desc=desc,
                                 file=self.stream, leave=False, dynamic_ncols=sized,
                                 ncols=None if sized else 100, nrows=None if sized else 24,
                                 mininterval=0.1)
                self._key = key
            bar = self._bar
            if event.table:
                bar.set_postfix_str(event.table[-40:], refresh=False)
            if event.done > bar.n:
                bar.update(event.done - bar.n)
            if event.total is not None and event.done >= event.total:
                bar.refresh()   # the end of a phase is always drawn (update() throttles)
            if event.message:
                bar.write(event.message, file=self.stream)

    def _close_bar(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def close(self) -> None:
        """Remove the bar from the terminal."""
        with self._lock:
            self._close_bar()

    def __enter__(self) -> "TerminalProgress":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _columns(stream) -> int:
    import os
    try:
        return os.get_terminal_size(stream.fileno()).columns
    except (AttributeError, OSError, ValueError):
        return 0


def terminal_progress(json_output: bool = False, stream=None) -> Optional[TerminalProgress]:
    """The CLI's progress display: a TerminalProgress on stderr when it is a terminal and the
    output is not JSON, else None (nothing is drawn).

    Args:
        json_output: True when `--json` was given.
        stream: the stream to draw on (default sys.stderr).

    Returns:
        A TerminalProgress, or None.
    """
    stream = stream if stream is not None else sys.stderr
    if json_output:
        return None
    try:
        if not stream.isatty():
            return None
    except (AttributeError, ValueError):
        return None
    return TerminalProgress(stream)
