"""Progress: the callback protocol and the CLI's bar (only on a terminal, never with --json)."""
import io
import os
import pty
import subprocess
import sys
import time

from conftest import SCHEMA, make_rows

from paimon_commit import Table
from paimon_commit.progress import (ProgressEvent, TerminalProgress, Throttle, emit,
                                    terminal_progress)


class FakeTTY(io.StringIO):
    def isatty(self):
        return True


def test_terminal_progress_only_on_a_terminal_without_json():
    assert terminal_progress(json_output=False, stream=io.StringIO()) is None
    assert terminal_progress(json_output=True, stream=FakeTTY()) is None
    assert isinstance(terminal_progress(json_output=False, stream=FakeTTY()), TerminalProgress)


def test_bar_shows_phase_counts_and_rate():
    out = FakeTTY()
    bar = TerminalProgress(out)
    for i in range(0, 11):
        bar(ProgressEvent("deleting", i, 10, "files", "db.t"))
    bar(ProgressEvent("listing", 5, None, "files"))
    bar.close()
    text = out.getvalue()
    assert "deleting" in text and "10/10" in text and "files/s" in text and "db.t" in text
    assert "listing" in text


def test_bar_starts_no_thread():
    # Compaction forks worker processes only while no other thread runs: a bar's monitor
    # thread would send `paimon-commit compact` on a terminal back to threads.
    import threading
    before = set(threading.enumerate())
    bar = TerminalProgress(FakeTTY())
    bar(ProgressEvent("rewriting", 1, 10, "files"))
    time.sleep(0.05)
    assert set(threading.enumerate()) == before
    bar.close()


def test_emit_and_throttle():
    got = []
    emit(got.append, "listing", 1, 2, "files")
    emit(None, "listing", 1)                      # no callback: nothing happens
    assert got == [ProgressEvent("listing", 1, 2, "files")]
    t = Throttle(got.append, interval=3600)
    for i in range(1000):
        t("deleting", i, 999)
    # first of the phase and the last one only
    assert [e.done for e in got[1:]] == [0, 999]


def _warehouse(tmp_path):
    t = Table.create(str(tmp_path / "wh" / "db.db" / "t"), SCHEMA, ["dt"])
    w = t.new_writer()
    w.write_arrow(make_rows([1]))
    with t.new_commit() as c:
        c.commit(w.prepare_commit())
    return tmp_path / "wh"


def test_cli_draws_on_a_terminal_only(tmp_path):
    wh = _warehouse(tmp_path)
    cmd = [sys.executable, "-m", "paimon_commit", "maintain", str(wh), "--parallelism", "1"]
    env = dict(os.environ, PYTHONPATH=os.getcwd())
    # stderr is a pipe: no bar
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 0 and "maintaining" not in p.stderr
    # stderr is a terminal: the bar is drawn there (and the result still goes to stdout)
    p, drawn = _run_on_pty(cmd, env)
    assert p.returncode == 0 and "1 table(s): 1 ok" in p.stdout
    assert b"maintaining" in drawn and b"tables" in drawn
    # --json on a terminal: no bar either
    p, drawn = _run_on_pty(cmd + ["--json"], env)
    assert p.returncode == 0 and b"maintaining" not in drawn


def _run_on_pty(cmd, env):
    """Run with stderr on a pseudo-terminal; returns (completed process, what it drew).
    The slave stays open until the output is read: closing it first discards the data."""
    master, slave = pty.openpty()
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=slave, text=True, env=env,
                           timeout=120)
        os.set_blocking(master, False)
        drawn = b""
        while True:
            try:
                chunk = os.read(master, 65536)
            except (BlockingIOError, OSError):
                break
            if not chunk:
                break
            drawn += chunk
    finally:
        os.close(slave)
        os.close(master)
    return p, drawn


def test_orphan_cleanup_and_expiration_report_phases(tmp_path):
    from paimon_commit import CleanContext, ExpireConfig, ExpireSnapshots, OrphanFilesCleaner
    path = tmp_path / "wh" / "db.db" / "t"
    t = Table.create(str(path), SCHEMA, ["dt"], {"write-only": "true"})
    with t.new_commit() as c:
        for i in range(1, 6):
            w = t.new_writer()
            w.write_arrow(make_rows([i]))
            c.commit(w.prepare_commit(), i)
    bucket = path / "dt=19723" / "bucket-0"
    old = time.time() - 3 * 86400
    for j in range(3):
        (bucket / f"data-orphan-{j}.parquet").write_text("x")
        os.utime(bucket / f"data-orphan-{j}.parquet", (old, old))
    events = []
    r = OrphanFilesCleaner(CleanContext(str(path), progress=events.append)).clean()
    assert r.deleted_files == 3
    phases = [e.phase for e in events]
    assert phases.index("listing") < phases.index("reading metadata") < phases.index("deleting")
    assert [(e.done, e.total) for e in events if e.phase == "deleting"][-1] == (3, 3)
    events = []
    er = ExpireSnapshots(t.store, ExpireConfig(retain_min=1, time_retained_ms=0),
                         progress=events.append).expire()
    assert er.expired_snapshots == 4
    assert ("reading metadata", 4, 4) in [(e.phase, e.done, e.total) for e in events]
    last = [e for e in events if e.phase == "deleting"][-1]
    assert last.done == last.total == er.deleted_files


def test_cli_remove_orphan_files_draws_on_a_terminal(tmp_path):
    wh = _warehouse(tmp_path)
    cmd = [sys.executable, "-m", "paimon_commit", "remove-orphan-files",
           str(wh / "db.db" / "t"), "--dry-run"]
    env = dict(os.environ, PYTHONPATH=os.getcwd())
    p, drawn = _run_on_pty(cmd, env)
    assert p.returncode == 0 and b"listing" in drawn
    p, drawn = _run_on_pty(cmd + ["--json"], env)
    assert p.returncode == 0 and b"listing" not in drawn
