"""The operations actors run, and the seeded generator of rounds.

Each `start_<kind>(sim, ...)` creates an Op, spawns its actor (parked at its first storage
call) and returns the Op; the Scheduler decides from then on when it moves.
"""
from __future__ import annotations

import os
import random
import time
from typing import Callable, List, Optional, Tuple

from paimon_commit.errors import OptionError
from paimon_commit.operations.compact import AppendCompaction
from paimon_commit.operations.expire import ExpireConfig, ExpireSnapshots
from paimon_commit.operations.orphan import CleanContext, OrphanFilesCleaner
from paimon_commit.tags import ConsumerManager

from .sim import PARTITIONS, REFUSALS, Held, Op, Sim
from .storage import EPOCH_MS


def start_append(sim: Sim, partition: str = "a", n: int = 2) -> Op:
    """A writer: write rows, commit them with a commit identifier."""
    op = sim.new_op("append", user=f"writer-{len(sim.ops)}", ident=sim.ident(),
                    rows=sim.new_rows(n), partition=partition)

    def body(op: Op) -> None:
        t = sim.table(op)
        op.msgs = sim.write(t, op.rows, op.partition)
        c = t.new_commit(commit_user=op.user)
        op.committing = True
        sid = c.commit(op.msgs, op.ident)
        if sid is not None:
            op.sids.append(sid)
    return sim.spawn(op, body)


def start_retry(sim: Sim, partition: str = "a", n: int = 2) -> Op:
    """A writer whose job framework retries a commit it believes failed: the same messages
    and identifier twice on one commit object, then the next identifier with new rows."""
    op = sim.new_op("retry", user=f"retrier-{len(sim.ops)}", ident=sim.ident(),
                    rows=sim.new_rows(2 * n), partition=partition)

    def body(op: Op) -> None:
        t = sim.table(op)
        first, second = op.rows[:n], op.rows[n:]
        msgs = sim.write(t, first, op.partition)
        op.msgs = msgs
        c = t.new_commit(commit_user=op.user)
        op.committing = True
        sid = c.commit(msgs, op.ident)
        if sid is not None:
            op.sids.append(sid)
        try:
            sid = c.commit(msgs, op.ident)   # the retry: may be refused as a duplicate
            if sid is not None:
                op.sids.append(sid)
        except REFUSALS as e:
            op.detail += f" retry refused ({type(e).__name__})"
        try:
            sid = c.commit(sim.write(t, second, op.partition), op.ident + 1)
        except REFUSALS as e:
            # the first commit did land: not a refusal of the whole operation
            raise RuntimeError(f"third commit refused: {e!r}") from e
        if sid is not None:
            op.sids.append(sid)
    sim.next_ident += 1
    return sim.spawn(op, body)


def start_etl(sim: Sim, partition: str = "a", n: int = 2) -> Op:
    """A one-shot job of the commit user "etl" (shared by every etl operation, one at a time):
    write rows, commit them with the batch identifier (no identifier given)."""
    op = sim.new_op("etl", user="etl", rows=sim.new_rows(n), partition=partition)

    def body(op: Op) -> None:
        t = sim.table(op)
        op.msgs = sim.write(t, op.rows, op.partition)
        c = t.new_commit(commit_user=op.user)
        op.committing = True
        sid = c.commit(op.msgs)
        if sid is not None:
            op.sids.append(sid)
    return sim.spawn(op, body)


def start_repeat(sim: Sim, of: Optional[Op] = None) -> Optional[Op]:
    """A job that runs the commit of an earlier append or etl again (it believes that call
    failed, or a notebook cell ran twice): the same messages, commit user and identifier, on
    a new commit object. It must publish nothing if they are in the table (returning the
    snapshot that has them, or refusing), and publish them if they are not. Prefers a commit
    that raised or was rolled back since (the interesting repeats)."""
    if of is None:
        # A job retries before an orphan cleanup (a day's threshold) could take the files of
        # its commit: none ran since it started (the sim's cleaner's threshold is the oldest
        # write in flight).
        cleaned = [x.start_tick for x in sim.ops if x.kind == "orphan"
                   and x.detail != "dry-run" and x.start_tick is not None]
        # Nor does it repeat a commit whose messages it aborted (abort_committed).
        aborted = {x.detail.split(" ")[1] for x in sim.ops if x.kind == "abort_committed"}
        done = [o for o in sim.ops if o.kind in ("append", "etl") and o.msgs and o.committing
                and o.outcome in ("ok", "unknown") and o.end_tick is not None
                and not any(t > o.start_tick for t in cleaned) and o.name not in aborted]
        if not done:
            return None
        of = sim.rng.choices(done, [3 if o.outcome == "unknown" or o.rolled_back else 1
                                    for o in done])[0]
    op = sim.new_op("repeat", user=of.user, ident=of.ident, rows=of.rows,
                    partition=of.partition, detail=f"of {of.name}")
    op.origin = of
    op.floor_tick = of.start_tick   # its files are in flight again (orphan cleanup's floor)

    def body(op: Op) -> None:
        t = sim.table(op)
        op.msgs = of.msgs
        op.committing = True
        sid = t.new_commit(commit_user=op.user).commit(
            of.msgs, of.ident if of.kind != "etl" else None)
        if sid is not None:
            op.sids.append(sid)
    return sim.spawn(op, body)


def start_hold(sim: Sim, partition: str = "a", n: int = 2) -> Op:
    """A writer that prepares messages and keeps them for a later commit or abort."""
    op = sim.new_op("hold", rows=sim.new_rows(n), partition=partition)

    def body(op: Op) -> None:
        msgs = sim.write(sim.table(op), op.rows, op.partition)
        sim.held.append(Held(op, msgs, op.rows, op.partition, op.start_tick))
    return sim.spawn(op, body)


def start_commit_held(sim: Sim) -> Optional[Op]:
    if not sim.held:
        return None
    h = sim.held.pop(0)
    op = sim.new_op("commit_held", user=f"late-{len(sim.ops)}", ident=sim.ident(),
                    rows=h.rows, partition=h.partition)
    op.floor_tick = h.tick

    def body(op: Op) -> None:
        t = sim.table(op)
        op.committing = True
        sid = t.new_commit(commit_user=op.user).commit(h.msgs, op.ident)
        if sid is not None:
            op.sids.append(sid)
    return sim.spawn(op, body)


def start_abort_held(sim: Sim) -> Optional[Op]:
    """Abort messages that were never committed: their files go, nothing else."""
    if not sim.held:
        return None
    h = sim.held.pop(0)
    op = sim.new_op("abort_held", rows=h.rows, partition=h.partition)
    op.floor_tick = h.tick

    def body(op: Op) -> None:
        op.detail = f"deleted {sim.table(op).new_commit().abort(h.msgs)}"
    return sim.spawn(op, body)


def start_abort_committed(sim: Sim, of: Optional[Op] = None) -> Optional[Op]:
    """Abort the messages of a commit that succeeded (a job that thinks it failed): no file
    a retained snapshot or tag needs may go."""
    done = [o for o in sim.ops if o.kind == "append" and o.outcome == "ok" and o.msgs]
    if of is None:
        if not done:
            return None
        of = sim.rng.choice(done)
    op = sim.new_op("abort_committed", detail=f"of {of.name}")

    def body(op: Op) -> None:
        op.detail += f" deleted {sim.table(op).new_commit().abort(of.msgs)}"
    return sim.spawn(op, body)


def start_overwrite(sim: Sim, partition: str = "a", n: int = 2) -> Op:
    """INSERT OVERWRITE of one partition."""
    op = sim.new_op("overwrite", user=f"overwriter-{len(sim.ops)}", ident=sim.ident(),
                    rows=sim.new_rows(n), partition=partition)

    def body(op: Op) -> None:
        t = sim.table(op)
        msgs = sim.write(t, op.rows, op.partition)
        op.committing = True
        sid = t.new_commit(commit_user=op.user).overwrite(msgs, {"p": op.partition}, op.ident)
        if sid is not None:
            op.sids.append(sid)
    return sim.spawn(op, body)


def start_drop(sim: Sim, partition: str = "a") -> Op:
    op = sim.new_op("drop", user=f"dropper-{len(sim.ops)}", ident=sim.ident(),
                    partition=partition)

    def body(op: Op) -> None:
        t = sim.table(op)
        op.committing = True
        sid = t.new_commit(commit_user=op.user).drop_partitions([{"p": op.partition}],
                                                                 op.ident)
        if sid is not None:
            op.sids.append(sid)
    return sim.spawn(op, body)


def start_tag(sim: Sim, snapshot_id: Optional[int] = None, older: bool = False) -> Op:
    """A tag on `snapshot_id` (default: the latest); `older`: on a snapshot chosen by the
    seed among those the table lists when the tag starts (one an expiration may be deleting)."""
    name = f"tag{len(sim.ops)}"
    op = sim.new_op("tag", detail=name, target=snapshot_id)

    def body(op: Op) -> None:
        sid = snapshot_id
        if older:
            ids = [s.id for s in sim.table(op).snapshots()]
            sid = sim.rng.choice(ids) if ids else None
            op.detail += f" on {sid}"
        tag = sim.table(op).create_tag(name, sid)
        op.target = tag.snapshot.id
        sim.tags.append(name)
    return sim.spawn(op, body)


def start_untag(sim: Sim, name: Optional[str] = None) -> Optional[Op]:
    if name is None:
        if not sim.tags:
            return None
        name = sim.rng.choice(sim.tags)
    op = sim.new_op("untag", detail=name)

    def body(op: Op) -> None:
        sim.table(op).delete_tag(name)
        if name in sim.tags:
            sim.tags.remove(name)
    return sim.spawn(op, body)


def start_retag(sim: Sim, name: Optional[str] = None, snapshot_id: Optional[int] = None
                ) -> Optional[Op]:
    """Replace a tag: delete it, create it again under the same name on another snapshot (a
    retained one chosen by the seed, or `snapshot_id`)."""
    if name is None:
        if not sim.tags:
            return None
        name = sim.rng.choice(sim.tags)
    op = sim.new_op("retag", detail=name, target=snapshot_id)

    def body(op: Op) -> None:
        t = sim.table(op)
        old = next((x for x in t.tags() if x.name == name), None)
        if old is None:
            op.detail += " (gone)"
            return
        if op.target is None:
            ids = [s.id for s in t.snapshots() if s.id != old.snapshot.id]
            if not ids:
                op.detail += " (no other snapshot)"
                return
            op.target = sim.rng.choice(ids)
        op.detail += f" {old.snapshot.id}->{op.target}"
        t.delete_tag(name)
        if name in sim.tags:
            sim.tags.remove(name)
        t.create_tag(name, op.target)
        sim.tags.append(name)
    return sim.spawn(op, body)


def start_consume(sim: Sim) -> Op:
    """A streaming reader records its position: consumer-<id> with the latest snapshot as the
    next one it reads (expiration keeps it and every later one)."""
    name = f"reader{len(sim.ops)}"
    op = sim.new_op("consume", detail=name)

    def body(op: Op) -> None:
        t = sim.table(op)
        latest = t.latest_snapshot()
        if latest is None:
            op.detail += " (no snapshot)"
            return
        op.target = latest.id
        ConsumerManager(t.store.io, t.store.root).write(name, latest.id)
        sim.consumers.append(name)
    return sim.spawn(op, body)


def start_reset(sim: Sim, name: Optional[str] = None, snapshot_id: Optional[int] = None
                ) -> Optional[Op]:
    """A consumer reset: a reader's next snapshot moved back to an older retained one (to read
    again from there)."""
    if name is None:
        if not sim.consumers:
            return None
        name = sim.rng.choice(sim.consumers)
    op = sim.new_op("reset", detail=name, target=snapshot_id)

    def body(op: Op) -> None:
        t = sim.table(op)
        if op.target is None:
            ids = [s.id for s in t.snapshots()]
            if not ids:
                op.detail += " (no snapshot)"
                return
            op.target = sim.rng.choice(ids)
        ConsumerManager(t.store.io, t.store.root).write(name, op.target)
    return sim.spawn(op, body)


def start_rollback(sim: Sim, snapshot_id: Optional[int] = None, below: Optional[int] = None
                   ) -> Optional[Op]:
    """Rollback to a retained snapshot (chosen by the seed): it races expirations and other
    maintenance, never writers (Paimon's rollback is not meant to race them). The model drops
    every commit newer than the target. `below`: to the newest retained snapshot older than
    that one (undoing a commit)."""
    op = sim.new_op("rollback", target=snapshot_id)

    def body(op: Op) -> None:
        t = sim.table(op)
        if op.target is None and below is not None:
            ids = [s.id for s in t.snapshots() if s.id < below]
            if not ids:
                op.detail = f"nothing retained below {below}"
                return
            op.target = ids[-1]
        if op.target is None:
            ids = [s.id for s in t.snapshots()]
            if len(ids) < 2:
                op.detail = "nothing to roll back"
                return
            # With the issue-25 operations, half of the rollbacks undo the last commit (the
            # usual one: a job's bad output), the others go back to any retained snapshot.
            if sim.extras and sim.rng.random() < 0.5:
                op.target = ids[-2]
            else:
                op.target = sim.rng.choice(ids[:-1])
        def rolled_back() -> None:
            for o in sim.ops:
                if o.sids and max(o.sids) > op.target and not o.rolled_back:
                    o.rolled_back = True
                    op.marked.append(o)
        try:
            r = t.rollback_to(op.target)
        except REFUSALS:   # nothing rolled back (LeaseHeldError: another maintainer runs)
            raise
        except BaseException:   # one that failed half-way may have removed them too
            rolled_back()
            raise
        rolled_back()
        if not getattr(r, "complete", True):   # stopped (a lost lease): a rerun finishes
            op.detail += f" unfinished ({getattr(r, 'stopped_by', None)})"
    return sim.spawn(op, body)


def start_expire(sim: Sim, retain_max: int = 1) -> Op:
    op = sim.new_op("expire", target=retain_max, detail=f"retain_max={retain_max}")

    def body(op: Op) -> None:
        store = sim.table(op).store
        cfg = ExpireConfig.from_options(store.options, retain_min=1, retain_max=retain_max)
        with sim.executor() as pool:
            r = ExpireSnapshots(store, cfg, executor=pool).expire()
        op.detail += f" expired={r.expired_ids}"
        if r.skipped or not getattr(r, "complete", True):
            # Left work for the next run: a failure it met (logged), or a safe point stopped
            # it (a lost lease).
            op.detail += f" unfinished ({getattr(r, 'stopped_by', None) or 'skipped'})"
    return sim.spawn(op, body)


def start_orphan(sim: Sim, dry_run: bool = False) -> Op:
    """Orphan cleanup with a threshold right before the oldest write still in flight."""
    op = sim.new_op("orphan", detail="dry-run" if dry_run else "")

    def body(op: Op) -> None:
        io = sim.io(op)
        older = EPOCH_MS + sim.inflight_floor(op)
        with sim.executor() as pool:
            r = OrphanFilesCleaner(CleanContext(sim.path, older_than_ms=older,
                                                dry_run=dry_run, file_io=io,
                                                executor=pool)).clean()
        op.detail += f" deleted={r.deleted_files}"
    return sim.spawn(op, body)


#: Compaction options: a partition with two small files is compacted (the sim's files are
#: tiny); with "many bins", a bin holds about three files and is cut into files of ~2 kB.
COMPACT_OPTIONS = {
    "default": {"compaction.min.file-num": "2"},
    "many bins": {"compaction.min.file-num": "2", "target-file-size": "2 kb",
                  "source.split.open-file-cost": "1 b"},
}


def start_compact(sim: Sim, partition: Optional[str] = None, options: str = "default") -> Op:
    """Compaction of one partition (or all): plan, rewrite the small files, commit one
    COMPACT snapshot; refused (CompactionConflictError) when an input was removed meanwhile,
    and then none of the files it wrote may be left (checked in Sim.check)."""
    op = sim.new_op("compact", user=f"compactor-{len(sim.ops)}", partition=partition,
                    detail=options)

    def body(op: Op) -> None:
        t = sim.table(op)
        parts = None if op.partition is None else [{"p": op.partition}]
        try:
            job = AppendCompaction(t.store, parts, COMPACT_OPTIONS[options],
                                   commit_user=op.user)
            plan = job.plan()
        except OptionError as e:
            if "no data files in partition" not in str(e):
                raise
            op.detail += " (partition empty)"
            return
        if not plan.tasks:
            op.detail += " (nothing to compact)"
            return
        rewritten = job.rewrite(plan)
        op.detail += (f" base={plan.base_snapshot_id} rewrote "
                      f"{sum(len(r.task.files) for r in rewritten)} into "
                      f"{sum(len(r.files) for r in rewritten)}")
        op.committing = True
        op.sids.append(job.commit(plan, rewritten).snapshot_id)
    return sim.spawn(op, body)


# --- the seeded generator ----------------------------------------------------------------

WEIGHTS = [("append", 30), ("retry", 4), ("hold", 6), ("commit_held", 5), ("abort_held", 4),
           ("abort_committed", 3), ("overwrite", 7), ("drop", 3), ("tag", 6), ("untag", 3),
           ("expire", 10), ("orphan", 6), ("compact", 10)]


#: Operations that publish snapshots (one at a time where the storage has a single writer).
COMMITTERS = ("append", "retry", "commit_held", "overwrite", "drop", "compact", "etl",
              "repeat")


def start_random(sim: Sim, rng: random.Random, exclude=()) -> Optional[Op]:
    kinds, weights = zip(*[(k, w) for k, w in WEIGHTS if k not in exclude])
    kind = rng.choices(kinds, weights)[0]
    part = rng.choice(PARTITIONS)
    if kind == "append":
        return start_append(sim, part, rng.randint(1, 3))
    if kind == "retry":
        return start_retry(sim, part)
    if kind == "hold":
        return start_hold(sim, part)
    if kind == "commit_held":
        return start_commit_held(sim)
    if kind == "abort_held":
        return start_abort_held(sim)
    if kind == "abort_committed":
        return start_abort_committed(sim)
    if kind == "overwrite":
        return start_overwrite(sim, part)
    if kind == "drop":
        return start_drop(sim, part)
    if kind == "tag":
        return start_tag(sim)
    if kind == "untag":
        return start_untag(sim)
    if kind == "expire":
        return start_expire(sim, rng.randint(1, 3))
    if kind == "compact":
        return start_compact(sim, part if rng.random() < 0.5 else None,
                             rng.choice(sorted(COMPACT_OPTIONS)))
    return start_orphan(sim, dry_run=rng.random() < 0.2)


#: The operations issue 25 added (item 7), drawn from their own stream (`extras`).
EXTRA_WEIGHTS = [("etl", 4), ("repeat", 4), ("retag", 2), ("consume", 2), ("reset", 2)]


def maintenance_race(sim: Sim, ext: random.Random, exclude=()) -> List[Optional[Op]]:
    """A round of maintenance only: an expiration racing a rollback (or a tag replacement),
    with now and then a tag, a tag deletion, a consumer reset or an orphan cleanup beside."""
    started: List[Optional[Op]] = [] if "expire" in exclude else [
        start_expire(sim, ext.randint(1, 3))]
    if ext.random() < 0.5 and "rollback" not in exclude:
        started.append(start_rollback(sim))
    else:
        started.append(start_retag(sim))
    if ext.random() < 0.5:
        kind = ext.choice(("tag", "untag", "retag", "reset", "consume", "orphan", "expire"))
        started.append({"tag": lambda sim: start_tag(sim, older=True),
                        "untag": start_untag, "retag": start_retag,
                        "reset": start_reset, "consume": start_consume,
                        "orphan": start_orphan,
                        "expire": lambda sim: start_expire(sim, ext.randint(1, 3))}[kind](sim))
    ext.shuffle(started)
    return started


def extra_op(sim: Sim, ext: random.Random, started, single_writer: bool, exclude=()
             ) -> Optional[Op]:
    """One of the issue-25 operations added to a round: an etl commit or a repeat (not beside
    a rollback, nor beside another committer on a single-writer table), a tag replacement, a
    consumer written or reset."""
    kinds = [o.kind for o in started if o]
    # A repeat beside the etl job or another repeat would be one commit run twice at once
    # (see docs/safety.md section 8: not in the mix).
    busy = "rollback" in kinds or "repeat" in kinds or "etl" in kinds or (
        single_writer and any(k in COMMITTERS for k in kinds))
    choices = [(k, w) for k, w in EXTRA_WEIGHTS if k not in exclude
               and not (busy and k in ("etl", "repeat"))]
    if not choices:
        return None
    kind = ext.choices(*zip(*choices))[0]
    if kind == "etl":
        return start_etl(sim, ext.choice(PARTITIONS), ext.randint(1, 3))
    return {"repeat": start_repeat, "retag": start_retag, "consume": start_consume,
            "reset": start_reset}[kind](sim)


def soak(run_one: Callable[[int], None], share: float = 1.0) -> Tuple[int, int]:
    """`make soak`: run_one(seed) for fresh seeds, from PAIMON_INTERLEAVE_SOAK_SEED (random),
    for `share` x PAIMON_INTERLEAVE_SOAK_SECONDS (60); the first and last seed run."""
    seconds = float(os.environ.get("PAIMON_INTERLEAVE_SOAK_SECONDS", "60")) * share
    seed = base = int(os.environ.get("PAIMON_INTERLEAVE_SOAK_SEED",
                                     random.SystemRandom().randrange(10**6)))
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        run_one(seed)
        seed += 1
    return base, seed - 1


def run_seed(sim: Sim, seed: int, rounds: int, exclude=(), max_ops: int = 4,
             single_writer: bool = False, storms: bool = False, extras: bool = True) -> None:
    """`rounds` rounds of 1-`max_ops` concurrent operations, each followed by the full
    check. `single_writer`: at most one committing operation per round (maintenance runs
    beside it), for tables declared `commit.single-writer`. `storms`: some rounds are three
    appends racing an expiration that keeps one snapshot, or a compaction racing an overwrite,
    drop or compaction of its partition and an append to it. `extras` (issue 25): 20 % of the
    rounds (from the third) are maintenance races (an expiration racing a rollback or a tag
    replacement), and 30 % of the rounds get one more operation (an etl commit, a repeat, a
    tag replacement, a consumer written or reset); from a stream of their own, so that
    `extras=False` replays the seeds of issue 17 unchanged."""
    rng = random.Random(seed)
    storm = random.Random(seed ^ 0x570A)   # its own stream: other seeds replay unchanged
    ext = random.Random(seed ^ 0x1525) if extras else None
    sim.extras = extras
    # A job's story: its output rolled back, the job run again, a commit repeated.
    followup = None   # after an etl commit: its snapshot id; after a rollback: "etl", "repeat"
    with sim.running():
        for r in range(rounds):
            if isinstance(followup, int):
                # An etl job's output undone: rollback to the snapshot before its own (now
                # and then racing an expiration).
                started = [start_rollback(sim, below=followup)]
                if ext.random() < 0.3 and "expire" not in exclude:
                    started.append(start_expire(sim, ext.randint(1, 3)))
                followup = None
            elif followup and followup not in exclude:
                # After a rollback, the etl job runs again; after that, a job repeats a
                # commit (a notebook cell run again, a retry on a timeout).
                started = [start_etl(sim, ext.choice(PARTITIONS)) if followup == "etl"
                           else start_repeat(sim)]
                if ext.random() < 0.5:
                    started.append(start_random(sim, rng, exclude))
                followup = "repeat" if followup == "etl" else None
            elif ext is not None and r > 1 and ext.random() < 0.2:
                started = maintenance_race(sim, ext, exclude)
            elif r > 2 and rng.random() < 0.06 and "rollback" not in exclude:
                started: List[Optional[Op]] = [start_rollback(sim)]
            elif storms and not single_writer and (x := storm.random()) < 0.45:
                if x < 0.3:
                    started = [start_append(sim, storm.choice(PARTITIONS)) for _ in range(3)]
                    started.insert(storm.randrange(4), start_expire(sim, 1))
                else:   # a compaction racing a remover of its partition and an append
                    p = sim.fullest_partition(storm)   # the one with most to compact
                    rival = storm.choice((start_overwrite, start_drop, start_compact))
                    started = [start_compact(sim, p, storm.choice(sorted(COMPACT_OPTIONS))),
                               rival(sim, p), start_append(sim, p)]
                    storm.shuffle(started)
            else:
                started = []
                for _ in range(rng.randint(1, max_ops)):
                    busy = single_writer and any(o and o.kind in COMMITTERS for o in started)
                    started.append(start_random(
                        sim, rng, tuple(exclude) + (COMMITTERS if busy else ())))
            if ext is not None and ext.random() < 0.3:
                started.append(extra_op(sim, ext, started, single_writer, exclude))
            sim.sched.run_all()
            if ext is not None and any(o and o.kind == "rollback" and o.outcome == "ok"
                                       and o.marked for o in started):
                followup = "etl"
            elif ext is not None and not followup and "rollback" not in exclude and any(
                    o and o.kind == "etl" and o.outcome == "ok" and o.sids and o.sids[0] > 1
                    for o in started) and ext.random() < 0.3:
                followup = next(o.sids[0] for o in started if o and o.kind == "etl")
            sim.finish_unfinished()
            sim.check(f"after round {r} ({', '.join(o.name for o in started if o)})")
        if sim.sched.unscheduled:
            raise AssertionError(f"storage calls outside any actor: "
                                 f"{sim.sched.unscheduled[:5]}")
    sim.pypaimon_agrees()
