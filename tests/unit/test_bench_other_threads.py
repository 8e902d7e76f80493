"""The benchmarks' ours_thread side: another library's threads alive and working in the process
(_common.OtherThreads, used by bench_orphan and bench_expire)."""
import os
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

from _common import OtherThreads, _os_threads  # noqa: E402
from bench_orphan import OPS  # noqa: E402


def test_other_threads_run_pyarrow_work_until_stopped():
    before = {t.name for t in threading.enumerate()}
    other = OtherThreads().start()
    try:
        names = {t.name for t in threading.enumerate()} - before
        assert {"bench-idle", "bench-pyarrow"} <= names
        # the two Python threads and pyarrow's CPU pool (started by the first operation)
        assert other.threads_at_start >= 3
        time.sleep(0.1)
    finally:
        facts = other.stop()
    assert facts["threads_at_start"] == other.threads_at_start
    assert facts["background_ops"] >= 1   # work went on meanwhile (every 5 ms)
    alive = {t.name for t in threading.enumerate()}
    assert not {"bench-idle", "bench-pyarrow"} & alive
    assert _os_threads() >= 1


def test_ours_thread_is_measured_dry_and_real_beside_ours():
    assert ("ours_thread", True) in OPS and ("ours_thread", False) in OPS
