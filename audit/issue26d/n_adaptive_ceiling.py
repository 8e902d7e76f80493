"""N (adaptive, change 7): `_ceiling` starts at the maximum the limit was created with, and
limit_for() raising `maximum` later does not raise it: the limit never grows past the first
maximum until a cut and a calm spell. Only one caller exists today (object_store.py, always
_REQUESTS_IN_FLIGHT_MAX), so nothing reaches it; shown for the record. Also: after a cut,
growth stops at the cut limit - 1 and resumes fully after calm_seconds."""
import common  # noqa: F401  (sys.path)
from paimon_commit.io import adaptive
from paimon_commit.io.adaptive import AdaptiveLimit, Verdict, limit_for

now = [0.0]
key = ("audit-26d", object())
lim = limit_for(key, 8, 8)
lim._clock = lambda: now[0]
limit_for(key, 16)                       # a later caller raises the maximum to 16


def busy(lim, n):
    for _ in range(n):                   # binding successes (a waiter present)
        t = lim.acquire()
        lim._waiting += 1
        lim.release(t, Verdict.DONE)
        lim._waiting -= 1


busy(lim, 200)
print(f"maximum raised to {lim.maximum}; limit after 200 binding successes: {lim.limit} "
      f"(ceiling {lim._ceiling}, threshold {lim._threshold})")

b = AdaptiveLimit(16, 16, clock=lambda: now[0], calm_seconds=60)
t = b.acquire()
b.release(t, Verdict.CONGESTED)
busy(b, 500)
print(f"cut at 16: limit {b.limit} after 500 successes (ceiling {b._ceiling})")
now[0] += 61
busy(b, 500)
print(f"after a calm spell: limit {b.limit} (ceiling {b._ceiling})")
