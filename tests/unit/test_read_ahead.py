"""io/read_ahead.ordered: outcomes in the items' order, each error raised at its own turn,
never more than `workers` running at once, serial (no thread) with one worker, and the
storage's read_concurrency (1 locally, more on an object store)."""
import threading
import time

import pytest

from paimon_commit.io import read_ahead
from paimon_commit.io.base import FileIO
from paimon_commit.io.object_store import ObjectStoreFileIO


def test_outcomes_come_in_order_with_errors_at_their_turn():
    def fn(i):
        time.sleep(0.001 * (10 - i))       # later items finish first
        if i == 5:
            raise FileNotFoundError(f"item {i}")
        return i * i
    got = []
    for f in read_ahead.ordered(fn, range(10), workers=4):
        try:
            got.append(f.result())
        except FileNotFoundError as e:
            got.append(str(e))
    assert got == [0, 1, 4, 9, 16, "item 5", 36, 49, 64, 81]


def test_never_more_than_workers_at_once():
    lock, running, most = threading.Lock(), [0], [0]

    def fn(i):
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        time.sleep(0.005)
        with lock:
            running[0] -= 1
        return i
    assert [f.result() for f in read_ahead.ordered(fn, range(40), workers=3)] == list(range(40))
    assert 2 <= most[0] <= 3


def test_one_worker_runs_each_at_its_turn_on_the_caller_thread():
    threads = []
    out = read_ahead.ordered(lambda i: threads.append(threading.get_ident()) or i, [1, 2], 1)
    assert threads == []                        # nothing runs before it is asked for
    assert [f.result() for f in out] == [1, 2]
    assert set(threads) == {threading.get_ident()}


def test_leaving_early_cancels_what_has_not_started():
    started = []

    def fn(i):
        started.append(i)
        time.sleep(0.01)
        return i
    it = read_ahead.ordered(fn, range(1000), workers=2)
    assert next(it).result() == 0
    it.close()
    assert len(started) < 10


def test_reads_in_flight_follow_the_storage():
    assert FileIO.read_concurrency == 1
    assert ObjectStoreFileIO.read_concurrency > 1
    assert read_ahead.concurrency_of(object()) == 1
    assert read_ahead.concurrency_of(object(), override=4) == 4


@pytest.mark.parametrize("workers", [1, 8])
def test_an_empty_input_yields_nothing(workers):
    assert list(read_ahead.ordered(lambda i: i, [], workers)) == []
