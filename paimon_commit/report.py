"""Health report of one table: where its bytes are and what maintenance would reclaim.

- live: the data files of the latest snapshot;
- referenced: every file a retained snapshot or a tag still uses (data, manifests, lists,
  snapshot and tag files);
- on disk: every file under the table root;
- reclaimable, by cause (each a dry run, nothing is changed):
  * `expired snapshots`: what snapshot expiration with the table's options would delete now;
  * `orphans`: what orphan cleanup would delete (files no snapshot or tag uses, older than a
    day);
  * `dropped partitions pinned by tags`: data files of partitions no longer in the latest
    snapshot that only tags keep (deleting or expiring those tags frees them);
  * `other files pinned by tags`: the rest of what only tags keep;
- history: live bytes, live data files and records of each retained snapshot, with its id,
  commit time and kind (inline-SVG charts in snapshot order: report_html.py);
- small files: data files per partition, their average size, how many are below compaction's
  small-file size, and how many files a compaction would remove (the compaction planner's dry
  run, with the table's options);
- the largest partitions of the latest snapshot; every tag with the bytes only it pins;
- integrity (`integrity`): `check`'s result (operations/check.py: every file each retained
  snapshot, tag and long-lived changelog needs is there with its recorded size, or the
  missing and wrong-sized files with what each breaks), and, when the latest snapshot is
  broken, what `repair` would give up (its dry run, planned from that same check: the files
  and records, what stays broken), or why repair refuses the table. Cost: the check's own
  listings and reads (one listing per directory, each metadata file read once; it reads
  through a fresh view of the table, so what the report read above is not shared), and for a
  broken latest snapshot one more listing of each directory holding a missing file. Both are
  in the report's `requests`; `integrity.requests` is their share (`integrity.repair.requests`
  the repair dry run's part of it). Neither writes anything or takes the maintenance lease: a
  report runs while another process maintains the table.

`render_html` (report_html.py) turns it into one self-contained static page (inline CSS and
SVG; no script, no network).
"""
from __future__ import annotations

import datetime
import logging
import time
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Set, Tuple

from .format.manifest import FileKind
from .io.metered import RequestBill, billed, metering
from .progress import LISTING, READING, ProgressCallback, Throttle

log = logging.getLogger(__name__)

__all__ = ["HealthReport", "build_report", "render_html", "small_files_text",
           "integrity_text"]

TOP_PARTITIONS = 10
#: Problems (and files repair would give up) the text output names; --json and the page: all.
SHOWN_PROBLEMS = 5


@dataclass
class HealthReport:
    """Everything the report shows (see the module docstring); `to_dict` is the JSON."""
    table: str
    generated_at: str
    snapshots: int = 0
    earliest: Optional[int] = None
    latest: Optional[int] = None
    records: int = 0
    live_files: int = 0
    live_bytes: int = 0
    referenced_files: int = 0
    referenced_bytes: int = 0
    disk_files: int = 0
    disk_bytes: int = 0
    reclaimable: Dict[str, Dict[str, int]] = field(default_factory=dict)
    history: List[Dict[str, Any]] = field(default_factory=list)
    partitions: List[Dict[str, Any]] = field(default_factory=list)
    partition_count: int = 0
    tags: List[Dict[str, Any]] = field(default_factory=list)
    small_files: Dict[str, Any] = field(default_factory=dict)
    # check's result and repair's dry run (see the module docstring and _integrity); None:
    # not checked (build_report(..., integrity=False)).
    integrity: Optional[Dict[str, Any]] = None
    notes: List[str] = field(default_factory=list)
    # Why every section but integrity is left out (a metadata file missing or unreadable),
    # or None.
    unreadable: Optional[str] = None
    # What building this report asked of the storage (io/metered.py): the report reads the
    # whole table's metadata and lists every file, and says what that cost.
    requests: RequestBill = field(default_factory=RequestBill)

    def to_dict(self) -> Dict[str, Any]:
        """JSON-ready dict."""
        out = dict(self.__dict__)
        out["requests"] = self.requests.to_dict()
        return out


def _partition_label(values: Sequence[Any], keys: Sequence[str]) -> str:
    if not keys:
        return "(unpartitioned)"
    return ",".join(f"{k}={'null' if v is None else v}" for k, v in zip(keys, values))


def _small_file_size(options: Dict[str, str]) -> Optional[int]:
    """Compaction's small-file size (target-file-size x compaction.small-file-ratio); None
    when the options are invalid (then _small_files notes why)."""
    from .errors import PaimonCommitError
    from .operations.compact import CompactOptions
    try:
        return CompactOptions.from_options(options).small_file_size
    except PaimonCommitError:
        return None


@billed   # rep.requests: what building it asked of the storage
def build_report(table, progress: Optional[ProgressCallback] = None,
                 clock=time.time, orphans: bool = True,
                 integrity: bool = True) -> HealthReport:
    """Build the health report of `table` (read only: expiration, orphan cleanup and repair
    run as dry runs; no maintenance lease is taken).

    Args:
        table: a paimon_commit.Table.
        progress: optional callback (`listing`, `reading metadata`).
        clock: seconds since the epoch (for the dry runs and the timestamp).
        orphans: include the orphan dry run (lists every file of the table).
        integrity: include `check` (and, for a broken latest snapshot, repair's dry run):
            one more listing of every directory and read of every metadata file.

    Returns:
        HealthReport.

    Raises:
        CorruptMetadataError, FileNotFoundError: a snapshot, tag or manifest cannot be read
            and `integrity` is False. With `integrity`, the report then has `unreadable`
            (why), no other section, and the integrity section names what is missing.
    """
    tick = Throttle(progress)
    from .io import redact_uri
    rep = HealthReport(redact_uri(str(table.path)),   # shown on the page: no credentials
                       datetime.datetime.fromtimestamp(clock()).isoformat(timespec="seconds"))
    rep = _sections(rep, table, tick, clock, orphans, integrity)
    if integrity:
        with metering() as meter:   # its share of the bill (counted in rep.requests too)
            rep.integrity = _integrity(table, rep.table, rep.latest, progress)
        rep.integrity["requests"] = meter.bill().to_dict()
        if rep.unreadable and rep.integrity.get("ok") and rep.integrity.get("complete"):
            # The check, after, found every file: the metadata moved under the sections
            # (an expiration deleted what they were reading): built again, once; a table
            # that is healthy is not reported unreadable (exit 1) for a race.
            again = _sections(HealthReport(rep.table, rep.generated_at), table, tick, clock,
                              orphans, integrity)
            if not again.unreadable:
                again.integrity = rep.integrity
                rep = again
    return rep


def _sections(rep: HealthReport, table, tick: Throttle, clock, orphans: bool,
              integrity: bool) -> HealthReport:
    """`rep` with every section but integrity, or, where a metadata file is missing or
    damaged and `integrity` will tell which, an empty report saying why (`unreadable`)."""
    from .errors import CorruptMetadataError
    try:
        _fill(rep, table, tick, clock, orphans)
        return rep
    except (FileNotFoundError, CorruptMetadataError) as e:
        if not integrity:
            raise
        # A file the metadata names is gone or damaged: what the report would need to be
        # told most. Its sections would be partial (misleading numbers), so they are left
        # out, and the integrity section (check reads past a missing file) names every
        # missing or damaged file and what it breaks.
        out = HealthReport(rep.table, rep.generated_at,
                           unreadable=_unreadable(e, table, rep.table))
        try:   # (for repair's dry run when the latest snapshot is what is broken)
            out.latest = table.store.snapshots.latest_snapshot_id()
        except (OSError, CorruptMetadataError):
            pass
        return out


def _unreadable(e: BaseException, table, shown: str) -> str:
    """Why the report's sections could not be built, the path relative to the table."""
    from .io.uri import redact_uris_in
    path = getattr(e, "filename", None) or getattr(e, "path", None)
    root = str(table.path).rstrip("/") + "/"
    if path and isinstance(e, FileNotFoundError):
        what = f"{str(path)[len(root):] if str(path).startswith(root) else path} is missing"
    else:
        what = str(e).replace(root, "")
    return redact_uris_in(f"cannot read the table's metadata ({what}); the report's other "
                          f"sections are left out: see integrity")


def _fill(rep: HealthReport, table, tick: Throttle, clock, orphans: bool) -> None:
    """Every section but integrity, into `rep`."""
    store = table.store
    io, mio = store.io, store.manifests
    snaps = list(store.snapshots.snapshots())
    from .operations.tag_expire import readable_tags
    from .tags import TagManager
    tm = TagManager(io, store.root)
    tags = readable_tags(tm, rep.notes)
    rep.snapshots = len(snaps)
    keys = list(store.partition_keys)
    meta_sizes: Dict[str, int] = {}

    def meta_of(s) -> Set[str]:
        names = set()
        for lst in s.manifest_lists():
            names.add(mio.path(lst))
            for m in mio.read_list(lst):
                p = mio.path(m.file_name)
                names.add(p)
                meta_sizes[p] = m.file_size
        return names

    # --- retained snapshots: history and what they reference ---------------------------
    used_data: Dict[str, int] = {}
    used_meta: Set[str] = set()
    live: Dict[str, Tuple[int, Tuple[Any, ...], int]] = {}   # path -> size, partition, rows
    total = len(snaps)
    for i, s in enumerate(snaps):
        tick(READING, i, total, "snapshots")
        # Any retained snapshot reaches: what is live in the earliest, or added after it.
        if i == 0:
            for e in store.live_entries(s):
                p = store.data_file_path(e)
                live[p] = (e.file.file_size, e.partition, e.file.row_count)
                used_data[p] = e.file.file_size
        else:
            for e in store.delta_entries(s):
                p = store.data_file_path(e)
                if e.kind == FileKind.ADD:
                    live[p] = (e.file.file_size, e.partition, e.file.row_count)
                    used_data[p] = e.file.file_size
                else:
                    live.pop(p, None)
        used_meta |= meta_of(s)
        used_meta.add(store.snapshots.snapshot_path(s.id))
        rep.history.append({"id": s.id, "time_millis": s.time_millis,
                            "records": s.total_record_count,
                            "live_bytes": sum(v[0] for v in live.values()),
                            "live_files": len(live), "kind": s.commit_kind})
    tick(READING, total, total, "snapshots")
    if snaps:
        rep.earliest, rep.latest = snaps[0].id, snaps[-1].id
        rep.records = snaps[-1].total_record_count
    rep.live_files = len(live)
    rep.live_bytes = sum(v[0] for v in live.values())
    latest_parts = {v[1] for v in live.values()}

    # --- partitions of the latest snapshot ------------------------------------------------
    by_part: Dict[bytes, Dict[str, Any]] = {}
    small = _small_file_size(table.options)
    for size, part, rows in live.values():
        d = by_part.setdefault(part, {"files": 0, "bytes": 0, "records": 0, "small": 0})
        d["files"] += 1
        d["bytes"] += size
        d["records"] += rows
        d["small"] += small is not None and size < small
    for part, d in by_part.items():
        d["label"] = _partition_label(mio.decode_partition(part), keys)
    rep.partition_count = len(by_part)
    for part, d in sorted(by_part.items(), key=lambda kv: -kv[1]["bytes"])[:TOP_PARTITIONS]:
        rep.partitions.append({"partition": d["label"], "files": d["files"],
                               "bytes": d["bytes"], "records": d["records"]})

    # --- tags: what each pins ----------------------------------------------------------
    tag_files: Dict[str, Dict[str, Tuple[int, bytes]]] = {}
    for t in tags:
        tag_files[t.name] = {store.data_file_path(e): (e.file.file_size, e.partition)
                             for e in store.live_entries(t.snapshot)}
        used_meta |= meta_of(t.snapshot)
        used_meta.add(tm.tag_path(t.name))
    tag_only_dropped = {"files": 0, "bytes": 0}
    tag_only_other = {"files": 0, "bytes": 0}
    seen: Set[str] = set()
    for t in tags:
        files = tag_files[t.name]
        others: Set[str] = set()
        for o, of in tag_files.items():
            if o != t.name:
                others.update(of)
        pinned = [(p, v) for p, v in files.items() if p not in used_data]
        exclusive = [(p, v) for p, v in pinned if p not in others]
        retained = t.time_retained_ms
        expires = None
        if t.create_time is not None and retained is not None:
            expires = (t.create_time + datetime.timedelta(milliseconds=retained)) \
                .isoformat(sep=" ", timespec="seconds")
        rep.tags.append({
            "name": t.name, "snapshot_id": t.id,
            "snapshot_expired": not any(s.id == t.id for s in snaps),
            "create_time": t.create_time.isoformat() if t.create_time else None,
            "time_retained_ms": retained, "expires_at": expires,
            "files": len(files), "bytes": sum(v[0] for v in files.values()),
            "pinned_files": len(exclusive), "pinned_bytes": sum(v[0] for _, v in exclusive),
            "shared_pinned_bytes": sum(v[0] for _, v in pinned) -
            sum(v[0] for _, v in exclusive)})
        for p, (size, part) in pinned:
            if p in seen:
                continue
            seen.add(p)
            bucket = tag_only_dropped if part not in latest_parts else tag_only_other
            bucket["files"] += 1
            bucket["bytes"] += size
    all_data = dict(used_data)
    for files in tag_files.values():
        for p, (size, _) in files.items():
            all_data[p] = size
    rep.referenced_files = len(all_data) + len(used_meta)
    rep.referenced_bytes = sum(all_data.values()) + sum(meta_sizes.get(p, 0) for p in used_meta)

    # --- on disk ---------------------------------------------------------------------------
    from .io import walk_files
    n = 0
    for st in walk_files(io, store.root):
        n += 1
        rep.disk_files += 1
        rep.disk_bytes += st.size
        tick(LISTING, n, None, "files")

    # --- reclaimable: dry runs -------------------------------------------------------------
    from .operations.expire import ExpireConfig, ExpireSnapshots
    er = ExpireSnapshots(store, ExpireConfig.from_options(store.options), clock=clock) \
        .expire(dry_run=True)
    rep.reclaimable["expired snapshots"] = {"files": er.deleted_files,
                                            "bytes": er.deleted_bytes,
                                            "snapshots": er.expired_snapshots}
    if orphans:
        from .errors import PaimonCommitError
        from .operations.orphan import CleanContext, OrphanFilesCleaner
        try:
            orr = OrphanFilesCleaner(CleanContext(table, dry_run=True, clock=clock,
                                                  file_io=io)).clean()
            rep.reclaimable["orphans"] = {"files": orr.deleted_files,
                                          "bytes": orr.deleted_bytes}
        except PaimonCommitError as e:
            rep.notes.append(f"orphan dry run not possible: {e}")
    rep.reclaimable["dropped partitions pinned by tags"] = tag_only_dropped
    rep.reclaimable["other files pinned by tags"] = tag_only_other
    rep.small_files = _small_files(table, by_part, keys, rep.notes)


def _integrity(table, shown: str, latest: Optional[int],
               progress: Optional[ProgressCallback]) -> Dict[str, Any]:
    """`check`'s result and, when the latest snapshot (`latest`) is broken, repair's dry run
    planned from it: the report's `integrity` (JSON-ready). `shown`: the table as the report
    names it (no credentials), in the commands and messages."""
    import shlex
    from .errors import PaimonCommitError
    from .io.uri import redact_uris_in
    from .operations.check import check_table
    from .operations.repair import repair_table
    quoted = shlex.quote(shown)

    def said(e: BaseException) -> str:
        return redact_uris_in(str(e).replace(str(table.path), shown))

    out: Dict[str, Any] = {"checked": False, "ok": None, "error": None,
                           "check_command": f"paimon-commit check {quoted}", "repair": None}
    try:   # read-only, no lease (a fresh metered read-only view of the table)
        c = check_table(table.store, progress)
    except (PaimonCommitError, OSError) as e:   # a layout it cannot spell; storage failing
        out["error"] = f"check not possible: {said(e)}"
        return out
    files = sum(v.get("files", 0) for v in c.checked.values())
    out.update({
        "checked": True, "ok": c.healthy, "complete": c.complete, "message": c.message,
        "files_checked": files,
        "bytes_checked": sum(v.get("bytes", 0) for v in c.checked.values()),
        "checked_by_kind": {k: dict(v) for k, v in c.checked.items()},
        "snapshots": c.snapshots, "tags": c.tags, "changelogs": c.changelogs,
        "branches": c.branches, "external": c.external,
        "problem_count": len(c.problems), "problems": [p.to_dict() for p in c.problems],
        "broken": list(c.broken), "broken_snapshots": c.broken_snapshots,
        "broken_tags": c.broken_tags})
    if latest is None or f"snapshot {latest}" not in c.broken:
        return out
    rep: Dict[str, Any] = {"refused": None, "command": None}
    out["repair"] = rep
    with metering() as meter:
        try:   # a dry run: nothing written, no lease; planned from this check
            r = repair_table(table.store, apply=False, check=c)
        except (PaimonCommitError, OSError) as e:   # RepairError, ...; a listing failing
            r, rep["refused"] = None, said(e)
    rep["requests"] = meter.bill().to_dict()
    if r is None:
        return out
    rep.update({"base_snapshot_id": r.base_snapshot_id,
                "removed_files": len(r.files), "removed_records": r.records,
                "removed_bytes": r.bytes,
                "groups": [g.to_dict() for g in r.groups],
                "files": [f.to_dict() for f in r.files],
                "still_broken": list(r.still_broken),
                "unrepaired": [p.to_dict() for p in r.unrepaired]})
    if r.files:
        rep["command"] = f"paimon-commit repair {quoted} --apply"
    return out


def _spec(partition: Dict[str, Any]) -> str:
    return ",".join(f"{k}={v}" for k, v in partition.items()) or "(unpartitioned)"


def integrity_text(ig: Optional[Dict[str, Any]], top: int = SHOWN_PROBLEMS) -> List[str]:
    """The integrity section as lines of the text report: `ok`, or the problems (the first
    `top`) with what they break and the command that names them all, then what a repair
    would give up or why it refuses."""
    if ig is None:
        return ["integrity        not checked"]
    if not ig["checked"]:
        return [f"integrity        {ig['error']}"]
    roots = f"{ig['snapshots']} snapshot(s), {ig['tags']} tag(s)"
    if ig["changelogs"]:
        roots += f", {ig['changelogs']} changelog(s)"
    if ig["branches"]:
        roots += f", {ig['branches']} branch(es)"
    problems = ig["problems"]
    if not problems:
        if ig["complete"]:
            return [f"integrity        ok ({ig['files_checked']} file(s) checked, of {roots})"]
        return [f"integrity        incomplete: {ig['message']}"]
    from .operations.check import CheckProblem
    lines = [f"integrity        {len(problems)} problem(s) ({ig['files_checked']} file(s) ok, "
             f"of {roots}); broken: {', '.join(ig['broken'])}"]
    for p in problems[:top]:
        lines.append("  " + CheckProblem(p["path"], p["kind"], p["state"], p["expected_size"],
                                         p["actual_size"], tuple(p["roots"]),
                                         p["detail"]).describe())
    more = f"... and {len(problems) - top} more: " if len(problems) > top else ""
    lines.append(f"  {more}{ig['check_command']} names every problem")
    r = ig.get("repair")
    if r is None:
        return lines
    if r["refused"]:
        lines.append(f"repair           refused: {r['refused']}")
        return lines
    if r["removed_files"]:
        lines.append(f"repair           a repair would give up {r['removed_files']} missing data "
                     f"file(s) of snapshot {r['base_snapshot_id']}: {r['removed_records']} "
                     f"record(s), {r['removed_bytes']} bytes (dry run, nothing changed; "
                     f"{r['command']} commits a snapshot without them)")
        for g in r["groups"][:top]:
            lines.append(f"  {_spec(g['partition'])} bucket {g['bucket']}: {g['files']} "
                         f"file(s), {g['records']} record(s), {g['bytes']} bytes")
        if len(r["groups"]) > top:
            lines.append(f"  ... and {len(r['groups']) - top} more partition(s) and bucket(s)")
    else:
        lines.append(f"repair           nothing a repair gives up: snapshot "
                     f"{r['base_snapshot_id']} misses no data file")
    if r["unrepaired"]:
        lines.append(f"  not fixed by repair: {len(r['unrepaired'])} problem(s) of snapshot "
                     f"{r['base_snapshot_id']}:")
        for p in r["unrepaired"][:top]:
            lines.append(f"    {_unrepaired_text(p)}")
        if len(r["unrepaired"]) > top:
            lines.append(f"    ... and {len(r['unrepaired']) - top} more")
    if r["still_broken"]:
        lines.append(f"  still broken after it: {', '.join(r['still_broken'])} (repair "
                     f"changes no existing snapshot or tag)")
    return lines


def _unrepaired_text(p: Dict[str, Any]) -> str:
    """One problem repair leaves (a CheckProblem's dict): a wrong size, or a missing file
    kept because a file of its name is elsewhere (its detail says where)."""
    if p["state"] == "wrong-size":
        what = f"wrong size: {p['actual_size']} bytes, the metadata says {p['expected_size']}"
    else:
        what = p["state"] + (f" ({p['detail']})" if p.get("detail") else "")
    return f"{p['kind']} {p['path']}: {what}"


def _small_files(table, by_part: Dict[bytes, Dict[str, Any]], keys: Sequence[str],
                 notes: List[str]) -> Dict[str, Any]:
    """Files per partition and what compaction would make of them. The counts of files to
    remove come from the compaction planner's dry run (metadata only), so that the report says
    what `compact` would really do with the table's options, not a guess of its own."""
    from .errors import PaimonCommitError
    from .operations.compact import CompactOptions
    files = sum(d["files"] for d in by_part.values())
    size = sum(d["bytes"] for d in by_part.values())
    out: Dict[str, Any] = {"files": files, "bytes": size, "partition_count": len(by_part),
                           "average_bytes": size // files if files else 0,
                           "small_file_bytes": None, "small_files": None,
                           "compaction_removes": None, "partitions": []}
    try:
        opts = CompactOptions.from_options(table.options)
    except PaimonCommitError as e:
        notes.append(f"small files: {e}")
        return out
    out["small_file_bytes"] = opts.small_file_size
    out["small_files"] = sum(d["small"] for d in by_part.values())
    after: Optional[Dict[str, int]] = None
    try:
        plan = table.compact(dry_run=True)
    except PaimonCommitError as e:   # a kind this library does not compact: Paimon's does
        notes.append(f"compaction dry run not possible: {e}")
    else:
        after = {_partition_label([p.partition.get(k) for k in keys], keys):
                 p.files_before - p.files_after for p in plan.partitions}
        out["compaction_removes"] = sum(after.values())
    rows = []
    for part, d in by_part.items():
        label = d["label"]
        rows.append({"partition": label, "files": d["files"], "bytes": d["bytes"],
                     "average_bytes": d["bytes"] // d["files"], "small_files": d["small"],
                     "compaction_removes": None if after is None else after.get(label, 0)})
    rows.sort(key=lambda r: (-r["files"], r["partition"]))
    out["partitions"] = rows[:TOP_PARTITIONS]
    return out


def small_files_text(sf: Dict[str, Any], top: int = 5) -> List[str]:
    """The small-files section as lines of the text report (`report` without --html): the
    summary, then the partitions with the most files."""
    if not sf or not sf.get("files"):
        return ["small files      no live data files"]
    parts = sf.get("partition_count", len(sf["partitions"]))
    line = (f"small files      {sf['files']} live data file(s) in {parts} partition(s), "
            f"{sf['average_bytes']} bytes on average")
    if sf.get("small_file_bytes") is not None:
        line += (f"; {sf['small_files']} below the small-file size "
                 f"({sf['small_file_bytes']} bytes)")
    removes = sf.get("compaction_removes")
    if removes is not None:
        line += (f"; a compaction now would remove {removes} file(s)"
                 + (" (nothing to compact)" if removes == 0 else ""))
    lines = [line]
    shown = sf["partitions"][:top]
    for p in shown:
        r = "" if p["compaction_removes"] is None else \
            f", compaction removes {p['compaction_removes']}"
        lines.append(f"  {p['partition']:<30} {p['files']} file(s), {p['small_files']} small, "
                     f"{p['average_bytes']} bytes on average{r}")
    if parts > len(shown):
        lines.append(f"  ... {parts - len(shown)} more partition(s) (--json or --html: "
                     f"the {TOP_PARTITIONS} with the most files)")
    return lines


from .report_html import render_html  # noqa: E402  (the page; re-exported here)
