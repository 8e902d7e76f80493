"""The health report as one self-contained static HTML page (inline CSS and SVG; no script, no
network), from a `report.HealthReport`.

Charts are drawn only from the report's numbers. The history charts put the retained snapshots
in snapshot order along x (evenly, so five commits within a second are five places and a long
pause squeezes nothing), label a few ticks with commit times, mark OVERWRITE and COMPACT
snapshots, and shade the ids expired before the first retained snapshot or missing between two.
Each point carries its values (`data-snapshot`, `data-time`, `data-value`, `data-kind`) so a test
(or a reader's tool) can check the picture against the table. With more snapshots than 2-pixel
columns, each column draws its lowest and highest value (and its first OVERWRITE), and marked
snapshots of one column share one marker (`data-count`): the page stays small for any history,
and no OVERWRITE goes unmarked. A chart whose values are all zero
is replaced by one sentence saying so, and an empty section says that it is empty.
"""
from __future__ import annotations

import datetime
import html
from typing import Any, Callable, Dict, List, Sequence, Tuple

from .io.metered import format_bill

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
h3{font-size:15px;margin:16px 0 6px}.ok{color:#1f7a3f}.bad{color:#b42318}
code{background:#f5f7fa;padding:1px 4px;border-radius:4px;font-size:13px;overflow-wrap:anywhere}
"""

# Time formats from coarse to fine: the axis uses the first that tells its labels apart.
_TIME_FORMATS = ("%Y-%m-%d", "%Y-%m-%d %H:%M", "%Y-%m-%d %H:%M:%S", "%Y-%m-%d %H:%M:%S.%f")

#: Snapshots the history charts mark, by commit kind: (css class, colour, legend text). Every
#: other kind (APPEND, ANALYZE) is a plain point on the line.
_MARKED_KINDS = {"OVERWRITE": ("overwrite", "#d62f2f", "OVERWRITE"),
                 "COMPACT": ("compact", "#1f9d55", "COMPACT")}
_LINE = "#2f6fd6"
_GAP_FILL = "#e3e7ed"
#: With more snapshots than there are columns of this many pixels, each column draws only its
#: lowest and highest value and its first OVERWRITE (the line keeps its spikes and drops) and
#: one marker per kind for all its marked snapshots: the SVG's size is bounded by its width.
_COLUMN_PX = 2.0
_MAX_TICKS = 6
_PAD_L, _PAD_R = 78, 24   # room for the y labels; the right margin
_CHAR_PX = 6.4   # an 11px axis label's character, a little generous
_MIN_GAP_PX = 10.0   # a band of expired or missing ids is at least this wide ...
_MAX_GAPS_SHARE = 0.2   # ... unless the bands would take more than this share of the width


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


def time_tick_labels(times: Sequence[float]) -> Tuple[List[str], str]:
    """Labels for commit times (epoch ms) at ticks along the snapshot axis: the coarsest
    format that tells neighbouring ticks of different times apart (to the second for one
    instant). When every tick is on the same day the labels are times of day and that day
    is returned apart; else ''."""
    exact = [_time(t, _TIME_FORMATS[-1]) for t in times]
    fmt = _TIME_FORMATS[-1]
    for f in _TIME_FORMATS[:-1]:
        labels = [_time(t, f) for t in times]
        if all(labels[k] != labels[k + 1] for k in range(len(times) - 1)
               if exact[k] != exact[k + 1]):
            fmt = f
            break
    if len(set(exact)) == 1:
        fmt = _TIME_FORMATS[2]
    days = {_time(t, _TIME_FORMATS[0]) for t in times}
    if fmt != _TIME_FORMATS[0] and len(days) == 1:
        return [_time(t, fmt[len("%Y-%m-%d "):]) for t in times], days.pop()
    return [_time(t, fmt) for t in times], ""


def _exact(v: float) -> str:
    """A value for a data attribute, exactly (`:g` wrote 1234567 bytes as 1.23457e+06)."""
    return str(int(v)) if v == int(v) else repr(v)


def _id_range(a: int, b: int) -> str:
    return f"{a:,}" if a == b else f"{a:,}–{b:,}"


def snapshot_x_positions(ids: Sequence[int], left: float, right: float
                         ) -> Tuple[List[float], List[Tuple[float, float, int, int]]]:
    """The x of each snapshot (`ids` ascending) in snapshot order, spread evenly between
    `left` and `right` whatever their commit times, and the bands of ids that are not
    retained: those before the first (expired; ids start at 1) and each gap, one slot wide
    but at least _MIN_GAP_PX (together at most _MAX_GAPS_SHARE of the width unless they are
    that many slots). Returns (xs, [(x0, x1, first id missing, last id missing)])."""
    gaps: List[Tuple[int, int, int]] = []   # (before point i, first missing, last missing)
    if ids and ids[0] > 1:
        gaps.append((0, 1, ids[0] - 1))
    for i in range(1, len(ids)):
        if ids[i] > ids[i - 1] + 1:
            gaps.append((i, ids[i - 1] + 1, ids[i] - 1))
    plot = right - left
    n, g = len(ids), len(gaps)
    unit = plot / (n + g)
    gap_w = max(unit, min(_MIN_GAP_PX, plot * _MAX_GAPS_SHARE / g)) if g else 0.0
    point_w = (plot - g * gap_w) / n
    xs: List[float] = []
    bands: List[Tuple[float, float, int, int]] = []
    x, gi = left, 0
    for i in range(n):
        while gi < g and gaps[gi][0] == i:
            bands.append((x, x + gap_w, gaps[gi][1], gaps[gi][2]))
            x += gap_w
            gi += 1
        xs.append(x + point_w / 2)
        x += point_w
    return xs, bands


def _columns_of(width: int) -> float:
    """How many points a chart of `width` draws before it draws columns (_drawn)."""
    return (width - _PAD_L - _PAD_R) / _COLUMN_PX


def _columns(xs: Sequence[float], left: float) -> List[int]:
    return [int((x - left) / _COLUMN_PX) for x in xs]


def _drawn(values: Sequence[float], kinds: Sequence[str], cols: Sequence[int]) -> List[int]:
    """Indices of the points the line is drawn through when there are more points than
    columns: the first and last, and per column its lowest, its highest and its first
    OVERWRITE."""
    keep = {0, len(values) - 1}
    best: Dict[int, List[int]] = {}
    for i, c in enumerate(cols):
        b = best.get(c)
        if b is None:
            best[c] = [i, i, i if kinds[i] == "OVERWRITE" else -1]
            continue
        if values[i] < values[b[0]]:
            b[0] = i
        if values[i] > values[b[1]]:
            b[1] = i
        if b[2] < 0 and kinds[i] == "OVERWRITE":
            b[2] = i
    for b in best.values():
        keep.update(i for i in b if i >= 0)
    return sorted(keep)


def _marker_shape(css: str, x: float, y: float, colour: str, attrs: str, title: str) -> str:
    if css == "overwrite":   # a diamond
        return (f'<path class="marker {css}" d="M{x:.1f},{y - 7:.1f}l7,7l-7,7l-7,-7z" '
                f'fill="{colour}" stroke="#fff" {attrs}><title>{title}</title></path>')
    return (f'<rect class="marker {css}" x="{x - 4.5:.1f}" y="{y - 4.5:.1f}" width="9" '
            f'height="9" fill="{colour}" stroke="#fff" {attrs}><title>{title}</title></rect>')


def _line_chart(chart_id: str, title: str, points: Sequence[Tuple[int, float, float, str]],
                fmt: Callable[[float], str], width: int = 980, height: int = 252) -> str:
    """An inline SVG line chart of (snapshot id, epoch ms, value, commit kind): x is the
    snapshot order (each retained snapshot its own place, however close their commit times),
    labelled with commit times at a few ticks; OVERWRITE and COMPACT snapshots marked; ids
    expired before the first retained one, or missing between two, shaded. One sentence when
    there is nothing to draw."""
    if not points:
        return f'<p class="empty" id="{chart_id}">{_e(title)}: no snapshots</p>'
    if not any(v for _, _, v, _ in points):
        return (f'<p class="empty" id="{chart_id}">{_e(title)}: 0 in every retained snapshot '
                f'(no chart)</p>')
    pad_l, pad_r, pad_t, pad_b = _PAD_L, _PAD_R, 40, 40
    left, right, bottom = pad_l, width - pad_r, height - pad_b
    ids = [p[0] for p in points]
    times = [p[1] for p in points]
    values = [p[2] for p in points]
    kinds = [p[3] for p in points]
    n = len(points)
    top = max(values) or 1   # all-negative values do not occur (sizes and counts)
    xs, bands = snapshot_x_positions(ids, left, right)
    cols = _columns(xs, left)
    sampled = n > _columns_of(width)
    drawn = _drawn(values, kinds, cols) if sampled else list(range(n))

    def sy(y: float) -> float:
        return pad_t + (1 - y / top) * (bottom - pad_t)
    caption = f"{title}, by snapshot (ids {_id_range(ids[0], ids[-1])}"
    if bands and bands[0][2] == 1:
        caption += f"; {_id_range(1, bands[0][3])} expired"
    caption += ")"
    ticks = list(range(n)) if n <= _MAX_TICKS else \
        sorted({round(k * (n - 1) / (_MAX_TICKS - 1)) for k in range(_MAX_TICKS)})
    while True:   # as many ticks as fit side by side
        labels, day = time_tick_labels([times[i] for i in ticks])
        room = (right - left) / max(len(ticks) - 1, 1)
        if len(ticks) <= 2 or max(map(len, labels)) * _CHAR_PX + 16 <= room:
            break
        k = len(ticks) - 1
        ticks = sorted({round(j * (n - 1) / (k - 1)) for j in range(k)})
    if day:
        caption += f", commit times of {day}"
    parts = [f'<svg id="{chart_id}" class="history" role="img" aria-label="{_e(title)}" '
             f'viewBox="0 0 {width} {height}" width="100%" xmlns="http://www.w3.org/2000/svg" '
             f'data-snapshots="{n}" data-drawn="{len(drawn)}">',
             f'<title>{_e(title)}</title>',
             f'<text class="caption" x="{pad_l}" y="14">{_e(caption)}</text>']
    # legend (right-aligned, under the caption): only what this chart shows
    legend = []
    present = set(kinds)
    for kind, (css, colour, text) in _MARKED_KINDS.items():
        if kind in present:
            legend.append((css, colour, text))
    if bands:
        legend.append(("gap", _GAP_FILL, "expired or missing ids"))
    if legend:
        legend.insert(0, ("point", _LINE, "snapshot"))
        x = right
        items = []
        for css, colour, text in reversed(legend):
            x -= len(text) * _CHAR_PX
            items.append(f'<g class="legend-item" data-kind="{css}">'
                         f'<rect x="{x - 14:.1f}" y="21" width="10" height="10" '
                         f'fill="{colour}"/><text x="{x:.1f}" y="30">{_e(text)}</text></g>')
            x -= 28
        parts.append('<g class="legend">' + "".join(reversed(items)) + "</g>")
    # bands of ids not retained; neighbours closer than a column are drawn as one
    merged: List[List[Any]] = []
    for x0, x1, a, b in bands:
        if merged and x0 - merged[-1][1] < _COLUMN_PX:
            m = merged[-1]
            m[1], m[3], m[4], m[5] = x1, b, m[4] + 1, m[5] + b - a + 1
        else:
            merged.append([x0, x1, a, b, 1, b - a + 1])
    for x0, x1, a, b, ranges, count in merged:
        what = "expired" if a == 1 else "missing"
        text = (f"snapshots {_id_range(a, b)} {what}" if ranges == 1 else
                f"{count:,} snapshot ids between {a:,} and {b:,} not retained, in {ranges:,} "
                f"ranges")
        parts.append(f'<rect class="gap" x="{x0:.1f}" y="{pad_t}" width="{x1 - x0:.1f}" '
                     f'height="{bottom - pad_t}" fill="{_GAP_FILL}" data-first="{a}" '
                     f'data-last="{b}"><title>{_e(text)}</title></rect>')
        if x1 - x0 >= 60:
            parts.append(f'<text class="gap-label" x="{(x0 + x1) / 2:.1f}" y="{pad_t + 14}" '
                         f'text-anchor="middle">{_e(what)}</text>')
    for frac in (0, 0.5, 1):
        y = sy(top * frac)
        parts.append(f'<line x1="{pad_l}" x2="{right}" y1="{y:.1f}" y2="{y:.1f}" '
                     f'stroke="#eef1f4"/><text class="y-label" x="{pad_l - 6}" y="{y + 4:.1f}" '
                     f'text-anchor="end">{_e(fmt(top * frac))}</text>')
    for j, (i, label) in enumerate(zip(ticks, labels)):
        anchor = "middle"
        if len(ticks) > 1 and j == 0:
            anchor = "start" if xs[i] - left < len(label) * _CHAR_PX / 2 else "middle"
        if len(ticks) > 1 and j == len(ticks) - 1:
            anchor = "end" if right - xs[i] < len(label) * _CHAR_PX / 2 else "middle"
        parts.append(f'<line class="tick" x1="{xs[i]:.1f}" x2="{xs[i]:.1f}" y1="{bottom}" '
                     f'y2="{bottom + 4}" stroke="#9aa5b1"/>'
                     f'<text class="x-label" x="{xs[i]:.1f}" y="{bottom + 17}" '
                     f'text-anchor="{anchor}" data-snapshot="{ids[i]}">{_e(label)}</text>'
                     f'<text class="x-id" x="{xs[i]:.1f}" y="{bottom + 31}" '
                     f'text-anchor="{anchor}">#{ids[i]}</text>')
    # OVERWRITE: a line across the plot too, so a dropped partition stands out at any size
    groups: Dict[Tuple[str, int], List[int]] = {}
    for i, kind in enumerate(kinds):
        if kind in _MARKED_KINDS:
            groups.setdefault((kind, cols[i] if sampled else i), []).append(i)
    for (kind, _), members in groups.items():
        if kind == "OVERWRITE":
            x = xs[members[0]]
            parts.append(f'<line class="overwrite-line" x1="{x:.1f}" x2="{x:.1f}" '
                         f'y1="{pad_t}" y2="{bottom}" stroke="{_MARKED_KINDS[kind][1]}" '
                         f'stroke-dasharray="3,3" stroke-opacity="0.6"/>')
    path = " ".join(f"{'M' if j == 0 else 'L'}{xs[i]:.1f},{sy(values[i]):.1f}"
                    for j, i in enumerate(drawn))
    parts.append(f'<path class="line" d="{path}" fill="none" stroke="{_LINE}" '
                 f'stroke-width="2"/>')
    for i in drawn:
        attrs = (f'data-snapshot="{ids[i]}" data-time="{int(times[i])}" '
                 f'data-value="{_exact(values[i])}" data-kind="{_e(kinds[i])}"')
        if sampled:   # thousands of points: no hover text each (the SVG stays small)
            parts.append(f'<circle class="point" cx="{xs[i]:.1f}" cy="{sy(values[i]):.1f}" '
                         f'r="1.5" fill="{_LINE}" {attrs}/>')
            continue
        when = _time(times[i], _TIME_FORMATS[3])
        parts.append(f'<circle class="point" cx="{xs[i]:.1f}" cy="{sy(values[i]):.1f}" '
                     f'r="2.5" fill="{_LINE}" {attrs}><title>snapshot {ids[i]} '
                     f'({_e(kinds[i])}), {_e(when)}: {_e(fmt(values[i]))}</title></circle>')
    for (kind, _), members in groups.items():
        css, colour, _text = _MARKED_KINDS[kind]
        i = members[0]
        title_text = (f"snapshot {ids[i]} ({kind}), {_time(times[i], _TIME_FORMATS[3])}: "
                      f"{fmt(values[i])}" if len(members) == 1 else
                      f"{len(members)} {kind} snapshots, {_id_range(ids[i], ids[members[-1]])}")
        attrs = (f'data-kind="{kind}" data-snapshot="{ids[i]}" data-count="{len(members)}" '
                 f'data-time="{int(times[i])}" data-value="{_exact(values[i])}"')
        parts.append(_marker_shape(css, xs[i], sy(values[i]), colour, attrs, _e(title_text)))
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


#: Problems (and files given up) the page lists; the rest are counted (--json: all).
_SHOWN_ROWS = 50


def _spec(partition: Dict[str, Any]) -> str:
    return ",".join(f"{k}={v}" for k, v in partition.items()) or "(unpartitioned)"


def _integrity_card(ig: Any) -> Tuple[str, str, str]:
    if not ig or not ig.get("checked"):
        return ("integrity", "not checked", "see below")
    if ig["problems"]:
        return ("integrity", f"{len(ig['problems']):,} problem(s)",
                f"{len(ig['broken']):,} broken snapshot(s)/tag(s)")
    return ("integrity", "ok" if ig["complete"] else "incomplete",
            f"{ig['files_checked']:,} files checked")


def _integrity_section(ig: Any) -> List[str]:
    """`check`'s result and repair's dry run (report._integrity)."""
    out = ['<section id="integrity"><h2>Integrity</h2>']
    if not ig:
        out.append('<p class="empty" id="integrity-status">not checked</p></section>')
        return out
    if not ig["checked"]:
        out.append(f'<p class="note" id="integrity-status">{_e(ig["error"])}</p></section>')
        return out
    roots = f'{ig["snapshots"]:,} snapshot(s), {ig["tags"]:,} tag(s)'
    if ig["changelogs"]:
        roots += f', {ig["changelogs"]:,} long-lived changelog(s)'
    if ig["branches"]:
        roots += f', {ig["branches"]:,} branch(es)'
    problems = ig["problems"]
    if not problems:
        if ig["complete"]:
            out.append(f'<p class="ok" id="integrity-status" data-ok="true">OK: every file the '
                       f'{_e(roots)} use is there with the size the metadata records '
                       f'(<span data-value="{ig["files_checked"]}">'
                       f'{ig["files_checked"]:,}</span> files checked).</p>')
        else:
            out.append(f'<p class="note" id="integrity-status">incomplete: '
                       f'{_e(ig["message"])}</p>')
        out.append("</section>")
        return out
    out.append(f'<p class="bad" id="integrity-status" data-ok="false" '
               f'data-problems="{len(problems)}"><b>{len(problems):,} problem(s)</b> '
               f'({ig["files_checked"]:,} other files as recorded, of {_e(roots)}); '
               f'broken: {_e(", ".join(ig["broken"]))}. Reading them fails until the files '
               f'are restored. <code>{_e(ig["check_command"])}</code> names every problem.</p>')
    rows = []
    for p in problems[:_SHOWN_ROWS]:
        if p["state"] == "wrong-size":
            size = f'{p["actual_size"]:,} bytes, recorded {p["expected_size"]:,}'
        elif p["expected_size"] is not None:
            size = f'{p["expected_size"]:,} bytes recorded'
        else:
            size = ""
        state = p["state"] + (f' ({p["detail"]})' if p.get("detail") else "")
        rows.append(f'<tr class="problem"><td>{_e(p["kind"])}</td><td>{_e(p["path"])}</td>'
                    f'<td>{_e(state)}</td><td class="n">{_e(size)}</td>'
                    f'<td>{_e(", ".join(p["roots"]))}</td></tr>')
    out.append(_table([("kind", False), ("file", False), ("state", False), ("size", True),
                       ("breaks", False)], rows))
    if len(problems) > _SHOWN_ROWS:
        out.append(f'<p class="empty">... and {len(problems) - _SHOWN_ROWS:,} more (--json: '
                   f'all)</p>')
    r = ig.get("repair")
    if r is None:
        out.append("</section>")
        return out
    out.append('<h3>Repair (dry run)</h3>')
    if r["refused"]:
        out.append(f'<p class="note" id="repair-status">repair refuses this table: '
                   f'{_e(r["refused"])}</p></section>')
        return out
    if r["removed_files"]:
        out.append(f'<p id="repair-status" data-files="{r["removed_files"]}" '
                   f'data-records="{r["removed_records"]}">A repair would give up '
                   f'<b>{r["removed_files"]:,}</b> missing data file(s) of snapshot '
                   f'{r["base_snapshot_id"]}: <b>{r["removed_records"]:,}</b> record(s), '
                   f'{_e(_fmt_bytes(r["removed_bytes"]))}, by one new snapshot without them '
                   f'(nothing is deleted): <code>{_e(r["command"])}</code>. Nothing was changed '
                   f'to show this.</p>')
        rows = [f'<tr><td>{_e(_spec(g["partition"]))}</td><td class="n">{g["bucket"]}</td>'
                f'<td class="n">{g["files"]:,}</td>'
                f'<td class="n">{g["records"]:,}</td><td class="n" data-bytes="{g["bytes"]}">'
                f'{_e(_fmt_bytes(g["bytes"]))}</td></tr>' for g in r["groups"][:_SHOWN_ROWS]]
        out.append(_table([("partition", False), ("bucket", True), ("files", True),
                           ("records", True), ("bytes", True)], rows))
    else:
        out.append(f'<p id="repair-status" data-files="0">Nothing a repair gives up: snapshot '
                   f'{r["base_snapshot_id"]} misses no data file.</p>')
    if r["unrepaired"]:
        out.append(f'<p class="note">Not fixed by a repair: {len(r["unrepaired"]):,} '
                   f'problem(s) of snapshot {r["base_snapshot_id"]}:</p><ul>' +
                   "".join(f'<li>{_e(p["kind"])} <code>{_e(p["path"])}</code>: '
                           f'{_e(p["state"])}'
                           + (f' ({_e(p["detail"])})' if p.get("detail") else "") + '</li>'
                           for p in r["unrepaired"][:_SHOWN_ROWS]) + '</ul>')
    if r["still_broken"]:
        out.append(f'<p>Still broken after a repair (it changes no existing snapshot or tag): '
                   f'{_e(", ".join(r["still_broken"]))}.</p>')
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
             ("tags", f"{len(rep.tags):,}", f"{rep.partition_count:,} partitions live"),
             _integrity_card(getattr(rep, "integrity", None))]
    unreadable = getattr(rep, "unreadable", None)
    out = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
           f"<title>Paimon table health: {_e(rep.table)}</title>",
           f"<style>{_CSS}</style></head><body>",
           f"<h1>Paimon table health</h1><p class=\"sub\">{_e(rep.table)} &middot; generated "
           f"{_e(rep.generated_at)}" +
           ("" if unreadable else f" &middot; {rep.records:,} records") + "</p>",
           f"<p class=\"sub\" id=\"requests\">this report's {_e(format_bill(rep.requests))}"
           f"</p>"]
    if unreadable:
        # The other sections were not built (report.build_report): cards and charts of
        # zeros would read as an empty table.
        out.append(f'<p class="bad" id="unreadable">{_e(unreadable)}</p>')
        out.extend(_integrity_section(getattr(rep, "integrity", None)))
        out.append("</body></html>")
        return "\n".join(out)
    out.append('<section id="summary"><div class="cards">')
    for name, big, small in cards:
        out.append(f'<div class="card"><span>{_e(name)}</span><b>{_e(big)}</b>'
                   f'<span>{_e(small)}</span></div>')
    out.append("</div></section>")

    out.extend(_integrity_section(getattr(rep, "integrity", None)))

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
        sampled = len(rep.history) > _columns_of(980)
        out.append(f'<p>{len(rep.history):,} retained snapshot(s), in snapshot order (each '
                   f'its own place, however close their commit times; the labels are commit '
                   f'times). OVERWRITE snapshots (a dropped or overwritten partition) and '
                   f'COMPACT snapshots are marked; expired or missing snapshot ids are '
                   f'shaded.' + (f' With more snapshots than the width can show, each '
                                 f'{_COLUMN_PX:g}-pixel column draws its lowest and highest '
                                 f'value and one marker per kind for its OVERWRITE and COMPACT '
                                 f'snapshots (hover for how many).' if sampled else '')
                   + '</p>')
    for key, chart_title, fmt in (("live_bytes", "live bytes", _fmt_bytes),
                                  ("live_files", "live data files", _fmt_count),
                                  ("records", "records", _fmt_count)):
        pts = [(h["id"], h["time_millis"], h[key], h.get("kind") or "") for h in rep.history]
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
