"""Exit codes, the invalid-input error and the argument types of the command line (run by
argparse, before any I/O). A type's message starts with the value as typed; the parser puts
the flag in front (`--older-than-duration '-1 d' must not be negative`)."""
from __future__ import annotations

import argparse
import datetime
import time
from typing import Any, Callable, Dict, Tuple

from ..errors import OptionError
from ..options import parse_duration_ms

__all__ = ["EXIT_OK", "EXIT_FAILED", "EXIT_INVALID", "EXIT_INCOMPLETE", "EXIT_CLOSED_PIPE",
           "EXIT_LEASE_HELD",
           "InvalidInput", "Duration", "orphan_age", "orphan_duration", "orphan_cutoff",
           "duration", "time_limit", "key_value", "timestamp_ms",
           "past_timestamp_ms", "int_at_least", "stopped_exit_code", "lease_duration"]

EXIT_OK, EXIT_FAILED, EXIT_INVALID = 0, 1, 2
# A run stopped by --max-duration or by running out of memory (operations/limits.py): what it
# did is reported, the table is consistent, and a rerun continues. Not for --max-deletes,
# a per-run quota that every commit's expiration obeys too (exit 0, as always).
EXIT_INCOMPLETE = 3
# stdout's reader went away (`paimon-commit report T | head`): 128 + SIGPIPE, the status of
# a tool that the signal ended (git log | head), quietly; the pipeline's status is head's.
EXIT_CLOSED_PIPE = 141
# Another process holds the table's maintenance lease past --lease-wait: nothing was done,
# rerun later (sysexits.h EX_TEMPFAIL).
EXIT_LEASE_HELD = 75

_DURATION_EXAMPLES = "e.g. '500 ms', '30 s', '10 min', '1 h', '7 d'"
_TIMESTAMP_FORMAT = "%Y-%m-%d %H:%M:%S"


class InvalidInput(Exception):
    """Bad command-line input (exit 2)."""


class Duration(int):
    """Milliseconds that remember how the user wrote them (`.text`), for later messages."""
    text: str

    def __new__(cls, ms: int, text: str) -> "Duration":
        d = super().__new__(cls, ms)
        d.text = text
        return d

    def __getnewargs__(self):
        # (int's gives the value alone, which __new__ cannot take back: a Duration sent to a
        # worker process would kill it while unpickling.)
        return int(self), self.text


def orphan_age(flag: str, value: "Duration") -> None:
    """An orphan age of 0 would reach files being written now: refused in the user's words."""
    if value is not None and value == 0:
        raise InvalidInput(f"{flag} {getattr(value, 'text', str(value))!r} must be longer than "
                           f"0: files being written now would be deleted")


def orphan_duration(text: str) -> int:
    """An orphan age (`--older-than-duration`): a duration with its unit. A bare number would
    be milliseconds (`1` deleted files written a millisecond ago), never what was meant."""
    if text.strip().isdigit():
        raise argparse.ArgumentTypeError(
            f"{text!r} has no unit: give one, e.g. '1 h', '30 min', '2 d'")
    return duration(text)


def orphan_cutoff(flag: str, value, older_than_ms: int, allow: bool,
                  commit_timeout_ms=None) -> None:
    """An orphan cutoff newer than the floor (an hour; a table's commit.timeout when longer:
    checked again when the table is opened) is refused in the user's words, before any I/O,
    unless --allow-recent-cutoff."""
    from ..operations.orphan_context import RecentCutoffError, check_cutoff_floor
    if allow or older_than_ms is None:
        return
    try:
        check_cutoff_floor(older_than_ms, int(time.time() * 1000),
                           f"{flag} {getattr(value, 'text', value)!r}",
                           "pass --allow-recent-cutoff", commit_timeout_ms)
    except RecentCutoffError as e:
        raise InvalidInput(str(e)) from None


def duration(text: str) -> int:
    """A duration such as `1 h`, `7 d`, in milliseconds; never negative (every duration of
    the command line is an age or a retention)."""
    try:
        ms = parse_duration_ms(text, "duration")
    except OptionError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is an invalid duration (expected {_DURATION_EXAMPLES})") from None
    if ms < 0:
        raise argparse.ArgumentTypeError(f"{text!r} must not be negative")
    return Duration(ms, text)


def time_limit(text: str) -> int:
    """`--max-duration`: a duration (as `duration`) longer than 0."""
    d = duration(text)
    if d == 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be longer than 0: the run would stop "
                                         f"before it started")
    return d


def lease_duration(text: str) -> int:
    """`--lease-duration`: a duration (as `duration`) longer than 0, at most 1 h."""
    d = duration(text)
    if not 0 < d <= 3_600_000:
        raise argparse.ArgumentTypeError(f"{text!r} must be longer than 0 and at most '1 h'")
    return d


def stopped_exit_code(stopped_by) -> int:
    """The exit code of a run whose result says `stopped_by` (None: finished): 3 for a
    limit, a lost maintenance lease or another safe-point stop; 0 for the per-run quota."""
    return EXIT_OK if stopped_by in (None, "max-deletes") else EXIT_INCOMPLETE


def key_value(text: str) -> Tuple[str, str]:
    """`KEY=VALUE` of `--option`."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError("expected KEY=VALUE")  # the value may be a secret
    return key.strip(), value


def timestamp_ms(text: str) -> int:
    """A local time `YYYY-MM-DD HH:MM:SS`, or a bare date `YYYY-MM-DD` (midnight, local time:
    what a person means by "older than 2024-01-01"), in epoch milliseconds."""
    for fmt in (_TIMESTAMP_FORMAT, "%Y-%m-%d"):
        try:
            dt = datetime.datetime.strptime(text.strip(), fmt)
        except ValueError:
            continue
        return int(dt.timestamp() * 1000)
    raise argparse.ArgumentTypeError(
        f"{text!r} is an invalid timestamp (expected 'YYYY-MM-DD HH:MM:SS' or 'YYYY-MM-DD', "
        f"local time)")


def past_timestamp_ms(text: str) -> int:
    """A cutoff `YYYY-MM-DD HH:MM:SS` (local time) that is in the past. Every command's
    `--older-than` takes this (expire-snapshots, expire-tags, remove-orphan-files): a cutoff in
    the future would reach the files, snapshots or tags being written right now."""
    ms = timestamp_ms(text)
    now = time.time()
    if ms >= now * 1000:
        shown = datetime.datetime.fromtimestamp(now).strftime(_TIMESTAMP_FORMAT)
        raise argparse.ArgumentTypeError(
            f"{text!r} is not in the past (it is {shown} now, local time): a cutoff must be a "
            f"past time")
    return Duration(ms, text)   # (an epoch time, remembering how it was typed)


def int_at_least(minimum: int) -> Callable[[str], int]:
    """An integer >= `minimum`."""
    def parse(text: str) -> int:
        try:
            v = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
        if v < minimum:
            raise argparse.ArgumentTypeError(f"{text!r} must be >= {minimum}")
        return v
    return parse


def print_bill(requests: Dict[str, Any]) -> None:
    """The run's `requests:` line (and, with --price, its `estimated cost:` line)."""
    from ..io.metered import format_bill, format_cost
    print(format_bill(requests))
    if "estimated_cost_usd" in requests:
        print(f"estimated cost: {format_cost(requests['estimated_cost_usd'])} "
              f"({requests['prices']} prices)")


def print_totals(r: Dict[str, Any], line: str) -> None:
    """The totals line of a run over several tables (and the `incomplete:` line after it,
    if any, ends the text): the run's request bill goes before it."""
    print_incomplete(r, line)


def print_incomplete(r: Dict[str, Any], line: str) -> None:
    """The `incomplete:` line a stopped run's text ends with: the run's request bill goes
    before it (taken out of `r`, so that the CLI does not print it again after)."""
    requests = r.pop("requests", None)
    if isinstance(requests, dict) and "total" in requests:
        print_bill(requests)
    print(line)
