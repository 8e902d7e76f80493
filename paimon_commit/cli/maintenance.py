"""CLI commands for tag expiration, warehouse maintenance and the health report, and
`WAREHOUSE/db.db/*` patterns for `remove-orphan-files` and `expire-snapshots`.

`parser.build_parser` calls `add_commands`; commands return a dict (printed as JSON with
`--json`), set `args.print_text` to format their own text and `args.exit_code` (1 when a
table failed). A live progress bar is drawn on stderr only on a terminal and never with
`--json` (progress.terminal_progress).
"""
from __future__ import annotations

import argparse
import time
from typing import Any, Callable, Dict, List

from ..progress import terminal_progress
from . import context
from .args import (EXIT_FAILED, EXIT_INCOMPLETE, EXIT_OK, InvalidInput, duration,
                   print_incomplete, print_totals, int_at_least, key_value, lease_duration, orphan_age, orphan_cutoff,
                   orphan_duration, past_timestamp_ms, time_limit)

__all__ = ["add_commands", "cmd_expire_tags", "cmd_maintain", "cmd_report"]


# --- expire-tags ---------------------------------------------------------------------------

def cmd_expire_tags(args) -> Dict[str, Any]:
    """`expire-tags TABLE [--older-than TS] [--dry-run]`."""
    t = context.open_table(args.table)
    r = t.expire_tags(older_than_ms=args.older_than, dry_run=args.dry_run,
                      max_duration=args.max_duration)
    out = r.to_dict()
    out["files"] = [context.rel(t.store.root, p) for p in r.deleted_paths]
    args.print_text = _print_expire_tags
    if r.errors:   # tags that would never expire: the run went on past them
        args.exit_code = EXIT_FAILED
    elif not r.complete:
        args.exit_code = EXIT_INCOMPLETE
    return out


def _print_expire_tags(r: Dict[str, Any]) -> None:
    verb = "would expire" if r["dry_run"] else "expired"
    names = ", ".join(r["expired_tags"]) or "none"
    print(f"{verb} {len(r['expired_tags'])} tag(s): {names}")
    if not r["dry_run"]:
        print(f"deleted {r['deleted_files']} file(s), {r['deleted_bytes']} bytes")
    for name in r["finished_deletions"]:
        print(f"finished the interrupted deletion of tag {name}")
    for s in r["skipped"]:
        print(f"skipped: {s}")
    for e in r["errors"]:
        print(f"error: {e}")
    if r.get("complete") is False:
        print_incomplete(r, f"incomplete: {r['message']}")


# --- maintain ------------------------------------------------------------------------------

def cmd_maintain(args) -> Dict[str, Any]:
    """`maintain WAREHOUSE [...]`: every table; exit code 1 if any failed or was skipped."""
    from ..errors import OptionError
    from ..warehouse import check_maintenance_args, find_tables, maintain_warehouse
    older = None
    orphan_age("--older-than-duration", args.older_than_duration)
    if args.older_than_duration is not None:
        older = int(time.time() * 1000) - args.older_than_duration
        orphan_cutoff("--older-than-duration", args.older_than_duration, older,
                      args.allow_recent_cutoff)
        try:   # every argument before any I/O (maintain_warehouse checks again)
            check_maintenance_args(older_than_ms=older,
                                   allow_recent_cutoff=args.allow_recent_cutoff)
        except OptionError:
            text = getattr(args.older_than_duration, "text", str(args.older_than_duration))
            raise InvalidInput(f"--older-than-duration {text!r} reaches back before 1970: "
                               f"no file is that old") from None
    warehouse = args.table   # the positional WAREHOUSE, without credentials
    storage = context.Run.storage_options()
    _check_warehouse(warehouse)
    tables = find_tables(warehouse, args.database, args.table_glob,
                         storage_options=storage)    # a missing warehouse: exit 2
    progress = terminal_progress(args.json)
    try:
        results = maintain_warehouse(warehouse, orphans=args.orphans,
                                     older_than_ms=older, parallelism=args.parallelism,
                                     dry_run=args.dry_run, progress=progress, tables=tables,
                                     storage_options=storage, compact=args.compact,
                                     max_duration_ms=args.max_duration,
                                     allow_recent_cutoff=args.allow_recent_cutoff)
    finally:
        if progress is not None:
            progress.close()
    out = {"warehouse": args.table, "dry_run": args.dry_run,
           "tables": [r.to_dict() for r in results],
           "ok": sum(r.status == "ok" for r in results),
           "failed": sum(r.status == "failed" for r in results),
           "skipped": sum(r.status == "skipped" for r in results),
           "incomplete": sum(r.incomplete for r in results),
           "deleted_files": sum(r.deleted_files for r in results),
           "deleted_bytes": sum(r.deleted_bytes for r in results)}
    if out["failed"] or out["skipped"]:
        args.exit_code = EXIT_FAILED
    elif out["incomplete"]:
        args.exit_code = EXIT_INCOMPLETE
    args.print_text = _print_maintain
    return out


def _check_warehouse(warehouse: str) -> None:
    """Refuse (exit 2) a WAREHOUSE that holds no `<db>.db` directory: maintaining a table or
    database path, or any directory, would report "0 table(s): 0 ok" and do nothing. A
    table or database path gets the command that maintains it."""
    io = context.open_io(warehouse)
    root = io.root.rstrip("/")
    try:
        entries = [st for st in io.list_status(root) if st.is_dir]
    except FileNotFoundError:
        return   # find_tables says the warehouse does not exist
    if not entries and not io.exists(root):
        return
    if any(st.name.endswith(".db") for st in entries):
        return

    def is_table(path: str) -> bool:
        from ..format import paths as P
        return any(P.parse_schema_id(n) is not None
                   for n in io.list_names(io.join(path, "schema")))
    shown = warehouse.rstrip("/")
    parent, _, name = shown.rpartition("/")
    looked = (f"{warehouse} is not a warehouse: maintain looks for tables at "
              f"<warehouse>/<db>.db/<table> and found no <db>.db directory")
    if is_table(root):
        wh, _, db = parent.rpartition("/")
        if db.endswith(".db") and wh:
            raise InvalidInput(f"{looked}; {warehouse} is a table: run `paimon-commit maintain "
                               f"{wh} --table {db[:-3]}.{name}` or the table commands "
                               f"(expire-snapshots, remove-orphan-files, ...)")
        raise InvalidInput(f"{looked}; {warehouse} is a table: run the table commands "
                           f"(expire-snapshots, remove-orphan-files, ...)")
    if name.endswith(".db") and parent or any(is_table(st.path) for st in entries):
        if name.endswith(".db") and parent:
            raise InvalidInput(f"{looked}; {warehouse} is a database: run `paimon-commit "
                               f"maintain {parent} --database {name[:-3]}`")
        raise InvalidInput(f"{looked}; {warehouse} holds tables but is not a <db>.db "
                           f"directory")
    raise InvalidInput(looked)


def _print_maintain(r: Dict[str, Any]) -> None:
    verb = "would delete" if r["dry_run"] else "deleted"
    for t in r["tables"]:
        if t["status"] == "ok":
            print(f"{t['table']:<32} ok       {t['snapshots_expired']} snapshot(s), "
                  f"{len(t['tags_expired'])} tag(s), {len(t['partitions_expired'])} "
                  f"partition(s), {len(t['consumers_expired'])} consumer(s) expired, "
                  f"{t['orphans_deleted']} orphan(s); {verb} {t['deleted_files']} file(s), "
                  f"{t['deleted_bytes']} bytes")
        else:
            print(f"{t['table']:<32} {t['status']:<8} {t['reason']}")
        c = t["steps"].get("compaction")
        if c is not None:
            print(f"{'':<32} compact  {c['message']}")
        for w in t["warnings"]:
            print(f"{'':<32} warning  {w}")
    print_totals(r, f"{len(r['tables'])} table(s): {r['ok']} ok, {r['failed']} failed, "
                    f"{r['skipped']} skipped, {r['incomplete']} incomplete; {verb} "
                    f"{r['deleted_files']} file(s), {r['deleted_bytes']} bytes")
    if r["incomplete"]:
        what = "an interrupt" if any(t["stopped_by"] == "interrupt" for t in r["tables"]) \
            else "a limit"
        print(f"incomplete: {what} stopped {r['incomplete']} table(s) (see above); what was "
              f"done is reported, the tables are consistent and a rerun continues")


# --- report --------------------------------------------------------------------------------

def cmd_report(args) -> Dict[str, Any]:
    """`report TABLE [--html OUT] [--json]`: the table's health report."""
    from ..report import build_report, render_html
    t = context.open_table(args.table)
    progress = terminal_progress(args.json)
    try:
        rep = build_report(t, progress=progress)
    finally:
        if progress is not None:
            progress.close()
    if args.html:
        with open(args.html, "w", encoding="utf-8") as f:
            f.write(render_html(rep))
    out = rep.to_dict()
    out["html"] = args.html
    args.print_text = _print_report
    # As check's: a cron job or a CI step running the report learns of a broken table from
    # the exit code, not only from the page.
    ig = rep.integrity or {}
    if rep.unreadable or ig.get("problems"):
        args.exit_code = EXIT_FAILED
    return out


def _print_report(r: Dict[str, Any]) -> None:
    print(f"table            {r['table']}")
    if r.get("unreadable"):
        from ..report import integrity_text
        print(f"report           {r['unreadable']}")
        for line in integrity_text(r.get("integrity")):
            print(line)
        if r.get("html"):
            print(f"html report      {r['html']}")
        return
    print(f"snapshots        {r['snapshots']} (tags {len(r['tags'])})")
    print(f"live             {r['live_files']} file(s), {r['live_bytes']} bytes")
    print(f"on disk          {r['disk_files']} file(s), {r['disk_bytes']} bytes")
    for cause, v in r["reclaimable"].items():
        print(f"reclaimable      {cause}: {v['files']} file(s), {v['bytes']} bytes")
    from ..report import integrity_text, small_files_text
    for line in small_files_text(r.get("small_files") or {}):
        print(line)
    for line in integrity_text(r.get("integrity")):
        print(line)
    # (this run's requests: the `requests:` line the CLI prints after every operation)
    if r.get("html"):
        print(f"html report      {r['html']}")


# --- patterns for remove-orphan-files and expire-snapshots ---------------------------------

def _each_table(run: Callable) -> Callable:
    """Wrap a single-table command: a `WAREHOUSE/db.db/*` pattern runs it on every matching
    table, going on past failures (exit code 1 if any failed)."""
    def wrapped(args):
        from ..warehouse import is_table_pattern, resolve_table_pattern
        if not is_table_pattern(args.table):
            return run(args)
        if getattr(args, "file_list", None) is not None:
            raise InvalidInput(f"--file-list lists one table: give its path, not the pattern "
                               f"{args.table!r}")
        from ..errors import PaimonCommitError
        refs = resolve_table_pattern(args.table, storage_options=context.Run.storage_options())
        if not refs:
            raise ValueError(f"no table matches {args.table}")
        from ..operations.limits import Deadline
        pattern, limit = args.table, getattr(args, "max_duration", None)
        # --max-duration limits the whole run, as maintain's: each table gets what is left.
        deadline = Deadline.after(limit, "--max-duration")
        results: List[Dict[str, Any]] = []
        stopped = 0
        for ref in refs:
            args.table = ref.path
            if deadline is not None:
                if results and deadline.reached():
                    stopped += 1
                    results.append({"table": ref.full_name, "path": ref.path,
                                    "status": "not started",
                                    "reason": "--max-duration reached before this table; a "
                                              "rerun continues"})
                    continue
                args.max_duration = deadline.remaining_ms()
            args.exit_code = EXIT_OK
            try:
                results.append({"table": ref.full_name, "path": ref.path, "status": "ok",
                                "result": run(args)})
                stopped += args.exit_code == EXIT_INCOMPLETE
            except (PaimonCommitError, OSError, ValueError, TypeError) as e:
                results.append({"table": ref.full_name, "path": ref.path, "status": "failed",
                                "reason": str(e)})
        args.table = pattern
        if limit is not None:
            args.max_duration = limit
        failed = sum(r["status"] == "failed" for r in results)
        args.exit_code = EXIT_FAILED if failed else EXIT_INCOMPLETE if stopped else EXIT_OK
        args.print_text = _print_each
        return {"pattern": pattern, "tables": results, "failed": failed,
                "incomplete": stopped}
    return wrapped


def _print_each(r: Dict[str, Any]) -> None:
    for t in r["tables"]:
        if t["status"] == "not started":
            print(f"{t['table']:<32} not started ({t['reason']})")
            continue
        if t["status"] != "ok":
            print(f"{t['table']:<32} {t['status']:<8} {t['reason']}")
            continue
        x = t["result"]
        verb = "would delete" if x.get("dry_run") else "deleted"
        extra = f"{x['expired_snapshots']} snapshot(s) expired; " \
            if "expired_snapshots" in x else ""
        print(f"{t['table']:<32} ok       {extra}{verb} {x.get('deleted_files', 0)} file(s), "
              f"{x.get('deleted_bytes', 0)} bytes")
        if x.get("complete") is False:
            print(f"{'':<32} incomplete: {x['message']}")
    print_totals(r, f"{len(r['tables'])} table(s), {r['failed']} failed, {r['incomplete']} "
                    f"incomplete")


# --- registration --------------------------------------------------------------------------

def add_commands(sub, command: Callable) -> None:
    """Add `expire-tags`, `maintain` and `report` to the CLI's subparsers, and let
    `remove-orphan-files` / `expire-snapshots` take table patterns.

    Args:
        sub: the argparse subparsers object of parser.build_parser.
        command: parser.build_parser's helper that adds a TABLE command.
    """
    c = command("expire-tags", cmd_expire_tags,
                "expire tags past their retention (and, with --older-than, tags created "
                "before it); the files only they kept are deleted",
                "paimon-commit expire-tags /data/wh/db.db/events --older-than "
                "'2024-06-01 00:00:00' --dry-run")
    c.add_argument("--older-than", type=past_timestamp_ms,
                   metavar="TIMESTAMP",
                   help="also expire tags created before this local time, which must be in "
                        "the past: 'YYYY-MM-DD HH:MM:SS', or a bare date 'YYYY-MM-DD' "
                        "(midnight); tags without a create time: by their file's "
                        "modification time")
    c.add_argument("--max-duration", type=time_limit, metavar="DURATION",
                   help="stop between two tags after this long, e.g. '10 min' (exit code 3; "
                        "a rerun continues)")
    c.add_argument("--dry-run", action="store_true", help="report, delete nothing")

    help_ = ("maintain every table of a warehouse (<warehouse>/<db>.db/<table>) as its options "
             "ask: compaction with --compact, tag, partition, consumer and snapshot expiration, "
             "orphan cleanup with --orphans; goes on past failing tables (exit code 1 if any failed)")
    m = sub.add_parser("maintain", help=help_, description=help_,
                       epilog="example:\n  paimon-commit maintain /data/wh --database sales "
                              "--orphans --older-than-duration '2 d' --parallelism 4",
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    m.add_argument("table", metavar="WAREHOUSE",
                   help="warehouse path: a local path or file://, s3://, gs://, az://, "
                        "abfs[s]://, hdfs://")
    m.add_argument("--json", action="store_true", help="print one JSON object")
    m.add_argument("--option", action="append", default=[], type=key_value,
                   metavar="KEY=VALUE", help="storage option, repeatable (e.g. s3.endpoint=...)")
    m.add_argument("--database", metavar="D", help="only this database (glob accepted)")
    m.add_argument("--table", dest="table_glob", metavar="GLOB",
                   help="only tables whose name matches (db.table when the glob has a dot)")
    m.add_argument("--orphans", action="store_true", help="also remove orphan files")
    m.add_argument("--compact", action="store_true",
                   help="first compact the small files of every append table this library "
                        "writes (each table's compaction options)")
    m.add_argument("--older-than-duration", type=orphan_duration, metavar="DURATION",
                   help="orphans must be older than this, with a unit (default '1 d'; at "
                        "least '1 h' and each table's commit.timeout unless "
                        "--allow-recent-cutoff)")
    m.add_argument("--allow-recent-cutoff", action="store_true",
                   help="allow an orphan age under '1 h' (or a table's commit.timeout): "
                        "files a running writer has not committed yet would be deleted")
    m.add_argument("--parallelism", type=int_at_least(1), default=2,
                   help="tables maintained at the same time (worker processes; default 2)")
    m.add_argument("--max-duration", type=time_limit, metavar="DURATION",
                   help="stop the run at the next safe point after this long, e.g. '1 h' "
                        "(tables not started are left; exit code 3; a rerun continues)")
    m.add_argument("--dry-run", action="store_true", help="report, change nothing")
    # As the table commands' (parser.py); cli._run_command sets them for the run, and
    # maintain_warehouse hands them to its worker processes.
    m.add_argument("--lease-wait", type=duration, metavar="DURATION", default=None,
                   help="how long to wait for another process's maintenance of a table (its "
                        "maintenance lease) before skipping that table (default '60 s')")
    m.add_argument("--lease-duration", type=lease_duration, metavar="DURATION", default=None,
                   help="how long each table's maintenance lease is taken for, renewed at half "
                        "(default '5 min', at most '1 h'): a holder that dies blocks others "
                        "this long")
    m.set_defaults(run=cmd_maintain)

    r = command("report", cmd_report,
                "health report: live vs on-disk bytes, reclaimable bytes by cause, history "
                "charts, largest partitions, tags and their pinned bytes, integrity (check, "
                "and what repair would give up); read-only; exit 1 if a file the table "
                "needs is missing, damaged or of the wrong size",
                "paimon-commit report /data/wh/db.db/events --html report.html")
    r.add_argument("--html", metavar="OUT", help="write a self-contained HTML page here")

    for name in ("remove-orphan-files", "expire-snapshots"):
        p = sub.choices.get(name)
        if p is not None:
            p.set_defaults(run=_each_table(p.get_default("run")))
            p.epilog = (p.epilog or "") + \
                f"\n  paimon-commit {name} '/data/wh/sales.db/*' --dry-run   (every table)"
