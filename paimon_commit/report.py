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
- history: live bytes, records and the number of snapshots over the retained snapshots' commit
  times (two inline-SVG charts);
- the largest partitions of the latest snapshot; every tag with the bytes only it pins.

`render_html` turns it into one self-contained static page (inline CSS and SVG; no script, no
network).
"""
from __future__ import annotations

import datetime
import html
import logging
import time
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Set, Tuple

from .format.manifest import FileKind
from .progress import LISTING, READING, ProgressCallback, Throttle

log = logging.getLogger(__name__)

__all__ = ["HealthReport", "build_report", "render_html"]

TOP_PARTITIONS = 10


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
    notes: List[str] = field(default_factory=list)

    def to_dict(self) -> Dict[str, Any]:
        """JSON-ready dict."""
        return dict(self.__dict__)


def _partition_label(values: Sequence[Any], keys: Sequence[str]) -> str:
    if not keys:
        return "(unpartitioned)"
    return ",".join(f"{k}={'null' if v is None else v}" for k, v in zip(keys, values))


def build_report(table, progress: Optional[ProgressCallback] = None,
                 clock=time.time, orphans: bool = True) -> HealthReport:
    """Build the health report of `table` (read only: expiration and orphan cleanup run as
    dry runs).

    Args:
        table: a paimon_commit.Table.
        progress: optional callback (`listing`, `reading metadata`).
        clock: seconds since the epoch (for the dry runs and the timestamp).
        orphans: include the orphan dry run (lists every file of the table).

    Returns:
        HealthReport.

    Raises:
        CorruptMetadataError: a snapshot, tag or manifest cannot be read.
    """
    store = table.store
    io, mio = store.io, store.manifests
    tick = Throttle(progress)
    from .io import redact_uri
    rep = HealthReport(redact_uri(str(table.path)),   # shown on the page: no credentials
                       datetime.datetime.fromtimestamp(clock()).isoformat(timespec="seconds"))
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
    for size, part, rows in live.values():
        d = by_part.setdefault(part, {"files": 0, "bytes": 0, "records": 0})
        d["files"] += 1
        d["bytes"] += size
        d["records"] += rows
    rep.partition_count = len(by_part)
    for part, d in sorted(by_part.items(), key=lambda kv: -kv[1]["bytes"])[:TOP_PARTITIONS]:
        rep.partitions.append(dict(d, partition=_partition_label(mio.decode_partition(part),
                                                                 keys)))

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
            orr = OrphanFilesCleaner(CleanContext(str(table.path), dry_run=True, clock=clock,
                                                  file_io=io)).clean()
            rep.reclaimable["orphans"] = {"files": orr.deleted_files,
                                          "bytes": orr.deleted_bytes}
        except PaimonCommitError as e:
            rep.notes.append(f"orphan dry run not possible: {e}")
    rep.reclaimable["dropped partitions pinned by tags"] = tag_only_dropped
    rep.reclaimable["other files pinned by tags"] = tag_only_other
    return rep


# --- HTML ----------------------------------------------------------------------------------

_CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px auto;
max-width:1040px;color:#1d232a;padding:0 16px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid
#dde3ea;padding-bottom:4px}.sub{color:#5b6776;margin:0 0 16px}
table{border-collapse:collapse;width:100%;margin:6px 0}th,td{text-align:left;padding:4px 8px;
border-bottom:1px solid #eef1f4}th{background:#f5f7fa;font-weight:600}td.n,th.n{text-align:right;
font-variant-numeric:tabular-nums}.cards{display:flex;gap:12px;flex-wrap:wrap}
.card{border:1px solid #dde3ea;border-radius:8px;padding:10px 14px;min-width:150px}
.card b{display:block;font-size:20px}.card span{color:#5b6776;font-size:12px}
svg text{font:11px system-ui,sans-serif;fill:#5b6776}.note{color:#8a5a00}
"""


def _fmt_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024.0
    return f"{n:.1f} TiB"


def _e(x: Any) -> str:
    return html.escape(str(x), quote=True)


def _line_chart(title: str, points: List[Tuple[float, float]], y_label: str,
                fmt=lambda v: f"{v:,.0f}", width: int = 980, height: int = 220) -> str:
    """An inline SVG line chart; x = epoch ms (shown as dates)."""
    pad_l, pad_r, pad_t, pad_b = 70, 16, 24, 34
    if not points:
        return f'<svg role="img" aria-label="{_e(title)}" width="{width}" height="40">' \
               f'<text x="0" y="20">{_e(title)}: no snapshots</text></svg>'
    xs = [p[0] for p in points]
    ys = [p[1] for p in points]
    x0, x1 = min(xs), max(xs)
    y1 = max(ys) or 1
    if x1 == x0:
        x1 = x0 + 1

    def sx(x):
        return pad_l + (x - x0) / (x1 - x0) * (width - pad_l - pad_r)

    def sy(y):
        return pad_t + (1 - y / y1) * (height - pad_t - pad_b)
    path = " ".join(f"{'M' if i == 0 else 'L'}{sx(x):.1f},{sy(y):.1f}"
                    for i, (x, y) in enumerate(points))
    parts = [f'<svg role="img" aria-label="{_e(title)}" viewBox="0 0 {width} {height}" '
             f'width="100%" xmlns="http://www.w3.org/2000/svg">',
             f'<title>{_e(title)}</title>',
             f'<text x="{pad_l}" y="14">{_e(title)} ({_e(y_label)})</text>']
    for frac in (0, 0.5, 1):
        y = sy(y1 * frac)
        parts.append(f'<line x1="{pad_l}" x2="{width - pad_r}" y1="{y:.1f}" y2="{y:.1f}" '
                     f'stroke="#eef1f4"/><text x="{pad_l - 6}" y="{y + 4:.1f}" '
                     f'text-anchor="end">{_e(fmt(y1 * frac))}</text>')
    for x in (x0, x1):
        label = datetime.datetime.fromtimestamp(x / 1000).strftime("%Y-%m-%d %H:%M")
        anchor = "start" if x == x0 else "end"
        parts.append(f'<text x="{sx(x):.1f}" y="{height - 10}" text-anchor="{anchor}">'
                     f'{_e(label)}</text>')
    parts.append(f'<path d="{path}" fill="none" stroke="#2f6fd6" stroke-width="2"/>')
    for x, y in points[-200:] if len(points) > 200 else points:
        parts.append(f'<circle cx="{sx(x):.1f}" cy="{sy(y):.1f}" r="2.5" fill="#2f6fd6"/>')
    parts.append("</svg>")
    return "".join(parts)


def _bar_chart(title: str, items: List[Tuple[str, int]], width: int = 980) -> str:
    """An inline SVG horizontal bar chart of byte counts."""
    row, pad_l = 24, 260
    height = 24 + row * max(1, len(items))
    top = max([v for _, v in items] + [1])
    parts = [f'<svg role="img" aria-label="{_e(title)}" viewBox="0 0 {width} {height}" '
             f'width="100%" xmlns="http://www.w3.org/2000/svg"><title>{_e(title)}</title>']
    for i, (label, v) in enumerate(items):
        y = 12 + i * row
        w = (width - pad_l - 120) * v / top
        parts.append(f'<text x="0" y="{y + 14}">{_e(label)}</text>'
                     f'<rect x="{pad_l}" y="{y}" width="{w:.1f}" height="16" fill="#e07b39"/>'
                     f'<text x="{pad_l + w + 6:.1f}" y="{y + 13}">{_e(_fmt_bytes(v))}</text>')
    parts.append("</svg>")
    return "".join(parts)


def render_html(rep: HealthReport) -> str:
    """One self-contained static HTML page (inline CSS and SVG, no script, no network).

    Args:
        rep: the report.

    Returns:
        The page as a string.
    """
    reclaim_total = sum(v["bytes"] for v in rep.reclaimable.values())
    cards = [("live data", _fmt_bytes(rep.live_bytes), f"{rep.live_files:,} files"),
             ("referenced", _fmt_bytes(rep.referenced_bytes),
              f"{rep.referenced_files:,} files (snapshots + tags)"),
             ("on disk", _fmt_bytes(rep.disk_bytes), f"{rep.disk_files:,} files"),
             ("reclaimable", _fmt_bytes(reclaim_total), "by maintenance, see below"),
             ("snapshots", f"{rep.snapshots:,}", f"{rep.earliest} .. {rep.latest}"),
             ("tags", f"{len(rep.tags):,}", f"{rep.partition_count:,} partitions live")]
    out = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
           f"<title>Paimon table health: {_e(rep.table)}</title>",
           f"<style>{_CSS}</style></head><body>",
           f"<h1>Paimon table health</h1><p class=\"sub\">{_e(rep.table)} &middot; generated "
           f"{_e(rep.generated_at)} &middot; {rep.records:,} records</p>",
           '<section id="summary"><div class="cards">']
    for name, big, small in cards:
        out.append(f'<div class="card"><span>{_e(name)}</span><b>{_e(big)}</b>'
                   f'<span>{_e(small)}</span></div>')
    out.append("</div></section>")
    out.append('<section id="reclaimable"><h2>Reclaimable bytes by cause</h2>'
               '<table><thead><tr><th>cause</th><th class="n">files</th><th class="n">bytes'
               '</th><th>how</th></tr></thead><tbody>')
    how = {"expired snapshots": "snapshot expiration with the table's options "
                                "(paimon-commit expire-snapshots)",
           "orphans": "paimon-commit remove-orphan-files",
           "dropped partitions pinned by tags": "expire or delete the tags (expire-tags, "
                                                "delete-tag)",
           "other files pinned by tags": "expire or delete the tags"}
    for cause, v in rep.reclaimable.items():
        out.append(f'<tr><td>{_e(cause)}</td><td class="n">{v["files"]:,}</td>'
                   f'<td class="n" data-bytes="{v["bytes"]}">{_e(_fmt_bytes(v["bytes"]))}</td>'
                   f'<td>{_e(how.get(cause, ""))}</td></tr>')
    out.append("</tbody></table>")
    out.append(_bar_chart("reclaimable bytes", [(c, v["bytes"])
                                                for c, v in rep.reclaimable.items()]))
    out.append("</section>")
    out.append('<section id="history"><h2>Over time</h2>')
    pts = [(h["time_millis"], h["live_bytes"]) for h in rep.history]
    out.append(_line_chart("live bytes", pts, "bytes", _fmt_bytes))
    pts = [(h["time_millis"], i + 1) for i, h in enumerate(rep.history)]
    out.append(_line_chart("retained snapshots", pts, "count",
                           lambda v: f"{v:,.0f}" if v == int(v) else f"{v:,.1f}"))
    out.append("</section>")
    out.append('<section id="partitions"><h2>Largest partitions</h2><table><thead><tr>'
               '<th>partition</th><th class="n">files</th><th class="n">records</th>'
               '<th class="n">bytes</th></tr></thead><tbody>')
    for p in rep.partitions:
        out.append(f'<tr><td>{_e(p["partition"])}</td><td class="n">{p["files"]:,}</td>'
                   f'<td class="n">{p["records"]:,}</td><td class="n" data-bytes="{p["bytes"]}">'
                   f'{_e(_fmt_bytes(p["bytes"]))}</td></tr>')
    out.append("</tbody></table></section>")
    out.append('<section id="tags"><h2>Tags</h2><table><thead><tr><th>tag</th>'
               '<th class="n">snapshot</th><th>expires</th><th class="n">bytes</th>'
               '<th class="n">pinned only by this tag</th></tr></thead><tbody>')
    for t in rep.tags:
        expired = " (snapshot expired)" if t["snapshot_expired"] else ""
        out.append(f'<tr><td>{_e(t["name"])}</td><td class="n">{t["snapshot_id"]}{expired}</td>'
                   f'<td>{_e(t["expires_at"] or "never")}</td>'
                   f'<td class="n">{_e(_fmt_bytes(t["bytes"]))}</td>'
                   f'<td class="n" data-bytes="{t["pinned_bytes"]}">'
                   f'{_e(_fmt_bytes(t["pinned_bytes"]))}</td></tr>')
    out.append("</tbody></table></section>")
    for n in rep.notes:
        out.append(f'<p class="note">{_e(n)}</p>')
    out.append("</body></html>")
    return "\n".join(out)
