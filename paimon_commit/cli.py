"""Command line: `paimon-commit COMMAND TABLE ...` (also `python -m paimon_commit`).

Exit codes: 0 ok, 2 invalid input, 1 operation failed. `--json` prints one JSON object.
"""
from __future__ import annotations

import argparse
import json
import logging
import sys
from typing import Any, Dict, List, Optional

from .errors import OptionError, PaimonCommitError, TableNotFoundError
from .table import Table

EXIT_OK, EXIT_FAILED, EXIT_INVALID = 0, 1, 2


def _snapshots(args) -> Dict[str, Any]:
    t = Table.open(args.table)
    snaps = [{"id": s.id, "kind": s.commit_kind, "time_millis": s.time_millis,
              "commit_user": s.commit_user, "commit_identifier": s.commit_identifier,
              "total_records": s.total_record_count, "delta_records": s.delta_record_count}
             for s in t.snapshots()]
    return {"table": args.table, "snapshots": snaps}


def _print_text(result: Dict[str, Any]) -> None:
    if "snapshots" in result:
        print(f"{'id':>6}  {'kind':<9} {'records':>10} {'delta':>8}  commit user")
        for s in result["snapshots"]:
            print(f"{s['id']:>6}  {s['kind']:<9} {s['total_records']:>10} "
                  f"{s['delta_records']:>8}  {s['commit_user']}")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="paimon-commit", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-v", "--verbose", action="store_true", help="log progress to stderr")
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("snapshots", help="list snapshots",
                       epilog="example: paimon-commit snapshots /data/wh/db.db/events --json")
    s.add_argument("table")
    s.add_argument("--json", action="store_true")
    s.set_defaults(run=_snapshots)
    return p


def main(argv: Optional[List[str]] = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:
        return EXIT_INVALID if e.code else EXIT_OK
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")
    try:
        result = args.run(args)
    except (OptionError, TableNotFoundError, ValueError, TypeError) as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_INVALID
    except (PaimonCommitError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_FAILED
    if getattr(args, "json", False):
        print(json.dumps(result))
    else:
        _print_text(result)
    return EXIT_OK
