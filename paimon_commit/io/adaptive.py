"""Requests in flight that adapt to the store: an AIMD limit per store, and the retry loop
that feeds it.

Why: an operation on an object store keeps many requests in flight (io/read_ahead.py, listings
and deletes on thread pools), tuned for a store that serves thousands per second. A store that
serves fewer answers the excess `503 SlowDown` (S3; `429` on GCS, `503 ServerBusy` on Azure).
Retried by each thread on its own, after its own backoff, the same number of requests comes
back and most are refused again: a storm of 503s, about one per request served (measured:
benchmarks/bench_latency.py). TCP's answer to the same problem is to adapt how much is in
flight to what the path carries, and that is what `AdaptiveLimit` does, for every request
this process sends to one store:

- start below the maximum and double per round trip (+1 per success, "slow start") until the
  store first pushes back or the maximum is reached;
- on a throttling answer (503, 429) or a timeout: halve the limit, once per congestion event
  (a request that was already in flight when the limit was cut tells nothing new: it started
  under the old limit);
- after that, grow by one per window of `limit` successes (additive increase), and after a
  calm spell (no pushback for `calm_seconds`) double again, so that one bad minute does not
  slow a long-running process for the rest of its life;
- grow only while the limit binds (requests wait for a slot, or all slots are taken): a phase
  that sends one request at a time proves nothing about the store, and a limit grown on it
  would let the next parallel phase storm the store again.

One limit per store (scheme, endpoint, bucket), shared by every FileIO and thread of the
process (`limit_for`): the store throttles the process, not one operation.

`call` runs one request under the limit and retries what may be retried, with exponential
backoff and jitter; what a failure means (retry? congestion?) is the caller's `classify`, which
knows the client library's errors (io/object_store.py).
"""
from __future__ import annotations

import enum
import logging
import random
import threading
import time
from typing import Callable, Dict, Hashable, NamedTuple, Optional, TypeVar

log = logging.getLogger(__name__)

__all__ = ["AdaptiveLimit", "Verdict", "RetryPolicy", "call", "limit_for"]

T = TypeVar("T")


class AdaptiveLimit:
    """How many requests may be in flight to one store now (additive increase,
    multiplicative decrease). `acquire` blocks until a slot is free and returns a token;
    `release(token, ...)` says how the request went."""

    def __init__(self, maximum: int, initial: Optional[int] = None, minimum: int = 1,
                 calm_seconds: float = 60.0, clock: Callable[[], float] = time.monotonic,
                 name: str = "store"):
        if maximum < 1 or minimum < 1 or minimum > maximum:
            raise ValueError(f"limits must satisfy 1 <= minimum <= maximum, got "
                             f"{minimum}, {maximum}")
        self.maximum = maximum
        self.minimum = minimum
        self.name = name
        self.calm_seconds = calm_seconds
        self._clock = clock
        self._limit = min(maximum, max(minimum, initial or maximum))
        self._threshold = maximum          # slow start below it (until the first cut)
        # Below the limit the last cut was made at, until a calm spell: a store that refuses
        # at a fixed capacity is not pushed past it again and again (growing back to the
        # limit it refused at, then halving, drew a 503 every few requests served).
        self._ceiling = maximum
        self._credit = 0                   # successes towards the next +1, above it
        self._in_flight = 0
        self._waiting = 0                  # threads waiting for a slot
        self._epoch = 0                    # cuts so far: a request's token is the epoch it began in
        self._last_cut: Optional[float] = None
        self._cond = threading.Condition(threading.Lock())
        #: Cuts so far (congestion events), and the most requests ever in flight at once.
        self.cuts = 0
        self.peak = 0

    @property
    def limit(self) -> int:
        """Requests that may be in flight now."""
        return self._limit

    @property
    def in_flight(self) -> int:
        return self._in_flight

    def state(self) -> Dict[str, int]:
        """The limit now, requests in flight, cuts so far and the most in flight at once."""
        with self._cond:
            return {"limit": self.limit, "in_flight": self._in_flight, "cuts": self.cuts,
                    "peak": self.peak}

    def acquire(self) -> int:
        """Wait for a slot; the token to hand to `release`."""
        with self._cond:
            if self._in_flight >= self.limit:
                self._waiting += 1
                try:
                    while self._in_flight >= self.limit:
                        self._cond.wait()
                finally:
                    self._waiting -= 1
            self._in_flight += 1
            if self._in_flight > self.peak:
                self.peak = self._in_flight
            return self._epoch

    def release(self, token: int, outcome: "Verdict") -> None:
        """The request of `token` ended: served (DONE: the store answered, a 404 included),
        pushed back (CONGESTED: throttled or timed out), or failed otherwise (RETRY, FAIL:
        says nothing about the store's load, the limit stays)."""
        with self._cond:
            binding = self._waiting > 0 or self._in_flight >= self.limit
            self._in_flight -= 1
            if outcome is Verdict.DONE:
                if binding:
                    self._grow()
            elif outcome is Verdict.CONGESTED:
                self._cut(token)
            free = self.limit - self._in_flight
            if free > 0 and self._waiting:
                # As many as may start (not all 32 of a pool to fight over one slot; one that
                # finds none free waits again, and the next release wakes another).
                self._cond.notify(free)

    def _grow(self) -> None:
        if self._last_cut is not None and self._threshold < self.maximum \
                and self._clock() - self._last_cut >= self.calm_seconds:
            self._threshold = self.maximum          # calm again: slow start resumes
            self._ceiling = self.maximum
        if self._limit >= min(self.maximum, self._ceiling):
            return
        if self._limit < self._threshold:
            self._limit += 1                        # +1 per success: doubles per round trip
            return
        self._credit += 1
        if self._credit >= self._limit:             # +1 per `limit` successes
            self._limit += 1
            self._credit = 0

    def _cut(self, token: int) -> None:
        now = self._clock()
        if token != self._epoch:
            # Began before the last cut: the same congestion, already answered. (The clock
            # still restarts: the store is pushing back.)
            self._last_cut = now
            return
        before = self.limit
        self._limit = max(self.minimum, self._limit // 2)
        self._ceiling = max(self.minimum, before - 1)
        self._threshold = self._limit
        self._credit = 0
        self._epoch += 1
        self.cuts += 1
        self._last_cut = now
        log.debug("%s pushes back: requests in flight %d -> %d", self.name, before, self.limit)


# --- one limit per store, for the process ------------------------------------------------

_limits_lock = threading.Lock()
_limits: Dict[Hashable, AdaptiveLimit] = {}


def limit_for(key: Hashable, maximum: int, initial: Optional[int] = None,
              name: str = "store") -> AdaptiveLimit:
    """The process's limit for the store `key` (created on first use; a later caller's
    `maximum` raises the ceiling if higher, never lowers what others were given)."""
    with _limits_lock:
        lim = _limits.get(key)
        if lim is None:
            lim = _limits[key] = AdaptiveLimit(maximum, initial, name=name)
        elif maximum > lim.maximum:
            with lim._cond:
                if lim._threshold >= lim.maximum:   # still in slow start: up to the new one
                    lim._threshold = maximum
                lim.maximum = maximum
        return lim


# --- one request, retried ----------------------------------------------------------------

class Verdict(enum.Enum):
    DONE = "done"            # served (a raised 404 too: an answer, not retried)
    CONGESTED = "congested"  # throttled or timed out: retry, and cut the limit
    RETRY = "retry"          # a passing fault (a 500, a refused connection): retry
    FAIL = "fail"            # an answer (404, 403, 412, ...): raise it now


class RetryPolicy(NamedTuple):
    """As obstore's RetryConfig: at most `retries` retries, none started after `timeout_s`
    since the first attempt, the n-th after ~`init_s * base**n` (at most `max_s`) of which
    a random half (jitter: threads pushed back together do not come back together)."""
    retries: int = 5
    timeout_s: float = 60.0
    init_s: float = 0.1
    max_s: float = 5.0
    base: float = 2.0

    def backoff(self, attempt: int, rng: Callable[[], float] = random.random) -> float:
        ceiling = min(self.max_s, self.init_s * self.base ** attempt)
        return ceiling / 2 + rng() * ceiling / 2


def call(limit: AdaptiveLimit, fn: Callable[[], T], classify: Callable[[BaseException], Verdict],
         policy: RetryPolicy, what: str = "request",
         sleep: Callable[[float], None] = time.sleep,
         clock: Callable[[], float] = time.monotonic) -> T:
    """`fn()` (one request, idempotent) in a slot of `limit`; a failure that `classify` says
    may be retried is, after a backoff (outside the slot), while the policy allows; then
    the last error is raised as it came."""
    started = clock()
    attempt = 0
    while True:
        token = limit.acquire()
        try:
            out = fn()
        except BaseException as e:   # noqa: B902 - classified, then raised or retried
            verdict = classify(e) if isinstance(e, Exception) else Verdict.FAIL
            limit.release(token, verdict)
            if verdict not in (Verdict.CONGESTED, Verdict.RETRY) \
                    or attempt >= policy.retries or clock() - started >= policy.timeout_s:
                if attempt:
                    try:   # for the message: the error is the last of several
                        e.paimon_retries = attempt  # type: ignore[attr-defined]
                    except AttributeError:
                        pass
                raise
            pause = policy.backoff(attempt)
            log.debug("%s: %s (%s); retry %d of %d in %.0f ms", what, verdict.value,
                      str(e).split("\n", 1)[0][:200], attempt + 1, policy.retries,
                      pause * 1000)
            sleep(pause)
            attempt += 1
            continue
        limit.release(token, Verdict.DONE)
        return out
