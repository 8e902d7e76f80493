"""Command line: `paimon-commit COMMAND TABLE ...` (also `python -m paimon_commit`).

- `args.py`: exit codes and argument types; `context.py`: what a run touches (storage options
  and credentials, the deletion log); `tables.py`: single-table commands; `maintenance.py`:
  expire-tags, maintain, report and table patterns; `parser.py`: the argument parser.
- `main` here runs one command: exit codes 0 ok, 2 invalid input (nothing touched), 1 failed,
  3 incomplete (a limit, a lost maintenance lease), 75 the maintenance lease is held by another
  process (nothing done), 141 stdout closed by its reader (`| head`), 130 / 143 a destructive
  command stopped at a safe point by SIGINT / SIGTERM (`interrupts.py`).
"""
from __future__ import annotations

import contextlib
import json
import logging
import os
import sys
import warnings
from typing import List, Optional

from ..errors import LeaseHeldError, OptionError, PaimonCommitError, TableNotFoundError, \
    UnsafePathError
from ..lease import lease_settings
from ..io.object_store_config import check_storage_options
from ..io.deletion import StopDeleting
from ..io.metered import estimated_cost, load_prices, metering
from .args import (EXIT_CLOSED_PIPE, EXIT_FAILED, EXIT_INCOMPLETE, EXIT_INVALID,
                   EXIT_LEASE_HELD, EXIT_OK, InvalidInput, print_bill)
from .context import Run
from .interrupts import EXIT_SIGINT, INTERRUPTED_AGAIN, Interrupts, stop_at_safe_points
from .parser import build_parser

__all__ = ["main", "build_parser", "EXIT_OK", "EXIT_FAILED", "EXIT_INVALID"]


def _fail(args, error: BaseException, code: int) -> int:
    root = Run.root
    deleted = [p[len(root):] if root and p.startswith(root) else p for p in Run.deleted]
    print(f"error: {error}", file=sys.stderr)
    if deleted:
        print(f"{len(deleted)} path(s) had been deleted before the failure:", file=sys.stderr)
        for p in deleted:
            print(f"  {p}", file=sys.stderr)
    if getattr(args, "json", False):
        print(json.dumps({"error": str(error), "exit_code": code,
                          "deleted_files": len(deleted), "files": deleted}))
    return code


def main(argv: Optional[List[str]] = None) -> int:
    """Run one command (`argv` default: sys.argv[1:]); returns the exit code."""
    try:
        return _main(argv)
    except BrokenPipeError:
        return _closed_pipe()
    except KeyboardInterrupt:
        # A signal just after the command's handlers were restored (a second Ctrl-C while
        # the stopped run was printing its summary): one line, never a traceback.
        print(INTERRUPTED_AGAIN, file=sys.stderr)
        return EXIT_SIGINT


def _main(argv: Optional[List[str]]) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:
        sys.stdout.flush()   # --help, --version
        return EXIT_INVALID if e.code else EXIT_OK
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")
    with _warnings_to_log():
        code = _run(args)
        sys.stdout.flush()   # a closed pipe shows here, not at the interpreter's exit
        return code


def _closed_pipe() -> int:
    """The reader of stdout went away (`paimon-commit report T | head`): end quietly, as
    `git log | head` does: no traceback, exit status 141 (128 + SIGPIPE, what a tool killed
    by SIGPIPE reports; the pipeline's status is the reader's). What the command did is
    done. Python's recommended handling: stdout onto devnull, so that its final flush
    cannot fail again."""
    if sys.stdout is sys.__stdout__:   # not in-process callers' captured streams
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError):
            pass
    return EXIT_CLOSED_PIPE


@contextlib.contextmanager
def _warnings_to_log():
    """The library's warnings (e.g. an option name close to Paimon's) go to the same log, as
    their message alone (no file and line of the library's code); restored after the run (a
    caller of main() in-process keeps its own warnings)."""
    fmt = warnings.formatwarning
    warnings.formatwarning = lambda message, *_a, **_k: str(message)
    logging.captureWarnings(True)
    try:
        yield
    finally:
        logging.captureWarnings(False)
        warnings.formatwarning = fmt


# Commands that delete: SIGINT / SIGTERM stop them at their next safe point (interrupts.py).
DESTRUCTIVE = frozenset({"expire-snapshots", "expire-partitions", "expire-tags", "delete-tag",
                         "rollback-to", "remove-orphan-files", "compact", "maintain",
                         "drop-partition"})


def _run(args) -> int:
    # s3://key:secret@bucket/...: the credentials go into the storage options, never echoed.
    args.table = Run.start(args.table, dict(args.option))
    try:   # --option takes storage options only: any other key is refused before any I/O
        check_storage_options(dict(args.option), strict=True, what="--option")
    except OptionError as e:
        return _fail(args, e, EXIT_INVALID)
    try:   # a price table that is not there: refused before any I/O too
        args.prices = load_prices(args.price) if getattr(args, "price", None) else None
    except ValueError as e:
        return _fail(args, e, EXIT_INVALID)
    got = Interrupts()
    try:
        with stop_at_safe_points() if args.command in DESTRUCTIVE else \
                contextlib.nullcontext(got) as got:
            code = _run_command(args)
    except KeyboardInterrupt:
        # A second signal during a destructive command (its handler raised this), or Ctrl-C
        # during a read-only one: one line, no traceback; what was deleted is done, and what
        # is left is what a kill there would leave, which a rerun finishes.
        again = got.first is not None
        print(INTERRUPTED_AGAIN if again else "interrupted", file=sys.stderr)
        code = got.exit_code if again else EXIT_SIGINT
        if args.json:
            print(json.dumps({"error": INTERRUPTED_AGAIN if again else "interrupted",
                              "exit_code": code}))
        return code
    if got.first is not None and code in (EXIT_OK, EXIT_INCOMPLETE):
        # Stopped at a safe point (or finished before one came): 130 / 143, as the shells
        # report a command those signals ended, after the usual output.
        return got.exit_code
    return code


def _stopped(args, stop: StopDeleting) -> int:
    """An operation a safe point stopped that did not turn it into its own incomplete result:
    the same `incomplete:` line (and JSON) as any run a limit stopped, with what was deleted
    (the run's deletion log). What is left is what a crash there leaves: a rerun finishes."""
    root = Run.root
    deleted = [p[len(root):] if root and p.startswith(root) else p for p in Run.deleted]
    message = (f"stopped before a delete step: {stop.reason}; deleted {len(deleted)} file(s); "
               f"the table is consistent, a rerun continues")
    if args.json:
        print(json.dumps({"complete": False, "stopped_by": stop.cause, "message": message,
                          "deleted_files": len(deleted), "files": deleted}))
    else:
        print(f"incomplete: {message}")
    return EXIT_INCOMPLETE


def _run_command(args) -> int:
    wait = getattr(args, "lease_wait", None)
    try:
        # Everything the command asks of the storage, its worker threads' and (maintain)
        # worker processes' requests included: the run's request bill.
        with lease_settings(None if wait is None else wait / 1000.0,
                            getattr(args, "lease_duration", None)), metering() as meter:
            result = args.run(args)
    except LeaseHeldError as e:   # another process maintains the table: nothing was done
        return _fail(args, e, EXIT_LEASE_HELD)
    except StopDeleting as e:
        return _stopped(args, e)
    except (InvalidInput, OptionError, TableNotFoundError, ValueError, TypeError,
            UnsafePathError) as e:
        # Invalid input only if nothing was touched; after a delete it is a failed run.
        return _fail(args, e, EXIT_FAILED if Run.deleted else EXIT_INVALID)
    except (PaimonCommitError, OSError) as e:
        return _fail(args, e, EXIT_FAILED)
    billed = args.command in BILLED and isinstance(result, dict)
    if billed:
        result["requests"] = _bill(args, meter)
    if args.json:
        print(json.dumps(result, default=str))
    else:
        args.print_text(result)
        if billed and "requests" in result:   # (not printed before an `incomplete:` line)
            print_bill(result["requests"])
    return getattr(args, "exit_code", EXIT_OK)


# Commands that report what they asked of the storage (`requests:`, JSON `requests`): the
# operations; the listings (snapshots, tags, info, lease) do not.
BILLED = DESTRUCTIVE | {"check", "repair", "report"}


def _bill(args, meter) -> dict:
    """The run's bill as JSON: counts by kind, bytes, total, storage; with --price, the
    estimated cost and the price table it used."""
    bill = meter.bill()
    out = bill.to_dict()
    prices = getattr(args, "prices", None)
    if prices is not None:
        name, table = prices
        out["estimated_cost_usd"] = round(estimated_cost(bill, table), 9)
        out["prices"] = name
    return out


   # 1: a command that went on past failures
