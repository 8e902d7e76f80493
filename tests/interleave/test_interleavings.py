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
import re

import pytest

from .ops import run_seed, soak
from .scheduler import Fault, RandomPolicy
from .sim import InvariantViolation, Sim
from tests.chunks import note_chunks

FULL = os.environ.get("PAIMON_COMMIT_FULL_FAULTS") == "1"
ALL_FAULTS = (Fault.BEFORE, Fault.AFTER, Fault.UNSUPPORTED)
#: With Ctrl-C between two FileIO calls (an operation stopped half-way, e.g. right after its
#: snapshot was published, in the write of the LATEST hint).
INTERRUPTS = ALL_FAULTS + (Fault.INTERRUPT,)

def simulate(tmp_path, storage: str, seed: int, rounds: int = 10, exclude=(),
             faults=ALL_FAULTS, rate: float = 0.02, max_ops: int = 4,
             single_writer: bool = False, storms: bool = False, extras: bool = True,
             read_concurrency=None, pools: str = "inline") -> Sim:
    """One seeded run; raises InvariantViolation (with the seed and the history).
    `single_writer`: the table declares `commit.single-writer` and each round has at most one
    committing operation (maintenance runs beside it). `extras=False`: without the operations
    of issue 25 (rollback races, tag replacement, consumers, etl commits and repeats), as the
    seeds of issue 17 ran. `read_concurrency`, `pools`: the read-ahead variants (Sim)."""
    options = {"commit.single-writer": "true"} if single_writer else None
    # Odd seeds schedule by priority (slow actors), even ones by sticky coin flips.
    policy = RandomPolicy(seed * 2 + 1, rate, faults=faults, priorities=seed % 2 == 1)
    sim = Sim(storage, str(tmp_path), policy, seed, table_options=options,
              read_concurrency=read_concurrency, pools=pools)
    sim.replay = (f"simulate(tmp_path, {storage!r}, {seed}, rounds={rounds}, "
                  f"exclude={tuple(exclude)!r}, faults={tuple(faults)!r}, rate={rate}, "
                  f"max_ops={max_ops}, single_writer={single_writer}, storms={storms}"
                  f"{'' if extras else ', extras=False'}"
                  f"{'' if read_concurrency is None else f', read_concurrency={read_concurrency}'}"
                  f"{'' if pools == 'inline' else f', pools={pools!r}'})")
    run_seed(sim, seed, rounds, exclude, max_ops, single_writer, storms, extras)
    return sim


#: What the budget and the soak run: each storage with several writers, and the pyarrow
#: storage also as a declared single writer (several writers on it may be refused, with
#: AtomicCreateUnsupportedError, which the checker accepts; losing a commit it does not).
VARIANTS = {
    "local": dict(storage="local", storms=True, faults=INTERRUPTS),
    "memory": dict(storage="memory", storms=True, faults=INTERRUPTS),
    "arrow": dict(storage="arrow"),
    "arrow-single-writer": dict(storage="arrow", single_writer=True),
}


# --- the fixed budget of `make test` ------------------------------------------------------

BUDGET_SEEDS = range(20)

@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("seed", BUDGET_SEEDS)
def test_budget(tmp_path, variant, seed):
    simulate(tmp_path, seed=seed, **VARIANTS[variant])


# Twice the fault rate, with retried commits and aborts of committed messages left out so that
# the faults land on the other operations' calls more often.
HIGH_FAULT_RATE = {
    "local": dict(storage="local", exclude=("retry", "abort_committed")),
    "memory": dict(storage="memory", exclude=("retry", "abort_committed"),
                   faults=(Fault.BEFORE, Fault.AFTER)),
    "arrow-single-writer": dict(storage="arrow", exclude=("retry", "abort_committed"),
                                single_writer=True, faults=(Fault.BEFORE,)),
}


@pytest.mark.parametrize("variant", HIGH_FAULT_RATE)
@pytest.mark.parametrize("seed", range(100, 110))
def test_budget_at_a_high_fault_rate(tmp_path, variant, seed):
    simulate(tmp_path, seed=seed, rate=0.04, **HIGH_FAULT_RATE[variant])


# The lease's records pruned at every take (lease.KEEP_RECENT 0, PRUNE_AT 1: the count rule at
# its extreme, where the shipped 32 and 8 prune only after ~20 runs, which a budget run rarely
# reaches): every take's prune deletes raced against every operation at each storage call.
@pytest.mark.parametrize("variant", ["local", "memory", "arrow"])
@pytest.mark.parametrize("seed", range(300, 305))
def test_budget_with_lease_records_pruned_at_every_take(tmp_path, monkeypatch, variant, seed):
    from paimon_commit import lease
    monkeypatch.setattr(lease, "KEEP_RECENT", 0)
    monkeypatch.setattr(lease, "PRUNE_AT", 1)
    simulate(tmp_path, seed=seed, **VARIANTS[variant])


# An expiration in small chunks, its first sized by its deltas (expire._first_limit), raced at
# every storage call: the budget's expirations keep 1-3 snapshots every few rounds, so their
# ranges stay within one chunk and the sizing is not reached there. Here a backlog of 14
# commits (appends and overwrites) is expired in chunks of a few snapshots' files, each re-checked and deleted under
# the lease, against a rollback and a tag replacement (as maintenance_race), or against
# appends and a consumer.
SIZED_CHUNKS = {"FIRST_CHUNK": 1, "CHUNK_FILES": 14, "FIRST_LIMIT_WAVE": 2,
                "CHUNK_SNAPSHOTS": 4}


def sized_chunk_race(tmp_path, monkeypatch, storage: str, race: str, seed: int,
                     coverage: bool = True) -> None:
    """One seeded case: the backlog, then the expiration in chunks raced by `race`
    ("rollback": a rollback and a tag replacement; "writers": two appends and a consumer),
    checked; raises InvariantViolation (with the seed and the history). `coverage`: also
    assert that the run was cut into chunks, the first sized (true of the budget's seeds; a
    fault early in the count legitimately leaves the first chunk at FIRST_CHUNK)."""
    from paimon_commit.operations import expire as expire_mod

    from .ops import (start_append, start_consume, start_expire, start_overwrite,
                      start_retag, start_rollback, start_tag)
    for name, value in SIZED_CHUNKS.items():
        monkeypatch.setattr(expire_mod, name, value)
    sized = []   # what each run's first plan sized its chunk to (0: FIRST_CHUNK)
    first_limit = expire_mod.ExpireSnapshots._first_limit

    def noting_limit(self, earliest, horizon):
        sized.append(first_limit(self, earliest, horizon))
        return sized[-1]
    monkeypatch.setattr(expire_mod.ExpireSnapshots, "_first_limit", noting_limit)
    chunks = note_chunks(monkeypatch)
    policy = RandomPolicy(seed * 2 + 1, 0.02, faults=INTERRUPTS, priorities=seed % 2 == 1)
    sim = Sim(storage, str(tmp_path), policy, seed)
    sim.replay = (f"sized_chunk_race(tmp_path, monkeypatch, {storage!r}, {race!r}, {seed}) "
                  f"(PAIMON_INTERLEAVE_SIZED=1 PAIMON_INTERLEAVE_SEED={seed} "
                  f"PAIMON_INTERLEAVE_STORAGE={storage} PAIMON_INTERLEAVE_RACE={race} "
                  f"... -k replay)")
    with sim.running():
        for i in range(14):   # (overwrites: data files the expiration deletes)
            start = start_overwrite if i % 3 == 2 else start_append
            sim.sched.finish(start(sim, "ab"[i % 2]).name)
            if i == 5:
                sim.sched.finish(start_tag(sim, 3).name)
        sim.finish_unfinished()
        sim.check("after the backlog")
        del sized[:], chunks[:]   # (post-commit maintenance expires nothing: retention 1 h)
        started = [start_expire(sim, 2)]
        if race == "rollback":
            started += [start_rollback(sim), start_retag(sim)]
        else:
            started += [start_append(sim, "a"), start_consume(sim), start_append(sim, "b")]
        sim.sched.run_all()
        sim.finish_unfinished()
        sim.check(f"after an expiration in chunks raced by {race}")
    sim.pypaimon_agrees()
    # (Most runs are cut by a fault and run again to the end by finish_unfinished. With the
    # rollback, the backlog may be gone before the expiration plans, or the rollback holds
    # the lease and refuses it: the sizing is asserted where appends race it.)
    if coverage and race == "writers" and started[0].outcome != "refused":
        assert any(n > 1 for n in sized), sized            # a first chunk was sized...
        assert len([c for c in chunks if c]) > 1, chunks   # ...and more chunks followed


@pytest.mark.parametrize("race", ["rollback", "writers"])
@pytest.mark.parametrize("storage", ["local", "memory"])
@pytest.mark.parametrize("seed", range(200, 206))
def test_an_expiration_in_sized_chunks_raced_at_every_call(tmp_path, monkeypatch, storage,
                                                           race, seed):
    sized_chunk_race(tmp_path, monkeypatch, storage, race, seed)


# --- replay and soak -------------------------------------------------------------------------

@pytest.mark.skipif("PAIMON_INTERLEAVE_SEED" not in os.environ,
                    reason="set PAIMON_INTERLEAVE_SEED (and PAIMON_INTERLEAVE_STORAGE)")
def test_replay(tmp_path, monkeypatch):
    """Replay one seed of the budget or the soak: PAIMON_INTERLEAVE_SEED=n
    PAIMON_INTERLEAVE_STORAGE=<a VARIANTS key> [PAIMON_INTERLEAVE_ROUNDS=r]
    [PAIMON_INTERLEAVE_RATE=f] (the soak runs 20 rounds at rate 0.03)."""
    if os.environ.get("PAIMON_INTERLEAVE_SIZED") == "1":   # a sized_chunk_race seed
        sized_chunk_race(tmp_path, monkeypatch, os.environ.get("PAIMON_INTERLEAVE_STORAGE",
                                                               "local"),
                         os.environ.get("PAIMON_INTERLEAVE_RACE", "rollback"),
                         int(os.environ["PAIMON_INTERLEAVE_SEED"]))
        return
    variant = VARIANTS[os.environ.get("PAIMON_INTERLEAVE_STORAGE", "local")]
    simulate(tmp_path, seed=int(os.environ["PAIMON_INTERLEAVE_SEED"]),
             rounds=int(os.environ.get("PAIMON_INTERLEAVE_ROUNDS", "10")),
             rate=float(os.environ.get("PAIMON_INTERLEAVE_RATE", "0.02")), **variant)


@pytest.mark.skipif(not FULL, reason="soak: PAIMON_COMMIT_FULL_FAULTS=1 (make soak)")
@pytest.mark.parametrize("variant", VARIANTS)
def test_soak(tmp_path, variant):
    """Fresh seeds for a fixed time; the first failing seed is reported with its replay."""
    base, last = soak(lambda seed: simulate(tmp_path / str(seed), seed=seed, rounds=20,
                                            rate=0.03, **VARIANTS[variant]))
    print(f"interleaving soak of {variant}: seeds {base}..{last} passed (replay one: "
          f"PAIMON_INTERLEAVE_STORAGE={variant} PAIMON_INTERLEAVE_SEED=n "
          f"PAIMON_INTERLEAVE_ROUNDS=20 PAIMON_INTERLEAVE_RATE=0.03 ... -k replay)")


@pytest.mark.skipif(not FULL, reason="soak: PAIMON_COMMIT_FULL_FAULTS=1 (make soak)")
@pytest.mark.parametrize("race", ["rollback", "writers"])
@pytest.mark.parametrize("storage", ["local", "memory"])
def test_soak_sized_chunks(tmp_path, monkeypatch, storage, race):
    """Fresh seeds of sized_chunk_race for a fixed time (a quarter of the soak's)."""
    base, last = soak(lambda seed: sized_chunk_race(tmp_path / str(seed), monkeypatch, storage,
                                                    race, seed, coverage=False), share=0.25)
    print(f"sized-chunk soak of {storage}/{race}: seeds {base}..{last} passed")


# --- the harness itself ----------------------------------------------------------------------

def test_a_seed_replays_the_same_interleaving_and_faults(tmp_path):
    runs = [simulate(tmp_path / str(i), "memory", 7, rounds=8, rate=0.05,
                     **{k: v for k, v in HIGH_FAULT_RATE["memory"].items() if k != "storage"})
            for i in range(2)]
    assert runs[0].sched.tick > 100
    assert any("FAULT=" in step for step in runs[0].sched.trace)
    def same(lines):   # each run has its own root prefix, t-<random>
        return [re.sub(r"t-[0-9a-f]{8}", "t", line) for line in lines]
    assert same(runs[0].sched.trace) == same(runs[1].sched.trace)
    assert same(map(str, runs[0].ops)) == same(map(str, runs[1].ops))


def test_the_checker_sees_a_missing_file_a_lost_commit_and_a_touched_neighbour(tmp_path):
    """The checker is not a test that cannot fail: damage made by hand is reported."""
    sim = simulate(tmp_path, "local", 4, rounds=3, rate=0.0,
                   exclude=("retry", "abort_committed", "expire", "orphan", "drop",
                            "overwrite"))
    from paimon_commit import Table
    t = Table.open(sim.path)
    victim = t.live_files()[0].path
    os.remove(victim)
    with pytest.raises(InvariantViolation, match=r"does not read completely"):
        sim.check("after a data file was removed by hand")
    committed = next(o for o in sim.ops if o.sids)
    committed.sids = [committed.sids[0] + 100]   # as if it had returned an id never published
    with open(os.path.join(str(tmp_path), "wh", "keep.txt"), "ab") as f:
        f.write(b"!")
    with pytest.raises(InvariantViolation) as e:
        sim.check("after more damage")
    assert "beyond the latest snapshot" in str(e.value)
    assert "files outside the table root changed" in str(e.value)


def test_the_checker_sees_a_table_left_without_snapshots_and_a_tag_reading_other_rows(
        tmp_path):
    """Issue 25's invariants are not tests that cannot fail: a data file rewritten in place
    with other rows is seen in its snapshot and in the tag on it; a table whose snapshots were
    all removed by hand is reported although it reads (as empty) without an error."""
    import pyarrow.parquet as pq

    from paimon_commit import Table

    from .ops import start_append, start_tag
    from .test_findings import _Script
    with _Script(tmp_path, "local") as s:
        s.finish(start_append(s.sim, "a"))
        tag = s.finish(start_tag(s.sim, 1))
        s.sim.check("after an append and a tag")
    t = Table.open(s.sim.path)
    victim = t.live_files()[0].path
    pq.write_table(s.sim.data([100, 101], "a"), victim)
    with pytest.raises(InvariantViolation) as e:
        s.sim.check("after a data file was rewritten with other rows")
    assert "snapshot 1 reads 2 rows (2 expected; missing ids [0, 1]; extra ids [100, 101]) " \
           "than when it was first checked" in str(e.value)
    assert f"tag {tag.detail} (snapshot 1) reads 2 rows (2 expected; missing ids [0, 1]; " \
           f"extra ids [100, 101]) than its snapshot had when the tag was created" in str(e.value)
    for name in os.listdir(os.path.join(s.sim.path, "snapshot")):
        os.remove(os.path.join(s.sim.path, "snapshot", name))
    with pytest.raises(InvariantViolation, match=r"the table has no snapshot any more \(it "
                       r"had snapshots up to 1\): every row is gone"):
        s.sim.check("after every snapshot file was removed by hand")


def test_the_checker_sees_an_expiration_that_ignored_a_consumer(tmp_path, monkeypatch):
    """A consumer set before an expiration that then deletes its next snapshot (here an
    expiration made blind to consumers) is reported."""
    import paimon_commit.operations.expire as expire_module
    from paimon_commit.tags import ConsumerManager

    from .ops import start_append, start_consume, start_expire
    from .test_findings import _Script
    with _Script(tmp_path, "local") as s:
        s.finish(start_append(s.sim, "a"))
        s.finish(start_append(s.sim, "a"))
        s.finish(start_consume(s.sim))               # reads from snapshot 2 on
        s.finish(start_append(s.sim, "a"))
        s.sim.check("after three appends and a consumer")
        class _Blind(ConsumerManager):
            def consumers(self):
                return []
        monkeypatch.setattr(expire_module, "ConsumerManager", _Blind)
        s.finish(start_expire(s.sim, retain_max=1))
        with pytest.raises(InvariantViolation, match=r"consumer reader2 reads from snapshot 2 "
                           r"\(set by consume#2, tick \d+\), which expire#4 deleted at tick "
                           r"\d+, after the consumer was set"):
            s.sim.check("after an expiration blind to consumers")
