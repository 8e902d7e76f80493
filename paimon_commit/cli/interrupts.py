"""Ctrl-C and SIGTERM during a destructive command: stop at the next safe point.

The library never installs signal handlers (an application embedding it owns its signals);
the command line does, around one command (`stop_at_safe_points`). The first SIGINT or SIGTERM
only asks the run to stop (io.deletion.request_stop): the operation stops before its next
delete step, where what is left is what a crash there would leave, and reports what it did
(`complete: False`, `stopped_by: "interrupt"`); the command prints the `incomplete:` line and
exits 130 (SIGINT) or 143 (SIGTERM), the shells' codes for those signals. A second signal
ends the process at once from the handler (os._exit, after one line, `INTERRUPTED_AGAIN`),
its worker processes killed with it: crash-safe as a kill is, never a traceback. The command's
worker processes (maintain's) ignore SIGINT and are stopped through the run, not the signal
(warehouse.maintain_warehouse forwards the stop request).
"""
from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from typing import Iterator, Optional

from ..io.deletion import clear_stop, interrupt_reason, request_stop

__all__ = ["Interrupts", "stop_at_safe_points", "INTERRUPTED_AGAIN", "EXIT_SIGINT",
           "EXIT_SIGTERM", "exit_code_of"]

EXIT_SIGINT, EXIT_SIGTERM = 128 + signal.SIGINT, 128 + signal.SIGTERM   # 130, 143
INTERRUPTED_AGAIN = ("interrupted again: stopped at once; the table is consistent, a rerun "
                     "continues")


class Interrupts:
    """The signals one command received: `first` (None: none yet)."""

    def __init__(self) -> None:
        self.first: Optional[int] = None

    def handle(self, signum: int, _frame) -> None:
        if self.first is not None:
            # A second signal: the user does not want to wait for the safe point. Ended here,
            # as a kill would end it (which every run is safe against): a KeyboardInterrupt
            # raised at an arbitrary point can be swallowed (in a weakref callback, a
            # __del__: printed as "Exception ignored ... Traceback"), and unwinding waits for
            # the deletion pool's queued work, so it is neither at once nor one line.
            try:
                sys.stdout.flush()
            except (OSError, ValueError):
                pass
            os.write(2, (INTERRUPTED_AGAIN + "\n").encode())
            _kill_workers()
            os._exit(exit_code_of(signum))
        self.first = signum
        # Only a flag: the run itself stops at its next safe point (io/deletion.py).
        request_stop(interrupt_reason(signum), "interrupt")

    @property
    def exit_code(self) -> Optional[int]:
        return None if self.first is None else exit_code_of(self.first)


def _kill_workers() -> None:
    """End the command's worker processes with it (maintain's tables, compaction's bins), as
    a kill of the whole command would: a signal sent to the command's process never reaches
    them, and left running they would go on deleting after the command ended, then wait
    forever for results nobody reads. (Only if multiprocessing is loaded: a handler does not
    import.)"""
    mp = sys.modules.get("multiprocessing")
    if mp is None:
        return
    try:
        for p in mp.active_children():
            p.kill()
    except Exception:  # noqa: BLE001 - ending anyway: a worker already gone is fine
        pass


def exit_code_of(signum: int) -> int:
    return EXIT_SIGTERM if signum == signal.SIGTERM else EXIT_SIGINT


@contextlib.contextmanager
def stop_at_safe_points() -> Iterator[Interrupts]:
    """SIGINT and SIGTERM ask the command's run to stop at its next safe point while the
    block runs; the stop request is cleared at exit and, unless a signal came, the previous
    handlers restored (a caller of main() in-process goes on with its own). Outside the main thread (signals are
    only delivered there) nothing is installed."""
    got = Interrupts()
    if threading.current_thread() is not threading.main_thread():
        yield got
        return
    clear_stop()
    previous = {}
    try:
        for s in (signal.SIGINT, signal.SIGTERM):
            previous[s] = signal.signal(s, got.handle)
        yield got
    finally:
        # After a signal, the handler stays: a second one while the stopped run prints its
        # summary or the interpreter exits still ends in one line, never a traceback (the
        # process is ending with 130 / 143 anyway).
        if got.first is None:
            for s, handler in previous.items():
                signal.signal(s, handler)
        clear_stop()
