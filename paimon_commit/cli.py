"""Command line: `paimon-commit COMMAND TABLE ...` (also `python -m paimon_commit`).

Exit codes: 0 ok, 2 invalid input, 1 operation failed. `--json` prints one JSON object on
stdout; text goes to stdout, logs and errors to stderr. Arguments are validated before the
table is touched.
"""
from __future__ import annotations

import argparse
import datetime
import json
import logging
import sys
import time
from typing import Any, Callable, Dict, List, Optional

from .errors import OptionError, PaimonCommitError, TableNotFoundError, UnsafePathError
from .options import parse_duration_ms
from .progress import terminal_progress
from .table import Table

EXIT_OK, EXIT_FAILED, EXIT_INVALID = 0, 1, 2


class InvalidInput(Exception):
    """Bad command-line input (exit 2)."""


# --- argument types (run by argparse, before any I/O) ----------------------------------------

def _duration(text: str) -> int:
    try:
        return parse_duration_ms(text, "duration")
    except OptionError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _key_value(text: str):
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError("expected KEY=VALUE")  # the value may be a secret
    return key.strip(), value


def _timestamp_ms(text: str) -> int:
    try:
        dt = datetime.datetime.strptime(text.strip(), "%Y-%m-%d %H:%M:%S")
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"invalid timestamp {text!r} (expected 'YYYY-MM-DD HH:MM:SS', local time)") from None
    return int(dt.timestamp() * 1000)


def _int_at_least(minimum: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            v = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"invalid integer {text!r}") from None
        if v < minimum:
            raise argparse.ArgumentTypeError(f"{v} must be >= {minimum}")
        return v
    return parse


# --- commands ----------------------------------------------------------------------------

class _Run:
    """What this run touched: the storage's deletion log (a failure after the first delete
    is not "invalid input, nothing touched", and the output says what went)."""
    deleted: List[str] = []
    root: str = ""
    storage: Dict[str, str] = {}    # --option KEY=VALUE: how to reach the storage
    raw_paths: Dict[str, str] = {}  # shown (credential-free) table path -> the one given


def _io(path: str):
    from .io import for_path as file_io_for_path
    io = file_io_for_path(_Run.raw_paths.get(path, path), _Run.storage)
    io.deletion_log = _Run.deleted
    _Run.root = io.root.rstrip("/") + "/"
    return io


def _open(path: str) -> Table:
    return Table.open(path, file_io=_io(path))


def cmd_snapshots(args) -> Dict[str, Any]:
    t = _open(args.table)
    return {"table": args.table, "snapshots": [
        {"id": s.id, "kind": s.commit_kind, "time_millis": s.time_millis,
         "commit_user": s.commit_user, "commit_identifier": s.commit_identifier,
         "total_records": s.total_record_count, "delta_records": s.delta_record_count}
        for s in t.snapshots()]}


def cmd_expire_snapshots(args) -> Dict[str, Any]:
    if args.retain_min is not None and args.retain_max is not None \
            and args.retain_max < args.retain_min:
        raise InvalidInput(f"--retain-max {args.retain_max} must be >= --retain-min "
                           f"{args.retain_min}")
    t = _open(args.table)
    bar = terminal_progress(args.json)   # a live bar on a terminal only
    try:
        with t.new_commit(options={"write-only": "true"}) as c:
            r = c.expire_snapshots(dry_run=args.dry_run, retain_min=args.retain_min,
                                   retain_max=args.retain_max, older_than_ms=args.older_than,
                                   time_retained_ms=args.time_retained,
                                   max_deletes=args.max_deletes, progress=bar)
    finally:
        if bar is not None:
            bar.close()
    out = r.to_dict()
    out["files"] = [_rel(t, p) for p in r.deleted_paths]
    return out


def cmd_expire_partitions(args) -> Dict[str, Any]:
    from .operations.partition_expire import PartitionExpire, PartitionExpireConfig
    t = _open(args.table)
    if not t.partition_keys:
        raise InvalidInput(f"table {args.table} is not partitioned")
    cfg = PartitionExpireConfig.from_options(
        t.store.options, expiration_time_ms=args.expiration_time,
        timestamp_formatter=args.timestamp_formatter, timestamp_pattern=args.timestamp_pattern,
        strategy=args.expire_strategy, max_num=args.max_expires)
    with t.new_commit(options={"write-only": "true"}) as c:
        r = PartitionExpire(t.store, c._commit, cfg).expire(force=True, dry_run=args.dry_run)
    return r.to_dict()


def cmd_remove_orphan_files(args) -> Dict[str, Any]:
    from .operations.orphan import CleanContext, OrphanFilesCleaner
    if args.older_than is not None and args.older_than_duration is not None:
        raise InvalidInput("give --older-than or --older-than-duration, not both")
    older = args.older_than
    if args.older_than_duration is not None:
        older = int(time.time() * 1000) - args.older_than_duration
    ctx = CleanContext(args.table, older_than_ms=older, dry_run=args.dry_run,
                       file_io=_io(args.table))
    ctx.progress = terminal_progress(args.json)   # a live bar on a terminal only
    progress = _Progress(enabled=False)   # (was a single status line; the bar replaces it)
    if args.mode == "distributed":
        from .spark.orphan import DistributedOrphanFilesCleaner
        cleaner = DistributedOrphanFilesCleaner(ctx, parallelism=args.parallelism)
    else:
        if args.parallelism:
            from concurrent.futures import ThreadPoolExecutor
            ctx.executor = ThreadPoolExecutor(args.parallelism)
        cleaner = OrphanFilesCleaner(ctx)
    try:
        r = cleaner.clean()
    finally:
        if ctx.progress is not None:
            ctx.progress.close()
    progress.done(f"{'would delete' if r.dry_run else 'deleted'} {r.deleted_files} file(s)")
    return r.to_dict()


class _Progress:
    """A single self-overwriting status line on stderr, only when it is a terminal."""

    def __init__(self, enabled: bool):
        self.enabled = enabled

    def say(self, text: str) -> None:
        if self.enabled:
            sys.stderr.write(f"\r\033[K{text}")
            sys.stderr.flush()

    def done(self, text: str) -> None:
        if self.enabled:
            sys.stderr.write(f"\r\033[K{text}\n")


def cmd_info(args) -> Dict[str, Any]:
    t = _open(args.table)
    snaps = t.snapshots()
    live = t.live_files() if snaps else []
    partitions = sorted({tuple(f.partition.items()) for f in live}, key=repr)
    on_disk_files = on_disk_bytes = 0
    for st in _walk(t):
        on_disk_files += 1
        on_disk_bytes += st.size
    latest = snaps[-1] if snaps else None
    return {
        "table": args.table,
        "schema_id": t.schema.id,
        "columns": [{"name": f.name, "type": f.type} for f in t.schema.fields],
        "partition_keys": t.partition_keys,
        "options": t.options,
        "snapshots": len(snaps),
        "earliest": snaps[0].id if snaps else None,
        "latest": latest.id if latest else None,
        "latest_kind": latest.commit_kind if latest else None,
        "total_records": latest.total_record_count if latest else 0,
        "tags": [x.name for x in t.tags()],
        "consumers": {c.consumer_id: c.next_snapshot for c in t.consumers()},
        "live_files": len(live),
        "live_bytes": sum(f.file_size for f in live),
        "files_on_disk": on_disk_files,
        "bytes_on_disk": on_disk_bytes,
        "partitions": len(partitions),
    }


def _walk(t: Table):
    from .io import walk_files
    return walk_files(t.store.io, t.store.root)


def cmd_drop_partition(args) -> Dict[str, Any]:
    from .format import types as ptypes
    t = _open(args.table)
    types = dict(zip(t.partition_keys, t.schema.partition_types))
    specs = []
    for text in args.partitions:
        spec = {}
        for part in text.split(","):
            if "=" not in part:
                raise InvalidInput(f"bad partition spec {text!r}: expected k=v[,k=v]")
            k, v = part.split("=", 1)
            if k not in types:
                raise InvalidInput(f"unknown partition key {k!r} in {text!r} (partition keys: "
                                   f"{t.partition_keys})")
            spec[k] = ptypes.parse_python_value(v, types[k])
        specs.append(spec)
    with t.new_commit(options={"write-only": "true"}) as c:
        sid = c.drop_partitions(specs)
        result = c.last_result
    return {"snapshot_id": sid, "deleted_files": result.deleted_files if result else 0,
            "partitions": args.partitions}


def cmd_create_tag(args) -> Dict[str, Any]:
    t = _open(args.table)
    tag = t.create_tag(args.name, args.snapshot, args.time_retained)
    return {"tag": tag.name, "snapshot_id": tag.id, "time_retained_ms": tag.time_retained_ms}


def cmd_delete_tag(args) -> Dict[str, Any]:
    t = _open(args.table)
    r = t.delete_tag(args.name)
    out = r.to_dict()
    out["files"] = [_rel(t, p) for p in r.deleted_paths]
    return out


def cmd_rollback_to(args) -> Dict[str, Any]:
    t = _open(args.table)
    return t.rollback_to(snapshot_id=args.snapshot, tag=args.tag).to_dict()


def cmd_tags(args) -> Dict[str, Any]:
    t = _open(args.table)
    return {"table": args.table, "tags": [
        {"name": x.name, "snapshot_id": x.id,
         "create_time": x.create_time.isoformat() if x.create_time else None,
         "time_retained_ms": x.time_retained_ms} for x in t.tags()],
        "unfinished_deletions": t.unfinished_tag_deletions()}


def _rel(t: Table, path: str) -> str:
    root = t.store.root.rstrip("/") + "/"
    return path[len(root):] if path.startswith(root) else path


# --- text output -------------------------------------------------------------------------

def _print_text(command: str, r: Dict[str, Any]) -> None:
    if command == "snapshots":
        print(f"{'id':>6}  {'kind':<9} {'records':>10} {'delta':>8}  commit user")
        for s in r["snapshots"]:
            print(f"{s['id']:>6}  {s['kind']:<9} {s['total_records']:>10} "
                  f"{s['delta_records']:>8}  {s['commit_user']}")
    elif command == "tags":
        for x in r["tags"]:
            print(f"{x['name']}\tsnapshot {x['snapshot_id']}")
        for name in r["unfinished_deletions"]:
            print(f"{name}\tdeletion unfinished: run `paimon-commit delete-tag TABLE {name}`")
    elif command == "expire-snapshots":
        verb = "would expire" if r["dry_run"] else "expired"
        print(f"{verb} {r['expired_snapshots']} snapshot(s); "
              f"{'would delete' if r['dry_run'] else 'deleted'} {r['deleted_files']} file(s), "
              f"{r['deleted_bytes']} bytes; earliest {r['earliest']}, latest {r['latest']}")
        for s in r["skipped"]:
            print(f"skipped: {s}")
    elif command == "info":
        for k in ("table", "partition_keys", "snapshots", "earliest", "latest", "latest_kind",
                  "total_records", "tags", "consumers", "live_files", "live_bytes",
                  "files_on_disk", "bytes_on_disk", "partitions"):
            print(f"{k:<16}{r[k]}")
    elif command == "drop-partition":
        if r["snapshot_id"] is None:
            print("nothing to drop: no live file matches")
        else:
            print(f"snapshot {r['snapshot_id']}: {r['deleted_files']} file(s) marked deleted "
                  f"(removed from disk when the snapshots that use them expire)")
    elif command == "remove-orphan-files":
        verb = "would delete" if r["dry_run"] else "deleted"
        print(f"{verb} {r['deleted_files']} file(s), {r['deleted_bytes']} bytes, "
              f"{r['deleted_dirs']} empty dir(s)")
        for f in r["files"]:
            print(f"  {f}")
    elif command == "expire-partitions":
        parts = ", ".join(",".join(f"{k}={v}" for k, v in p.items())
                          for p in r["expired_partitions"]) or "none"
        print(f"{'would expire' if r['dry_run'] else 'expired'} partitions: {parts}; "
              f"snapshots {r['snapshot_ids']}")
    else:
        print(json.dumps(r, indent=2))


# --- parser ------------------------------------------------------------------------------

def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="paimon-commit", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-v", "--verbose", action="store_true", help="log progress to stderr")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, run, help_: str, example: str) -> argparse.ArgumentParser:
        c = sub.add_parser(name, help=help_, description=help_, epilog=f"example:\n  {example}",
                           formatter_class=argparse.RawDescriptionHelpFormatter)
        c.add_argument("table", help="table path (local path, file://, hdfs://, s3://)")
        c.add_argument("--json", action="store_true", help="print one JSON object")
        c.add_argument("--option", action="append", default=[], type=_key_value,
                       metavar="KEY=VALUE", help="storage option, repeatable (e.g. "
                       "s3.endpoint=http://host:9000, s3.access-key=..., see README Storage)")
        c.set_defaults(run=run)
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
    c.add_argument("--retain-min", type=_int_at_least(1), help="snapshots always kept")
    c.add_argument("--retain-max", type=_int_at_least(1), help="snapshots kept at most")
    c.add_argument("--older-than", type=_timestamp_ms, metavar="'YYYY-MM-DD HH:MM:SS'",
                   help="expire snapshots replaced before this local time")
    c.add_argument("--time-retained", type=_duration, metavar="DURATION",
                   help="e.g. '1 h', '7 d' (default: the table's snapshot.time-retained)")
    c.add_argument("--max-deletes", type=_int_at_least(0),
                   help="snapshots expired in this run at most")
    c.add_argument("--dry-run", action="store_true", help="report, delete nothing")

    c = command("expire-partitions", cmd_expire_partitions,
                "drop partitions older than the expiration time (an OVERWRITE snapshot)",
                "paimon-commit expire-partitions /data/wh/db.db/events --expiration-time '30 d'"
                " --timestamp-formatter yyyyMMdd")
    c.add_argument("--expiration-time", type=_duration, required=True, metavar="DURATION")
    c.add_argument("--timestamp-formatter", help="Java DateTimeFormatter, e.g. yyyy-MM-dd")
    c.add_argument("--timestamp-pattern", help="e.g. '$dt $hour:00:00'")
    c.add_argument("--expire-strategy", choices=["values-time", "update-time"])
    c.add_argument("--max-expires", type=_int_at_least(1), help="partitions dropped at most")
    c.add_argument("--dry-run", action="store_true")

    c = command("remove-orphan-files", cmd_remove_orphan_files,
                "delete files no snapshot, tag, branch or changelog uses (older than a day by "
                "default)",
                "paimon-commit remove-orphan-files /data/wh/db.db/events "
                "--older-than-duration '2 d' --dry-run")
    c.add_argument("--older-than", type=_timestamp_ms, metavar="'YYYY-MM-DD HH:MM:SS'",
                   help="only files modified before this local time (must be in the past)")
    c.add_argument("--older-than-duration", type=_duration, metavar="DURATION",
                   help="only files older than this, e.g. '1 d' (default '1 d')")
    c.add_argument("--dry-run", action="store_true", help="report, delete nothing")
    c.add_argument("--parallelism", type=_int_at_least(1), help="threads (or Spark tasks)")
    c.add_argument("--mode", choices=["local", "distributed"], default="local",
                   help="distributed: list and anti-join on Spark executors")

    c = command("create-tag", cmd_create_tag, "tag a snapshot (default: the latest)",
                "paimon-commit create-tag /data/wh/db.db/events release-1 --snapshot 42")
    c.add_argument("name")
    c.add_argument("--snapshot", type=_int_at_least(1))
    c.add_argument("--time-retained", type=_duration, metavar="DURATION")

    c = command("delete-tag", cmd_delete_tag,
                "delete a tag (and the files only it kept, if its snapshot expired)",
                "paimon-commit delete-tag /data/wh/db.db/events release-1")
    c.add_argument("name")

    c = command("rollback-to", cmd_rollback_to,
                "make a snapshot or tag the latest; newer snapshots and tags are deleted",
                "paimon-commit rollback-to /data/wh/db.db/events --snapshot 40")
    g = c.add_mutually_exclusive_group(required=True)
    g.add_argument("--snapshot", type=_int_at_least(1))
    g.add_argument("--tag")
    from .cli_maintenance import add_commands   # expire-tags, maintain, report, patterns
    add_commands(sub, command)
    return p


def _fail(args, error: BaseException, code: int) -> int:
    root = _Run.root
    deleted = [p[len(root):] if root and p.startswith(root) else p for p in _Run.deleted]
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
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:
        return EXIT_INVALID if e.code else EXIT_OK
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")
    _Run.deleted.clear()
    from .io import redact_uri
    _Run.storage = dict(args.option)
    shown = redact_uri(args.table)  # s3://key:secret@bucket/...: never echoed in the output
    _Run.raw_paths = {shown: args.table}
    args.table = shown
    try:
        result = args.run(args)
    except (InvalidInput, OptionError, TableNotFoundError, ValueError, TypeError,
            UnsafePathError) as e:
        # Invalid input only if nothing was touched; after a delete it is a failed run.
        return _fail(args, e, EXIT_FAILED if _Run.deleted else EXIT_INVALID)
    except (PaimonCommitError, OSError) as e:
        return _fail(args, e, EXIT_FAILED)
    if args.json:
        print(json.dumps(result, default=str))
    elif getattr(args, "print_text", None) is not None:   # commands formatting their text
        args.print_text(result)
    else:
        _print_text(args.command, result)
    return getattr(args, "exit_code", EXIT_OK)   # 1: a command that went on past failures
