"""Interleaving tests: writers, overwrites, drops, aborts, tags, rollback, expirers and orphan
cleaners interleaved at every storage call by a seeded scheduler, with faults injected at the
calls, on local disk, the pyarrow storage and an in-memory object store (obstore's
MemoryStore). After every round the checker verifies the invariants (README.md).

- `make test`: a fixed list of seeds per storage (a few seconds each);
- `make soak` (PAIMON_COMMIT_FULL_FAULTS=1): fresh seeds for a fixed time per storage;
- a failure prints the seed and the command that replays it (`-k replay`).
"""
from __future__ import annotations

import os
import random
import time

import pytest

from .ops import run_seed
from .scheduler import Fault, RandomPolicy
from .sim import STORAGES, InvariantViolation, Sim

FULL = os.environ.get("PAIMON_COMMIT_FULL_FAULTS") == "1"
ALL_FAULTS = (Fault.BEFORE, Fault.AFTER, Fault.UNSUPPORTED)

#: Findings 0-5 are fixed on other branches (h-duplicate-commit, h-publish, h-abort); on this
#: branch the budget runs below rediscover them. Set to False once those branches are merged.
OPEN_FINDINGS = True


def simulate(tmp_path, storage: str, seed: int, rounds: int = 10, exclude=(),
             faults=ALL_FAULTS, rate: float = 0.02, max_ops: int = 4) -> Sim:
    """One seeded run; raises InvariantViolation (with the seed and the history)."""
    sim = Sim(storage, str(tmp_path), RandomPolicy(seed * 2 + 1, rate, faults=faults), seed)
    sim.replay = (f"simulate(tmp_path, {storage!r}, {seed}, rounds={rounds}, "
                  f"exclude={tuple(exclude)!r}, faults={tuple(faults)!r}, rate={rate}, "
                  f"max_ops={max_ops})")
    run_seed(sim, seed, rounds, exclude, max_ops)
    return sim


# --- the fixed budget of `make test` ------------------------------------------------------

BUDGET_SEEDS = range(10)

open_findings = pytest.mark.xfail(
    OPEN_FINDINGS, reason="findings 0-5 are open on this branch (fixed on h-duplicate-commit, "
                          "h-publish, h-abort)", raises=InvariantViolation, strict=False)


@open_findings
@pytest.mark.parametrize("storage", STORAGES)
@pytest.mark.parametrize("seed", BUDGET_SEEDS)
def test_budget(tmp_path, storage, seed):
    simulate(tmp_path, storage, seed)


# What can run today: the operations and faults that trigger findings 0-5 left out (retried
# commits, aborts of committed messages, 501 replies; the pyarrow storage only one operation
# at a time). Everything else must hold on every seed.
SOUND_TODAY = {
    "local": dict(exclude=("retry", "abort_committed")),
    "arrow": dict(exclude=("retry", "abort_committed"), max_ops=1,
                  faults=(Fault.BEFORE,)),
    "memory": dict(exclude=("retry", "abort_committed", "expire"),
                   faults=(Fault.BEFORE, Fault.AFTER)),
}


@pytest.mark.parametrize("storage", STORAGES)
@pytest.mark.parametrize("seed", range(100, 106))
def test_budget_without_the_known_triggers(tmp_path, storage, seed):
    simulate(tmp_path, storage, seed, rate=0.04, **SOUND_TODAY[storage])


# --- replay and soak -------------------------------------------------------------------------

@pytest.mark.skipif("PAIMON_INTERLEAVE_SEED" not in os.environ,
                    reason="set PAIMON_INTERLEAVE_SEED (and PAIMON_INTERLEAVE_STORAGE)")
def test_replay(tmp_path):
    """Replay one seed printed by a failure: PAIMON_INTERLEAVE_SEED=n
    PAIMON_INTERLEAVE_STORAGE=local|arrow|memory [PAIMON_INTERLEAVE_ROUNDS=r]."""
    import logging
    logging.getLogger("interleave").setLevel(logging.INFO)
    simulate(tmp_path, os.environ.get("PAIMON_INTERLEAVE_STORAGE", "local"),
             int(os.environ["PAIMON_INTERLEAVE_SEED"]),
             int(os.environ.get("PAIMON_INTERLEAVE_ROUNDS", "10")))


@pytest.mark.skipif(not FULL, reason="soak: PAIMON_COMMIT_FULL_FAULTS=1 (make soak)")
@pytest.mark.parametrize("storage", STORAGES)
def test_soak(tmp_path, storage):
    """Fresh seeds for a fixed time; the first failing seed is reported with its replay."""
    seconds = float(os.environ.get("PAIMON_INTERLEAVE_SOAK_SECONDS", "60"))
    base = int(os.environ.get("PAIMON_INTERLEAVE_SOAK_SEED", random.SystemRandom().randrange(10**6)))
    deadline = time.monotonic() + seconds
    seed = base
    while time.monotonic() < deadline:
        simulate(tmp_path / str(seed), storage, seed, rounds=20, rate=0.03)
        seed += 1
    print(f"interleaving soak on {storage}: seeds {base}..{seed - 1} passed")
