"""`paimon-commit check TABLE [--json] [--max-duration D]`: which snapshots, tags and
long-lived changelogs are broken (Table.check). Read-only.

Exit codes: 0 healthy; 1 at least one problem (the text names the first few, `--json` all);
2 invalid input, nothing read beyond the schema (not a table); 3 stopped by --max-duration
before every root was checked, with no problem found so far.

`paimon-commit repair TABLE [--apply] [--json]`: a snapshot without the missing data files of
the latest one (Table.repair); without --apply it only shows them. Exit codes: 0 done, shown,
or nothing to repair; 1 the latest snapshot has problems repair does not fix (a data file of
the wrong size, ...: named), or its own metadata is damaged; 2 invalid input, nothing touched
(not a table, a primary-key table, ...); 75 the maintenance lease is held by another process.
"""
from __future__ import annotations

from typing import Any, Dict

from ..errors import UnsupportedTableError
from ..progress import terminal_progress
from . import context
from .args import EXIT_FAILED, EXIT_INCOMPLETE, EXIT_OK, InvalidInput, print_incomplete, \
    time_limit

__all__ = ["add_check_command", "cmd_check", "add_repair_command", "cmd_repair", "SHOWN"]

SHOWN = 10   # problems the text output names; --json gives all


def cmd_check(args) -> Dict[str, Any]:
    t = context.open_table(args.table)
    bar = terminal_progress(args.json)   # a live bar on a terminal only
    try:
        r = t.check(progress=bar, max_duration=args.max_duration)
    except UnsupportedTableError as e:   # refused before anything was read: bad input
        raise InvalidInput(str(e)) from None
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
            print_incomplete(r, f"incomplete: {r['message']}")
        return
    print(f"{len(problems)} problem(s); broken: {', '.join(r['broken'])}")
    for p in problems[:SHOWN]:
        print(f"  {_describe(p)}")
    if len(problems) > SHOWN:
        print(f"  ... and {len(problems) - SHOWN} more: use --json for all")
    if not r["complete"]:
        print_incomplete(r, f"incomplete: {r['message']}")


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


# --- repair --------------------------------------------------------------------------------

def cmd_repair(args) -> Dict[str, Any]:
    t = context.open_table(args.table)
    bar = terminal_progress(args.json)
    try:
        r = t.repair(apply=args.apply, progress=bar)
    except UnsupportedTableError as e:   # refused before anything was written: bad input
        raise InvalidInput(str(e)) from None
    finally:
        if bar is not None:
            bar.close()
    args.print_text = _print_repair
    args.exit_code = EXIT_FAILED if r.unrepaired else EXIT_OK
    out = r.to_dict()
    out["table"] = args.table
    return out


def _spec(partition: Dict[str, Any]) -> str:
    return ",".join(f"{k}={v}" for k, v in partition.items()) or "(unpartitioned)"


def _print_repair(r: Dict[str, Any]) -> None:
    print(r["message"])
    shown = 0   # files named, the first SHOWN (--json: all), each under its partition/bucket
    for g in r["groups"]:
        print(f"  {_spec(g['partition'])} bucket {g['bucket']}: {g['files']} file(s), "
              f"{g['records']} record(s), {g['bytes']} bytes")
        for f in r["files"]:
            if shown < SHOWN and f["path"].rpartition("/")[0] == g["directory"]:
                print(f"    {f['path']}: {f['record_count']} record(s), "
                      f"{f['file_size']} bytes")
                shown += 1
    if len(r["files"]) > shown:
        print(f"  ... and {len(r['files']) - shown} more file(s): use --json for all")
    unrepaired = r["unrepaired"]
    if unrepaired:
        print(f"not repaired: {len(unrepaired)} problem(s) of the latest snapshot repair "
              f"does not fix (it gives up missing data files only); its readers still fail:")
        for p in unrepaired[:SHOWN]:
            print(f"  {_describe(p)}")
        if len(unrepaired) > SHOWN:
            print(f"  ... and {len(unrepaired) - SHOWN} more: use --json for all")
    if r["still_broken"]:
        print(f"still broken: {', '.join(r['still_broken'])} (repair changes no existing "
              f"snapshot or tag: reading them fails until the files are restored; "
              f"expire-snapshots and delete-tag remove them)")


def add_repair_command(command) -> None:
    """Add `repair` through parser.build_parser's `command` helper."""
    c = command("repair", cmd_repair,
                "give up the data files that are gone: one new snapshot without the latest "
                "snapshot's missing data files, so its readers work again (Paimon's "
                "remove_unexisting_files); shows them only, unless --apply; deletes nothing",
                "paimon-commit repair /data/wh/db.db/events --apply")
    c.add_argument("--apply", action="store_true",
                   help="commit the repair snapshot (default: only show what it would give "
                        "up)")
