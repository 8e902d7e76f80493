"""Ctrl-C and SIGTERM during `paimon-commit maintain` (issue 25): its tables run in worker
processes, which a signal to the command (`kill -INT PID`, `docker stop`, a supervisor) never
reaches. The command stops every worker at its next safe point, prints each table's
`incomplete` line and the summary, exits 130 / 143 without a traceback; a second Ctrl-C ends
it at once, workers included: nothing is deleted after the command has ended.

Real subprocesses (`python -m paimon_commit -v maintain ...`), signalled (the parent only)
once a worker logs the start of its delete phase."""
import os
import re
import signal
import subprocess
import sys
import time

import pytest

from invariants import assert_intact

from benchmarks.scale_tables import build_append_table

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
STRAYS = 20_000
AGAIN = "interrupted again: stopped at once; the table is consistent, a rerun continues"
BIG = ("a", "b")   # maintained at once (--parallelism 2), each with 20,000 old strays
SMALL = "c"        # queued behind them: not started when the signal comes


def strays(path):
    return sum(1 for _, _, fs in os.walk(path) for f in fs if f.startswith("data-stray-"))


@pytest.fixture(scope="module")
def warehouse_template(tmp_path_factory):
    wh = tmp_path_factory.mktemp("mwh") / "wh"
    for name in BIG:
        build_append_table(str(wh / "db.db" / name), 200, snapshots=4, strays=STRAYS,
                           manifest_entries=50)
    build_append_table(str(wh / "db.db" / SMALL), 20, snapshots=2, strays=10,
                       manifest_entries=50)
    return str(wh)


@pytest.fixture
def warehouse(warehouse_template, tmp_path):
    dst = str(tmp_path / "wh")
    subprocess.run(["cp", "-a", warehouse_template, dst], check=True)   # strays stay old
    return dst


def table(wh, name):
    return os.path.join(wh, "db.db", name)


def interrupted_maintain(wh, signals, group=False):
    """`maintain WH --orphans --parallelism 2`, `signals` sent to the command's process
    only (`kill -INT PID`), or with `group` to its whole process group as a terminal's
    Ctrl-C is, a few ms apart, once a worker logs its delete phase. Returns (exit code,
    stdout, stderr, seconds from the first signal to the exit)."""
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    p = subprocess.Popen([sys.executable, "-m", "paimon_commit", "-v", "maintain", wh,
                          "--orphans", "--parallelism", "2"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                         start_new_session=group)
    head = []
    for line in p.stderr:
        head.append(line)
        if "deleting" in line:
            break
    else:
        p.wait()
        pytest.fail(f"no delete phase: {''.join(head)}")
    time.sleep(0.05)   # (into the phase: a first batch is being deleted)
    t = time.monotonic()
    for i, s in enumerate(signals):
        if i:
            time.sleep(0.02)
        if group:
            os.killpg(p.pid, s)
        else:
            p.send_signal(s)
    out, err = p.communicate(timeout=60)
    return p.returncode, out, "".join(head) + err, time.monotonic() - t


def still_after_exit(wh):
    """The strays left in each big table, unchanged a while after the command ended (no
    worker outlived it, deleting on)."""
    left = {n: strays(table(wh, n)) for n in BIG}
    time.sleep(1.5)
    assert {n: strays(table(wh, n)) for n in BIG} == left, "a worker went on deleting"
    return left


@pytest.mark.parametrize("sig, code, name, group", [
    (signal.SIGINT, 130, "SIGINT (Ctrl-C)", False), (signal.SIGTERM, 143, "SIGTERM", False),
    (signal.SIGINT, 130, "SIGINT (Ctrl-C)", True)],   # a terminal's Ctrl-C: every process
    ids=["sigint", "sigterm", "ctrl-c-in-a-terminal"])
def test_an_interrupted_maintain_stops_every_worker_at_a_safe_point(warehouse, sig, code,
                                                                     name, group):
    rc, out, err, took = interrupted_maintain(warehouse, [sig], group)
    assert rc == code, err
    assert "Traceback" not in err, err
    lines = out.splitlines()
    # Each table started stopped at its next safe point, saying why; the queued one was
    # not started.
    for n in BIG:
        line = next(x for x in lines if x.startswith(f"db.{n} "))
        assert re.match(rf"db\.{n} +incomplete +orphan cleanup: stopped ", line), out
        assert f"interrupted by {name}" in line, out
    line = next(x for x in lines if x.startswith(f"db.{SMALL} "))
    assert re.fullmatch(rf"db\.{SMALL} +incomplete +not started: interrupted by "
                        rf"{re.escape(name)}; a rerun continues", line), out
    assert re.match(r"3 table\(s\): 0 ok, 0 failed, 0 skipped, 3 incomplete; deleted \d+ "
                    r"file\(s\)", lines[-2]), out
    assert lines[-1] == ("incomplete: an interrupt stopped 3 table(s) (see above); what was "
                         "done is reported, the tables are consistent and a rerun "
                         "continues"), out
    assert took < 10, took
    left = still_after_exit(warehouse)
    assert all(0 < n <= STRAYS for n in left.values()) and min(left.values()) < STRAYS
    assert strays(table(warehouse, SMALL)) == 10
    for n in BIG + (SMALL,):
        assert_intact(table(warehouse, n))
    # A rerun finishes every table.
    r = subprocess.run([sys.executable, "-m", "paimon_commit", "maintain", warehouse,
                        "--orphans", "--parallelism", "2"], capture_output=True, text=True,
                       env=dict(os.environ, PYTHONPATH=ROOT))
    assert r.returncode == 0, r.stdout + r.stderr
    assert [strays(table(warehouse, n)) for n in BIG + (SMALL,)] == [0, 0, 0]


@pytest.mark.parametrize("group", [False, True], ids=["kill-int", "ctrl-c-in-a-terminal"])
def test_a_second_ctrl_c_ends_maintain_and_its_workers_at_once(warehouse, group):
    rc, out, err, took = interrupted_maintain(warehouse, [signal.SIGINT, signal.SIGINT], group)
    assert rc == 130, err
    assert "Traceback" not in err, err
    # One line, from the command (the workers, which got both signals too, say nothing).
    assert err.splitlines()[-1] == AGAIN and err.count(AGAIN) == 1, err
    assert took < 5, took
    left = still_after_exit(warehouse)
    assert all(n > 0 for n in left.values())
    for n in BIG + (SMALL,):
        assert_intact(table(warehouse, n))
