"""v9: the interleaving simulator (tests/interleave) on fresh seeds, for SECONDS (default 240)
per variant: writers, overwrites, drops, aborts, tags created/deleted/replaced, rollbacks,
expirations (with the new horizon), orphan cleanup, compaction, consumers written and reset,
lease expiry while paused (Sim.expire_leases), faults at storage calls and Ctrl-C. The checker
(tests/interleave/sim.py) reads every snapshot, tag and changelog after every round.
Usage: v9_interleave_soak.py [SECONDS] [BASE_SEED]"""
import os
import sys
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests"))
import logging  # noqa: E402
logging.disable(logging.CRITICAL)

from tests.interleave.test_interleavings import VARIANTS, simulate  # noqa: E402
from tests.interleave.sim import InvariantViolation  # noqa: E402

seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 240
base = int(sys.argv[2]) if len(sys.argv) > 2 else 7_250_000
failures = []
ran = {}
for variant in ("local", "memory"):
    deadline = time.monotonic() + seconds
    seed = base
    while time.monotonic() < deadline:
        d = tempfile.mkdtemp(prefix=f"audit25v-sim-{variant}-{seed}-")
        try:
            simulate(__import__("pathlib").Path(d), seed=seed, rounds=20, rate=0.03,
                     **VARIANTS[variant])
        except InvariantViolation as e:
            failures.append(f"{variant} seed {seed}: {str(e)[:300]}")
            print(f"VIOLATION {variant} seed {seed}:\n{str(e)[:3000]}", flush=True)
        except Exception as e:  # noqa
            failures.append(f"{variant} seed {seed}: harness {type(e).__name__}: {str(e)[:200]}")
            traceback.print_exc()
        seed += 1
    ran[variant] = (base, seed - 1)
    print(f"{variant}: seeds {base}..{seed - 1}", flush=True)
if failures:
    print("FINDING: " + " | ".join(failures)[:1500])
else:
    print(f"OK: no invariant violated ({ran}, 20 rounds, rate 0.03)")
