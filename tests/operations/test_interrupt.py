"""Ctrl-C and SIGTERM during a destructive command (finding 11): the run stops at its next
safe point, prints the same `incomplete:` line as `--max-duration` (and JSON), exits 130 /
143, never a traceback; a second Ctrl-C aborts at once in one line. Real subprocesses
(`python -m paimon_commit`), signalled once the delete phase has started (its `-v` log
line); the table stays intact and what was not deleted yet is still there."""
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from invariants import assert_intact

from benchmarks.scale_tables import build_append_table, build_overwrite_table
from paimon_commit import Table

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
STRAYS = 20_000
AGAIN = "interrupted again: stopped at once; the table is consistent, a rerun continues"


def strays(path):
    return sum(1 for _, _, fs in os.walk(path) for f in fs if f.startswith("data-stray-"))


@pytest.fixture(scope="module")
def stray_table(tmp_path_factory):
    """A table with 20,000 old stray files (its delete phase takes a while); each test
    works on a copy (cp -a: the strays stay old)."""
    path = str(tmp_path_factory.mktemp("strays") / "wh" / "db.db" / "t")
    build_append_table(path, 200, snapshots=4, strays=STRAYS, manifest_entries=50)
    return path


@pytest.fixture
def table_copy(stray_table, tmp_path):
    dst = str(tmp_path / "wh" / "db.db" / "t")
    os.makedirs(os.path.dirname(dst))
    subprocess.run(["cp", "-a", stray_table, dst], check=True)
    return dst


def interrupted(argv, signals, started="deleting", delay=0.05):
    """Run `python -m paimon_commit ARGV -v`, send `signals` (a few ms apart) `delay` seconds
    after stderr logs the start of the delete phase; returns (exit code, stdout, stderr,
    seconds from the first signal to the exit)."""
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    p = subprocess.Popen([sys.executable, "-m", "paimon_commit", *map(str, argv), "-v"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    err_head = []
    for line in p.stderr:
        err_head.append(line)
        if started in line:
            break
    else:
        p.wait()
        pytest.fail(f"no delete phase: {''.join(err_head)}")
    time.sleep(delay)   # (into the phase: a first batch is being deleted)
    t = time.monotonic()
    for i, s in enumerate(signals):
        if i:
            time.sleep(0.02)
        p.send_signal(s)
    out, err = p.communicate(timeout=60)
    return p.returncode, out, "".join(err_head) + err, time.monotonic() - t


@pytest.mark.parametrize("sig, code, name", [(signal.SIGINT, 130, "SIGINT (Ctrl-C)"),
                                             (signal.SIGTERM, 143, "SIGTERM")])
def test_remove_orphan_files_stops_at_the_next_batch(table_copy, sig, code, name):
    rc, out, err, took = interrupted(["remove-orphan-files", table_copy], [sig])
    assert rc == code, err
    assert "Traceback" not in err
    last = out.splitlines()[-1]
    assert last.startswith(f"incomplete: stopped before a ") and \
        f"interrupted by {name}" in last, out
    assert last.endswith("a rerun continues") or last.endswith("a rerun deletes the rest")
    assert took < 5, took
    left = strays(table_copy)
    assert 0 < left <= STRAYS   # stopped early
    assert_intact(table_copy)
    # A rerun deletes the rest.
    r = subprocess.run([sys.executable, "-m", "paimon_commit", "remove-orphan-files",
                        table_copy, "--json"], capture_output=True, text=True,
                       env=dict(os.environ, PYTHONPATH=ROOT))
    assert r.returncode == 0 and json.loads(r.stdout)["deleted_files"] == left
    assert strays(table_copy) == 0


def test_remove_orphan_files_json_says_stopped_by_interrupt(table_copy):
    rc, out, err, _ = interrupted(["remove-orphan-files", table_copy, "--json"],
                                  [signal.SIGINT])
    assert rc == 130 and "Traceback" not in err, err
    r = json.loads(out)
    assert (r["complete"], r["stopped_by"]) == (False, "interrupt")
    assert "interrupted by SIGINT (Ctrl-C)" in r["message"]
    assert r["deleted_files"] == STRAYS - strays(table_copy)
    assert_intact(table_copy)


def test_max_duration_and_an_interrupt_end_without_a_traceback(table_copy):
    # Finding 11: with --max-duration, Ctrl-C ended in a KeyboardInterrupt traceback.
    rc, out, err, took = interrupted(["remove-orphan-files", table_copy, "--max-duration",
                                      "1 h"], [signal.SIGINT])
    assert rc == 130 and "Traceback" not in err, err
    assert out.splitlines()[-1].startswith("incomplete: ")
    assert 0 < strays(table_copy) <= STRAYS
    assert_intact(table_copy)


def test_a_second_ctrl_c_aborts_at_once_in_one_line(table_copy):
    rc, out, err, took = interrupted(["remove-orphan-files", table_copy],
                                     [signal.SIGINT, signal.SIGINT])
    assert rc == 130, err
    assert "Traceback" not in err
    # (The first may have stopped the run before the second came: then its summary is
    # printed too.)
    assert err.splitlines()[-1] == AGAIN or out.splitlines()[-1].startswith("incomplete: ")
    assert strays(table_copy) > 0
    assert_intact(table_copy)


def test_an_interrupted_expiration_stops_between_steps(tmp_path):
    path = str(tmp_path / "wh" / "db.db" / "ov")
    build_overwrite_table(path, 6000, 60)   # 100 OVERWRITE snapshots of 60 files each
    snapshots = len(Table.open(path).snapshots())
    rc, out, err, _ = interrupted(["expire-snapshots", path, "--retain-min", "1",
                                   "--retain-max", "1", "--time-retained", "0 s",
                                   "--max-deletes", "1000"], [signal.SIGINT],
                                  delay=0)   # (its whole delete phase can take 50 ms now)
    assert rc == 130, err
    assert "Traceback" not in err
    last = out.splitlines()[-1]
    assert last.startswith("incomplete: stopped before a ") and \
        "interrupted by SIGINT (Ctrl-C)" in last, out
    left = Table.open(path).snapshots()
    assert 1 < len(left) <= snapshots   # it stopped before finishing
    # Every retained snapshot reads (those being expired may be partly deleted, as after a
    # crash there, until the rerun).
    assert_intact(path, min_snapshot=left[-1].id)
    r = subprocess.run([sys.executable, "-m", "paimon_commit", "expire-snapshots", path,
                        "--retain-min", "1", "--retain-max", "1", "--time-retained", "0 s",
                        "--max-deletes", "1000"],
                       capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=ROOT))
    assert r.returncode == 0, r.stderr
    assert len(Table.open(path).snapshots()) == 1
    assert_intact(path)
