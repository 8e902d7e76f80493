"""The health report as one self-contained static HTML page (inline CSS and SVG; no script, no
network), from a `report.HealthReport`.

Charts are drawn only from the report's numbers: one point per retained snapshot at its commit
time, and each point carries its values (`data-snapshot`, `data-time`, `data-value`) so a test
(or a reader's tool) can check the picture against the table. A chart whose values are all zero
is replaced by one sentence saying so, and an empty section says that it is empty.
"""
from __future__ import annotations

import datetime
import html
from typing import Any, Callable, List, Sequence, Tuple

__all__ = ["render_html"]

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
svg text{font:11px system-ui,sans-serif;fill:#5b6776}.note{color:#8a5a00}.empty{color:#5b6776}
"""

# Time formats from coarse to fine: the axis uses the first that tells its two ends apart.
_TIME_FORMATS = ("%Y-%m-%d", "%Y-%m-%d %H:%M", "%Y-%m-%d %H:%M:%S", "%Y-%m-%d %H:%M:%S.%f")


def _fmt_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024.0
    return f"{n:.1f} TiB"


def _fmt_count(v: float) -> str:
    return f"{v:,.0f}" if v == int(v) else f"{v:,.1f}"


def _e(x: Any) -> str:
    return html.escape(str(x), quote=True)


def _time(ms: float, fmt: str) -> str:
    text = datetime.datetime.fromtimestamp(ms / 1000).strftime(fmt)
    return text[:-3] if fmt.endswith("%f") else text   # milliseconds, not microseconds


def time_axis_labels(x0: float, x1: float) -> List[str]:
    """Labels for the two ends of a time axis (epoch ms), as coarse as keeps them apart; one
    label when both ends are the same instant."""
    if x0 == x1:
        return [_time(x0, _TIME_FORMATS[2])]
    for fmt in _TIME_FORMATS:
        a, b = _time(x0, fmt), _time(x1, fmt)
        if a != b:
            return [a, b]
    return [a, b]


def _line_chart(chart_id: str, title: str, points: Sequence[Tuple[int, float, float]],
                fmt: Callable[[float], str], width: int = 980, height: int = 220) -> str:
    """An inline SVG line chart of (snapshot id, epoch ms, value), x = commit time; or one
    sentence when there is nothing to draw."""
    if not points:
        return f'<p class="empty" id="{chart_id}">{_e(title)}: no snapshots</p>'
    if not any(v for _, _, v in points):
        return (f'<p class="empty" id="{chart_id}">{_e(title)}: 0 in every retained snapshot '
                f'(no chart)</p>')
    pad_l, pad_r, pad_t, pad_b = 78, 24, 24, 34
    xs = [p[1] for p in points]
    x0, x1 = min(xs), max(xs)
    top = max(v for _, _, v in points)
    span = (x1 - x0) or 1

    def sx(x: float) -> float:
        if x1 == x0:   # one instant: the point in the middle
            return (pad_l + width - pad_r) / 2
        return pad_l + (x - x0) / span * (width - pad_l - pad_r)

    def sy(y: float) -> float:
        return pad_t + (1 - y / top) * (height - pad_t - pad_b)
    parts = [f'<svg id="{chart_id}" role="img" aria-label="{_e(title)}" '
             f'viewBox="0 0 {width} {height}" width="100%" xmlns="http://www.w3.org/2000/svg">',
             f'<title>{_e(title)}</title>',
             f'<text x="{pad_l}" y="14">{_e(title)}, by snapshot commit time</text>']
    for frac in (0, 0.5, 1):
        y = sy(top * frac)
        parts.append(f'<line x1="{pad_l}" x2="{width - pad_r}" y1="{y:.1f}" y2="{y:.1f}" '
                     f'stroke="#eef1f4"/><text class="y-label" x="{pad_l - 6}" y="{y + 4:.1f}" '
                     f'text-anchor="end">{_e(fmt(top * frac))}</text>')
    labels = time_axis_labels(x0, x1)
    ends = [(x0, "start"), (x1, "end")] if len(labels) == 2 else [(x0, "middle")]
    for (x, anchor), label in zip(ends, labels):
        parts.append(f'<text class="x-label" x="{sx(x):.1f}" y="{height - 10}" '
                     f'text-anchor="{anchor}">{_e(label)}</text>')
    path = " ".join(f"{'M' if i == 0 else 'L'}{sx(x):.1f},{sy(y):.1f}"
                    for i, (_, x, y) in enumerate(points))
    parts.append(f'<path d="{path}" fill="none" stroke="#2f6fd6" stroke-width="2"/>')
    for sid, x, y in points:
        when = _time(x, _TIME_FORMATS[2])
        parts.append(f'<circle class="point" cx="{sx(x):.1f}" cy="{sy(y):.1f}" r="2.5" '
                     f'fill="#2f6fd6" data-snapshot="{sid}" data-time="{int(x)}" '
                     f'data-value="{y:g}"><title>snapshot {sid}, {_e(when)}: '
                     f'{_e(fmt(y))}</title></circle>')
    parts.append("</svg>")
    return "".join(parts)


def _bar_chart(chart_id: str, title: str, items: List[Tuple[str, int]],
               width: int = 980) -> str:
    """An inline SVG horizontal bar chart of byte counts (only non-zero bars: the table above
    lists every cause)."""
    items = [(label, v) for label, v in items if v]
    if not items:
        return f'<p class="empty" id="{chart_id}">nothing to reclaim now</p>'
    row, pad_l = 24, 260
    height = 24 + row * len(items)
    top = max(v for _, v in items)
    parts = [f'<svg id="{chart_id}" role="img" aria-label="{_e(title)}" '
             f'viewBox="0 0 {width} {height}" width="100%" xmlns="http://www.w3.org/2000/svg">'
             f'<title>{_e(title)}</title>']
    for i, (label, v) in enumerate(items):
        y = 12 + i * row
        w = (width - pad_l - 120) * v / top
        parts.append(f'<text x="0" y="{y + 14}">{_e(label)}</text>'
                     f'<rect class="bar" x="{pad_l}" y="{y}" width="{w:.1f}" height="16" '
                     f'fill="#e07b39" data-label="{_e(label)}" data-value="{v}"/>'
                     f'<text x="{pad_l + w + 6:.1f}" y="{y + 13}">{_e(_fmt_bytes(v))}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _table(head: Sequence[Tuple[str, bool]], rows: List[str]) -> str:
    cells = "".join(f'<th class="n">{_e(h)}</th>' if n else f"<th>{_e(h)}</th>"
                    for h, n in head)
    return f"<table><thead><tr>{cells}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def _small_files_section(sf: dict) -> List[str]:
    out = ['<section id="small-files"><h2>Small files</h2>']
    if not sf or not sf.get("files"):
        out.append('<p class="empty">no live data files</p></section>')
        return out
    small = sf.get("small_file_bytes")
    removes = sf.get("compaction_removes")
    text = (f'{sf["files"]:,} live data files, {_fmt_bytes(sf["average_bytes"])} on average')
    if small is not None:
        text += (f'; {sf["small_files"]:,} below compaction\'s small-file size '
                 f'({_fmt_bytes(small)}: target-file-size &times; compaction.small-file-ratio)')
    if removes is not None:
        text += (f'. A compaction now would remove <b id="compaction-removes" '
                 f'data-value="{removes}">{removes:,}</b> file(s) '
                 + ("(nothing to compact)" if removes == 0 else "(paimon-commit compact)"))
    out.append(f"<p>{text}.</p>")
    rows = []
    for p in sf["partitions"]:
        r = "n/a" if p["compaction_removes"] is None else f'{p["compaction_removes"]:,}'
        rows.append(f'<tr><td>{_e(p["partition"])}</td><td class="n">{p["files"]:,}</td>'
                    f'<td class="n">{p["small_files"]:,}</td>'
                    f'<td class="n" data-bytes="{p["average_bytes"]}">'
                    f'{_e(_fmt_bytes(p["average_bytes"]))}</td><td class="n">{r}</td></tr>')
    out.append(_table([("partition (most files first)", False), ("files", True),
                       ("small files", True), ("average size", True),
                       ("compaction removes", True)], rows))
    out.append("</section>")
    return out


def render_html(rep: Any) -> str:
    """One self-contained static HTML page (inline CSS and SVG, no script, no network).

    Args:
        rep: the report, a `report.HealthReport` (not imported here, not even for type
            checking: report.py re-exports this function, and a module imports only
            modules below it).

    Returns:
        The page as a string.
    """
    reclaim_total = sum(v["bytes"] for v in rep.reclaimable.values())
    cards = [("live data", _fmt_bytes(rep.live_bytes), f"{rep.live_files:,} files"),
             ("referenced", _fmt_bytes(rep.referenced_bytes),
              f"{rep.referenced_files:,} files (snapshots + tags)"),
             ("on disk", _fmt_bytes(rep.disk_bytes), f"{rep.disk_files:,} files"),
             ("reclaimable", _fmt_bytes(reclaim_total), "by maintenance, see below"),
             ("snapshots", f"{rep.snapshots:,}",
              f"{rep.earliest} .. {rep.latest}" if rep.snapshots else "none"),
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

    out.append('<section id="reclaimable"><h2>Reclaimable bytes by cause</h2>')
    how = {"expired snapshots": "snapshot expiration with the table's options "
                                "(paimon-commit expire-snapshots)",
           "orphans": "paimon-commit remove-orphan-files (files older than a day)",
           "dropped partitions pinned by tags": "expire or delete the tags (expire-tags, "
                                                "delete-tag)",
           "other files pinned by tags": "expire or delete the tags"}
    rows = [f'<tr><td>{_e(cause)}</td><td class="n">{v["files"]:,}</td>'
            f'<td class="n" data-bytes="{v["bytes"]}">{_e(_fmt_bytes(v["bytes"]))}</td>'
            f'<td>{_e(how.get(cause, ""))}</td></tr>' for cause, v in rep.reclaimable.items()]
    out.append(_table([("cause", False), ("files", True), ("bytes", True), ("how", False)],
                      rows))
    out.append(_bar_chart("reclaimable-chart", "reclaimable bytes",
                          [(c, v["bytes"]) for c, v in rep.reclaimable.items()]))
    out.append("</section>")

    out.append('<section id="history"><h2>Retained snapshots over time</h2>')
    if rep.history:
        out.append(f'<p>{len(rep.history):,} retained snapshot(s), one point each at its '
                   f'commit time.</p>')
    for key, chart_title, fmt in (("live_bytes", "live bytes", _fmt_bytes),
                                  ("live_files", "live data files", _fmt_count),
                                  ("records", "records", _fmt_count)):
        pts = [(h["id"], h["time_millis"], h[key]) for h in rep.history]
        out.append(_line_chart(f"chart-{key.replace('_', '-')}", chart_title, pts, fmt))
    out.append("</section>")

    out.extend(_small_files_section(rep.small_files))

    out.append('<section id="partitions"><h2>Largest partitions</h2>')
    if rep.partitions:
        rows = [f'<tr><td>{_e(p["partition"])}</td><td class="n">{p["files"]:,}</td>'
                f'<td class="n">{p["records"]:,}</td><td class="n" data-bytes="{p["bytes"]}">'
                f'{_e(_fmt_bytes(p["bytes"]))}</td></tr>' for p in rep.partitions]
        out.append(_table([("partition", False), ("files", True), ("records", True),
                           ("bytes", True)], rows))
    else:
        out.append('<p class="empty">no live data files</p>')
    out.append("</section>")

    out.append('<section id="tags"><h2>Tags</h2>')
    if rep.tags:
        rows = []
        for t in rep.tags:
            expired = " (snapshot expired)" if t["snapshot_expired"] else ""
            rows.append(f'<tr><td>{_e(t["name"])}</td><td class="n">{t["snapshot_id"]}'
                        f'{expired}</td><td>{_e(t["expires_at"] or "never")}</td>'
                        f'<td class="n">{_e(_fmt_bytes(t["bytes"]))}</td>'
                        f'<td class="n" data-bytes="{t["pinned_bytes"]}">'
                        f'{_e(_fmt_bytes(t["pinned_bytes"]))}</td></tr>')
        out.append(_table([("tag", False), ("snapshot", True), ("expires", False),
                           ("bytes", True), ("pinned only by this tag", True)], rows))
    else:
        out.append('<p class="empty">no tags</p>')
    out.append("</section>")
    for n in rep.notes:
        out.append(f'<p class="note">{_e(n)}</p>')
    out.append("</body></html>")
    return "\n".join(out)
