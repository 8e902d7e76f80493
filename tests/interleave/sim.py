"""The simulation: a table on one storage, operations run as actors, a history, a checker.

Each operation (a writer's commit, an overwrite, an abort, a tag, an expiration, ...) is an
actor thread with its own FileIO; the Scheduler decides who moves at every storage call and
which call fails. Every operation's outcome is recorded (Jepsen's history: ok / refused /
unknown), and after every round, when all actors are done, the checker reads the table with a
plain, un-faulted FileIO and checks the invariants against the history (see README.md).
"""
from __future__ import annotations

import contextlib
import os
import random
import re
import uuid
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence

import pyarrow as pa

from paimon_commit import Table
from paimon_commit.errors import AtomicCreateUnsupportedError, CommitConflictError
from paimon_commit.io.base import FileIO
from paimon_commit.manifests import merge_entries

from .scheduler import Policy, Scheduler
from .storage import (LEASE_MS, ActorExecutor, Clock, ControlledIO, InjectedInterrupt,
                      InlineExecutor, actor_pools, arrow_io, controlled_commit_waits,
                      controlled_lease, inline_pools, patched_obstore)

SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.string())])
PARTITIONS = ("a", "b")
STORAGES = ("local", "arrow", "memory")
PROCESSES = 3

#: Table options: retries without long sleeps (the scheduler, not the clock, orders actors).
TABLE_OPTIONS = {"commit.min-retry-wait": "1", "commit.max-retry-wait": "4",
                 "commit.max-retries": "6"}

#: Errors that are verdicts: the operation did not change the table (LeaseHeldError: another
#: maintainer holds the table's maintenance lease, where the code has one).
import paimon_commit.errors as _errors   # noqa: E402
REFUSALS = (AtomicCreateUnsupportedError, CommitConflictError) + tuple(
    e for e in (getattr(_errors, "LeaseHeldError", None),) if e is not None)

#: Maintenance operations (they hold the lease where the code has one).
MAINTAINERS = ("expire", "rollback", "untag", "retag", "orphan", "abort_held",
               "abort_committed", "compact")

#: Per policy step, while a maintainer other than the one granted is paused: the odds that
#: the lease clock jumps past every lease (the paused holder's lease expires; another may
#: take it over).
LEASE_EXPIRY_ODDS = 0.003

#: Kinds that publish rows, and kinds that may remove rows of a partition. `etl` commits as
#: the shared commit user "etl" with the batch identifier (one-shot jobs); `repeat` commits the
#: messages of an earlier append or etl again, as its user and identifier (a retried job).
WRITES = ("append", "retry", "commit_held", "overwrite", "etl", "repeat")
REMOVERS = ("overwrite", "drop")


@dataclass
class Op:
    """One operation of the history."""
    n: int
    kind: str
    user: str = ""
    ident: int = 0
    rows: List[int] = field(default_factory=list)
    partition: Optional[str] = None
    sids: List[int] = field(default_factory=list)    # snapshot ids it returned
    outcome: str = "pending"    # ok | refused (did nothing) | unknown (raised) | unwritten
    error: str = ""
    start_tick: Optional[int] = None
    end_tick: Optional[int] = None
    floor_tick: Optional[int] = None   # writes older than this op belong to it (held files)
    committing: bool = False    # the commit call was reached (before: nothing published)
    rolled_back: bool = False
    msgs: list = field(default_factory=list)
    target: Optional[int] = None   # rollback target / tag snapshot
    detail: str = ""
    process: int = 0   # which process runs it (operations of one process share a FileIO)
    written: List[str] = field(default_factory=list)   # files its FileIO created
    origin: Optional["Op"] = None   # a repeat: the operation whose commit it repeats
    marked: list = field(default_factory=list)   # a rollback: the operations it rolled back

    @property
    def name(self) -> str:
        return f"{self.kind}#{self.n}"

    def __str__(self) -> str:
        s = f"{self.name}[{self.outcome}"
        if self.sids:
            s += f" sids={self.sids}"
        if self.rows:
            s += f" rows={self.rows[0]}..{self.rows[-1]}"
        if self.partition:
            s += f" p={self.partition}"
        if self.target is not None:
            s += f" target={self.target}"
        if self.detail:
            s += f" {self.detail}"
        if self.error:
            s += f" error={self.error[:160]}"
        return s + f" process={self.process} ticks={self.start_tick}-{self.end_tick}]"


@dataclass
class Held:
    """Messages written and not yet committed or aborted."""
    op: Op
    msgs: list
    rows: List[int]
    partition: str
    tick: int


class InvariantViolation(AssertionError):
    pass


class Sim:
    """One table on one storage, shared by the actors of a simulation."""

    def __init__(self, storage: str, tmp: str, policy: Policy, seed: int = 0,
                 table_options: Optional[Dict[str, str]] = None,
                 read_concurrency: Optional[int] = None, pools: str = "inline"):
        if storage not in STORAGES:
            raise ValueError(f"unknown storage {storage!r}; one of {STORAGES}")
        if pools not in ("inline", "actors"):
            raise ValueError(f"pools: 'inline' or 'actors', not {pools!r}")
        self.storage = storage
        # The read-ahead variants: every actor's FileIO reports this `read_concurrency` (by
        # default a ControlledIO reports FileIO's 1 on every storage, the object store's
        # included, so the operations' concurrent paths are not taken), and with
        # pools="actors" each task of an operation's pools is an actor of its own
        # (storage.ActorExecutor) instead of running inline in its operation's thread.
        self.read_concurrency = read_concurrency
        self.pools = pools
        # (the lease waiter's jitter drawn from the seed: storage.controlled_lease)
        self.seeded_backoff = read_concurrency is not None or pools != "inline"
        self.seed = seed
        self.sched = Scheduler(policy)
        self.clock = Clock(self.sched)
        self.ops: List[Op] = []
        self.held: List[Held] = []
        self.tags: List[str] = []
        self.consumers: List[str] = []
        self.extras = False   # the operations of issue 25 in the mix (run_seed sets it)
        self.lease = None   # the lease module while running, where the code has one
        self.lease_skew_ms = 0   # added to the lease clock by expire_leases
        self.lease_rng = random.Random(seed ^ 0x1EA5E)   # its own stream
        self.sched.before_step = self._maybe_expire_leases
        # Models kept across rounds: what each snapshot read when the checker first saw it
        # (by identity: id, commit user, identifier, time), what each tag must read (its
        # snapshot's rows when the tag was created), the highest snapshot id ever seen.
        self.snapshot_rows: Dict[tuple, Counter] = {}
        self.tag_rows: Dict[str, tuple] = {}   # name -> (snapshot identity, Counter)
        self.latest_seen: Optional[int] = None
        self.latest_checked: Optional[tuple] = None   # the latest's identity at the last check
        self.next_row = 0
        self.next_ident = 0
        self.problems: List[str] = []
        self._compactions_checked: set = set()
        self._processes: Dict[int, FileIO] = {}   # process number -> its FileIO
        self.replay: Optional[str] = None   # the call that replays this run (reports)
        self.rng = random.Random(seed ^ 0x5EED)   # choices made inside actors
        options = dict(TABLE_OPTIONS, **(table_options or {}))
        if storage == "memory":
            from obstore.store import MemoryStore

            from paimon_commit.io.object_store import ObjectStoreFileIO
            store = MemoryStore()
            prefix = f"wh/db.db/t-{uuid.uuid4().hex[:8]}"
            self.path = f"s3://bucket/{prefix}"

            def make():
                return ObjectStoreFileIO(store, "s3", "bucket", prefix, "memory store")
            self._make_inner = make
            self.plain = make()
            self._store = store
            # Things outside the root, which must stay as they are.
            import obstore
            for key in (f"{prefix}-sibling/keep.parquet", "wh/db.db/other/snapshot/LATEST",
                        f"{prefix}x/schema/schema-0"):
                obstore.put(store, key, b"not yours: " + key.encode())
        else:
            self.path = os.path.join(tmp, "wh", "db.db", "t")
            os.makedirs(os.path.dirname(self.path), exist_ok=True)
            root = self.path
            if storage == "local":
                from paimon_commit.io.local import LocalFileIO
                self._make_inner = lambda: LocalFileIO(root)
                self.plain = LocalFileIO(root)
            else:
                from pyarrow import fs as pafs

                from paimon_commit.io.arrow import PyArrowFileIO
                self._make_inner = lambda: arrow_io(root, self.sched)
                self.plain = PyArrowFileIO(pafs.LocalFileSystem(), root)
            self._outside = os.path.join(tmp, "wh")
            for rel in ("db.db/t-sibling/keep.parquet", "db.db/tx/schema/schema-0",
                        "keep.txt"):
                p = os.path.join(self._outside, rel)
                os.makedirs(os.path.dirname(p), exist_ok=True)
                with open(p, "wb") as f:
                    f.write(b"not yours: " + rel.encode())
        Table.create(self.path, SCHEMA, partition_keys=["p"], options=options,
                     file_io=self.plain)
        self._outside_before = self._outside_state()

    # --- helpers used by the operations (inside actor threads) ----------------------------
    def io(self, op: Optional["Op"] = None) -> FileIO:
        """The storage of an operation: the FileIO of its process (what one process learns
        about the store, e.g. that conditional writes fail, it keeps for its later
        operations), each call a scheduling point."""
        if op is None:
            inner = self._make_inner()
        else:
            inner = self._processes.get(op.process)
            if inner is None:
                inner = self._processes[op.process] = self._make_inner()
        io = ControlledIO(inner, self.sched, self.clock,
                          op.written if op is not None else None)
        if self.read_concurrency is not None:
            io.read_concurrency = self.read_concurrency
        io.forward_single_writer = True
        return io

    def executor(self):
        """The executor an operation hands to orphan cleanup or expiration (their
        `executor`): inline, or with pools="actors" one whose tasks are actors."""
        return ActorExecutor() if self.pools == "actors" else InlineExecutor()

    def table(self, op: Optional["Op"] = None) -> Table:
        return Table.open(self.path, file_io=self.io(op))

    def new_rows(self, n: int) -> List[int]:
        rows = list(range(self.next_row, self.next_row + n))
        self.next_row += n
        return rows

    def ident(self) -> int:
        self.next_ident += 1
        return self.next_ident

    @staticmethod
    def data(rows: Sequence[int], partition: str) -> pa.Table:
        return pa.table({"id": pa.array(rows, pa.int64()),
                         "p": pa.array([partition] * len(rows), pa.string())})

    def write(self, table: Table, rows: Sequence[int], partition: str) -> list:
        w = table.new_writer()
        w.write_arrow(self.data(rows, partition))
        return w.prepare_commit()

    def fullest_partition(self, rng: random.Random) -> str:
        """The partition with the most live data files now (read plainly, between rounds);
        ties broken by `rng`."""
        t = Table.open(self.path, file_io=self.plain)
        counts = Counter(f.partition["p"] for f in t.live_files()) \
            if t.latest_snapshot() is not None else Counter()
        most = max(counts[p] for p in PARTITIONS)
        return rng.choice([p for p in PARTITIONS if counts[p] == most])

    def inflight_floor(self, me: Op) -> int:
        """The oldest tick a write still in flight (or held for a later commit) has: an
        orphan cleaner's threshold must lie before it, as a real one lies a day back."""
        ticks = [self.sched.tick] + [h.tick for h in self.held]
        for o in self.ops:
            if o is me or o.end_tick is not None:
                continue
            if o.floor_tick is not None:     # commits or aborts held messages (started or not)
                ticks.append(o.floor_tick)
            elif o.start_tick is not None:
                ticks.append(o.start_tick)
        return min(ticks)

    # --- running ------------------------------------------------------------------------
    @contextlib.contextmanager
    def running(self):
        with contextlib.ExitStack() as stack:
            stack.enter_context(actor_pools() if self.pools == "actors" else
                                inline_pools(read_ahead_too=self.read_concurrency is not None))
            stack.enter_context(seeded_uuids(self.seed))
            if self.storage == "memory":
                stack.enter_context(patched_obstore(self.sched))
            self.lease = stack.enter_context(controlled_lease(self))
            stack.enter_context(controlled_commit_waits(self))
            stack.enter_context(self._left_for_orphan_cleanup())
            yield

    def spawn(self, op: Op, body: Callable[[Op], None]) -> Op:
        self.ops.append(op)

        def run():
            op.start_tick = self.sched.tick
            try:
                body(op)
                if op.outcome == "pending":
                    op.outcome = "ok"
            except REFUSALS as e:
                op.outcome, op.error = "refused", f"{type(e).__name__}: {e}"
            except (Exception, InjectedInterrupt) as e:  # noqa: BLE001 - an outcome
                op.outcome = "unknown" if op.committing or op.kind not in WRITES \
                    else "unwritten"
                op.error = f"{type(e).__name__}: {e}"
                if isinstance(e, InjectedInterrupt):
                    op.detail += " interrupted"
            finally:
                op.end_tick = self.sched.tick
        self.sched.spawn(op.name, run)
        return op

    def new_op(self, kind: str, **kw) -> Op:
        """An operation of one of PROCESSES processes (chosen by the seed)."""
        return Op(len(self.ops), kind, process=self.rng.randrange(PROCESSES), **kw)

    @contextlib.contextmanager
    def _left_for_orphan_cleanup(self):
        """Note the operations whose abort left their files for orphan cleanup because
        another maintainer held the lease (the abort says so in the log, from the actor's
        thread): a safe outcome, excused by invariant 3b."""
        import logging
        sim = self

        class _Handler(logging.Handler):
            def emit(self, record):
                msg = record.getMessage()
                if "for orphan cleanup" in msg and "lease" in msg:
                    # (a pool task's actor, `<op>/tN`, logs for its operation)
                    name = record.threadName[len("actor-"):].split("/")[0]
                    op = next((o for o in reversed(sim.ops) if o.name == name), None)
                    if op is not None and "left for orphan cleanup" not in op.detail:
                        op.detail += " (left for orphan cleanup: lease held)"
        logger = logging.getLogger("paimon_commit.operations.compact")
        handler, level = _Handler(), logger.level
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
        try:
            yield
        finally:
            logger.removeHandler(handler)
            logger.setLevel(level)

    def expire_leases(self, why: str = "") -> None:
        """The lease clock jumps past every lease taken so far: a holder paused now finds its
        lease expired when it resumes, and another maintainer may take it over meanwhile."""
        self.lease_skew_ms += LEASE_MS + 1
        self.sched.note(f"lease clock +{LEASE_MS + 1} ms: every lease taken so far expired"
                        f"{why}")

    def _maybe_expire_leases(self, sched: Scheduler, pick) -> None:
        if self.lease is None:
            return
        paused = [a.name for a in sched.parked() if a is not pick
                  and a.name.split("#")[0] in MAINTAINERS]
        if paused and self.lease_rng.random() < LEASE_EXPIRY_ODDS:
            self.expire_leases(f" (paused: {', '.join(paused)})")

    # --- the checker --------------------------------------------------------------------
    def _outside_state(self) -> Dict[str, bytes]:
        if self.storage == "memory":
            import obstore
            prefix = self.plain.root[len("bucket/"):] + "/"
            out = {}
            for batch in obstore.list(self._store, None):
                for m in batch:
                    if not m["path"].startswith(prefix):
                        out[m["path"]] = bytes(obstore.get(self._store, m["path"]).bytes())
            return out
        out = {}
        for d, _, names in os.walk(self._outside):
            if d == self.path or d.startswith(self.path + os.sep):
                continue
            for n in names:
                p = os.path.join(d, n)
                with open(p, "rb") as f:
                    out[os.path.relpath(p, self._outside)] = f.read()
        return out

    def check(self, where: str) -> None:
        """Check every invariant on the table as it is now (all actors done)."""
        problems: List[str] = []
        t = Table.open(self.path, file_io=self.plain)
        st = t.store
        snaps = t.snapshots()
        ids = [s.id for s in snaps]
        reads: Dict[int, Counter] = {}

        def read_all(what: str, **at) -> Optional[Counter]:
            try:
                got = t.read_arrow(**at).column("id").to_pylist()
            except Exception as e:  # noqa: BLE001 - unreadable is the finding
                problems.append(f"{what} does not read completely: {type(e).__name__}: {e}")
                return None
            c = Counter(got)
            twice = sorted(r for r, k in c.items() if k > 1)
            if twice:
                problems.append(f"{what} has rows more than once: ids {twice[:10]}")
            return c

        # 1. every retained snapshot, tag and changelog reads completely, no row twice
        for s in snaps:
            try:   # our reader keeps the first of a file added twice; pypaimon reads it twice
                mio = st.manifests
                merge_entries(mio.read_entries(mio.read_list(s.base_manifest_list)
                                               + mio.read_list(s.delta_manifest_list)))
            except CommitConflictError as e:
                problems.append(f"snapshot {s.id} publishes a data file twice: {e}")
            except Exception:  # noqa: BLE001 - unreadable: reported by read_all below
                pass
            n = len(problems)
            c = read_all(f"snapshot {s.id}", snapshot_id=s.id)
            if c is None:
                why = self._reset_into_expiring(s.id)
                if why:   # the documented window, not a loss: noted, not a problem
                    self.sched.note(f"snapshot {s.id} does not read: {why}")
                    del problems[n:]
            if c is not None:
                reads[s.id] = c
                if sum(c.values()) != s.total_record_count:
                    problems.append(f"snapshot {s.id} reads {sum(c.values())} rows, its "
                                    f"totalRecordCount says {s.total_record_count}")
        tags = t.tags()
        tag_reads = {tag.name: read_all(f"tag {tag.name} (snapshot {tag.snapshot.id})",
                                        tag=tag.name) for tag in tags}
        problems += self._check_models(snaps, reads, tags, tag_reads)
        from paimon_commit.snapshots import ChangelogManager
        changelogs = ChangelogManager(self.plain, self.plain.root)
        for cid in changelogs.list_snapshot_ids():
            try:
                cl = changelogs.snapshot(cid)
                for lst in cl.manifest_lists():
                    for m in st.manifests.read_list(lst):
                        st.manifests.read_entries([m])
            except Exception as e:  # noqa: BLE001
                problems.append(f"changelog {cid} does not read completely: {e!r}")

        problems += self._check_consumers(ids)

        # 2. every commit that returned an id is in the lineage, until replaced
        latest = reads.get(ids[-1]) if ids else Counter()
        if latest is None:
            latest = Counter()
        owner: Dict[int, Op] = {}
        for o in self.ops:
            if o.kind != "repeat":   # a repeat's rows belong to the operation it repeats
                for r in o.rows:
                    owner[r] = o
        for o in self.ops:
            if o.kind in WRITES + ("drop", "compact") \
                    and o.outcome == "ok" and not o.rolled_back:
                for sid in o.sids:
                    s = next((x for x in snaps if x.id == sid), None)
                    if s is not None and (s.commit_user != o.user):
                        problems.append(f"{o.name} returned snapshot {sid}, but snapshot {sid}"
                                        f" was committed by {s.commit_user} (identifier "
                                        f"{s.commit_identifier}): the commit is lost")
                    if s is None and ids and sid > ids[0]:
                        problems.append(f"{o.name} returned snapshot {sid}, which is gone "
                                        f"while older snapshot {ids[0]} is retained")
                    if sid > (ids[-1] if ids else 0):
                        problems.append(f"{o.name} returned snapshot {sid}, beyond the latest "
                                        f"snapshot {ids[-1] if ids else None}")
            if o.kind in WRITES and o.outcome == "ok" and not o.rolled_back and o.sids:
                first = min(o.sids)
                excused = self._removed_by(o, first)
                missing = [r for r in o.rows if r not in latest]
                if missing and not excused:
                    problems.append(
                        f"{o.name} returned snapshot(s) {o.sids}, but the latest snapshot "
                        f"{ids[-1] if ids else None} lacks its rows {missing[:5]} (no "
                        f"overwrite, drop or rollback replaced them)")
        # 3. no row of an operation that did not commit; none an overwrite replaced
        for r in latest:
            o = owner.get(r)
            if o is None:
                problems.append(f"row {r} in the latest snapshot was never written")
            elif o.outcome in ("refused", "unwritten") or o.kind in ("hold", "abort_held"):
                problems.append(f"row {r} of {o.name} ({o.outcome}) is in the latest "
                                f"snapshot, though that operation committed nothing")
            elif o.outcome == "ok" and o.sids and not o.rolled_back:
                rep = self._replaced_by(o, min(o.sids))
                if rep is not None:
                    problems.append(f"row {r} of {o.name} (snapshot {min(o.sids)}) survived "
                                    f"{rep.name} (snapshot {rep.sids}) of its partition")

        # 3b. a compaction that failed before publishing (refused, or failed before its
        # commit call) left none of the data files it wrote, unless a call of its abort was
        # failed by the scheduler (those are orphans, for orphan cleanup)
        for o in self.ops:
            if o.kind != "compact" or o.n in self._compactions_checked \
                    or o.end_tick is None:
                continue
            self._compactions_checked.add(o.n)
            if not (o.outcome == "refused" or (o.outcome == "unknown" and not o.committing)):
                continue
            if self._delete_faulted(o) or "interrupted" in o.detail \
                    or "left for orphan cleanup" in o.detail \
                    or "failed with an I/O error and may still land" in (o.error or ""):
                # A failed delete, or a Ctrl-C, leaves files for orphan cleanup; so does a
                # conflict found after a publish of it failed with an I/O error (that
                # snapshot can still land, naming them).
                continue
            left = [p for p in o.written if p.endswith(".parquet") and self.plain.exists(p)]
            if left:
                problems.append(f"{o.name} ({o.outcome}: {o.error[:120]}) left {len(left)} "
                                f"data file(s) it wrote: {left[:3]}")

        # 4. nothing outside the root touched
        if self._outside_state() != self._outside_before:
            problems.append("files outside the table root changed")

        if problems:
            self.problems.extend(f"[{where}] {p}" for p in problems)
            raise InvariantViolation(self.report(problems, where))

    def _check_models(self, snaps, reads: Dict[int, Counter], tags, tag_reads) -> List[str]:
        """1b. A table that had a snapshot always has one. 1c. A snapshot reads what it read
        when the checker first saw it, and every tag reads what its snapshot read when the tag
        was created (a tag created or replaced since the last check takes the rows its target
        had when the checker saw it; one never seen: what the tag reads now)."""
        problems = []
        self.latest_checked = _identity(snaps[-1]) if snaps else None
        if snaps:
            self.latest_seen = max(self.latest_seen or 0, snaps[-1].id)
        elif self.latest_seen is not None:
            problems.append(f"the table has no snapshot any more (it had snapshots up to "
                            f"{self.latest_seen}): every row is gone")
        for s in snaps:
            c = reads.get(s.id)
            if c is None:
                continue
            before = self.snapshot_rows.setdefault(_identity(s), c)
            if before != c:
                problems.append(f"snapshot {s.id} reads {_difference(c, before)} than when "
                                f"it was first checked")
        for tag in tags:
            key, got = _identity(tag.snapshot), tag_reads.get(tag.name)
            model = self.tag_rows.get(tag.name)
            if model is None or model[0] != key:   # created (or replaced) since the last check
                expected = self.snapshot_rows.get(key, got)
                if expected is None:
                    continue   # its snapshot never seen and the tag unreadable: reported above
                self.tag_rows[tag.name] = model = (key, expected)
            expected = model[1]
            if got is None:
                problems.append(f"tag {tag.name} (snapshot {tag.snapshot.id}) no longer reads "
                                f"the {sum(expected.values())} rows its snapshot had when the "
                                f"tag was created")
            elif got != expected:
                problems.append(f"tag {tag.name} (snapshot {tag.snapshot.id}) reads "
                                f"{_difference(got, expected)} than its snapshot had when the "
                                f"tag was created")
        for name in [n for n in self.tag_rows if n not in {t.name for t in tags}]:
            del self.tag_rows[name]   # deleted: a tag of that name later is a new one
        return problems

    def _check_consumers(self, ids: List[int]) -> List[str]:
        """1d. A consumer's next snapshot (when not beyond the latest) is still there, unless
        it was deleted before the consumer was written there (a reset to a snapshot being
        expired) or by a rollback: an expiration that deleted it after the consumer was set
        ignored the reader."""
        from paimon_commit.tags import ConsumerManager
        problems = []
        if not ids:
            return problems
        try:
            consumers = ConsumerManager(self.plain, self.plain.root).consumers()
        except Exception as e:  # noqa: BLE001
            return [f"the consumers do not read: {type(e).__name__}: {e}"]
        present = set(ids)
        for c in consumers:
            n = c.next_snapshot
            if n > ids[-1] or n in present:
                continue
            writer = next((o for o in reversed(self.ops) if o.kind in ("consume", "reset")
                           and o.outcome == "ok" and o.target == n
                           and o.detail.split(" ")[0] == c.consumer_id), None)
            if writer is None:
                continue
            dels = [(tick, who) for tick, who, call in self._trace()
                    if who.startswith("expire#") and "delete" in call
                    and "FAULT=before" not in call
                    and re.search(rf"snapshot-{n}(?!\d)", call)]
            late = [(tick, who) for tick, who in dels if tick > writer.end_tick]
            if late:
                problems.append(f"consumer {c.consumer_id} reads from snapshot {n} (set by "
                                f"{writer.name}, tick {writer.end_tick}), which {late[-1][1]} "
                                f"deleted at tick {late[-1][0]}, after the consumer was set")
        return problems

    def _reset_into_expiring(self, sid: int) -> Optional[str]:
        """Why snapshot `sid` may not read without a loss: an expiration planned to expire
        it, re-checked the consumers, deleted its files and stopped before its snapshot
        file (a fault); a reader then reset its consumer to `sid` or below (a reader's own
        write: Java and Flink readers know no lease), so the rerun stopped at that consumer,
        and no expiration has run to its end since the consumers last moved (the one that
        does finishes the snapshot). The window docs/safety.md §7 names (a consumer reset
        between the re-check and the last delete). None if not that."""
        from paimon_commit.tags import ConsumerManager
        resets = [o for o in self.ops if o.kind == "reset" and o.outcome == "ok"
                  and o.target is not None and o.target <= sid and o.end_tick is not None]
        if not resets:
            return None
        try:
            held = any(c.next_snapshot <= sid for c in
                       ConsumerManager(self.plain, self.plain.root).consumers())
        except Exception:  # noqa: BLE001 - reported by _check_consumers
            return None
        moved = 0
        if not held:   # freed when the last consumer moved past it
            moved = max((o.end_tick for o in self.ops if o.kind in ("reset", "consume")
                         and o.outcome == "ok" and o.end_tick is not None
                         and o.target is not None and o.target > sid), default=0)
            if any(o.kind == "expire" and o.outcome == "ok" and "unfinished" not in o.detail
                   and o.start_tick is not None and o.start_tick > moved
                   for o in self.ops):
                return None   # an expiration since it was freed: it finishes it
        trace = list(self._trace())
        for r in resets:
            for o in self.ops:
                if not (o.kind == "expire" and "unfinished" in o.detail
                        and o.start_tick is not None and o.start_tick < r.end_tick):
                    continue
                dels = [tick for tick, who, call in trace if who == o.name
                        and "delete" in call and "FAULT=before" not in call
                        and tick < r.end_tick]
                if dels:
                    return (f"{o.name} deleted its files (tick {dels[0]}) and stopped; "
                            f"{r.name} then reset consumer {r.detail.split(' ')[0]} to "
                            f"{r.target} (tick {r.end_tick}), after its re-check; "
                            + ("a consumer still holds it" if held else
                               f"no expiration has run to its end since it was freed "
                               f"(tick {moved})"))
        return None

    def _trace(self):
        """(tick, operation, call) per step; a pool task's actor (`<op>/tN`, the read-ahead
        variants' ActorExecutor) counts as its operation."""
        for entry in self.sched.trace:
            parts = entry.split(" ", 2)
            if len(parts) == 3 and parts[0].isdigit():
                yield int(parts[0]), parts[1].split("/")[0], parts[2]

    def _delete_faulted(self, o: Op) -> bool:
        """Whether the scheduler failed a call of `o` after it wrote its last data file: a
        failed delete leaves the file (the FileIO contract reports it, nothing raises), and
        a failed read of what the table uses makes the abort keep every file (it cannot
        prove them unused: orphan cleanup takes them later)."""
        mine = [(tick, call) for tick, who, call in self._trace() if who == o.name]
        calls = [c for _, c in mine]
        last_write = max((i for i, c in enumerate(calls)
                          if ".parquet" in c and "delete" not in c and "read" not in c
                          and "exists" not in c), default=-1)
        if any("FAULT=" in c for c in calls[last_write + 1:]):
            return True
        # A snapshot published by another actor after the compaction's last write and its
        # own last try to publish, while its abort read what the table uses (its listing
        # missed it): the abort keeps every file too, for the same reason.
        def publishes(call):
            return re.search(r"\((snapshot/)?snapshot-\d+(, create)?\)", call) is not None \
                and any(m in call for m in ("try_create_atomic", "move(", "create)"))
        if last_write + 1 >= len(mine):
            return False
        since = max([mine[last_write + 1][0]] + [t for t, call in mine if publishes(call)])
        return any(since < tick <= (o.end_tick or tick) and who != o.name
                   and publishes(call) for tick, who, call in self._trace())

    def _removers(self, o: Op):
        for x in self.ops:
            if x is o or x.kind not in REMOVERS or x.rolled_back:
                continue
            if x.partition is not None and o.partition is not None \
                    and x.partition != o.partition:
                continue
            yield x

    def _removed_by(self, o: Op, sid: int) -> bool:
        """Whether a later overwrite / drop of its partition (or one of unknown outcome that
        overlapped it) may have removed the rows of `o`; or a rollback of unknown outcome."""
        # A repeat may report the snapshot of the commit it repeats: what removed that
        # commit's rows since removed the repeat's.
        start = min(o.start_tick or 0, o.origin.start_tick or 0) if o.origin else \
            (o.start_tick or 0)
        for x in self._removers(o):
            if x.outcome == "ok" and x.sids and max(x.sids) > sid:
                return True
            if x.outcome == "unknown" and x.end_tick is not None and x.end_tick > start:
                return True
        for x in self.ops:   # one that returned removed it by marking it rolled_back
            if x.kind == "rollback" and x.outcome == "unknown" \
                    and (x.target is None or x.target < sid) \
                    and (x.end_tick is None or x.end_tick >= start):
                return True
        return False

    def _replaced_by(self, o: Op, sid: int) -> Optional[Op]:
        for x in self._removers(o):
            if x.outcome == "ok" and x.sids and min(x.sids) > max(o.sids) \
                    and (o.kind != "retry"):
                return x
        return None

    def report(self, problems: Sequence[str], where: str) -> str:
        lines = [f"interleaving seed {self.seed} on {self.storage} storage: invariant "
                 f"violated {where}",
                 f"replay: {self.replay or '?'} (tests/interleave/test_interleavings.py; "
                 f"or PAIMON_INTERLEAVE_SEED={self.seed} PAIMON_INTERLEAVE_STORAGE=<variant> "
                 f"[PAIMON_INTERLEAVE_ROUNDS, PAIMON_INTERLEAVE_RATE] pytest "
                 f"tests/interleave/test_interleavings.py -k replay)", ""]
        lines += [f"  - {p}" for p in problems]
        lines += ["", "history:"] + [f"  {o}" for o in self.ops]
        lines += ["", "last scheduling steps:"] + [f"  {s}" for s in self.sched.trace[-int(os.environ.get("PAIMON_INTERLEAVE_TRACE", "40")):]]
        return "\n".join(lines)

    def finish_unfinished(self) -> None:
        """What a rerun does after an operation failed half-way (the crash-safety promise
        of expiration and tag deletion): finish it with a plain FileIO, then check."""
        from paimon_commit.operations.expire import ExpireConfig, ExpireSnapshots
        t = Table.open(self.path, file_io=self.plain)
        try:   # a storage that refuses the maintenance lease refuses every rerun as well:
            t.store.io.check_atomic_create()   # no destructive run ever started on it
        except AtomicCreateUnsupportedError:
            if not t.store.options.get("commit.single-writer"):
                return
        for o in self.ops:
            if o.kind == "expire" and (o.outcome == "unknown" or "unfinished" in o.detail) \
                    and not o.detail.endswith("rerun"):
                cfg = ExpireConfig.from_options(t.store.options, retain_min=1,
                                                retain_max=o.target)
                ExpireSnapshots(t.store, cfg, executor=InlineExecutor()).expire()
                o.detail += " rerun"
        for name in t.unfinished_tag_deletions():
            t.delete_tag(name)
        for o in self.ops:
            if o.kind == "rollback" and (o.outcome == "unknown" or "unfinished" in o.detail) \
                    and o.target is not None and not o.detail.endswith("rerun") \
                    and not o.detail.endswith("gone"):
                if t.store.snapshots.try_snapshot(o.target) is None:
                    o.detail += " target gone"   # expired by a racing expiration
                    # What it did not delete is still published (no writer raced it). It
                    # deletes newest first: while the newest snapshot it would have deleted
                    # is there, it deleted none, and what an expiration took since is not
                    # its doing either (seed 908050, memory: it failed taking the lease, and
                    # a drop whose snapshot then expired counted as rolled back).
                    def there(x):
                        s = t.store.snapshots.try_snapshot(max(x.sids))
                        return s is not None and s.commit_user == x.user
                    newest = max(o.marked, key=lambda x: max(x.sids), default=None)
                    none_deleted = newest is not None and there(newest)
                    # Or: the latest snapshot when the round began (no writer races a
                    # rollback), above its target, is still there: it deleted none (newest
                    # first), although an expiration took the marked operations' snapshots.
                    start = self.latest_checked
                    if start is not None and start[0] > o.target:
                        s = t.store.snapshots.try_snapshot(start[0])
                        none_deleted |= s is not None and _identity(s) == start
                    # Newest first, too: a marked snapshot still there means it deleted
                    # none below it; those gone below it an expiration took (from the
                    # oldest up: a rollback that deleted 12-14, then an expiration of 3-9
                    # with 10 and 11 kept, had counted 3-9 as rolled back).
                    survivor = max((max(x.sids) for x in o.marked if there(x)), default=None)
                    for x in o.marked:
                        if none_deleted or (survivor is not None
                                            and max(x.sids) <= survivor):
                            x.rolled_back = False
                    continue
                t.rollback_to(o.target)
                o.detail += " rerun"

    def pypaimon_agrees(self) -> None:
        """pypaimon reads the latest snapshot as we do (local directories only)."""
        if self.storage == "memory":
            return
        from oracle import pp_read
        t = Table.open(self.path, file_io=self.plain)
        if t.latest_snapshot() is None:
            return
        ours = sorted(t.read_arrow().column("id").to_pylist())
        theirs = sorted(pp_read(self.path).column("id").to_pylist())
        if ours != theirs:
            raise InvariantViolation(self.report(
                [f"pypaimon reads {len(theirs)} rows, we read {len(ours)}"], "at the end"))


def _identity(s) -> tuple:
    """A snapshot's identity: its id may be re-used after a rollback, its base list not."""
    return s.id, s.commit_user, s.commit_identifier, s.base_manifest_list


def _difference(got: Counter, expected: Counter) -> str:
    missing = sorted((expected - got).elements())
    extra = sorted((got - expected).elements())
    out = f"{sum(got.values())} rows ({sum(expected.values())} expected"
    if missing:
        out += f"; missing ids {missing[:8]}"
    if extra:
        out += f"; extra ids {extra[:8]}"
    return out + ")"


@contextlib.contextmanager
def seeded_uuids(seed: int):
    """File names (uuid4) from the seed: listings, and so the order of the calls made for
    each listed file, are the same in every replay."""
    rng = random.Random(seed ^ 0x0BADC0DE)
    real = uuid.uuid4
    uuid.uuid4 = lambda: uuid.UUID(int=rng.getrandbits(128), version=4)
    try:
        yield
    finally:
        uuid.uuid4 = real

