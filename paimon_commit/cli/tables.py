"""The single-table commands (snapshots, tags, info, drop-partition, expire-snapshots,
expire-partitions, remove-orphan-files, create-tag, delete-tag, rollback-to) and their text
output. Each returns a dict, printed as JSON with `--json`."""
from __future__ import annotations

import datetime
import functools
import json
import sys
import time
from typing import Any, Dict, List

from ..options import format_duration_ms
from ..progress import terminal_progress
from ..table import Table
from ..tags import tag_manager
from . import context
from .args import EXIT_FAILED, InvalidInput, orphan_age, orphan_cutoff, print_incomplete, \
    stopped_exit_code

__all__ = ["cmd_snapshots", "cmd_tags", "cmd_info", "cmd_drop_partition",
           "cmd_expire_snapshots", "cmd_expire_partitions", "cmd_remove_orphan_files",
           "cmd_create_tag", "cmd_delete_tag", "cmd_rollback_to", "cmd_lease", "print_text"]


def cmd_snapshots(args) -> Dict[str, Any]:
    t = context.open_table(args.table)
    return {"table": args.table, "snapshots": [
        {"id": s.id, "kind": s.commit_kind, "time_millis": s.time_millis,
         "time": local_time(s.time_millis),
         "commit_user": s.commit_user, "commit_identifier": s.commit_identifier,
         "total_records": s.total_record_count, "delta_records": s.delta_record_count}
        for s in t.snapshots()]}


# How expire-snapshots' results name what kept snapshots: the flags, as typed.
_CLI_LABELS = {"retain_min": "--retain-min", "retain_max": "--retain-max",
               "older_than": "--older-than", "time_retained": "--time-retained",
               "max_deletes": "--max-deletes"}


def cmd_expire_snapshots(args) -> Dict[str, Any]:
    if args.retain_min is not None and args.retain_max is not None \
            and args.retain_max < args.retain_min:
        raise InvalidInput(f"--retain-max {args.retain_max} must be >= --retain-min "
                           f"{args.retain_min}")
    t = context.open_table(args.table)
    bar = terminal_progress(args.json)   # a live bar on a terminal only
    try:
        with t.new_commit(options={"write-only": "true"}) as c:
            r = c.expire_snapshots(dry_run=args.dry_run, retain_min=args.retain_min,
                                   retain_max=args.retain_max, older_than_ms=args.older_than,
                                   time_retained_ms=args.time_retained,
                                   max_deletes=args.max_deletes, progress=bar,
                                   max_duration_ms=args.max_duration, labels=_CLI_LABELS)
    finally:
        if bar is not None:
            bar.close()
    out = r.to_dict()
    out["files"] = [_rel(t, p) for p in r.deleted_paths]
    args.exit_code = stopped_exit_code(r.stopped_by)
    return out


def cmd_expire_partitions(args) -> Dict[str, Any]:
    from ..operations.partition_expire import PartitionExpire, PartitionExpireConfig
    t = context.open_table(args.table)
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
    from ..operations.orphan import CleanContext, OrphanFilesCleaner
    from ..operations.orphan_context import RecentCutoffError
    if args.older_than is not None and args.older_than_duration is not None:
        raise InvalidInput("give --older-than or --older-than-duration, not both")
    orphan_age("--older-than-duration", args.older_than_duration)
    if args.mode == "distributed" and args.max_duration is not None:
        raise InvalidInput("--max-duration is not supported with --mode distributed (the "
                           "executors delete in one job)")
    _check_file_list_args(args)
    older, flag, typed = args.older_than, "--older-than", args.older_than
    if args.older_than_duration is not None:
        older = int(time.time() * 1000) - args.older_than_duration
        flag, typed = "--older-than-duration", args.older_than_duration
    allow = args.allow_recent_cutoff
    orphan_cutoff(flag, typed, older, allow)   # the hour's floor, before any I/O
    ctx = CleanContext(args.table, older_than_ms=older, dry_run=args.dry_run,
                       file_io=context.open_io(args.table), max_duration_ms=args.max_duration,
                       allow_recent_cutoff=allow, partitions=args.partition,
                       file_list=args.file_list, file_list_time_ms=args.file_list_time,
                       file_list_manifest=args.file_list_manifest,
                       file_list_time_source=(
                           None if args.file_list_time is None else
                           f"--file-list-time {args.file_list_time.text!r}"))
    ctx.progress = terminal_progress(args.json)   # a live bar on a terminal only
    try:   # the table's commit.timeout, when longer than the hour, is checked on opening
        if args.mode == "distributed":
            from ..spark.orphan import DistributedOrphanFilesCleaner
            cleaner = DistributedOrphanFilesCleaner(ctx, parallelism=args.parallelism)
        else:
            cleaner = OrphanFilesCleaner(ctx)
    except RecentCutoffError as e:
        orphan_cutoff(flag, typed, older, allow, e.floor_ms)   # in the command line's words
        raise
    if args.mode != "distributed" and args.parallelism:
        from ..io.metered import ContextExecutor   # its tasks' requests count for the run
        ctx.executor = ContextExecutor(args.parallelism)
    try:
        r = cleaner.clean()
    finally:
        if ctx.progress is not None:
            ctx.progress.close()
    args.exit_code = stopped_exit_code(r.stopped_by)
    args.print_text = functools.partial(print_orphans, list_all=args.list_files)
    return r.to_dict()


def _check_file_list_args(args) -> None:
    """--file-list and its time, in the command line's words, before any I/O."""
    if args.file_list is None:
        for flag, value in (("--file-list-time", args.file_list_time),
                            ("--file-list-manifest", args.file_list_manifest)):
            if value is not None:
                raise InvalidInput(f"{flag} describes a --file-list: give one")
        return
    if args.mode == "distributed":
        raise InvalidInput("--file-list is not supported with --mode distributed (the "
                           "executors list the table themselves)")
    if args.file_list_time is not None and args.file_list_manifest is not None:
        raise InvalidInput("give --file-list-time or --file-list-manifest (whose "
                           "creationTimestamp is the list's time), not both")
    if args.file_list_time is None and args.file_list_manifest is None:
        raise InvalidInput(
            "--file-list needs the time the list was taken: --file-list-time "
            "'YYYY-MM-DD HH:MM:SS' (local time; in doubt, earlier), or the S3 Inventory's "
            "--file-list-manifest manifest.json (the newest last-modified time in a list is "
            "only a lower bound of it; in doubt, nothing is deleted)")


# A terminal gets at most this many paths of a file list (a pipe or --list-files gets all).
SHOWN_ON_TERMINAL = 5


def print_orphans(r: Dict[str, Any], list_all: bool = False) -> None:
    """remove-orphan-files' text: every path for a pipe or with --list-files; on a
    terminal, a long list is summarised (bytes by kind, the first paths)."""
    verb = "would delete" if r["dry_run"] else "deleted"
    scope = ""
    if r.get("partitions"):
        scope = (f" in {r['partitions_listed']} partition(s) matching "
                 f"{', '.join(r['partitions'])} (read {r['manifests_read']} of "
                 f"{r['manifests_read'] + r['manifests_skipped']} manifests)")
    if r.get("file_list"):
        scope += (f" from the file list {r['file_list']} taken at {r['file_list_time']} "
                  f"({r['file_list_time_source']})")
        if r["file_list_changed"]:
            scope += f", keeping {r['file_list_changed']} changed since"
    print(f"{verb} {r['deleted_files']} file(s), {r['deleted_bytes']} bytes, "
          f"{len(r['deleted_dirs'])} empty dir(s){scope}")
    files = r["files"]
    if list_all or not sys.stdout.isatty() or len(files) <= 2 * SHOWN_ON_TERMINAL:
        for f in files:
            print(f"  {f}")
    else:
        print("  " + "; ".join(f"{kind}: {v['files']} file(s), {v['bytes']} bytes"
                               for kind, v in sorted(r["by_kind"].items()) if v["files"]))
        for f in files[:SHOWN_ON_TERMINAL]:
            print(f"  {f}")
        print(f"  ... and {len(files) - SHOWN_ON_TERMINAL} more (--list-files or --json for "
              f"all)")
    _print_stopped(r)


def cmd_info(args) -> Dict[str, Any]:
    t = context.open_table(args.table)
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
    from ..io import walk_files
    return walk_files(t.store.io, t.store.root)


def cmd_drop_partition(args) -> Dict[str, Any]:
    from ..format import types as ptypes
    t = context.open_table(args.table)
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
    t = context.open_table(args.table)
    tag = t.create_tag(args.name, args.snapshot, args.time_retained)
    return {"tag": tag.name, "snapshot_id": tag.id, "time_retained_ms": tag.time_retained_ms}


def cmd_delete_tag(args) -> Dict[str, Any]:
    t = context.open_table(args.table)
    r = t.delete_tag(args.name)
    out = r.to_dict()
    out["files"] = [_rel(t, p) for p in r.deleted_paths]
    args.exit_code = stopped_exit_code(r.stopped_by)
    return out


def cmd_rollback_to(args) -> Dict[str, Any]:
    t = context.open_table(args.table)
    r = t.rollback_to(snapshot_id=args.snapshot, tag=args.tag)
    args.exit_code = stopped_exit_code(r.stopped_by)
    return r.to_dict()


def cmd_lease(args) -> Dict[str, Any]:
    """`lease TABLE [--break]`: who holds the table's maintenance lease (lease.py); with
    --break, supersede whatever the latest record says by creating the next record as
    released (after a holder that cannot release it any more, or a bad record)."""
    from ..lease import current_holder, lease_manager
    from ..errors import LeaseRecordError
    t = context.open_table(args.table)
    m = lease_manager(t.store)
    try:
        latest, held = current_holder(m)
        problem = None
    except LeaseRecordError as e:   # what --break is for
        latest, held, problem = None, False, str(e)
    out: Dict[str, Any] = {"table": args.table, "held": held, "record": None,
                           "problem": problem}
    if problem is not None and not args.break_lease:
        args.exit_code = EXIT_FAILED
    if latest is not None:
        out["record"] = {"path": _rel(t, m.record_path(latest.number)), "host": latest.host,
                         "pid": latest.pid, "operation": latest.operation,
                         "start_ms": latest.start_ms, "expiry_ms": latest.expiry_ms,
                         "released": latest.released, "table": latest.table}
        out["holder"] = latest.describe(args.table) if held else None
    out["waiting"] = _lease_waiters(t, m) if problem is None else []
    if args.break_lease:
        broken = m.break_lease()
        out["broken"] = _rel(t, m.record_path(broken.number)) if broken else None
    return out


def _lease_waiters(t, m) -> List[Dict[str, Any]]:
    """The commands waiting in line for the lease (`wait-*` records rewritten lately), first
    first, each with what its record says (a record that went or does not parse: its name)."""
    out = []
    for w in m.waiting(m.scan()[1]):
        entry: Dict[str, Any] = {"path": _rel(t, m.waiter_path(w.name)), "since_ms": w.since_ms}
        body = m.read_waiter(w.name)   # (None: gone since the listing, or not readable)
        if body is not None:
            entry.update({k: body.get(k) for k in ("host", "pid", "operation")})
        out.append(entry)
    return out


def cmd_tags(args) -> Dict[str, Any]:
    t = context.open_table(args.table)
    return {"table": args.table, "tags": [
        {"name": x.name, "snapshot_id": x.id,
         "create_time": x.create_time.isoformat() if x.create_time else None,
         "time_retained_ms": x.time_retained_ms} for x in t.tags()],
        "unfinished_deletions": t.unfinished_tag_deletions(),
        "recreated_while_unfinished": _recreated(t)}


def _recreated(t) -> Dict[str, int]:
    """{name: snapshot id of the earlier tag} for each unfinished deletion next to a live tag
    of that name on another snapshot (created again by an engine that does not know the
    deletion markers): delete-tag / expire-tags finish the earlier deletion, keeping it."""
    tags = tag_manager(t.store)
    out = {}
    for name in t.unfinished_tag_deletions():
        live, earlier = tags.try_tag(name), tags.deletion_marker(name)
        if live is not None and earlier is not None and earlier.id != live.id:
            out[name] = earlier.id
    return out


def _rel(t: Table, path: str) -> str:
    return context.rel(t.store.root, path)


# --- text output -------------------------------------------------------------------------

def local_time(ms: int) -> str:
    """Epoch milliseconds as local ISO time with its UTC offset (2024-06-01T12:00:00+02:00)."""
    return datetime.datetime.fromtimestamp(ms / 1000).astimezone().isoformat(timespec="seconds")


def _info_lines(r: Dict[str, Any]):
    """`info` as a person reads it: words for empty values, never a Python repr."""
    yield "table", r["table"]
    yield "partition keys", ", ".join(r["partition_keys"]) or "none (not partitioned)"
    if not r["snapshots"]:
        yield "snapshots", "none"
    else:
        yield "snapshots", f"{r['snapshots']} (ids {r['earliest']} to {r['latest']})"
        yield "latest", f"{r['latest']} ({r['latest_kind']}), {r['total_records']} record(s)"
    yield "tags", ", ".join(r["tags"]) or "no tags"
    yield "consumers", ", ".join(f"{c} (next snapshot {n})" for c, n in r["consumers"].items()) \
        or "no consumers"
    where = f" in {r['partitions']} partition(s)" if r["partition_keys"] else ""
    yield "live files", f"{r['live_files']} ({r['live_bytes']} bytes){where}"
    yield "on disk", f"{r['files_on_disk']} file(s), {r['bytes_on_disk']} bytes"


def _print_stopped(r: Dict[str, Any]) -> None:
    """The one line of a run a limit stopped: what it did, and that a rerun continues."""
    if r.get("complete") is False:
        print_incomplete(r, f"incomplete: {r['message']}")


def print_text(command: str, r: Dict[str, Any]) -> None:
    """The text output of `command` (the JSON object, indented, for the others)."""
    if command == "snapshots":
        if not r["snapshots"]:
            print("no snapshots")
            return
        print(f"{'id':>6}  {'commit time':<19}  {'kind':<9} {'records':>10} {'delta':>8}  "
              f"commit user")
        for s in r["snapshots"]:
            print(f"{s['id']:>6}  {s['time'][:19].replace('T', ' '):<19}  {s['kind']:<9} "
                  f"{s['total_records']:>10} {s['delta_records']:>8}  {s['commit_user']}")
    elif command == "tags":
        if not r["tags"] and not r["unfinished_deletions"]:
            print("no tags")
        for x in r["tags"]:
            created = (x["create_time"] or "")[:19].replace("T", " ") or "-"
            retained = format_duration_ms(x["time_retained_ms"]) \
                if x["time_retained_ms"] is not None else "-"
            print(f"{x['name']}\tsnapshot {x['snapshot_id']}\tcreated {created}\t"
                  f"retained {retained}")
        live = {x["name"]: x["snapshot_id"] for x in r["tags"]}
        recreated = r.get("recreated_while_unfinished", {})
        for name in r["unfinished_deletions"]:
            if name in recreated:
                # The marker is from an earlier tag of that name (another engine created the
                # tag again): delete-tag finishes that deletion and keeps the live tag.
                print(f"{name}\tdeletion of an earlier tag {name} (snapshot "
                      f"{recreated[name]}) unfinished; the tag {name} on snapshot "
                      f"{live[name]} is a newer one and is kept: run `paimon-commit "
                      f"expire-tags TABLE` or `paimon-commit delete-tag TABLE {name}` to "
                      f"finish the earlier deletion")
            else:
                print(f"{name}\tdeletion unfinished: run `paimon-commit delete-tag TABLE "
                      f"{name}`")
    elif command == "expire-snapshots":
        verb = "would expire" if r["dry_run"] else "expired"
        print(f"{verb} {r['expired_snapshots']} snapshot(s); "
              f"{'would delete' if r['dry_run'] else 'deleted'} {r['deleted_files']} file(s), "
              f"{r['deleted_bytes']} bytes; earliest {r['earliest']}, latest {r['latest']}")
        for s in r["skipped"]:
            print(f"skipped: {s}")
        for n in r.get("notes", []):
            print(f"note: {n}")
        if r.get("kept_because"):
            print(f"kept: {'; '.join(r['kept_because'])}")
        _print_stopped(r)
    elif command == "info":
        for k, v in _info_lines(r):
            print(f"{k:<16}{v}")
    elif command == "drop-partition":
        if r["snapshot_id"] is None:
            print("nothing to drop: no live file matches")
        else:
            print(f"snapshot {r['snapshot_id']}: {r['deleted_files']} file(s) marked deleted "
                  f"(removed from disk when the snapshots that use them expire)")
    elif command == "remove-orphan-files":
        print_orphans(r)
    elif command == "expire-partitions":
        parts = ", ".join(",".join(f"{k}={v}" for k, v in p.items())
                          for p in r["expired_partitions"]) or "none"
        print(f"{'would expire' if r['dry_run'] else 'expired'} partitions: {parts}; "
              f"snapshots {r['snapshot_ids']}")
        for p in r.get("kept_new_data", []):
            spec = ",".join(f"{k}={v}" for k, v in p.items())
            print(f"kept: partition {spec} received new data during the run (no longer "
                  f"expired by its update time)")
    elif command in ("delete-tag", "rollback-to"):
        print(json.dumps({k: v for k, v in r.items() if k not in ("message", "requests")},
                         indent=2))
        _print_stopped(r)
    elif command == "lease":
        rec = r["record"]
        if r.get("problem"):
            print(f"bad lease record: {r['problem']}")
        elif r["held"]:
            print(r["holder"])
        elif rec is None:
            print(f"table {r['table']}: no maintenance lease taken yet")
        else:
            state = "released" if rec["released"] else "expired"
            print(f"table {r['table']}: free (last lease {state}: {rec['operation']} by "
                  f"{rec['host']} pid {rec['pid']}, {rec['path']})")
        for w in r.get("waiting") or []:
            since = datetime.datetime.fromtimestamp(w["since_ms"] / 1000,
                                                    datetime.timezone.utc)
            who = (f"{w['operation']} by {w['host']} pid {w['pid']}"
                   if w.get("operation") else "a command")
            print(f"waiting: {who} since {since:%Y-%m-%d %H:%M:%S} UTC ({w['path']})")
        if r.get("broken"):
            print(f"broke the lease: {r['broken']} supersedes it as released")
    else:
        print(json.dumps(r, indent=2))
