"""Health report: numbers match the table on disk, the HTML page is self-contained and
parses, the CLI writes it."""
import datetime
import json
import os
import time
import types
from html.parser import HTMLParser

import pytest

from conftest import SCHEMA, make_rows

from paimon_commit import Table
from paimon_commit.cli import main
from paimon_commit.operations import commit as commit_mod
from paimon_commit.report import build_report, render_html

D1, D2 = datetime.date(2024, 1, 1), datetime.date(2024, 1, 2)


class Page(HTMLParser):
    """Collects tags, attributes, section ids, table cells and text."""

    def __init__(self):
        super().__init__()
        self.tags, self.attrs, self.sections, self.text = [], [], [], []
        self.cells = []
        self._in_cell = False

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attrs.extend(attrs)
        a = dict(attrs)
        if tag == "section":
            self.sections.append(a.get("id"))
        if tag == "td" and "data-bytes" in a:
            self.cells.append(int(a["data-bytes"]))

    def handle_data(self, data):
        self.text.append(data)


@pytest.fixture
def built(table_path, monkeypatch):
    """Snapshots a day apart: 2 partitions, a tag, a dropped partition the tag pins, an
    orphan; snapshot expiration due for 2 snapshots."""
    now = [datetime.datetime(2024, 3, 1, 12).timestamp()]
    monkeypatch.setattr(commit_mod, "time", types.SimpleNamespace(
        time=lambda: now[0], perf_counter=time.perf_counter, sleep=time.sleep,
        monotonic=time.monotonic))
    t = Table.create(str(table_path), SCHEMA, ["dt"], {"snapshot.num-retained.min": "2",
                                                       "snapshot.time-retained": "0 ms",
                                                       "write-only": "true"})
    with t.new_commit() as c:
        for i, dt in enumerate([D1, D2, D1], start=1):
            w = t.new_writer()
            w.write_arrow(make_rows(range(i * 10, i * 10 + 5), dt=dt))
            c.commit(w.prepare_commit(), i)
            now[0] += 86400
        t.create_tag("before-drop")
        c.drop_partitions([{"dt": D1}])
        now[0] += 86400
    orphan = table_path / "dt=19723" / "bucket-0" / "data-orphan.parquet"
    orphan.write_bytes(b"x" * 1234)
    old = time.time() - 3 * 86400
    os.utime(orphan, (old, old))
    return t


def test_report_numbers(built, table_path):
    rep = build_report(built)
    assert rep.snapshots == 4 and (rep.earliest, rep.latest) == (1, 4)
    live = built.live_files()
    assert rep.live_files == len(live) == 1
    assert rep.live_bytes == sum(f.file_size for f in live)
    assert rep.records == 5
    on_disk = [os.path.join(d, n) for d, _, ns in os.walk(table_path) for n in ns]
    assert rep.disk_files == len(on_disk)
    assert rep.disk_bytes == sum(os.path.getsize(p) for p in on_disk)
    assert rep.reclaimable["orphans"] == {"files": 1, "bytes": 1234}
    assert rep.reclaimable["expired snapshots"]["snapshots"] == 2
    # dt=2024-01-01 is dropped, its two files live on in the tag only
    d1 = [f for f in built.live_files(tag="before-drop") if f.partition["dt"] == D1]
    assert rep.reclaimable["dropped partitions pinned by tags"] == {
        "files": 0, "bytes": 0}   # snapshots 1..3 are still retained: not only the tag's
    [tag] = rep.tags
    assert tag["name"] == "before-drop" and tag["snapshot_id"] == 3
    assert tag["bytes"] == sum(f.file_size for f in built.live_files(tag="before-drop"))
    # history: one point per snapshot, a day apart, live bytes follow the commits
    assert [h["id"] for h in rep.history] == [1, 2, 3, 4]
    assert rep.history[-1]["live_bytes"] == rep.live_bytes
    assert rep.history[2]["live_bytes"] == tag["bytes"]
    assert [p["partition"] for p in rep.partitions] == ["dt=2024-01-02"]
    # After expiration, the tag alone keeps the dropped partition's files.
    with built.new_commit() as c:
        c.expire_snapshots(retain_min=1)
    rep2 = build_report(built)
    pinned = rep2.reclaimable["dropped partitions pinned by tags"]
    assert pinned == {"files": 2, "bytes": sum(f.file_size for f in d1)}
    assert rep2.tags[0]["pinned_bytes"] == pinned["bytes"] and rep2.tags[0]["snapshot_expired"]


def test_html_is_self_contained_and_parses(built):
    rep = build_report(built)
    page = Page()
    page.feed(render_html(rep))
    page.close()
    assert page.sections == ["summary", "integrity", "reclaimable", "history", "small-files",
                             "partitions", "tags"]
    # reclaimable bars + live bytes, live files and records by snapshot time
    assert page.tags.count("svg") == 4
    assert "script" not in page.tags and "link" not in page.tags and "img" not in page.tags
    for name, value in page.attrs:
        assert name not in ("src", "href"), (name, value)
    assert "url(" not in render_html(rep)
    text = "".join(page.text)
    assert "before-drop" in text and "dt=2024-01-02" in text
    assert rep.reclaimable["orphans"]["bytes"] in page.cells
    assert rep.reclaimable["expired snapshots"]["bytes"] in page.cells


def test_report_escapes_names(table_path):
    t = Table.create(str(table_path), SCHEMA, ["dt"])
    w = t.new_writer()
    w.write_arrow(make_rows([1], dt=D1))
    with t.new_commit() as c:
        c.commit(w.prepare_commit())
    t.create_tag("<b>x&y<i>")
    page = Page()
    page.feed(render_html(build_report(t)))
    assert "i" not in page.tags                  # escaped, not markup
    assert "<b>x&y<i>" in "".join(page.text)


def test_cli_report(built, table_path, tmp_path, capsys):
    out = tmp_path / "report.html"
    assert main(["report", str(table_path), "--html", str(out), "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["html"] == str(out) and r["snapshots"] == 4
    assert r["reclaimable"]["orphans"]["files"] == 1
    page = Page()
    page.feed(out.read_text())
    assert "reclaimable" in page.sections
    assert main(["report", str(table_path)]) == 0
    text = capsys.readouterr().out
    assert "reclaimable      orphans: 1 file(s), 1234 bytes" in text
    assert main(["report", str(tmp_path / "nope")]) == 2


def test_empty_table_says_so(table_path):
    """No snapshot: no chart is drawn from nothing, and every empty section says it is empty."""
    t = Table.create(str(table_path), SCHEMA, ["dt"])
    page = Page()
    page.feed(render_html(build_report(t)))
    text = "".join(page.text)
    assert "svg" not in page.tags
    for words in ("live bytes: no snapshots", "nothing to reclaim now", "no tags",
                  "no live data files"):
        assert words in text, words


def test_all_zero_chart_is_a_sentence(table_path):
    """A series that is zero in every retained snapshot is one sentence, not a flat line; a
    series with a value is a chart."""
    t = Table.create(str(table_path), SCHEMA, ["dt"], {"write-only": "true"})
    with t.new_commit() as c:
        w = t.new_writer()
        w.write_arrow(make_rows([1, 2]))
        c.commit(w.prepare_commit())
        c.drop_partitions([{"dt": D1}])
    rep = build_report(t)
    html_page = render_html(rep)
    assert 'id="chart-live-bytes"' in html_page and "<svg id=\"chart-live-bytes\"" in html_page
    rep.history = [dict(h, live_bytes=0) for h in rep.history]
    html_page = render_html(rep)
    assert "live bytes: 0 in every retained snapshot (no chart)" in html_page
    assert "<svg id=\"chart-live-bytes\"" not in html_page


def test_time_axis_labels_are_distinct():
    from paimon_commit.report_html import time_axis_labels
    t0 = datetime.datetime(2024, 3, 1, 12, 0, 5).timestamp() * 1000
    assert time_axis_labels(t0, t0 + 20_000) == ["2024-03-01 12:00:05", "2024-03-01 12:00:25"]
    assert time_axis_labels(t0, t0 + 3 * 86400_000) == ["2024-03-01", "2024-03-04"]
    assert time_axis_labels(t0, t0 + 7) == ["2024-03-01 12:00:05.000", "2024-03-01 12:00:05.007"]
    assert time_axis_labels(t0, t0) == ["2024-03-01 12:00:05"]


def _small_files_table(table_path):
    """4 small files in dt=2024-01-01 (compaction.min.file-num 3) and 1 in dt=2024-01-02."""
    t = Table.create(str(table_path), SCHEMA, ["dt"], {"compaction.min.file-num": "3",
                                                       "write-only": "true"})
    for i in range(4):
        w = t.new_writer()
        w.write_arrow(make_rows(range(i * 10, i * 10 + 2), dt=D1))
        with t.new_commit() as c:
            c.commit(w.prepare_commit())
    w = t.new_writer()
    w.write_arrow(make_rows([99], dt=D2))
    with t.new_commit() as c:
        c.commit(w.prepare_commit())
    return t


def test_small_files_match_compaction(table_path):
    """The small-files numbers are the compaction planner's: what `compact` then removes."""
    t = _small_files_table(table_path)
    sf = build_report(t).small_files
    assert (sf["files"], sf["small_files"]) == (5, 5)
    assert sf["average_bytes"] == sum(f.file_size for f in t.live_files()) // 5
    assert [(p["partition"], p["files"], p["compaction_removes"]) for p in sf["partitions"]] \
        == [("dt=2024-01-01", 4, 3), ("dt=2024-01-02", 1, 0)]
    t.compact()
    assert len(t.live_files()) == 5 - sf["compaction_removes"]


def test_cli_report_text_shows_small_files(table_path, capsys):
    """`report` as text has the small-files view of the HTML page: files per partition, the
    average size, what a compaction would remove (and compaction then removes that many)."""
    t = _small_files_table(table_path)
    sizes = {}
    for f in t.live_files():
        sizes.setdefault(f.partition["dt"], []).append(f.file_size)
    # Paimon's defaults for an append table: target-file-size 256 MB x small-file-ratio 0.7
    small = int(256 * 1024 * 1024 * 0.7)
    assert main(["report", str(table_path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    at = next(i for i, ln in enumerate(lines) if ln.startswith("small files"))
    total = sum(map(sum, sizes.values()))
    assert lines[at:at + 3] == [
        f"small files      5 live data file(s) in 2 partition(s), {total // 5} bytes on "
        f"average; 5 below the small-file size ({small} bytes); a compaction now would "
        f"remove 3 file(s)",
        f"  {'dt=2024-01-01':<30} 4 file(s), 4 small, {sum(sizes[D1]) // 4} bytes on average, "
        f"compaction removes 3",
        f"  {'dt=2024-01-02':<30} 1 file(s), 1 small, {sizes[D2][0]} bytes on average, "
        f"compaction removes 0"]
    t.compact()
    assert len(t.live_files()) == 2


def test_cli_report_text_small_files_of_an_empty_table(table_path, capsys):
    Table.create(str(table_path), SCHEMA, ["dt"])
    assert main(["report", str(table_path)]) == 0
    assert "small files      no live data files" in capsys.readouterr().out.splitlines()


# --- the history charts: snapshot order along x, marked kinds, expired ids, any size ---------

T0 = datetime.datetime(2024, 3, 1, 12, 0, 5).timestamp() * 1000


class Chart(HTMLParser):
    """The elements of one history chart: each as (tag, attributes), and the text of its
    x-axis labels."""

    def __init__(self, chart_id):
        super().__init__()
        self.chart_id, self.inside, self.elements, self.labels = chart_id, False, [], []
        self._label = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "svg" and a.get("id") == self.chart_id:
            self.inside = True
        if self.inside:
            self.elements.append((tag, a))
            self._label = "x-label" in a.get("class", "").split()

    def handle_endtag(self, tag):
        if tag == "svg":
            self.inside = False

    def handle_data(self, data):
        if self.inside and self._label:
            self.labels.append(data)
            self._label = False

    def of_class(self, css):
        return [a for _, a in self.elements if css in a.get("class", "").split()]

    def points(self):
        """(snapshot id, x, value) of each point drawn, in document order."""
        return [(int(a["data-snapshot"]), float(a["cx"]), float(a["data-value"]))
                for a in self.of_class("point")]


def chart_of(page: str, chart_id: str = "chart-live-bytes") -> Chart:
    c = Chart(chart_id)
    c.feed(page)
    c.close()
    assert c.elements, f"no svg {chart_id}"
    return c


def synthetic_report(n, first=1, step_ms=100, overwrites=(), compacts=(), missing=(),
                     spike=None):
    """A report whose history is `n` snapshots from id `first` (skipping the ids in
    `missing`), `step_ms` apart; live bytes grow by 1000 a snapshot, an OVERWRITE drops a
    third of them, snapshot `spike` has ten times the bytes of its neighbours."""
    from paimon_commit.report import HealthReport
    hist, live, sid = [], 0, first
    while len(hist) < n:
        if sid in missing:
            sid += 1
            continue
        kind = "OVERWRITE" if sid in overwrites else "COMPACT" if sid in compacts else "APPEND"
        live = live * 2 // 3 if kind == "OVERWRITE" else live + 1000
        value = live * 10 if sid == spike else live
        hist.append({"id": sid, "time_millis": T0 + len(hist) * step_ms, "records": sid,
                     "live_bytes": value, "live_files": sid, "kind": kind})
        sid += 1
    return HealthReport("/t", "now", snapshots=n, earliest=hist[0]["id"],
                        latest=hist[-1]["id"], history=hist)


def test_history_x_is_the_snapshot_order_not_the_commit_time():
    """Snapshots a day apart, then five within 4 ms, then one 7 minutes later: every snapshot
    gets its own place, evenly spaced in snapshot order (on a time axis the five were one
    point and the first ones were squeezed to the left edge)."""
    rep = synthetic_report(3, step_ms=86400_000)
    last = rep.history[-1]
    for k in range(5):
        rep.history.append(dict(last, id=4 + k, time_millis=last["time_millis"] + 86400_000 + k))
    rep.history.append(dict(last, id=9, time_millis=rep.history[-1]["time_millis"] + 420_000))
    points = chart_of(render_html(rep)).points()
    assert [p[0] for p in points] == list(range(1, 10))
    xs = [p[1] for p in points]
    steps = [b - a for a, b in zip(xs, xs[1:])]
    assert min(steps) > 0 and max(steps) - min(steps) < 0.2, xs


def test_history_marks_overwrite_and_compact_with_a_legend(built):
    """The table's dropped partition (snapshot 4, OVERWRITE) is marked and in the legend;
    a table with no OVERWRITE and no COMPACT has no marker and no legend."""
    page = render_html(build_report(built))
    for chart_id in ("chart-live-bytes", "chart-live-files", "chart-records"):
        c = chart_of(page, chart_id)
        [marker] = c.of_class("marker")
        assert (marker["data-kind"], marker["data-snapshot"], marker["data-count"]) == \
            ("OVERWRITE", "4", "1")
        assert [a["data-kind"] for a in c.of_class("legend-item")] == ["point", "overwrite"]
        assert len(c.of_class("overwrite-line")) == 1
    rep = synthetic_report(5, compacts={3})
    c = chart_of(render_html(rep))
    assert [(a["data-kind"], a["data-snapshot"]) for a in c.of_class("marker")] == \
        [("COMPACT", "3")]
    assert [a["data-kind"] for a in c.of_class("legend-item")] == ["point", "compact"]
    c = chart_of(render_html(synthetic_report(5)))
    assert c.of_class("marker") == [] and c.of_class("legend") == []


def test_history_shades_expired_and_missing_ids(built):
    """After expiration the ids before the first retained snapshot are a band left of the
    first point, named in the caption; ids missing between two retained ones are a band
    between their points."""
    with built.new_commit() as c:
        c.expire_snapshots(retain_min=2)
    page = render_html(build_report(built))
    c = chart_of(page)
    [band] = c.of_class("gap")
    assert (band["data-first"], band["data-last"]) == ("1", "2")
    assert float(band["x"]) + float(band["width"]) <= c.points()[0][1]
    assert "live bytes, by snapshot (ids 3–4; 1–2 expired)" in page
    c = chart_of(render_html(synthetic_report(6, first=1, missing={3, 4})))
    [band] = c.of_class("gap")
    (_, x2, _), (_, x5, _) = [p for p in c.points() if p[0] in (2, 5)]
    assert (band["data-first"], band["data-last"]) == ("3", "4")
    assert x2 < float(band["x"]) and float(band["x"]) + float(band["width"]) < x5


def test_history_ticks_are_distinct_commit_times():
    """Five snapshots 100 ms apart: five ticks, times of day to the millisecond, the day in
    the caption once."""
    page = render_html(synthetic_report(5))
    c = chart_of(page)
    assert c.labels == ["12:00:05.000", "12:00:05.100", "12:00:05.200", "12:00:05.300",
                        "12:00:05.400"]
    assert "commit times of 2024-03-01" in page
    from paimon_commit.report_html import time_tick_labels
    day = 86400_000
    assert time_tick_labels([T0, T0 + day, T0 + 2 * day]) == (
        ["2024-03-01", "2024-03-02", "2024-03-03"], "")
    assert time_tick_labels([T0, T0 + 60_000]) == (["12:00", "12:01"], "2024-03-01")
    assert time_tick_labels([T0]) == (["12:00:05"], "2024-03-01")
    assert time_tick_labels([T0, T0]) == (["12:00:05", "12:00:05"], "2024-03-01")
    # 5,000 snapshots: at most six ticks, none the same
    c = chart_of(render_html(synthetic_report(5000)))
    assert 2 <= len(c.labels) <= 6 and len(set(c.labels)) == len(c.labels)


@pytest.mark.parametrize("n", [5000, 50000])
def test_many_snapshots_stay_small_and_keep_every_overwrite(n):
    """Thousands of snapshots: the SVG's size does not grow with them; the drawn points are
    in snapshot order with the table's values; each OVERWRITE is under a marker (one per
    column, with how many it stands for) and a single-snapshot spike is still drawn."""
    overwrites = {n // 3, n // 3 + 1, n // 3 + 2, n - 7}
    compacts = set(range(1550, n, 500)) - set(range(2000, 2100))
    rep = synthetic_report(n, first=1000, overwrites=overwrites, compacts=compacts,
                           missing=set(range(2000, 2100)), spike=n // 2)
    page = render_html(rep)
    svg = page[page.index('<svg id="chart-live-bytes"'):]
    svg = svg[:svg.index("</svg>")]
    assert len(svg) < 250_000
    c = chart_of(page)
    values = {h["id"]: h["live_bytes"] for h in rep.history}
    points = c.points()
    assert all(v == values[i] for i, _, v in points)
    assert [p[0] for p in points] == sorted(p[0] for p in points)
    xs = [x for _, x, _ in points]   # a column's lowest and highest share its x
    assert xs == sorted(xs) and len(set(xs)) > 400
    assert max(v for _, _, v in points) == max(values.values())   # the spike
    marked = c.of_class("overwrite")
    covered = set()
    for m in marked:
        start = sorted(i for i in overwrites if i >= int(m["data-snapshot"]))
        covered.update(start[:int(m["data-count"])])
    assert covered == overwrites
    assert sum(int(m["data-count"]) for m in c.of_class("compact")) == len(compacts)
    [leading, middle] = c.of_class("gap")
    assert (leading["data-first"], leading["data-last"]) == ("1", "999")
    assert (middle["data-first"], middle["data-last"]) == ("2000", "2099")
