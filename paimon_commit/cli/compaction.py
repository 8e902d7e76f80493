"""`paimon-commit compact TABLE [--partition k=v[,k=v] ...] [--table-conf KEY=VALUE ...]
[--dry-run] [--json]`: small-file compaction of a bucket-unaware append table (Paimon's
`compact` procedure; Table.compact).

Exit codes as for every command: 0 done, or nothing to compact (it says so; no snapshot);
2 invalid input, nothing touched (a malformed or unknown partition, a bad option value, a table
this library does not write: the writer's refusal); 1 a compaction that lost a conflict (another
commit removed its input files meanwhile): the output names the files that moved and the files
it wrote and deleted again; nothing is committed and nothing of it is left behind.
"""
from __future__ import annotations

import sys
from typing import Any, Dict, List, Mapping, Optional, Sequence

from ..errors import UnsupportedTableError
from ..option_names import check_table_option_names
from ..options import OPTIONS
from ..progress import terminal_progress
from ..table import Table
from . import context
from .args import EXIT_FAILED, InvalidInput, key_value

__all__ = ["add_compact_command", "cmd_compact", "parse_partition_specs"]


def parse_partition_specs(t: Table, texts: Sequence[str], flag: str = "--partition"
                          ) -> List[Dict[str, Any]]:
    """`k=v[,k=v]` texts as typed partition specs of table `t` (the default partition name,
    `__DEFAULT_PARTITION__` unless set, means NULL). InvalidInput names the text as given."""
    from ..format import types as ptypes
    keys = list(t.partition_keys)
    if not keys:
        raise InvalidInput(f"table {t.path} is not partitioned: {flag} does not apply")
    types = dict(zip(keys, t.schema.partition_types))
    default = t.store.default_partition_name
    specs = []
    for text in texts:
        spec: Dict[str, Any] = {}
        for part in text.split(","):
            k, sep, v = part.partition("=")
            k = k.strip()
            if not sep or not k:
                raise InvalidInput(f"bad {flag} {text!r}: expected k=v[,k=v]")
            if k not in types:
                raise InvalidInput(f"unknown partition key {k!r} in {flag} {text!r} "
                                   f"(partition keys: {', '.join(keys)})")
            if k in spec:
                raise InvalidInput(f"partition key {k!r} given twice in {flag} {text!r}")
            if v == default:
                spec[k] = None
                continue
            try:
                spec[k] = ptypes.parse_python_value(v, types[k])
            except (TypeError, ValueError) as e:
                raise InvalidInput(f"bad value of partition key {k!r} in {flag} {text!r}: "
                                   f"{e}") from None
        specs.append(spec)
    return specs


def _check_table_conf(conf: Mapping[str, str]) -> None:
    """Each --table-conf value this library reads, on its own, before the table is opened
    (against the table's options again, when compacting); a key close to a Paimon option's
    name is refused (exit 2) with the suggestion: the user is typing it now."""
    check_table_option_names(conf, what="--table-conf", strict=True)
    for key in conf:
        opt = OPTIONS.get(key)
        if opt is not None:
            opt.value(conf)   # OptionError naming the option and the value: exit 2


def cmd_compact(args) -> Dict[str, Any]:
    """Compact TABLE; the result as a dict (CompactResult.to_dict(), paths relative)."""
    from ..operations.compact import CompactionConflictError
    conf = dict(args.table_conf)
    _check_table_conf(conf)
    t = context.open_table(args.table)
    specs: Optional[List[Dict[str, Any]]] = \
        parse_partition_specs(t, args.partition) if args.partition else None
    args.print_text = _print_compact
    bar = terminal_progress(args.json)   # a live bar on a terminal only
    try:
        r = t.compact(specs, dry_run=args.dry_run, options=conf, progress=bar)
    except UnsupportedTableError as e:   # refused before anything was written: bad input
        raise InvalidInput(str(e)) from None
    except CompactionConflictError as e:
        args.exit_code = EXIT_FAILED
        root = t.store.root
        return {"table": args.table, "dry_run": args.dry_run, "snapshot_id": None,
                "conflict": True, "error": str(e),
                "moved_files": [context.rel(root, p) for p in e.moved_files],
                "deleted_files": [context.rel(root, p) for p in context.Run.deleted]}
    finally:
        if bar is not None:
            bar.close()
    out = r.to_dict()
    out["table"] = args.table
    out["conflict"] = False
    return out


def _spec_text(partition: Mapping[str, Any]) -> str:
    return ",".join(f"{k}={v}" for k, v in partition.items()) or "(unpartitioned)"


def _print_compact(r: Dict[str, Any]) -> None:
    if r["conflict"]:
        print(f"error: {r['error']}", file=sys.stderr)
        print(f"{len(r['moved_files'])} input file(s) moved:", file=sys.stderr)
        for p in r["moved_files"]:
            print(f"  {p}", file=sys.stderr)
        print(f"{len(r['deleted_files'])} file(s) it wrote were deleted:", file=sys.stderr)
        for p in r["deleted_files"]:
            print(f"  {p}", file=sys.stderr)
        return
    print(r["message"])
    about = "about " if r["dry_run"] else ""
    for p in r["partitions"]:
        print(f"  {_spec_text(p['partition'])}: {p['files_before']} file(s), "
              f"{p['bytes_before']} bytes -> {about}{p['files_after']} file(s), "
              f"{p['bytes_after']} bytes")
    for s in r["skipped"]:
        print(f"  left alone: {s['file']}: {s['reason']}")
    if r["remaining"]:
        print("more small files remain than one run looks at (compaction.file-num-limit): "
              "run compact again")


def add_compact_command(command) -> None:
    """Add `compact` through parser.build_parser's `command` helper."""
    c = command("compact", cmd_compact,
                "rewrite the small data files of an append table into files of about "
                "target-file-size, as one COMPACT snapshot (exit 0 also when there is "
                "nothing to compact; 1 when a concurrent commit removed its input files)",
                "paimon-commit compact /data/wh/db.db/events --partition dt=2024-01-01 "
                "--table-conf target-file-size=128mb --dry-run")
    c.add_argument("--partition", action="append", default=[], metavar="k=v[,k=v]",
                   help="only this partition (partial specs match every partition below; "
                        "repeatable; __DEFAULT_PARTITION__ means NULL)")
    c.add_argument("--table-conf", action="append", default=[], type=key_value,
                   metavar="KEY=VALUE",
                   help="table option for this compaction only, repeatable (Paimon's "
                        "--table_conf): target-file-size, compaction.min.file-num, "
                        "compaction.small-file-ratio, compaction.file-num-limit, "
                        "source.split.open-file-cost")
    c.add_argument("--dry-run", action="store_true",
                   help="plan only: report what would be rewritten, write nothing")
