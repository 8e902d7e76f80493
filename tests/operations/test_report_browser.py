"""The HTML health report in a real browser: headless Chromium (Debian's `chromium` package)
opens the page, and the test reads, through the DevTools protocol (over a pipe, no extra
package), what the browser parsed and logged: no console errors, and the charts carry the
table's real numbers, one point per retained snapshot at its commit time, with time labels a
reader can tell apart.

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
        (first, l0, r0), (last, l1, r1) = labels
        assert first != last, (chart, labels)        # seconds apart: not the same minute
        assert r0 <= l1, (chart, labels)             # and they do not overlap on screen
    assert all(w > 0 for w in data["sizes"])
    # only fresh files and no tag: no bar chart and no tag table, each said in words
    assert data["empty"] == ["nothing to reclaim now", "no tags"]

    # The compaction numbers: what a compaction really removes.
    removes = int(data["removes"])
    before = len(t.live_files())
    assert removes == rep.small_files["compaction_removes"] > 0
    t.compact()
    assert before - len(t.live_files()) == removes
