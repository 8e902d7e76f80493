"""`maintain`'s lease settings reach its worker processes (issue 25): `--lease-wait` and
`--lease-duration` (lease.lease_settings) hold for every table, also those maintained in
worker processes that a fork server starts (when the caller runs threads of its own), which
do not share the caller's settings. A table whose lease another process holds is skipped
once the wait is over, naming the holder; the others are maintained."""
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest

from conftest import SCHEMA, files_under, make_rows, without_bill, write

from paimon_commit import Table
from paimon_commit.lease import lease_settings
from paimon_commit.warehouse import maintain_warehouse

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HOLD = """
import sys
from paimon_commit import Table
from paimon_commit.lease import maintenance_lease
with maintenance_lease(Table.open(sys.argv[1]).store, "expire-snapshots", duration_ms=600_000):
    print("held", flush=True)
    sys.stdin.readline()
"""
EAGER = {"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "1",
         "snapshot.time-retained": "0 ms", "write-only": "true"}


@pytest.fixture
def warehouse(tmp_path):
    """<wh>/db.db/{a,b}, 4 snapshots each (maintain expires all but the last)."""
    wh = tmp_path / "wh"
    for name in ("a", "b"):
        t = Table.create(str(wh / "db.db" / name), SCHEMA, ["dt", "hr"], EAGER)
        for i in range(1, 5):
            write(t, make_rows([i]))
    return wh


@pytest.fixture
def held(warehouse):
    """db.a's maintenance lease, held by another process (10 min) until the test ends."""
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    p = subprocess.Popen([sys.executable, "-c", HOLD, str(warehouse / "db.db" / "a")],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
    assert p.stdout.readline().strip() == "held"
    yield p
    p.stdin.write("\n")
    p.stdin.close()
    p.wait(30)


def maintain_records(path):
    """The lease records maintain took on the table (not the releases)."""
    d = os.path.join(str(path), ".maintenance")
    out = []
    for n in os.listdir(d) if os.path.isdir(d) else []:
        with open(os.path.join(d, n)) as f:
            r = json.load(f)
        if r["operation"] == "maintain" and not r["released"]:
            out.append(r)
    return out


def test_maintain_lease_wait_skips_a_held_table_in_its_workers(warehouse, held):
    before = files_under(warehouse / "db.db" / "a")
    t0 = time.monotonic()
    r = subprocess.run([sys.executable, "-m", "paimon_commit", "maintain", str(warehouse),
                        "--parallelism", "2", "--lease-wait", "0", "--lease-duration", "40 s"],
                       capture_output=True, text=True,
                       env=dict(os.environ, PYTHONPATH=ROOT), timeout=120)
    took = time.monotonic() - t0
    assert r.returncode == 1, r.stdout + r.stderr   # a skipped table, as a failed one
    lines = without_bill(r.stdout).splitlines()
    ts = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC"
    a = str(warehouse / "db.db" / "a")
    assert re.fullmatch(
        rf"db\.a +skipped +table {re.escape(a)} is being maintained by "
        rf"{re.escape(socket.gethostname())} pid {held.pid} \(expire-snapshots since {ts}, "
        rf"lease until {ts}\); rerun later or raise --lease-wait", lines[0]), r.stdout
    assert re.match(r"db\.b +ok +3 snapshot\(s\)", lines[1]), r.stdout
    assert lines[-1].startswith("2 table(s): 1 ok, 0 failed, 1 skipped"), r.stdout
    assert took < 30, took   # not the default wait of 60 s
    assert files_under(warehouse / "db.db" / "a") == before
    assert [s.id for s in Table.open(str(warehouse / "db.db" / "b")).snapshots()] == [4]
    # db.b's lease was taken for --lease-duration.
    assert [x["expiryMillis"] - x["startMillis"] for x in
            maintain_records(warehouse / "db.db" / "b")] == [40_000]


def test_lease_settings_reach_workers_a_fork_server_starts(warehouse, held):
    # A caller running a thread of its own gets workers from a fork server
    # (warehouse._process_context), which do not inherit its lease_settings.
    done = threading.Event()
    other = threading.Thread(target=done.wait, daemon=True)
    other.start()
    try:
        t0 = time.monotonic()
        with lease_settings(wait_s=0, duration_ms=40_000):
            results = maintain_warehouse(str(warehouse), parallelism=2)
        took = time.monotonic() - t0
    finally:
        done.set()
    a, b = results
    assert (a.table, a.status) == ("db.a", "skipped"), a
    assert f"pid {held.pid} (expire-snapshots since " in a.reason
    assert (b.table, b.status, b.snapshots_expired) == ("db.b", "ok", 3), b
    assert took < 30, took
    assert [x["expiryMillis"] - x["startMillis"] for x in
            maintain_records(warehouse / "db.db" / "b")] == [40_000]


@pytest.mark.parametrize("argv", [["maintain", "{wh}", "--parallelism", "2"],
                                  ["expire-snapshots", "{a}", "--retain-max", "1"]])
def test_ctrl_c_stops_a_wait_for_the_lease_at_once(warehouse, held, argv):
    # Waiting for another holder is a safe point (nothing done yet): a Ctrl-C must not wait
    # out --lease-wait, in maintain's workers as in a table command.
    a = str(warehouse / "db.db" / "a")
    argv = [x.format(wh=warehouse, a=a) for x in argv]
    before = files_under(a)
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    p = subprocess.Popen([sys.executable, "-m", "paimon_commit", "-v", *argv,
                          "--lease-wait", "30 s"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=env)
    head = []
    for line in p.stderr:
        head.append(line)
        if "waiting up to" in line:
            break
    else:
        p.wait()
        pytest.fail(f"never waited: {''.join(head)}")
    assert f"table {a} is being maintained by " in head[-1]
    t = time.monotonic()
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=60)
    took = time.monotonic() - t
    assert p.returncode == 130, "".join(head) + err
    assert "Traceback" not in err, err
    assert took < 5, took
    if argv[0] == "maintain":
        assert re.fullmatch(
            r"db\.a +incomplete +waiting for the maintenance lease: stopped before a delete "
            r"step: interrupted by SIGINT \(Ctrl-C\); what the steps before did is reported, "
            r"the table is consistent and a rerun continues", out.splitlines()[0]), out
    else:
        assert out.splitlines()[-1] == (
            "incomplete: stopped before a delete step: interrupted by SIGINT (Ctrl-C); "
            "deleted 0 file(s); the table is consistent, a rerun continues"), out
    assert files_under(a) == before
