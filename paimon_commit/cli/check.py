"""`paimon-commit check TABLE [--json] [--max-duration D]`: which snapshots, tags and
long-lived changelogs are broken (Table.check). Read-only.

Exit codes: 0 healthy; 1 at least one problem (the text names the first few, `--json` all);
2 invalid input, nothing read beyond the schema (not a table); 3 stopped by --max-duration
before every root was checked, with no problem found so far.
"""
from __future__ import annotations

from typing import Any, Dict

from ..progress import terminal_progress
from . import context
from .args import EXIT_FAILED, EXIT_INCOMPLETE, EXIT_OK, time_limit

__all__ = ["add_check_command", "cmd_check", "SHOWN"]

SHOWN = 10   # problems the text output names; --json gives all


def cmd_check(args) -> Dict[str, Any]:
    t = context.open_table(args.table)
    bar = terminal_progress(args.json)   # a live bar on a terminal only
    try:
        r = t.check(progress=bar, max_duration=args.max_duration)
    finally:
        if bar is not None:
            bar.close()
    args.print_text = _print_check
    args.exit_code = EXIT_FAILED if r.problems else EXIT_OK if r.complete else EXIT_INCOMPLETE
    out = r.to_dict()
    out["table"] = args.table
    return out


def _count(r: Dict[str, Any], kind: str) -> str:
    c = r["checked"].get(kind, {"files": 0, "bytes": 0})
    return f"{c['files']}"


def _print_check(r: Dict[str, Any]) -> None:
    checked = r["checked"]
    data = checked.get("data", {"files": 0, "bytes": 0})
    print(f"{r['table']}: {r['snapshots']} snapshot(s), {r['tags']} tag(s), "
          f"{r['changelogs']} changelog(s), {r['branches']} branch(es)")
    print(f"checked {data['files']} data file(s) ({data['bytes']} bytes), "
          f"{_count(r, 'manifest')} manifest(s), {_count(r, 'manifest-list')} manifest "
          f"list(s), {_count(r, 'index')} index file(s), {_count(r, 'statistics')} "
          f"statistics file(s); {r['listings']} listing(s), {r['reads']} read(s)")
    if r["external"]:
        print(f"{r['external']} file(s) outside the table root not checked")
    problems = r["problems"]
    if not problems:
        if r["complete"]:
            print("healthy: every file the snapshots, tags and changelogs use is there, "
                  "with the size the metadata records")
        else:
            print(f"incomplete: {r['message']}")
        return
    print(f"{len(problems)} problem(s); broken: {', '.join(r['broken'])}")
    for p in problems[:SHOWN]:
        print(f"  {_describe(p)}")
    if len(problems) > SHOWN:
        print(f"  ... and {len(problems) - SHOWN} more: use --json for all")
    if not r["complete"]:
        print(f"incomplete: {r['message']}")


def _describe(p: Dict[str, Any]) -> str:
    """CheckProblem.describe, from its dict."""
    from ..operations.check import CheckProblem
    return CheckProblem(p["path"], p["kind"], p["state"], p["expected_size"],
                        p["actual_size"], tuple(p["roots"]), p["detail"]).describe()


def add_check_command(command) -> None:
    """Add `check` through parser.build_parser's `command` helper."""
    c = command("check", cmd_check,
                "which snapshots, tags and changelogs are broken: every file they use must "
                "be there with the size the metadata records (read-only; exit 1 if any "
                "problem, 0 if healthy)",
                "paimon-commit check /data/wh/db.db/events --json")
    c.add_argument("--max-duration", type=time_limit, metavar="DURATION",
                   help="stop reading manifests after this long, e.g. '10 min' (exit code "
                        "3 when nothing was found until then)")
