"""The HTML health report in a real browser: headless Chromium (Debian's `chromium` package)
opens the page, and the test reads, through the DevTools protocol (over a pipe, no extra
package), what the browser parsed and logged: no console errors, and the charts carry the
table's real numbers, one point per retained snapshot at its commit time, with time labels a
reader can tell apart.

The history charts put snapshots in snapshot order: five committed within one second are
five places across the width, OVERWRITE and COMPACT snapshots are marked (with a legend), the
ids expired before the first retained snapshot are shaded, and 5,000 snapshots render in an SVG
no bigger than a few hundred thousand characters.

Skipped, with the reason, when no Chromium is installed (`apt-get install -y chromium`).
"""
from __future__ import annotations

import datetime
import json
import os
import shutil
import subprocess
import time

import pytest

from conftest import make_rows
from paimon_commit import Table
from paimon_commit.report import build_report, render_html

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") \
    or shutil.which("google-chrome")
if "browser" in os.environ.get("PAIMON_COMMIT_SKIP", "").split(","):
    CHROMIUM = None
    _WHY = "left out by `make test BROWSER=0`: the page is not checked in a browser"
else:
    _WHY = ("no Chromium on this machine (apt-get install -y chromium): the page is not "
            "checked in a browser")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason=_WHY)

COLLECT = """JSON.stringify({
  points: Object.fromEntries([...document.querySelectorAll('svg[id^=chart-]')].map(s =>
    [s.id, [...s.querySelectorAll('circle.point')].map(c => [Number(c.dataset.snapshot),
      Number(c.dataset.time), Number(c.dataset.value)])])),
  xlabels: Object.fromEntries([...document.querySelectorAll('svg[id^=chart-]')].map(s =>
    [s.id, [...s.querySelectorAll('text.x-label')].map(t => {
      const r = t.getBoundingClientRect(); return [t.textContent, r.left, r.right]; })])),
  xs: Object.fromEntries([...document.querySelectorAll('svg[id^=chart-]')].map(s =>
    [s.id, [...s.querySelectorAll('circle.point')].map(c => {
      const r = c.getBoundingClientRect(); return [Number(c.dataset.snapshot),
        (r.left + r.right) / 2]; })])),
  plot: Object.fromEntries([...document.querySelectorAll('svg[id^=chart-]')].map(s => {
    const r = s.getBoundingClientRect(); return [s.id, [r.left, r.right, s.outerHTML.length]];
  })),
  markers: Object.fromEntries([...document.querySelectorAll('svg[id^=chart-]')].map(s =>
    [s.id, [...s.querySelectorAll('.marker')].map(m => {
      const r = m.getBoundingClientRect(); return [m.dataset.kind, Number(m.dataset.snapshot),
        Number(m.dataset.count), (r.left + r.right) / 2, r.width, r.height,
        getComputedStyle(m).fill]; })])),
  gaps: Object.fromEntries([...document.querySelectorAll('svg[id^=chart-]')].map(s =>
    [s.id, [...s.querySelectorAll('rect.gap')].map(g => {
      const r = g.getBoundingClientRect(); return [Number(g.dataset.first),
        Number(g.dataset.last), r.left, r.right, g.querySelector('title').textContent]; })])),
  legend: Object.fromEntries([...document.querySelectorAll('svg[id^=chart-]')].map(s =>
    [s.id, [...s.querySelectorAll('.legend-item')].map(g => [g.dataset.kind,
      g.textContent, getComputedStyle(g.querySelector('rect')).fill])])),
  sizes: [...document.querySelectorAll('svg')].map(s => s.getBoundingClientRect().width),
  bars: [...document.querySelectorAll('rect.bar')].map(r => [r.dataset.label,
    Number(r.dataset.value)]),
  empty: [...document.querySelectorAll('.empty')].map(e => e.textContent),
  removes: (document.getElementById('compaction-removes') || {dataset: {}}).dataset.value,
})"""


class Browser:
    """Headless Chromium driven over --remote-debugging-pipe (fd 3: commands in, fd 4:
    replies and events out, NUL-separated JSON)."""

    def __init__(self, tmp_path):
        cmd_r, self._cmd_w = os.pipe()
        self._out_r, out_w = os.pipe()

        def fds():   # in the child: the pipes on the fds Chromium reads and writes
            os.dup2(cmd_r, 3)
            os.dup2(out_w, 4)
        self.proc = subprocess.Popen(
            [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--remote-debugging-pipe", f"--user-data-dir={tmp_path / 'chromium'}",
             "about:blank"],
            close_fds=False, preexec_fn=fds, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL)
        os.close(cmd_r)
        os.close(out_w)
        self._buf = b""
        self._id = 0
        self.events = []

    def _read(self) -> dict:
        while b"\0" not in self._buf:
            chunk = os.read(self._out_r, 1 << 16)
            if not chunk:
                raise RuntimeError("Chromium closed the DevTools pipe")
            self._buf += chunk
        raw, self._buf = self._buf.split(b"\0", 1)
        return json.loads(raw)

    def send(self, method, session=None, **params) -> dict:
        self._id += 1
        msg = {"id": self._id, "method": method, "params": params}
        if session:
            msg["sessionId"] = session
        os.write(self._cmd_w, json.dumps(msg).encode() + b"\0")
        while True:
            m = self._read()
            if m.get("id") == self._id:
                if "error" in m:
                    raise RuntimeError(f"{method}: {m['error']}")
                return m.get("result", {})
            self.events.append(m)

    def wait_for(self, method, timeout=30.0) -> None:
        deadline = time.monotonic() + timeout
        while not any(e.get("method") == method for e in self.events):
            if time.monotonic() > deadline:
                raise TimeoutError(method)
            self.events.append(self._read())

    def open(self, url: str):
        """Load `url`; returns (the COLLECT result, console/log errors)."""
        target = self.send("Target.createTarget", url="about:blank")["targetId"]
        s = self.send("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        for domain in ("Runtime.enable", "Log.enable", "Page.enable"):
            self.send(domain, s)
        self.events.clear()
        self.send("Page.navigate", s, url=url)
        self.wait_for("Page.loadEventFired")
        r = self.send("Runtime.evaluate", s, expression=COLLECT, returnByValue=True)
        if "exceptionDetails" in r:
            raise AssertionError(f"the page's data cannot be read: {r['exceptionDetails']}")
        data = json.loads(r["result"]["value"])
        errors = [e for e in self.events
                  if e.get("method") == "Runtime.exceptionThrown"
                  or (e.get("method") == "Runtime.consoleAPICalled"
                      and e["params"]["type"] in ("error", "assert"))
                  or (e.get("method") == "Log.entryAdded"
                      and e["params"]["entry"]["level"] == "error")]
        return data, errors

    def close(self):
        try:
            self.send("Browser.close")
        except (RuntimeError, OSError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._cmd_w)
        os.close(self._out_r)


@pytest.fixture
def browser(tmp_path):
    b = Browser(tmp_path)
    yield b
    b.close()


def _page(tmp_path, name, content) -> str:
    p = tmp_path / name
    p.write_text(content, encoding="utf-8")
    return p.as_uri()


def test_browser_sees_console_errors(browser, tmp_path):
    """The check can fail: a page with a script error and a missing image is caught."""
    url = _page(tmp_path, "bad.html", '<html><body><img src="missing.png">'
                '<script>console.error("boom"); nosuch();</script></body></html>')
    _, errors = browser.open(url)
    assert len(errors) >= 2, errors


def test_report_page_in_chromium(browser, tmp_path):
    """Snapshots seconds apart (within one minute), small files in two partitions: the charts
    carry each retained snapshot's real live bytes, files and records at its commit time; the
    time labels differ; no console error; the small-files numbers are what compaction then
    really does."""
    path = tmp_path / "wh" / "db.db" / "t"
    t = Table.create(str(path), make_rows([0]).schema, ["dt"],
                     {"snapshot.num-retained.min": "3", "snapshot.num-retained.max": "3",
                      "compaction.min.file-num": "3"})
    for i in range(6):
        w = t.new_writer()
        w.write_arrow(make_rows(range(i * 10, i * 10 + 3 + i),
                                dt=datetime.date(2024, 1, 1 + i % 2)))
        with t.new_commit() as c:
            c.commit(w.prepare_commit())
        time.sleep(0.3)
    rep = build_report(t)
    data, errors = browser.open(_page(tmp_path, "report.html", render_html(rep)))
    assert errors == []

    retained = t.snapshots()
    assert [s.id for s in retained] == [4, 5, 6]
    live_bytes = [sum(f.file_size for f in t.live_files(snapshot_id=s.id)) for s in retained]
    live_files = [len(t.live_files(snapshot_id=s.id)) for s in retained]
    records = [t.read_arrow(snapshot_id=s.id).num_rows for s in retained]
    times = [s.time_millis for s in retained]
    assert data["points"]["chart-live-bytes"] == [list(p) for p in zip([4, 5, 6], times,
                                                                        live_bytes)]
    assert data["points"]["chart-live-files"] == [list(p) for p in zip([4, 5, 6], times,
                                                                       live_files)]
    assert data["points"]["chart-records"] == [list(p) for p in zip([4, 5, 6], times,
                                                                    records)]
    for chart, labels in data["xlabels"].items():
        assert len(labels) == 3, (chart, labels)     # one tick a snapshot
        texts = [text for text, _, _ in labels]
        assert len(set(texts)) == 3, (chart, labels)  # 0.3 s apart: told apart
        assert all(r0 <= l1 for (_, _, r0), (_, l1, _) in zip(labels, labels[1:])), \
            (chart, labels)                          # and they do not overlap on screen
    assert all(w > 0 for w in data["sizes"])
    # only fresh files and no tag: no bar chart and no tag table, each said in words
    assert data["empty"] == ["nothing to reclaim now", "no tags"]

    # The compaction numbers: what a compaction really removes.
    removes = int(data["removes"])
    before = len(t.live_files())
    assert removes == rep.small_files["compaction_removes"] > 0
    t.compact()
    assert before - len(t.live_files()) == removes


def test_snapshots_within_one_second_and_an_overwrite_in_chromium(browser, tmp_path,
                                                                   monkeypatch):
    """Snapshot 3, then seven minutes later five snapshots within one second, one of them a
    dropped partition (OVERWRITE) and one a compaction; snapshots 1 and 2 expired. On screen:
    the six points spread evenly over the whole width (on a time axis the five were one
    pixel-wide spike at the right edge), the OVERWRITE and COMPACT markers are big enough to
    see, in distinct colours named by the legend, the expired ids are a band left of the
    first point, and the tick labels differ and do not overlap."""
    import types
    from paimon_commit.operations import commit as commit_mod
    now = [datetime.datetime(2024, 3, 1, 12).timestamp()]
    monkeypatch.setattr(commit_mod, "time", types.SimpleNamespace(
        time=lambda: now[0], perf_counter=time.perf_counter, sleep=time.sleep,
        monotonic=time.monotonic))
    d1, d2 = datetime.date(2024, 1, 1), datetime.date(2024, 1, 2)
    path = tmp_path / "wh" / "db.db" / "t"
    t = Table.create(str(path), make_rows([0]).schema, ["dt"],
                     {"snapshot.num-retained.min": "6", "snapshot.num-retained.max": "6",
                      "compaction.min.file-num": "3"})

    def append(ids, dt, after):
        now[0] += after
        w = t.new_writer()
        w.write_arrow(make_rows(ids, dt=dt))
        with t.new_commit() as c:
            c.commit(w.prepare_commit())
    append(range(0, 4), d1, 0)
    append(range(10, 14), d2, 0.1)
    append(range(20, 24), d1, 0.1)             # snapshot 3
    append(range(30, 34), d2, 420)             # 4: seven minutes later ...
    append(range(40, 44), d1, 0.15)            # 5: ... and then within one second
    now[0] += 0.15
    with t.new_commit() as c:
        c.drop_partitions([{"dt": d2}])        # 6: OVERWRITE
    now[0] += 0.15
    t.compact()                                # 7: COMPACT (dt=2024-01-01 has 3 files)
    append(range(50, 54), d1, 0.15)            # 8
    retained = t.snapshots()
    assert [(s.id, s.commit_kind) for s in retained] == [
        (3, "APPEND"), (4, "APPEND"), (5, "APPEND"), (6, "OVERWRITE"), (7, "COMPACT"),
        (8, "APPEND")]
    assert retained[-1].time_millis - retained[1].time_millis < 1000
    data, errors = browser.open(_page(tmp_path, "report.html", render_html(build_report(t))))
    assert errors == []
    for chart in ("chart-live-bytes", "chart-live-files", "chart-records"):
        left, right, _ = data["plot"][chart]
        width = right - left
        xs = data["xs"][chart]
        assert [sid for sid, _ in xs] == [3, 4, 5, 6, 7, 8]
        steps = [b - a for (_, a), (_, b) in zip(xs, xs[1:])]
        assert min(steps) > width / 10, (chart, xs)           # distinct places ...
        assert max(steps) - min(steps) < 1, (chart, xs)       # ... evenly spaced
        plot_right = right - 24 * width / 980   # the svg's right margin
        assert plot_right - xs[-1][1] <= steps[0] / 2 + 1, (chart, xs)   # to the right edge
        at = dict(xs)
        markers = {m[0]: m for m in data["markers"][chart]}
        assert sorted(markers) == ["COMPACT", "OVERWRITE"]
        for kind, sid in (("OVERWRITE", 6), ("COMPACT", 7)):
            _, snapshot, count, x, w, h, _ = markers[kind]
            assert (snapshot, count) == (sid, 1)
            assert abs(x - at[sid]) < 1 and w >= 6 and h >= 6, markers[kind]
        legend = {kind: (text, fill) for kind, text, fill in data["legend"][chart]}
        assert legend["overwrite"] == ("OVERWRITE", markers["OVERWRITE"][6])
        assert legend["compact"] == ("COMPACT", markers["COMPACT"][6])
        assert len({markers["OVERWRITE"][6], markers["COMPACT"][6], legend["point"][1]}) == 3
        [(first, last, g0, g1, title)] = data["gaps"][chart]
        assert (first, last, title) == (1, 2, "snapshots 1–2 expired")
        assert g1 - g0 >= 5 and 0 < xs[0][1] - g1 <= steps[0] / 2 + 1   # left of the first
        labels = data["xlabels"][chart]
        assert len({text for text, _, _ in labels}) == len(labels) >= 2
        assert all(r0 <= l1 for (_, _, r0), (_, l1, _) in zip(labels, labels[1:]))


def test_five_thousand_snapshots_in_chromium(browser, tmp_path):
    """5,000 snapshots (a report's history; real commits would take minutes), three of them
    OVERWRITE and two next to each other: the page loads without error, each chart's SVG stays
    small, the points drawn are in snapshot order left to right with the table's values, and
    every OVERWRITE is under a visible marker."""
    from paimon_commit.report import HealthReport
    t0 = datetime.datetime(2024, 3, 1, 12).timestamp() * 1000
    overwrites = {1700, 1701, 4200}
    hist, live = [], 0
    for i, sid in enumerate(range(1001, 6001)):
        kind = "OVERWRITE" if sid in overwrites else "APPEND"
        live = live // 2 if kind == "OVERWRITE" else live + 1000 + sid % 7
        hist.append({"id": sid, "time_millis": t0 + i * 50, "records": live // 100,
                     "live_bytes": live, "live_files": i + 1, "kind": kind})
    rep = HealthReport("/t", "now", snapshots=5000, earliest=1001, latest=6000, history=hist)
    data, errors = browser.open(_page(tmp_path, "report.html", render_html(rep)))
    assert errors == []
    values = {h["id"]: h for h in hist}
    for chart, key in (("chart-live-bytes", "live_bytes"), ("chart-live-files", "live_files"),
                       ("chart-records", "records")):
        left, right, size = data["plot"][chart]
        assert size < 250_000, (chart, size)
        points = data["points"][chart]
        assert 400 < len(points) < 2000
        assert all(values[sid]["time_millis"] == ms and values[sid][key] == v
                   for sid, ms, v in points)
        xs = data["xs"][chart]
        assert [sid for sid, _ in xs] == sorted(sid for sid, _ in xs)
        assert [x for _, x in xs] == sorted(x for _, x in xs)
        plot = (right - left) * (980 - 78 - 24) / 980   # the svg less its margins
        assert xs[-1][1] - xs[0][1] > 0.95 * plot   # across the width
        covered = set()
        for kind, sid, count, x, w, h, _ in data["markers"][chart]:
            assert kind == "OVERWRITE" and w >= 6 and h >= 6
            covered.update(range(sid, sid + count))
        assert overwrites <= covered and covered - overwrites <= set(range(1700, 1702))
        [(first, last, _, _, title)] = data["gaps"][chart]
        assert (first, last, title) == (1, 1000, "snapshots 1–1,000 expired")
