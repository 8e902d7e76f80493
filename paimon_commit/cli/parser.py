"""The argument parser of `paimon-commit`: every command, its arguments and its help."""
from __future__ import annotations

import argparse
import difflib
import functools
import re
from typing import Dict, List

from .. import __version__
from ..io.uri import redact_uris_in
from .args import (duration, int_at_least, key_value, lease_duration, orphan_duration,
                   past_timestamp_ms, time_limit)
from .check import add_check_command, add_repair_command
from .compaction import add_compact_command
from .maintenance import add_commands
from .tables import (cmd_create_tag, cmd_delete_tag, cmd_drop_partition, cmd_expire_partitions,
                     cmd_expire_snapshots, cmd_info, cmd_lease, cmd_remove_orphan_files,
                     cmd_rollback_to, cmd_snapshots, cmd_tags, print_text)

__all__ = ["build_parser", "USAGE", "Parser", "MAX_DURATION_HELP", "TIMESTAMP_METAVAR",
           "BARE_DATE"]

# Every storage a TABLE or WAREHOUSE may be on (io.for_path, io/uri.py's schemes).
PATHS = ("a local path or file://, s3:// (s3a://), gs://, az://CONTAINER/... or "
         "abfs[s]://CONTAINER@ACCOUNT.dfs.core.windows.net/..., hdfs://")


USAGE = """Command line: `paimon-commit COMMAND TABLE ...` (also `python -m paimon_commit`).

Exit codes: 0 ok, 2 invalid input, 1 operation failed, 3 stopped by --max-duration, out of
memory or a lost maintenance lease (what was done is printed; the table is consistent and a
rerun continues), 75 another process maintains the table (its maintenance lease was not free
within --lease-wait; nothing was done), 141 when stdout's reader went away (`| head`;
quietly, the work is done). `--json`
prints one JSON object on stdout; text goes to stdout, logs and errors to stderr. Arguments are validated before the
table is touched. Credentials in a URI's user-info (s3://KEY:SECRET@bucket/...) are used, never
printed.

TABLE (maintain: WAREHOUSE) is a local path or a URI:
  /data/wh/db.db/t or file:///data/wh/db.db/t
  s3://bucket/wh/db.db/t (s3a:// too)   gs://bucket/wh/db.db/t
  az://container/wh/db.db/t (account: --option azure.account-name=...)
  abfs[s]://container@account.dfs.core.windows.net/wh/db.db/t
  hdfs://namenode:8020/wh/db.db/t
How the storage is reached (endpoint, credentials): --option KEY=VALUE, see README Storage.
"""


# Every --older-than takes a bare date too (args.timestamp_ms).
TIMESTAMP_METAVAR = "TIMESTAMP"
BARE_DATE = "'YYYY-MM-DD HH:MM:SS', or a bare date 'YYYY-MM-DD': midnight, local time"

MAX_DURATION_HELP = ("stop at the next safe point after this long, e.g. '30 min' (exit code 3; "
                     "a rerun continues)")


class Parser(argparse.ArgumentParser):
    """argparse, with what a destructive tool's users need:
    - no abbreviations (`--dry` is not `--dry-run`: a tool that deletes does not guess);
    - errors name the flag and the value as typed (`--older-than-duration '-1 d' must not be
      negative`), with a "did you mean" for a mistyped flag, command or choice, under the
      usage of the sub-command they belong to;
    - arguments with URI credentials are redacted (`unrecognized arguments: s3://KEY:SECRET@...`).
    Subcommands' parsers are of this class too."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def parse_args(self, args=None, namespace=None):
        ns, extras = self.parse_known_args(args, namespace)
        if extras:   # argparse would complain under the top-level usage, with no suggestion
            commands: Dict[str, argparse.ArgumentParser] = {}
            for a in self._actions:
                if isinstance(a, argparse._SubParsersAction):
                    commands = a.choices
            target = commands.get(getattr(ns, "command", None), self)
            target.error(_unrecognized(extras, target, self))
        return ns

    def error(self, message: str):
        # The one useful line first (argparse puts the usage, often many lines, above it):
        # the usage follows, for what the command takes.
        message = redact_uris_in(_in_user_words(message))
        self.exit(2, f"{self.prog}: error: {message}\n{self.format_usage()}")


def _in_user_words(message: str) -> str:
    """argparse's `argument --flag: 'value' problem` as `--flag 'value' problem`; a choice typo
    gets the nearest choice."""
    m = re.match(r"argument ([^:]+): (.*)$", message, re.S)
    if m:
        flag = m.group(1).split("/")[-1]   # "-v/--verbose" -> "--verbose"
        text = m.group(2)
        choice = re.match(r"invalid choice: '([^']*)' \(choose from (.*)\)$", text)
        if choice:
            options = re.findall(r"'([^']*)'", choice.group(2))
            near = difflib.get_close_matches(choice.group(1), options, n=1, cutoff=0.6)
            text = f"{choice.group(1)!r} is not one of {', '.join(options)}" + \
                (f": did you mean {near[0]!r}?" if near else "")
        message = f"{flag} {text}" if text.startswith("'") else f"{flag}: {text}"
    return message


def _unrecognized(extras: List[str], parser: argparse.ArgumentParser,
                  top: argparse.ArgumentParser) -> str:
    """`unrecognized argument '--retian-min': did you mean '--retain-min'?`"""
    flags = [f for p in (parser, top) for f in p._option_string_actions if f.startswith("--")]
    for arg in extras:
        if arg.startswith("-"):
            typed = arg.split("=", 1)[0]
            near = difflib.get_close_matches(typed, flags, n=1, cutoff=0.6)
            return f"unrecognized argument {typed!r}" + \
                (f": did you mean {near[0]!r}?" if near else
                 f" (see `{parser.prog} --help`)")
    return f"unrecognized arguments: {' '.join(extras)}"


def build_parser() -> argparse.ArgumentParser:
    """The parser of every command (arguments are validated by their types, before I/O)."""
    p = Parser(prog="paimon-commit", description=USAGE,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-v", "--verbose", action="store_true", help="log progress to stderr")
    p.add_argument("--version", action="version", version=f"paimon-commit {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, run, help_: str, example: str) -> argparse.ArgumentParser:
        c = sub.add_parser(name, help=help_, description=help_, epilog=f"example:\n  {example}",
                           formatter_class=argparse.RawDescriptionHelpFormatter)
        c.add_argument("table", help=f"table path: {PATHS}")
        c.add_argument("--json", action="store_true", help="print one JSON object")
        c.add_argument("--price", metavar="TABLE|FILE.json", default=None,
                       help="add the estimated cost of the run's requests: "
                            "s3-standard, gcs-standard, azure-hot, or a JSON file of USD per "
                            "1,000 requests by kind (LIST, GET, HEAD, PUT, DELETE)")
        # Also after the command (`paimon-commit info TABLE -v`), where users put it.
        c.add_argument("-v", "--verbose", action="store_true", default=argparse.SUPPRESS,
                       help="log progress to stderr")
        c.add_argument("--option", action="append", default=[], type=key_value,
                       metavar="KEY=VALUE", help="storage option, repeatable (e.g. "
                       "s3.endpoint=http://host:9000, s3.access-key=..., see README Storage)")
        # The maintenance lease (lease.py) of destructive commands; read-only ones ignore it.
        c.add_argument("--lease-wait", type=duration, metavar="DURATION", default=None,
                       help="how long to wait for another process's maintenance of the table "
                            "(its maintenance lease) before giving up with exit code 75 "
                            "(default '60 s')")
        c.add_argument("--lease-duration", type=lease_duration, metavar="DURATION",
                       default=None, help="how long the maintenance lease is taken for, "
                       "renewed at half (default '5 min', at most '1 h'): a holder that dies "
                       "blocks others this long")
        c.set_defaults(run=run, print_text=functools.partial(print_text, name))
        return c

    command("snapshots", cmd_snapshots, "list snapshots",
            "paimon-commit snapshots /data/wh/db.db/events --json")
    command("tags", cmd_tags, "list tags", "paimon-commit tags /data/wh/db.db/events")
    command("info", cmd_info, "summary: snapshots, tags, consumers, live and on-disk files",
            "paimon-commit info /data/wh/db.db/events --json")
    c = command("drop-partition", cmd_drop_partition,
                "drop partitions (an OVERWRITE snapshot marking their files deleted)",
                "paimon-commit drop-partition /data/wh/db.db/events dt=2024-01-01 "
                "dt=2024-01-02,hr=3")
    c.add_argument("partitions", nargs="+", metavar="k=v[,k=v]")

    c = command("expire-snapshots", cmd_expire_snapshots,
                "expire old snapshots and delete the files only they used",
                "paimon-commit expire-snapshots /data/wh/db.db/events --retain-min 5 "
                "--time-retained '1 d' --dry-run")
    c.add_argument("--retain-min", type=int_at_least(1), help="snapshots always kept")
    c.add_argument("--retain-max", type=int_at_least(1), help="snapshots kept at most")
    c.add_argument("--older-than", type=past_timestamp_ms, metavar=TIMESTAMP_METAVAR,
                   help="expire snapshots replaced before this local time (must be in the "
                        "past; " + BARE_DATE + ")")
    c.add_argument("--time-retained", type=duration, metavar="DURATION",
                   help="e.g. '1 h', '7 d' (default: the table's snapshot.time-retained)")
    c.add_argument("--max-deletes", type=int_at_least(0),
                   help="snapshots expired in this run at most")
    c.add_argument("--max-duration", type=time_limit, metavar="DURATION",
                   help=MAX_DURATION_HELP + " (between two chunks of snapshots)")
    c.add_argument("--dry-run", action="store_true", help="report, delete nothing")

    c = command("expire-partitions", cmd_expire_partitions,
                "drop partitions older than the expiration time (an OVERWRITE snapshot)",
                "paimon-commit expire-partitions /data/wh/db.db/events --expiration-time '30 d'"
                " --timestamp-formatter yyyyMMdd")
    c.add_argument("--expiration-time", type=duration, required=True, metavar="DURATION")
    c.add_argument("--timestamp-formatter", help="Java DateTimeFormatter, e.g. yyyy-MM-dd")
    c.add_argument("--timestamp-pattern", help="e.g. '$dt $hour:00:00'")
    c.add_argument("--expire-strategy", choices=["values-time", "update-time"])
    c.add_argument("--max-expires", type=int_at_least(1), help="partitions dropped at most")
    c.add_argument("--dry-run", action="store_true")

    c = command("remove-orphan-files", cmd_remove_orphan_files,
                "delete files no snapshot, tag, branch or changelog uses (older than a day by "
                "default)",
                "paimon-commit remove-orphan-files /data/wh/db.db/events "
                "--older-than-duration '2 d' --dry-run")
    c.add_argument("--older-than", type=past_timestamp_ms, metavar=TIMESTAMP_METAVAR,
                   help="only files modified before this local time (must be in the past; "
                        + BARE_DATE + ")")
    c.add_argument("--older-than-duration", type=orphan_duration, metavar="DURATION",
                   help="only files older than this, with a unit, e.g. '2 d' (default '1 d'; "
                        "at least '1 h' and the table's commit.timeout unless "
                        "--allow-recent-cutoff)")
    c.add_argument("--allow-recent-cutoff", action="store_true",
                   help="allow a cutoff less than '1 h' (or the table's commit.timeout) "
                        "before now: files a running writer has not committed yet would be "
                        "deleted; only when no writer is running")
    c.add_argument("--dry-run", action="store_true", help="report, delete nothing")
    c.add_argument("--parallelism", type=int_at_least(1), help="threads (or Spark tasks)")
    c.add_argument("--mode", choices=["local", "distributed"], default="local",
                   help="distributed: list and anti-join on Spark executors")
    c.add_argument("--max-duration", type=time_limit, metavar="DURATION",
                   help=MAX_DURATION_HELP + " (between two batches of deletions; local mode)")
    c.add_argument("--list-files", action="store_true",
                   help="print every path (a terminal otherwise gets a summary of a long "
                        "list; a pipe and --json get every path)")
    c.add_argument("--partition", action="append", metavar="KEY=GLOB[/KEY=GLOB]",
                   help="clean only the partitions matching this pattern (repeatable: their "
                        "union), e.g. 'dt=2024-01-*' or 'dt=2024-01-*/hr=0?'; a DATE key "
                        "matches its date or Paimon's day number; only those partition "
                        "directories are listed and only the manifests whose partition "
                        "statistics can hold them are read; metadata files are left alone")
    c.add_argument("--file-list", metavar="PATH",
                   help="take the files from this list instead of listing the table: an S3 "
                        "Inventory or GCS inventory report, or any CSV (with a header) or "
                        "Parquet file with path (or key), size and last-modified columns; "
                        "'-' reads stdin. Only files it shows are deleted, if it covers the "
                        "table and is newer than the cutoff; each one's status is read "
                        "again before it is deleted (local mode)")
    c.add_argument("--file-list-time", type=past_timestamp_ms, metavar=TIMESTAMP_METAVAR,
                   help="when the --file-list was taken (local time; in doubt, earlier)")
    c.add_argument("--file-list-manifest", metavar="PATH",
                   help="the S3 Inventory manifest.json of the --file-list: its columns "
                        "(the CSV has no header), bucket and time (creationTimestamp)")

    c = command("create-tag", cmd_create_tag, "tag a snapshot (default: the latest)",
                "paimon-commit create-tag /data/wh/db.db/events release-1 --snapshot 42")
    c.add_argument("name")
    c.add_argument("--snapshot", type=int_at_least(1))
    c.add_argument("--time-retained", type=duration, metavar="DURATION")

    c = command("delete-tag", cmd_delete_tag,
                "delete a tag (and the files only it kept, if its snapshot expired)",
                "paimon-commit delete-tag /data/wh/db.db/events release-1")
    c.add_argument("name")

    c = command("rollback-to", cmd_rollback_to,
                "make a snapshot or tag the latest; newer snapshots and tags are deleted",
                "paimon-commit rollback-to /data/wh/db.db/events --snapshot 40")
    g = c.add_mutually_exclusive_group(required=True)
    g.add_argument("--snapshot", type=int_at_least(1))
    g.add_argument("--tag")
    c = command("lease", cmd_lease,
                "show who holds the table's maintenance lease; --break supersedes it",
                "paimon-commit lease /data/wh/db.db/events --break")
    c.add_argument("--break", dest="break_lease", action="store_true",
                   help="create the next lease record as released: only when no maintenance "
                        "of the table is running (a holder that died, a bad record)")
    add_compact_command(command)
    add_check_command(command)
    add_repair_command(command)
    add_commands(sub, command)   # expire-tags, maintain, report, patterns
    return p
