"""Exit codes, the invalid-input error and the argument types of the command line (run by
argparse, before any I/O)."""
from __future__ import annotations

import argparse
import datetime
from typing import Callable, Tuple

from ..errors import OptionError
from ..options import parse_duration_ms

__all__ = ["EXIT_OK", "EXIT_FAILED", "EXIT_INVALID", "InvalidInput", "duration", "key_value",
           "timestamp_ms", "int_at_least"]

EXIT_OK, EXIT_FAILED, EXIT_INVALID = 0, 1, 2


class InvalidInput(Exception):
    """Bad command-line input (exit 2)."""


def duration(text: str) -> int:
    """A duration such as `1 h`, `7 d`, in milliseconds."""
    try:
        return parse_duration_ms(text, "duration")
    except OptionError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def key_value(text: str) -> Tuple[str, str]:
    """`KEY=VALUE` of `--option`."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError("expected KEY=VALUE")  # the value may be a secret
    return key.strip(), value


def timestamp_ms(text: str) -> int:
    """A local time `YYYY-MM-DD HH:MM:SS`, in epoch milliseconds."""
    try:
        dt = datetime.datetime.strptime(text.strip(), "%Y-%m-%d %H:%M:%S")
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"invalid timestamp {text!r} (expected 'YYYY-MM-DD HH:MM:SS', local time)") from None
    return int(dt.timestamp() * 1000)


def int_at_least(minimum: int) -> Callable[[str], int]:
    """An integer >= `minimum`."""
    def parse(text: str) -> int:
        try:
            v = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"invalid integer {text!r}") from None
        if v < minimum:
            raise argparse.ArgumentTypeError(f"{v} must be >= {minimum}")
        return v
    return parse
