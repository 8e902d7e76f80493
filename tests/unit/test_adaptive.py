"""The adaptive limit of requests in flight (io/adaptive.py): its arithmetic (slow start,
halving once per congestion event, additive increase, calm recovery), its blocking, and the
retry loop that feeds it. No timing: clocks and sleeps are injected."""
import threading

import pytest

from paimon_commit.io import adaptive
from paimon_commit.io.adaptive import AdaptiveLimit, RetryPolicy, Verdict


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def _served(lim, n):
    """`n` successes while the limit binds (as with a backlog of requests: each slot freed
    is taken again at once); then what is left in flight ends without a verdict."""
    tokens = []
    for _ in range(n):
        while lim.in_flight < lim.limit:
            tokens.append(lim.acquire())
        lim.release(tokens.pop(0), Verdict.DONE)
    for t in tokens:
        lim.release(t, Verdict.FAIL)


def test_slow_start_adds_one_per_success_up_to_the_maximum():
    lim = AdaptiveLimit(64, initial=16)
    assert lim.limit == 16
    _served(lim, 16)            # one round trip of 16 successes: doubled
    assert lim.limit == 32
    _served(lim, 100)
    assert lim.limit == 64      # never above the maximum


def test_a_throttle_halves_the_limit_and_ends_slow_start():
    lim = AdaptiveLimit(64, initial=16)
    lim.release(lim.acquire(), Verdict.CONGESTED)
    assert (lim.limit, lim.cuts) == (8, 1)
    _served(lim, 8)             # additive now: +1 per window of `limit` successes
    assert lim.limit == 9
    _served(lim, 9)
    assert lim.limit == 10


def test_requests_in_flight_at_a_cut_do_not_cut_again():
    lim = AdaptiveLimit(64, initial=16)
    tokens = [lim.acquire() for _ in range(12)]    # a burst, all refused
    for t in tokens:
        lim.release(t, Verdict.CONGESTED)
    assert (lim.limit, lim.cuts) == (8, 1)         # one congestion event, one cut
    t = lim.acquire()                               # sent after the cut, refused too
    lim.release(t, Verdict.CONGESTED)
    assert (lim.limit, lim.cuts) == (4, 2)


def test_the_limit_never_falls_below_the_minimum():
    lim = AdaptiveLimit(8, initial=8, minimum=2)
    for _ in range(10):
        lim.release(lim.acquire(), Verdict.CONGESTED)
    assert lim.limit == 2


def test_a_limit_that_does_not_bind_does_not_grow():
    lim = AdaptiveLimit(64, initial=16)
    for _ in range(100):                            # one request at a time
        lim.release(lim.acquire(), Verdict.DONE)
    assert lim.limit == 16
    lim = AdaptiveLimit(64, initial=1)
    for _ in range(3):      # at 1 the limit binds, and grows to 2; at 2 one at a time does not
        lim.release(lim.acquire(), Verdict.DONE)
    assert lim.limit == 2


def test_other_failures_leave_the_limit_alone():
    lim = AdaptiveLimit(64, initial=16)
    for v in (Verdict.RETRY, Verdict.FAIL):
        lim.release(lim.acquire(), v)
    assert (lim.limit, lim.cuts, lim.in_flight) == (16, 0, 0)


def test_after_a_calm_spell_slow_start_resumes():
    clock = Clock()
    lim = AdaptiveLimit(64, initial=16, calm_seconds=60, clock=clock)
    lim.release(lim.acquire(), Verdict.CONGESTED)
    lim.release(lim.acquire(), Verdict.CONGESTED)
    assert lim.limit == 4
    clock.now = 59
    _served(lim, 4)
    assert lim.limit == 5                           # still additive
    clock.now = 121
    _served(lim, 5)
    assert lim.limit == 10                          # +1 per success again


def test_acquire_waits_for_a_slot_beyond_the_limit():
    lim = AdaptiveLimit(4, initial=2)
    a, b = lim.acquire(), lim.acquire()
    got = threading.Event()

    def third():
        lim.release(lim.acquire(), Verdict.FAIL)
        got.set()
    th = threading.Thread(target=third)
    th.start()
    assert not got.wait(0.2)        # blocked: two in flight, limit two
    assert lim.in_flight == 2
    lim.release(a, Verdict.FAIL)
    th.join(10)
    assert got.is_set()
    lim.release(b, Verdict.FAIL)
    assert lim.state() == {"limit": 2, "in_flight": 0, "cuts": 0, "peak": 2}


def test_one_limit_per_store_for_the_process():
    key = ("test", object())
    a = adaptive.limit_for(key, 32, 8)
    assert adaptive.limit_for(key, 16) is a and a.maximum == 32
    assert adaptive.limit_for(key, 64) is a and a.maximum == 64     # raised, never lowered
    assert adaptive.limit_for(("test", object()), 32) is not a


def test_backoff_grows_to_its_ceiling_with_half_of_it_random():
    p = RetryPolicy(retries=5, init_s=0.1, max_s=1.0, base=2.0)
    assert [p.backoff(n, rng=lambda: 0.0) for n in range(5)] == \
        pytest.approx([0.05, 0.1, 0.2, 0.4, 0.5])
    assert [p.backoff(n, rng=lambda: 1.0) for n in range(5)] == \
        pytest.approx([0.1, 0.2, 0.4, 0.8, 1.0])


class Flaky:
    def __init__(self, errors, value="ok"):
        self.errors = list(errors)
        self.value = value
        self.calls = 0

    def __call__(self):
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return self.value


def _classify(e):
    return {"503": Verdict.CONGESTED, "500": Verdict.RETRY}.get(str(e), Verdict.FAIL)


def test_call_retries_throttles_and_cuts_the_limit():
    lim = AdaptiveLimit(64, initial=16)
    sleeps = []
    fn = Flaky([RuntimeError("503"), RuntimeError("500")])
    assert adaptive.call(lim, fn, _classify, RetryPolicy(retries=5), sleep=sleeps.append) \
        == "ok"
    assert fn.calls == 3 and len(sleeps) == 2
    assert (lim.cuts, lim.in_flight) == (1, 0)


def test_call_raises_an_answer_at_once_and_the_last_error_after_the_retries():
    lim = AdaptiveLimit(8)
    fn = Flaky([ValueError("404")])
    with pytest.raises(ValueError):
        adaptive.call(lim, fn, _classify, RetryPolicy(retries=5), sleep=lambda s: None)
    assert fn.calls == 1
    fn = Flaky([RuntimeError("503")] * 10)
    with pytest.raises(RuntimeError, match="503"):
        adaptive.call(lim, fn, _classify, RetryPolicy(retries=3), sleep=lambda s: None)
    assert fn.calls == 4 and lim.in_flight == 0
    fn = Flaky([RuntimeError("500")])
    with pytest.raises(RuntimeError):   # object-store.max-retries = 0: no retry at all
        adaptive.call(lim, fn, _classify, RetryPolicy(retries=0), sleep=lambda s: None)
    assert fn.calls == 1


def test_call_stops_retrying_after_the_retry_timeout():
    lim = AdaptiveLimit(8)
    clock = Clock()

    def sleep(s):
        clock.now += 40
    fn = Flaky([RuntimeError("503")] * 10)
    with pytest.raises(RuntimeError):
        adaptive.call(lim, fn, _classify, RetryPolicy(retries=10, timeout_s=60), sleep=sleep,
                      clock=clock)
    assert fn.calls == 3      # failed at 0, 40 and 80 s: no retry after a failure past 60 s


def test_after_a_cut_the_limit_grows_back_to_just_below_where_it_was_cut():
    # A store that refuses beyond 4 in flight: growing back to 4 and halving again drew a
    # 503 every few requests served (test_s3_adaptive); below the limit cut at, until calm.
    clock = Clock()
    lim = AdaptiveLimit(64, initial=4, calm_seconds=60, clock=clock)
    tokens = [lim.acquire() for _ in range(4)]
    lim.release(tokens.pop(), Verdict.CONGESTED)
    for t in tokens:
        lim.release(t, Verdict.DONE)
    assert lim.cuts == 1 and lim.limit <= 3        # halved (and regrowing)
    _served(lim, 100)
    assert lim.limit == 3                           # grew back, and stays below 4
    clock.now = 61
    _served(lim, 100)
    assert lim.limit > 4                            # calm again: grows past it
