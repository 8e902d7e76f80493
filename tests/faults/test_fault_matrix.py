"""Every operation × every kind of file operation × every failure mode × every k.

For each case: copy a template table, run the operation with the k-th operation of one kind
failing (an I/O error the process survives, an unknown outcome, an OS-level unlink failure, or
a process stop), then check:

1. the table opens with our reader and with pypaimon, and both see the same latest rows;
2. every snapshot and tag on disk reads, with our reader and with pypaimon, exactly the rows
   it should have: the template's, or what the operation was supposed to produce (snapshots the
   operation was expiring may be half-deleted until the rerun, nothing else may be);
3. every file a readable snapshot or tag references exists;
4. if the operation reported success, the table is exactly in its success state.

Then the operation is rerun without faults (non-idempotent ones check first: commits through
filter_and_commit / filter_committed with a fixed commit user and identifier), the table must
have exactly the snapshots and tags of the success state (a commit published exactly once), an
orphan cleanup with a near-zero age threshold runs, every snapshot and tag reads its success
rows with both readers, and the files on disk in manifest/, the bucket directories, index/,
statistics/ and temp files in snapshot/ and changelog/ must be exactly the referenced ones.

Cases that fail because of a known library bug (KNOWN_BUGS: narrow predicates on operation,
kind, mode and the failing file operation) are counted and reported, not failed; each bug has
a strict xfail test at the end of this module.

By default a seeded sample of k runs (every k where an operation does few operations of a
kind); PAIMON_COMMIT_FULL_FAULTS=1 runs every k. PAIMON_COMMIT_FAULT_SEED changes the sample.
The number of cases is reported in pytest's terminal summary (tests/faults/conftest.py).
"""
from __future__ import annotations

import datetime
import hashlib
import os
import pathlib
import random
import shutil
import tempfile
import time
import zlib
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Set, Tuple

import pytest

from conftest import SCHEMA, make_rows, write
from faults.fault_io import KINDS, Crash, FaultIO, modes_for
from invariants import referenced_files
from oracle import pp_read

from paimon_commit import Table
from paimon_commit.operations.commit import FileStoreCommit
from paimon_commit.operations import commit_record
from paimon_commit.operations.commit_record import CommitRecord
from paimon_commit.operations.orphan import CleanContext, OrphanCleanAborted, OrphanFilesCleaner
from paimon_commit.operations.partition_expire import PartitionExpire, PartitionExpireConfig
from paimon_commit.format import paths as P
from paimon_commit.store import FileStore

FULL = os.environ.get("PAIMON_COMMIT_FULL_FAULTS") == "1"
SEED = int(os.environ.get("PAIMON_COMMIT_FAULT_SEED", "20240611"))
SAMPLE_SMALL = 3      # reduced mode: every k when an operation does at most this many ops
SAMPLE_K = 2          # ... else this many seeded k besides the first and the last

USER = "matrix"
D1, D2 = datetime.date(2024, 1, 1), datetime.date(2024, 1, 2)
DF = datetime.date(2099, 1, 1)          # a partition that never expires

# Cases run, by mode: filled by the tests, reported by conftest.pytest_terminal_summary.
CASES: Dict[str, int] = {}
KNOWN_BUG_CASES: Dict[str, int] = {}


# --------------------------------------------------------------------------------------------
# Templates
# --------------------------------------------------------------------------------------------

def overwrite(t, rows, partition, ident=None):
    w = t.new_writer()
    w.write_arrow(rows)
    with t.new_commit() as c:
        return c.overwrite(w.prepare_commit(), partition=partition, commit_identifier=ident)


def build_hist(path):
    """Snapshots 1-8 with an overwrite, a dropped partition and tags keep@4, late@7.

    s1 +[1,2] D1/0   s2 +[3,4] D1/1   s3 +[5,6] D2/0   s4 overwrite D1/1 = [7]
    s5 drop D1/0     s6 +[8,9] DF/2   s7 +[10] DF/0    s8 +[11] D2/1
    """
    t = Table.create(str(path), SCHEMA, ["dt", "hr"], {"write-only": "true"})
    write(t, make_rows([1, 2], D1, 0))
    write(t, make_rows([3, 4], D1, 1))
    write(t, make_rows([5, 6], D2, 0))
    overwrite(t, make_rows([7], D1, 1), {"dt": D1, "hr": 1})
    t.create_tag("keep", 4)
    with t.new_commit() as c:
        c.drop_partitions([{"dt": D1, "hr": 0}])
    write(t, make_rows([8, 9], DF, 2))
    write(t, make_rows([10], DF, 0))
    t.create_tag("late", 7)
    write(t, make_rows([11], D2, 1))
    return t


HIST = {("s", 1): [1, 2], ("s", 2): [1, 2, 3, 4], ("s", 3): [1, 2, 3, 4, 5, 6],
        ("s", 4): [1, 2, 5, 6, 7], ("s", 5): [5, 6, 7], ("s", 6): [5, 6, 7, 8, 9],
        ("s", 7): [5, 6, 7, 8, 9, 10], ("s", 8): [5, 6, 7, 8, 9, 10, 11],
        ("t", "keep"): [1, 2, 5, 6, 7], ("t", "late"): [5, 6, 7, 8, 9, 10]}


def build_tagged(path):
    """The history plus tag gone@2, then snapshots 1-3 expired: the tag outlives its
    snapshot and alone keeps s2's file [3,4] (overwritten in s4)."""
    t = build_hist(path)
    t.create_tag("gone", 2)
    with t.new_commit() as c:
        c.expire_snapshots(retain_min=1, time_retained_ms=0, max_deletes=3)
    assert [s.id for s in t.snapshots()] == [4, 5, 6, 7, 8]
    return t


TAGGED = {k: v for k, v in HIST.items() if k[0] == "t" or k[1] >= 4}
TAGGED[("t", "gone")] = [1, 2, 3, 4]

ORPHANS = {
    "dt=19723/hr=1/bucket-0/data-stray-0.parquet": b"x" * 100,
    "dt=19724/hr=0/bucket-0/.data-stray-1.parquet.tmp": b"x",
    "manifest/manifest-lostrace-0": b"m" * 10,
    "manifest/manifest-list-lostrace-0": b"l" * 10,
    "manifest/.manifest-abc-0.1234.tmp": b"t",
    "snapshot/.snapshot-9.5678.tmp": b"{}",
    "index/index-stray-0": b"i",
    "statistics/stat-stray-0": b"s",
    "changelog/.changelog-3.999.tmp": b"c",
}


def build_orphaned(path):
    t = build_hist(path)
    for rel, data in ORPHANS.items():
        p = path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
    return t


TEMPLATES = {"hist": (build_hist, HIST), "tagged": (build_tagged, TAGGED),
             "orphaned": (build_orphaned, HIST)}


# --------------------------------------------------------------------------------------------
# Operations
# --------------------------------------------------------------------------------------------

def table_at(path, io=None) -> Table:
    return Table(FileStore.open(str(path), io=io)) if io is not None else Table.open(str(path))


def written(t: Table, rows):
    w = t.new_writer()
    w.write_arrow(rows)
    return w.prepare_commit()


@dataclass
class Op:
    name: str
    template: str
    run: Callable            # run(path, io, ctx): the operation (io=None: no faults)
    rerun: Callable          # rerun(path, ctx): finish the job after a failure, without faults
    success: Dict            # the state after success: ("s", id) / ("t", name) -> ids
    expiring: Set[int] = field(default_factory=set)  # may be half-deleted after a failure
    new_snapshot_user: Optional[Tuple[str, int]] = None  # (user, identifier) published once
    transient: Dict = field(default_factory=dict)    # states allowed only until the rerun


def _commit_run(path, io, ctx):
    t = table_at(path, io)
    ctx["msgs"] = written(t, make_rows([100, 101], D2, 0))
    with t.new_commit(commit_user=USER) as c:
        c.filter_and_commit({42: ctx["msgs"]})


def _commit_rerun(path, ctx):
    t = table_at(path)
    # After an I/O error the job still holds its messages and re-commits them; after a crash
    # it runs the task again (new files) and filter_and_commit skips what was published.
    msgs = ctx.get("msgs") if not ctx["crashed"] else None
    if msgs is None:
        msgs = written(t, make_rows([100, 101], D2, 0))
    with t.new_commit(commit_user=USER) as c:
        c.filter_and_commit({42: msgs})


def _overwrite_body(t, msgs):
    with t.new_commit(commit_user=USER) as c:
        c.overwrite(msgs, partition={"dt": D2, "hr": 0}, commit_identifier=43)


def _overwrite_run(path, io, ctx):
    t = table_at(path, io)
    ctx["msgs"] = written(t, make_rows([200], D2, 0))
    _overwrite_body(t, ctx["msgs"])


def _overwrite_rerun(path, ctx):
    t = table_at(path)
    with t.new_commit(commit_user=USER) as c:
        if not c.filter_committed([43]):
            return
    msgs = ctx.get("msgs") if not ctx["crashed"] else None
    _overwrite_body(t, msgs or written(t, make_rows([200], D2, 0)))


def _drop_run(path, io, ctx):
    with table_at(path, io).new_commit(commit_user=USER) as c:
        c.drop_partitions([{"dt": D2}], commit_identifier=44)


def _drop_rerun(path, ctx):
    with table_at(path).new_commit(commit_user=USER) as c:
        if c.filter_committed([44]):
            c.drop_partitions([{"dt": D2}], commit_identifier=44)


def _expire_run(path, io, ctx):
    with table_at(path, io).new_commit(commit_user=USER) as c:
        ctx["result"] = c.expire_snapshots(retain_min=2, time_retained_ms=0, max_deletes=100,
                                           clean_empty_directories=True)


def _pexpire_run(path, io, ctx):
    store = FileStore.open(str(path), io=io)
    cfg = PartitionExpireConfig(expiration_time_ms=86_400_000, batch_size=1)
    ctx["result"] = PartitionExpire(store, FileStoreCommit(store, USER), cfg).expire(force=True)


def _create_tag_run(path, io, ctx):
    table_at(path, io).create_tag("new", 6)


def _create_tag_rerun(path, ctx):
    t = table_at(path)
    if "new" not in [x.name for x in t.tags()]:
        t.create_tag("new", 6)


def _delete_tag_run(path, io, ctx):
    ctx["result"] = table_at(path, io).delete_tag("gone")


def _delete_tag_rerun(path, ctx):
    t = table_at(path)
    if "gone" in [x.name for x in t.tags()] + t.unfinished_tag_deletions():
        t.delete_tag("gone")


def _rollback_run(path, io, ctx):
    table_at(path, io).rollback_to(snapshot_id=6)


def _rollback_tag_run(path, io, ctx):
    table_at(path, io).rollback_to(tag="gone")


def _orphan_run(path, io, ctx):
    time.sleep(0.01)
    ctx["result"] = OrphanFilesCleaner(CleanContext(
        str(path), older_than_ms=int(time.time() * 1000) - 1, file_io=io,
        allow_recent_cutoff=True)).clean()


MAINTAINED = {"write-only": "false", "snapshot.num-retained.min": "2",
              "snapshot.time-retained": "0 ms", "snapshot.expire.limit": "100",
              "snapshot.clean-empty-directories": "true", "partition.expiration-time": "1 d",
              "partition.expiration-check-interval": "0 ms",
              "partition.expiration-batch-size": "1"}


def _maintained_run(path, io, ctx):
    """An append with post-commit maintenance (partition expiration, then snapshot
    expiration) in the committing thread; a maintenance failure is parked, not raised."""
    t = table_at(path, io)
    ctx["msgs"] = written(t, make_rows([100, 101], DF, 1))
    with t.new_commit(commit_user=USER, options=MAINTAINED) as c:
        c.filter_and_commit({46: ctx["msgs"]})
        ctx["maintenance_error"] = c.maintenance_error
        # What maintenance could not finish (a delete that failed) it reports as skipped, and
        # the next run completes it: that is not a success state.
        if c.last_maintenance is not None and c.last_maintenance.snapshots is not None:
            ctx["result"] = c.last_maintenance.snapshots


def _maintained_rerun(path, ctx):
    t = table_at(path)
    msgs = ctx.get("msgs") if not ctx["crashed"] else None
    with t.new_commit(commit_user=USER, options=MAINTAINED) as c:
        if c.filter_committed([46]):
            c.filter_and_commit({46: msgs or written(t, make_rows([100, 101], DF, 1))})
        # The restarted job's next commit would run maintenance; run it now.
        c.partition_expire.expire(force=True)
        c.expire_snapshots()


def _same(run):
    return lambda path, ctx: run(path, None, ctx)


def _without(state, *keys):
    return {k: v for k, v in state.items() if k not in keys}


def _minus(ids, gone):
    return [i for i in ids if i not in gone]


OPS = {op.name: op for op in [
    Op("commit", "hist", _commit_run, _commit_rerun,
       {**HIST, ("s", 9): sorted(HIST[("s", 8)] + [100, 101])}, new_snapshot_user=(USER, 42)),
    Op("overwrite", "hist", _overwrite_run, _overwrite_rerun,
       {**HIST, ("s", 9): sorted(_minus(HIST[("s", 8)], {5, 6}) + [200])},
       new_snapshot_user=(USER, 43)),
    Op("drop-partition", "hist", _drop_run, _drop_rerun,
       {**HIST, ("s", 9): _minus(HIST[("s", 8)], {5, 6, 11})}, new_snapshot_user=(USER, 44)),
    Op("expire-snapshots", "hist", _expire_run, _same(_expire_run),
       _without(HIST, *[("s", i) for i in range(1, 7)]), expiring=set(range(1, 7))),
    # Batches of one partition, in the order of their directory values: D1/1, D2/0, D2/1.
    Op("expire-partitions", "hist", _pexpire_run, _same(_pexpire_run),
       {**HIST, ("s", 9): _minus(HIST[("s", 8)], {7}), ("s", 10): [8, 9, 10, 11],
        ("s", 11): [8, 9, 10]}),
    Op("create-tag", "hist", _create_tag_run, _create_tag_rerun,
       {**HIST, ("t", "new"): HIST[("s", 6)]}),
    Op("delete-tag", "tagged", _delete_tag_run, _delete_tag_rerun,
       _without(TAGGED, ("t", "gone"))),
    Op("rollback", "hist", _rollback_run, _same(_rollback_run),
       _without(HIST, ("s", 7), ("s", 8), ("t", "late"))),
    Op("rollback-to-expired-tag", "tagged", _rollback_tag_run, _same(_rollback_tag_run),
       {("s", 2): TAGGED[("t", "gone")], ("t", "gone"): TAGGED[("t", "gone")]}),
    Op("orphan-clean", "orphaned", _orphan_run, _same(_orphan_run), dict(HIST)),
    # s9 +[100,101] DF/1; maintenance drops D1/1 (s10), D2/0 (s11), D2/1 (s12), then keeps
    # the last two snapshots. A duplicated append would show in s12: DF never expires.
    Op("commit+maintenance", "hist", _maintained_run, _maintained_rerun,
       {("t", "keep"): HIST[("t", "keep")], ("t", "late"): HIST[("t", "late")],
        ("s", 11): [8, 9, 10, 11, 100, 101], ("s", 12): [8, 9, 10, 100, 101]},
       expiring=set(range(1, 11)),
       transient={("s", 9): sorted(HIST[("s", 8)] + [100, 101]),
                  ("s", 10): [5, 6, 8, 9, 10, 11, 100, 101]}),
]}


# --------------------------------------------------------------------------------------------
# Known library bugs. A failing case that matches one is counted (and reported in the terminal
# summary), not failed; each has a strict xfail test at the end of this module. The
# predicates are deliberately narrow: op, kind, mode and the operation that failed.
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Case:
    op: str
    kind: str
    mode: str
    k: int
    method: str = ""
    rel: str = ""   # the failing operation's path, relative to the table root


QUIET_DELETE = ("error", "unlink")   # delete_quietly returned False, the file stayed
EXPIRING = ("expire-snapshots", "commit+maintenance")   # the ops that expire snapshots

BUG_LEAK = "BUG-1 a data file whose delete failed (or, in delete_tag, was interrupted) is " \
    "leaked: nothing retries it and orphan cleanup keeps it by name"
BUG_EXPIRE_SILENT = "BUG-2 expire returns normally although a snapshot file it expired stays"
BUG_TAG_FILE = "BUG-3 delete_tag deletes the tag's files although the tag file stayed"
BUG_ROLLBACK_SILENT = "BUG-4 rollback_to returns normally although a newer snapshot/tag stayed"
BUG_ROLLBACK_GAP = "BUG-5 rollback_to rerun after a crash keeps the newer snapshots (gap " \
    "below them fools the LATEST hint)"

BUG_EMPTY_TAGS = "BUG-6 (hardening) expiration trusts an empty tag listing and deletes what " \
    "tags need"
BUG_EMPTY_SNAPSHOTS = "BUG-7 orphan cleanup trusts an empty snapshot listing and deletes the " \
    "files of every snapshot no tag covers"

# All seven are fixed: their cases must pass, and their regression tests at the end of this
# module are plain tests. A bug found later goes here (with a strict xfail) until it is fixed.
KNOWN_BUGS: List[Tuple[str, Callable[[Case], bool]]] = []


def known_bug(case: Case) -> Optional[str]:
    return next((reason for reason, matches in KNOWN_BUGS if matches(case)), None)


# --------------------------------------------------------------------------------------------
# Checks
# --------------------------------------------------------------------------------------------

class _ReadCache:
    """Rows of a snapshot / tag, by reader, keyed by the bytes of its snapshot or tag file.
    Sound because every metadata and data file is immutable and uniquely named, and the files
    a snapshot references are checked to exist before it is read. The latest snapshot is
    always read afresh; FULL mode reads everything afresh."""

    def __init__(self):
        self.rows: Dict[Tuple[str, bytes], List[int]] = {}

    def read(self, reader: str, path, key, file_bytes) -> List[int]:
        h = (reader, hashlib.sha1(file_bytes).digest())
        if not FULL and h in self.rows:
            return self.rows[h]
        kind, name = key
        snap, tag = (name, None) if kind == "s" else (None, name)
        if reader == "ours":
            got = Table.open(str(path)).read_arrow(snapshot_id=snap, tag=tag)
        else:
            got = pp_read(path, snapshot_id=snap, tag=tag)
        self.rows[h] = ids = ids_of(got)
        return ids


READS = _ReadCache()


def ids_of(arrow_table) -> List[int]:
    return sorted(arrow_table.column("id").to_pylist())


def referenced(t: Table, skip: Set[int] = frozenset()) -> Set[str]:
    """Manifest lists, manifests and data files of every snapshot (not in `skip`) and tag."""
    return referenced_files(t, skip=skip)


def check_readable(path, allowed: Dict, breakable: Set[int], exact: Optional[Dict] = None):
    """Invariants 1-4 (see the module docstring). `allowed`: the rows each snapshot and tag
    may have; `exact`: the state the table must be in (keys and rows)."""
    t = Table.open(str(path))
    sids = [s.id for s in t.snapshots()]
    tags = [x.name for x in t.tags()]
    keys = [("s", i) for i in sids] + [("t", n) for n in tags]
    unexpected = [k for k in keys if k not in allowed]
    assert not unexpected, f"unexpected snapshots/tags {unexpected} (on disk: {keys})"
    if exact is not None:
        assert sorted(keys, key=repr) == sorted(exact, key=repr), \
            f"state {sorted(keys, key=repr)} != expected {sorted(exact, key=repr)}"
    # 1. our reader and pypaimon open the table and agree on the latest rows.
    latest = t.latest_snapshot()
    ours = ids_of(t.read_arrow())
    theirs = ids_of(pp_read(path))
    assert ours == theirs, f"latest: ours {ours} != pypaimon {theirs}"
    if latest is not None:
        assert ours == allowed[("s", latest.id)], f"latest snapshot {latest.id}: {ours}"
    # 3. every file a readable snapshot or tag references exists.
    missing = sorted(p for p in referenced(t, breakable) if not os.path.exists(p))
    assert not missing, f"referenced files missing: {missing[:5]}"
    # 2. each snapshot and tag reads its rows, with both readers.
    for kind, name in keys:
        if kind == "s" and name in breakable:
            continue
        want = allowed[(kind, name)]
        file = t.store.snapshots.snapshot_path(name) if kind == "s" else \
            os.path.join(str(path), "tag", P.tag_file_name(name))
        with open(file, "rb") as f:
            raw = f.read()
        for reader in ("ours", "pypaimon"):
            got = READS.read(reader, path, (kind, name), raw)
            assert got == want, f"{kind} {name}: {reader} read {got}, expected {want}"
    return t


def leftovers(path) -> List[str]:
    """Unreferenced files in manifest/, index/, statistics/, the bucket directories, and temp
    files in snapshot/ and changelog/."""
    t = Table.open(str(path))
    ref = referenced(t)
    on_disk = set()
    for sub in ("manifest", "index", "statistics"):
        d = os.path.join(str(path), sub)
        if os.path.isdir(d):
            on_disk |= {os.path.join(d, n) for n in os.listdir(d)}
    for sub in ("snapshot", "changelog"):
        d = os.path.join(str(path), sub)
        if os.path.isdir(d):
            on_disk |= {os.path.join(d, n) for n in os.listdir(d)
                        if P.parse_snapshot_id(n) is None and P.parse_changelog_id(n) is None
                        and n not in ("LATEST", "EARLIEST")}
    for root, dirs, files in os.walk(str(path)):
        if os.path.basename(root).startswith("bucket-"):
            on_disk |= {os.path.join(root, n) for n in files}
    return sorted(os.path.relpath(p, path) for p in on_disk - ref)


def link_copy(src, dst):
    """A copy of a table whose files are hard links: nothing in a table is modified in place
    (files are written once under unique names, or replaced by rename), and the templates'
    fixture checks at teardown that they are unchanged."""
    shutil.copytree(src, dst, copy_function=os.link)


def tree_digest(path) -> Dict[str, str]:
    out = {}
    for root, _, files in os.walk(str(path)):
        for n in files:
            p = os.path.join(root, n)
            with open(p, "rb") as f:
                out[os.path.relpath(p, path)] = hashlib.sha1(f.read()).hexdigest()
    return out


def new_snapshots_of(path, user, ident) -> List[int]:
    return [s.id for s in Table.open(str(path)).snapshots()
            if s.commit_user == user and s.commit_identifier == ident]


# --------------------------------------------------------------------------------------------
# The matrix
# --------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    """Where templates and cases live: tmpfs when there is one (every publish fsyncs, and
    the cases hard-link the templates' files, so both must be on one file system)."""
    shm = "/dev/shm"
    if os.path.isdir(shm) and os.access(shm, os.W_OK):
        base = pathlib.Path(tempfile.mkdtemp(prefix="paimon-fault-matrix-", dir=shm))
    else:
        base = tmp_path_factory.mktemp("fault-matrix")
    yield base
    shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(scope="module")
def templates(scratch):
    out = {}
    for name, (build, state) in TEMPLATES.items():
        path = scratch / f"tpl-{name}" / "wh" / "db.db" / "t"
        path.parent.mkdir(parents=True)
        build(path)
        time.sleep(0.01)
        # The template itself is what we say it is, for both readers.
        check_readable(path, state, set(), exact=state)
        out[name] = path
    digests = {name: tree_digest(p) for name, p in out.items()}
    yield out
    for name, p in out.items():
        assert tree_digest(p) == digests[name], f"template {name} was modified through a link"


_COUNTS: Dict[str, Dict[str, int]] = {}


def op_counts(op: Op, templates, tmp_path) -> Dict[str, int]:
    """Operations of each kind the operation performs when nothing fails."""
    if op.name not in _COUNTS:
        path = tmp_path / "probe" / "db.db" / "t"
        shutil.copytree(templates[op.template], path)
        io = FaultIO(str(path))
        op.run(path, io, {"crashed": False})
        check_readable(path, op.success, set(), exact=op.success)
        _COUNTS[op.name] = dict(io.counts)
        shutil.rmtree(path.parent.parent)
    return _COUNTS[op.name]


def ks_for(op: str, kind: str, mode: str, n: int) -> List[int]:
    if FULL or n <= SAMPLE_SMALL:
        return list(range(1, n + 1))
    rng = random.Random(SEED ^ zlib.crc32(f"{op}/{kind}/{mode}".encode()))
    return sorted({1, n} | set(rng.sample(range(2, n), min(SAMPLE_K, n - 2))))


def case_of(op, kind, mode, k, io, path) -> Case:
    method, target = (io.fired[1], io.fired[2]) if io.fired else ("", "")
    return Case(op.name, kind, mode, k, method, os.path.relpath(target, path) if target else "")


def run_case(op: Op, template, base: str, kind: str, mode: str, k: int
             ) -> Tuple[Optional[str], Case]:
    """One case; returns (the failing check's message or None, the case)."""
    path = base / "db.db" / "t"
    link_copy(template, path)
    io = FaultIO(str(path), kind=kind, at=k, mode=mode)
    ctx = {"crashed": False}
    where = "run"
    try:
        reported_success = False
        try:
            op.run(path, io, ctx)
            # Success: it returned, and did not report anything it skipped.
            reported_success = not getattr(ctx.get("result"), "skipped", None)
        except Crash:
            ctx["crashed"] = True
        except Exception as e:  # noqa: BLE001 - an I/O error surfacing is fine
            ctx["error"] = e
        assert io.fired is not None, f"the fault never fired ({dict(io.counts)})"
        where = "after the fault"
        ctx["crashed"] = io.dead   # a Crash parked by the library is still a dead process
        if ctx["crashed"] or ctx.get("maintenance_error") is not None:
            reported_success = False
        if mode == "empty":
            # A listing that says "nothing there" may make the operation do less (a smaller
            # plan is safe); it must never make it do damage.
            reported_success = False
        allowed = {**op.transient, **op.success,
                   **{key: rows for key, rows in TEMPLATES[op.template][1].items()
                      if key not in op.success}}
        for key in set(op.success) & set(TEMPLATES[op.template][1]):
            assert op.success[key] == TEMPLATES[op.template][1][key], key
        check_readable(path, allowed, op.expiring,
                       exact=op.success if reported_success else None)
        if op.new_snapshot_user:
            assert len(new_snapshots_of(path, *op.new_snapshot_user)) <= 1, "published twice"
        where = "rerun"
        op.rerun(path, ctx)
        where = "after the rerun"
        t = Table.open(str(path))
        state = sorted([("s", x.id) for x in t.snapshots()] + [("t", x.name) for x in t.tags()],
                       key=repr)
        assert state == sorted(op.success, key=repr), f"state {state} != expected"
        if op.new_snapshot_user:
            assert len(new_snapshots_of(path, *op.new_snapshot_user)) == 1, \
                "not published exactly once"
        where = "orphan cleanup"
        time.sleep(0.01)
        OrphanFilesCleaner(CleanContext(str(path),
                                        older_than_ms=int(time.time() * 1000) - 1,
                                        allow_recent_cutoff=True)).clean()
        where = "after the cleanup"
        check_readable(path, op.success, set(), exact=op.success)
        left = leftovers(path)
        assert not left, f"unreferenced files left: {left}"
        return None, case_of(op, kind, mode, k, io, path)
    except (AssertionError, Exception) as e:  # noqa: BLE001 - reported with the case
        return (f"{op.name} {kind}/{mode} k={k} ({io.fired[1] if io.fired else '-'} "
                f"{os.path.relpath(io.fired[2], path) if io.fired else ''}; "
                f"op {'crashed' if ctx['crashed'] else repr(ctx.get('error'))}) "
                f"{where}: {type(e).__name__}: {e}"), case_of(op, kind, mode, k, io, path)
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("op_name", list(OPS))
def test_fault_matrix(op_name, kind, templates, scratch):
    op = OPS[op_name]
    n = op_counts(op, templates, scratch / f"probe-{op_name}").get(kind, 0)
    if n == 0:
        pytest.skip(f"{op_name} performs no {kind} operation")
    failures, known = [], []
    for mode in modes_for(kind):
        for k in ks_for(op_name, kind, mode, n):
            CASES[mode] = CASES.get(mode, 0) + 1
            msg, case = run_case(op, templates[op.template],
                                 scratch / f"{op_name}-{kind}-{mode}-{k}", kind, mode, k)
            if msg is None:
                continue
            bug = known_bug(case)
            if bug:
                KNOWN_BUG_CASES[bug] = KNOWN_BUG_CASES.get(bug, 0) + 1
                known.append(msg)
            else:
                failures.append(msg)
    assert not failures, f"{len(failures)} failing case(s):\n" + "\n".join(failures[:20])


# --------------------------------------------------------------------------------------------
# The checks above can fail: each is shown to catch a damaged table.
# --------------------------------------------------------------------------------------------

def _copy(templates, name, tmp_path):
    # Next to the templates (hard links need one file system); tmp_path is not used.
    path = pathlib.Path(tempfile.mkdtemp(dir=templates[name].parents[3])) / "wh" / "db.db" / "t"
    link_copy(templates[name], path)
    return path


def test_checks_catch_a_missing_referenced_file(templates, tmp_path):
    path = _copy(templates, "hist", tmp_path)
    t = Table.open(str(path))
    victim = [f.path for f in t.live_files(4) if f.partition["hr"] == 0
              and f.partition["dt"] == D1][0]          # live in s1-s4 and tag keep only
    os.unlink(victim)
    with pytest.raises(AssertionError, match="referenced files missing"):
        check_readable(path, HIST, set())
    # ...even when the snapshots that reference it may be half-expired: the tag still does.
    with pytest.raises(AssertionError, match="referenced files missing"):
        check_readable(path, HIST, {1, 2, 3, 4})


def test_checks_catch_wrong_rows_extra_snapshots_and_duplicate_commits(templates, tmp_path,
                                                                      monkeypatch):
    path = _copy(templates, "hist", tmp_path)
    with pytest.raises(AssertionError, match="latest snapshot 8"):
        check_readable(path, {**HIST, ("s", 8): [5, 6]}, set())
    with pytest.raises(AssertionError, match="s 6: ours read"):
        check_readable(path, {**HIST, ("s", 6): [5, 6]}, set())
    with pytest.raises(AssertionError, match="unexpected snapshots/tags"):
        check_readable(path, _without(HIST, ("t", "late")), set())
    with pytest.raises(AssertionError, match="state"):
        check_readable(path, HIST, set(), exact=_without(HIST, ("s", 1)))
    op = OPS["commit"]
    _commit_run(path, None, {"crashed": False})
    check_readable(path, op.success, set(), exact=op.success)
    # The same batch, again, as another process would (this one refuses a repeated
    # identifier: it remembers what it committed).
    monkeypatch.setattr(commit_record, "RECORD", CommitRecord())
    with table_at(path).new_commit(commit_user=USER) as c:
        c.commit(written(table_at(path), make_rows([100, 101], D2, 0)), 42)
    assert len(new_snapshots_of(path, USER, 42)) == 2
    with pytest.raises(AssertionError):
        check_readable(path, op.success, set(), exact=op.success)


def test_checks_catch_leftovers(templates, tmp_path):
    path = _copy(templates, "hist", tmp_path)
    assert leftovers(path) == []
    for rel in ORPHANS:
        p = path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(b"x")
    assert set(leftovers(path)) == set(ORPHANS)


def test_fault_io_counts_fails_and_crashes(tmp_path):
    root = tmp_path / "t"
    root.mkdir()
    io = FaultIO(str(root), kind="write", at=2, mode="error")
    io.write_new(str(root / "a"), b"1")
    with pytest.raises(OSError):
        io.write_new(str(root / "b"), b"2")
    io.write_new(str(root / "c"), b"3")          # the process carries on
    assert not (root / "b").exists() and io.counts["write"] == 3
    io = FaultIO(str(root), kind="publish", at=1, mode="error_after")
    with pytest.raises(OSError):
        io.try_create_atomic(str(root / "d"), b"4")
    assert (root / "d").read_bytes() == b"4"     # done, but the caller saw an error
    io = FaultIO(str(root), kind="publish", at=1, mode="crash")
    with pytest.raises(Crash):
        io.try_create_atomic(str(root / "e"), b"5")
    assert not (root / "e").exists()
    assert [n for n in os.listdir(root) if n.startswith(".e.")]   # its temp file is left
    with pytest.raises(Crash):
        io.read_bytes(str(root / "a"))           # dead: every later call fails
    for mode in ("error", "unlink"):
        io = FaultIO(str(root), kind="delete", at=1, mode=mode)
        assert io.delete_quietly(str(root / "a")) is False and (root / "a").exists()
        assert io.delete_quietly(str(root / "a")) is True and not (root / "a").exists()
        (root / "a").write_bytes(b"1")
    # The OS-level injection is scoped to the failing call: afterwards unlink works again.
    io = FaultIO(str(root))
    assert io.delete_quietly(str(root / "c")) is True and not (root / "c").exists()
    assert io.counts == {"delete": 1} and io.log[0][:2] == ("delete", "_unlink")


# --------------------------------------------------------------------------------------------
# Library bugs found by the matrix: one regression test each (a strict xfail until fixed).
# --------------------------------------------------------------------------------------------

def _op_index(op_run, template, tmp_path, kind, rel, method=None):
    """k of the first `kind` operation (`method`, if given) on `rel` (a path relative to the
    table root) in a fault-free run of the operation."""
    path = tmp_path / "probe" / "db.db" / "t"
    shutil.copytree(template, path)
    io = FaultIO(str(path))
    op_run(path, io, {"crashed": False})
    ops = [(m, os.path.relpath(p, path)) for kd, m, p in io.log if kd == kind]
    k = next(i for i, (m, r) in enumerate(ops, 1) if r == rel and method in (None, m))
    shutil.rmtree(path.parent.parent)
    return k


def _delete_index(op_run, template, tmp_path, rel):
    return _op_index(op_run, template, tmp_path, "delete", rel)


def _s2_file(path):
    """s2's file [3,4] in D1/1: the one in its directory that is not live any more."""
    d = os.path.join(str(path), "dt=19723", "hr=1", "bucket-0")
    live = {f.path for f in Table.open(str(path)).live_files()}
    (f,) = [os.path.join(d, n) for n in os.listdir(d) if os.path.join(d, n) not in live]
    return f


@pytest.mark.parametrize("op_name, mode", [
    ("expire-snapshots", "unlink"),
    ("delete-tag", "unlink"),
    ("delete-tag", "crash"),
])
def test_bug_a_data_file_whose_delete_failed_is_never_cleaned(op_name, mode, templates,
                                                              tmp_path):
    op = OPS[op_name]
    path = _copy(templates, op.template, tmp_path)
    victim = _s2_file(path)                                     # [3,4], overwritten in s4
    k = _delete_index(op.run, templates[op.template], tmp_path,
                      os.path.relpath(victim, path))
    try:
        op.run(path, FaultIO(str(path), kind="delete", at=k, mode=mode), {})
    except Crash:
        pass
    op.rerun(path, {"crashed": mode == "crash"})
    time.sleep(0.01)
    OrphanFilesCleaner(CleanContext(str(path), older_than_ms=int(time.time() * 1000) - 1,
                                    allow_recent_cutoff=True)).clean()
    # Expiration keeps its manifests and snapshots when a data delete fails, so the rerun
    # deletes the file. delete_tag keeps a deletion marker with the tag's JSON until its files
    # are gone: without it, only entries in retained manifests would name the file, and
    # orphan cleanup keeps every name it finds there.
    assert victim not in referenced(Table.open(str(path)))
    assert not os.path.exists(victim)
    assert leftovers(path) == []


def test_bug_b_expire_reports_success_with_a_dangling_snapshot_left(templates, tmp_path):
    path = _copy(templates, "hist", tmp_path)
    k = _delete_index(_expire_run, templates["hist"], tmp_path, "snapshot/snapshot-6")
    ctx = {}
    _expire_run(path, FaultIO(str(path), kind="delete", at=k, mode="unlink"), ctx)
    assert os.path.exists(path / "snapshot" / "snapshot-6")   # could not be deleted
    # Either the run reports that something went wrong, or the table is left clean. Today:
    # neither. Snapshot-6's manifest lists are gone (time travel to it fails), EARLIEST says 7,
    # and orphan cleanup aborts on the dangling snapshot until the next expiration.
    assert ctx["result"].skipped or not os.path.exists(path / "snapshot" / "snapshot-6"), \
        ctx["result"].to_dict()


def test_bug_c_delete_tag_breaks_a_tag_whose_file_could_not_be_deleted(templates, tmp_path):
    path = _copy(templates, "tagged", tmp_path)
    io = FaultIO(str(path), kind="delete", at=1, mode="unlink")   # unlink of tag/tag-gone
    try:
        table_at(path, io).delete_tag("gone")
    except Exception:  # noqa: BLE001 - refusing is fine, as long as nothing was deleted
        pass
    assert io.fired[2].endswith("tag/tag-gone")
    assert "gone" in [x.name for x in Table.open(str(path)).tags()]   # the tag stayed...
    check_readable(path, TAGGED, set())                               # ...so it must read


@pytest.mark.parametrize("k", [1, 2])     # unlink of snapshot-8, of snapshot-7
def test_bug_d_rollback_reports_success_when_a_newer_snapshot_stays(k, templates, tmp_path):
    path = _copy(templates, "hist", tmp_path)
    try:
        table_at(path, FaultIO(str(path), kind="delete", at=k, mode="unlink")).rollback_to(6)
    except Exception:  # noqa: BLE001 - failing loudly would be fine
        return
    # Returned normally: the rollback must have happened. Today with k=2 snapshot 7 is still
    # the latest; with k=1 snapshot 6 is, until the next commit publishes 7 and the stale
    # snapshot-8 becomes the latest again, hiding that commit.
    assert Table.open(str(path)).latest_snapshot().id == 6
    write(Table.open(str(path)), make_rows([300], DF, 1))
    assert ids_of(Table.open(str(path)).read_arrow()) == sorted(HIST[("s", 6)] + [300])
    assert ids_of(pp_read(path)) == sorted(HIST[("s", 6)] + [300])


def test_bug_e_rollback_to_expired_tag_rerun_after_crash(templates, tmp_path):
    path = _copy(templates, "tagged", tmp_path)
    io = FaultIO(str(path), kind="write", at=4, mode="crash_after")   # after LATEST = 2 (write
    # 1 is the maintenance lease record)
    with pytest.raises(Crash):
        table_at(path, io).rollback_to(tag="gone")
    assert io.fired[2].endswith("snapshot/LATEST")
    Table.open(str(path)).rollback_to(tag="gone")                     # the rerun
    # Snapshot 2 was restored from the tag, 3 is long expired: LATEST = 2 looks valid (no
    # snapshot-3), so the rerun deletes nothing and snapshots 4-8 stay. The next commit
    # publishes snapshot 3, and the table's latest jumps to the stale snapshot 8.
    write(Table.open(str(path)), make_rows([300], DF, 1))
    assert [s.id for s in Table.open(str(path)).snapshots()] == [2, 3]
    assert ids_of(pp_read(path)) == sorted(TAGGED[("t", "gone")] + [300])


def test_bug_f_expire_trusts_an_empty_tag_listing(templates, tmp_path):
    path = _copy(templates, "hist", tmp_path)
    k = _op_index(_expire_run, templates["hist"], tmp_path, "list", "tag", "list_names")
    io = FaultIO(str(path), kind="list", at=k, mode="empty")
    try:
        _expire_run(path, io, {})
    except Exception:  # noqa: BLE001 - refusing is fine
        pass
    # Tag keep@4 protects s1's file [1,2] (dropped in s5) and its manifests; with the tag
    # listing lost, expiration deletes them and the tag no longer reads.
    check_readable(path, HIST, set(range(1, 7)))


def test_bug_g_orphan_cleanup_trusts_an_empty_snapshot_listing(templates, tmp_path):
    path = _copy(templates, "orphaned", tmp_path)
    k = _op_index(_orphan_run, templates["orphaned"], tmp_path, "list", "snapshot",
                  "list_names")
    io = FaultIO(str(path), kind="list", at=k, mode="empty")
    try:
        _orphan_run(path, io, {})
    except Exception:  # noqa: BLE001 - aborting is what it should do
        pass
    # LATEST says 8 and snapshot-8 exists, yet the listing said "no snapshots": only the
    # tags' files were protected, every other manifest and data file was deleted.
    check_readable(path, HIST, set())


@pytest.mark.parametrize("what, method", [("snapshot", "list_names"), ("tag", "list_names")])
def test_bug_h_orphan_cleanup_acts_on_one_complete_listing(what, method, templates, tmp_path):
    # In "tagged", tag `gone` is the only thing that keeps s2's files. Every listing of
    # snapshot/ or tag/ that orphan cleanup makes, coming back empty, must not cost them:
    # the snapshot listing used to be read twice (checked once, used once), and the tag
    # listing once, unchecked. (Both are name listings: the candidates' one and the roots'.)
    path = _copy(templates, "tagged", tmp_path)
    probe = tmp_path / "probe" / "db.db" / "t"
    shutil.copytree(templates["tagged"], probe)
    io = FaultIO(str(probe))
    _orphan_run(probe, io, {})
    ops = [(m, os.path.relpath(p, probe)) for kd, m, p in io.log if kd == "list"]
    ks = [k for k, (m, rel) in enumerate(ops, 1) if rel == what and m == method]
    assert ks
    for k in ks:
        try:
            _orphan_run(path, FaultIO(str(path), kind="list", at=k, mode="empty"), {})
        except OrphanCleanAborted:
            pass
        check_readable(path, TAGGED, set())
