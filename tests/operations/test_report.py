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
    assert page.sections == ["summary", "reclaimable", "history", "small-files", "partitions",
                             "tags"]
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
