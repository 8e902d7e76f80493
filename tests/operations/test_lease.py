"""The maintenance lease (paimon_commit/lease.py): one destructive maintenance run per table.

What a user notices: a second run waits, then runs (or fails naming the holder); a holder
that lost the lease stops before its next delete and deletes nothing more (files on disk);
post-commit maintenance skips its turn; a bad lease record is refused naming the file;
`paimon-commit lease TABLE --break` clears it."""
import json
import os
import pathlib
import re
import socket
import subprocess
import sys
import threading
import time

import pyarrow.fs as pafs
import pytest

from conftest import SCHEMA, files_under, make_rows, write

from paimon_commit import Table
from paimon_commit.cli import main
from paimon_commit.errors import AtomicCreateUnsupportedError, LeaseHeldError, LeaseRecordError
from paimon_commit.io.arrow import PyArrowFileIO
from paimon_commit.lease import HeldLease, LeaseManager, lease_settings, maintenance_lease
from paimon_commit.operations.expire import ExpireSnapshots
from paimon_commit.tags import ConsumerManager

OLD = 3 * 24 * 3600   # seconds: older than orphan cleanup's default age


def lease_files(path):
    d = os.path.join(str(path), ".maintenance")
    return sorted(os.listdir(d), key=lambda n: int(n.split("-")[1])) if os.path.isdir(d) \
        else []


def next_number(path):
    """The number the next lease record of the table gets (every commit's post-commit
    maintenance takes and releases the lease: two records)."""
    names = lease_files(path)
    return int(names[-1].split("-")[1]) + 1 if names else 1


def history(table, n=8):
    for i in range(1, n + 1):
        write(table, make_rows([i], hr=i % 2))
    with table.new_commit() as c:
        c.drop_partitions([{"hr": 0}])


class Holder:
    """Holds the table's lease on another thread until `release()`."""

    def __init__(self, table, operation="hold", **kw):
        self.taken, self.done = threading.Event(), threading.Event()
        self.error = None

        def run():
            try:
                with maintenance_lease(table.store, operation, **kw):
                    self.taken.set()
                    self.done.wait(60)
            except BaseException as e:  # noqa: BLE001 - reported by the test
                self.error = e
                self.taken.set()
        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()
        assert self.taken.wait(30) and self.error is None, self.error

    def release(self):
        self.done.set()
        self.thread.join(30)


HOLD_SCRIPT = """
import sys, time
from paimon_commit import Table
from paimon_commit.lease import maintenance_lease
t = Table.open(sys.argv[1])
with maintenance_lease(t.store, "expire-snapshots"):
    print("held", flush=True)
    sys.stdin.readline()
"""


def hold_in_process(path):
    p = subprocess.Popen([sys.executable, "-c", HOLD_SCRIPT, str(path)], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True, env={**os.environ})
    assert p.stdout.readline().strip() == "held"
    return p


# --- mutual exclusion ----------------------------------------------------------------------

def test_a_second_run_waits_for_the_holder_then_runs(table, table_path):
    history(table)
    holder = Holder(table)
    threading.Timer(0.6, holder.release).start()
    t0 = time.monotonic()
    with lease_settings(wait_s=30):
        r = table.expire_snapshots(retain_max=2, retain_min=1)
    assert time.monotonic() - t0 >= 0.5                 # it waited for the release
    assert r.complete and r.expired_snapshots == 7
    assert [s.id for s in table.snapshots()] == [8, 9]


def test_a_second_process_fails_after_the_wait_naming_the_holder(capsys, table, table_path):
    history(table)
    before = files_under(table_path)
    p = hold_in_process(table_path)
    try:
        code = main(["expire-snapshots", str(table_path), "--retain-max", "1",
                     "--retain-min", "1", "--lease-wait", "300 ms"])
        _, err = capsys.readouterr()
    finally:
        p.stdin.write("\n")
        p.stdin.close()
        p.wait(30)
    assert code == 75
    t = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC"
    assert re.fullmatch(
        rf"error: table {re.escape(str(table_path))} is being maintained by "
        rf"{re.escape(socket.gethostname())} pid {p.pid} \(expire-snapshots since {t}, lease "
        rf"until {t}\); rerun later or raise --lease-wait\n", err), err
    assert files_under(table_path) == before             # nothing deleted
    # Released by the other process: the same command now runs.
    assert main(["expire-snapshots", str(table_path), "--retain-max", "1",
                 "--retain-min", "1"]) == 0
    assert [s.id for s in Table.open(str(table_path)).snapshots()] == [9]


def test_a_killed_holder_of_this_machine_is_taken_over_at_once(capsys, table, table_path):
    # A SIGKILLed expiration deletes nothing more: its rerun must not wait out the lease
    # (5 min) nor exit 75. Its pid is gone in this kernel and pid namespace, which the record
    # names; anywhere else the expiry decides.
    history(table)
    p = hold_in_process(table_path)
    p.kill()
    p.wait(30)
    t0 = time.monotonic()
    assert main(["expire-snapshots", str(table_path), "--retain-max", "1", "--retain-min", "1",
                 "--lease-wait", "300 ms"]) == 0
    assert time.monotonic() - t0 < 10
    assert [s.id for s in Table.open(str(table_path)).snapshots()] == [9]


def test_a_live_holder_of_another_machine_is_waited_for(table, table_path):
    # The same pid, absent here, on another kernel (another boot id) proves nothing: wait.
    history(table)
    m = LeaseManager(table.store.io, str(table_path))
    rec = m.new_record((m.numbers() or [0])[-1] + 1, "expire-snapshots", 60_000, "t" * 32)
    import dataclasses
    rec = dataclasses.replace(rec, pid=2 ** 22 + 7, process="other",
                              machine="another-boot/4026531836")
    assert m.create(rec)
    with pytest.raises(LeaseHeldError):
        with lease_settings(wait_s=0.2):
            table.expire_snapshots(retain_max=1, retain_min=1)
    assert [s.id for s in table.snapshots()][0] == 1            # nothing expired


def test_a_holder_past_its_expiry_stops_before_its_next_delete(table, table_path,
                                                               monkeypatch):
    history(table)
    before = files_under(table_path)
    # A paused holder: its renewer does not run (a stopped process runs no thread), and its
    # planning takes longer than its lease.
    monkeypatch.setattr(HeldLease, "start_renewer", lambda self: None)
    plan = ExpireSnapshots.plan
    planned, taken_over = threading.Event(), threading.Event()

    def slow_plan(self):
        p = plan(self)
        planned.set()
        assert taken_over.wait(30)
        return p
    monkeypatch.setattr(ExpireSnapshots, "plan", slow_plan)
    out = {}
    a = threading.Thread(target=lambda: out.setdefault("r", table.expire_snapshots(
        retain_max=1, retain_min=1)))
    with lease_settings(duration_ms=200):
        a.start()
        assert planned.wait(30)
        time.sleep(0.3)                                  # A's lease expires
        # B takes it over (A's record expired) and holds it.
        holder = Holder(table, "rollback", wait_s=5)
        taken_over.set()
        a.join(30)
    r = out["r"]
    assert not r.complete and r.stopped_by == "lease"
    assert r.deleted_files == 0 and r.expired_snapshots == 0
    assert "lost the maintenance lease" in r.message and "a rerun continues" in r.message
    assert files_under(table_path) == before             # A deleted nothing after losing it
    holder.release()
    monkeypatch.setattr(ExpireSnapshots, "plan", plan)
    r = table.expire_snapshots(retain_max=1, retain_min=1)   # the rerun finishes it
    assert r.complete and [s.id for s in table.snapshots()] == [9]


def test_a_holder_renews_its_lease_while_it_runs(table, table_path):
    errors = []

    def other():
        try:
            with maintenance_lease(table.store, "other", wait_s=0):
                pass
        except LeaseHeldError as e:
            errors.append(e)
    with maintenance_lease(table.store, "long", duration_ms=100) as lease:
        first = lease.record.number
        time.sleep(0.4)                                   # four durations
        assert lease.record.number > first                # renewed by its thread
        assert lease.record.expiry_ms > time.time() * 1000
        t = threading.Thread(target=other)
        t.start()
        t.join(30)
        assert len(errors) == 1                           # nobody else could take it
    assert LeaseManager(table.store.io, str(table_path)).latest().released


# --- post-commit maintenance, re-entrancy --------------------------------------------------

def test_post_commit_maintenance_skips_its_turn_while_another_holds_it(table, table_path):
    opts = {"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "1"}
    holder = Holder(table)
    try:
        t0 = time.monotonic()
        with table.new_commit(options=opts) as c:
            for i in range(3):
                write(table, make_rows([i]), commit=c, identifier=i)
            assert c.last_maintenance.lease_skipped
        assert time.monotonic() - t0 < 20                 # no wait for the holder
        assert [s.id for s in table.snapshots()] == [1, 2, 3]   # nothing expired
    finally:
        holder.release()
    with table.new_commit(options=opts) as c:
        write(table, make_rows([9]), commit=c, identifier=9)
        assert c.last_maintenance.lease_skipped is None
    assert [s.id for s in table.snapshots()] == [4]       # the next turn did the work


@pytest.mark.parametrize("mode", ["sync", "async", "batch"])
def test_a_damaged_lease_record_skips_post_commit_maintenance_never_the_commits(
        caplog, capsys, table, table_path, mode):
    # Commits never take the lease: a damaged record must not stop a stream's commits (it
    # used to be parked in the error slot, and every later commit raised). Post-commit
    # maintenance skips its turns with a warning naming the file; explicit maintenance
    # refuses with the same error; after `lease --break` the next turn does the work.
    opts = {"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "1",
            "snapshot.expire.execution-mode": "async" if mode == "async" else "sync"}
    write(table, make_rows([0]))
    damaged = table_path / ".maintenance" / f"lease-{next_number(table_path) - 1}"
    damaged.write_text('{"table": "trunc')
    problem = (f"{damaged}: unreadable maintenance lease record (not JSON (Unterminated "
               f"string starting at: line 1 column 11 (char 10))); nothing was deleted. If no "
               f"maintenance of this table is running, supersede it with `paimon-commit lease "
               f"{table_path} --break`")
    caplog.set_level("WARNING", logger="paimon_commit.table_commit")
    with table.new_commit(options=opts) as c:
        for i in range(1, 4):
            identifier = None if mode == "batch" else i
            assert write(table, make_rows([i]), commit=c, identifier=identifier) == i + 1
            assert c.wait_for_maintenance(30)
            assert c.last_maintenance.lease_skipped == (
                f"a maintenance lease record cannot be used: {problem}; skipped this turn")
    assert [s.id for s in table.snapshots()] == [1, 2, 3, 4]     # nothing expired
    assert [r.getMessage() for r in caplog.records] == [
        f"post-commit maintenance of {table_path} skipped this turn: {problem}"] * 3
    with pytest.raises(LeaseRecordError) as e:
        table.expire_snapshots(retain_max=1, retain_min=1)
    assert str(e.value) == problem
    assert main(["lease", str(table_path), "--break"]) == 0
    capsys.readouterr()
    with table.new_commit(options=opts) as c:
        write(table, make_rows([9]), commit=c, identifier=None if mode == "batch" else 9)
        assert c.wait_for_maintenance(30) and c.last_maintenance.lease_skipped is None
    assert [s.id for s in table.snapshots()] == [5]              # the next turn did the work


def test_nested_operations_of_one_thread_join_the_held_lease(table, table_path):
    history(table)
    table.create_tag("t2", 2)
    first = next_number(table_path)
    with maintenance_lease(table.store, "maintain") as outer:
        n = outer.record.number
        r = table.expire_snapshots(retain_max=1, retain_min=1)
        d = table.delete_tag("t2")
        assert outer.record.number == n                   # no record of their own
    assert r.complete and d.complete and table.tags() == []
    assert n == first and next_number(table_path) == n + 2   # taken once, released once


# --- every destructive operation takes it ---------------------------------------------------

def _orphan(table_path):
    p = os.path.join(str(table_path), "manifest", "manifest-orphan-0")
    with open(p, "wb") as f:
        f.write(b"x")
    os.utime(p, (time.time() - OLD, time.time() - OLD))
    return p


OPERATIONS = {
    "expire-snapshots": lambda t: t.expire_snapshots(retain_max=1, retain_min=1),
    "expire-tags": lambda t: t.expire_tags(),
    "delete-tag": lambda t: t.delete_tag("t2"),
    "rollback": lambda t: t.rollback_to(3),
    "expire-partitions": lambda t: t.expire_partitions(expiration_time="1 d"),
    "remove-orphan-files": lambda t: t.remove_orphan_files(),
    "expire-consumers": lambda t: ConsumerManager(t.store.io, t.store.root).expire(
        int(time.time() * 1000) + 1000, lease=LeaseManager(t.store.io, t.path)),
}


@pytest.mark.parametrize("operation", sorted(OPERATIONS))
def test_every_destructive_operation_takes_the_lease(table, table_path, operation):
    history(table)
    table.create_tag("t2", 2, time_retained="1 ms")
    ConsumerManager(table.store.io, table.store.root).write("reader", 9)
    _orphan(table_path)
    time.sleep(0.01)
    before = files_under(table_path)
    holder = Holder(table)
    try:
        with lease_settings(wait_s=0):
            with pytest.raises(LeaseHeldError, match="is being maintained by .* pid "
                                                     rf"{os.getpid()} \(hold since "):
                OPERATIONS[operation](table)
        assert files_under(table_path) == before          # nothing deleted, nothing written
    finally:
        holder.release()
    OPERATIONS[operation](table)                          # free again: it runs
    assert files_under(table_path) != before


def test_dry_runs_do_not_take_the_lease(table, table_path):
    history(table)
    holder = Holder(table)
    try:
        with lease_settings(wait_s=0):
            assert table.expire_snapshots(retain_max=1, retain_min=1,
                                          dry_run=True).expired_snapshots == 8
            table.remove_orphan_files(dry_run=True)
            table.expire_tags(dry_run=True)
    finally:
        holder.release()


def test_compaction_abort_leaves_its_files_while_another_holds_the_lease(table, table_path):
    from paimon_commit.operations.compact import AppendCompaction
    history(table)
    comp = AppendCompaction(table.store)
    bucket = next(p for p, _, names in os.walk(str(table_path)) if p.endswith("bucket-0"))
    written = pathlib.Path(bucket) / "data-own-0.parquet"
    written.write_bytes(b"x")

    class Rewritten:
        paths = [str(written)]
    holder = Holder(table)
    try:
        with lease_settings(wait_s=0.2):                   # an explicit run waits, then
            assert comp.abort([Rewritten()]) == 0          # leaves them
        comp.post_commit = True                            # after a commit: no wait at all
        t0 = time.monotonic()
        assert comp.abort([Rewritten()]) == 0
        assert time.monotonic() - t0 < 5
        assert written.exists()                            # left for orphan cleanup
    finally:
        holder.release()
    assert comp.abort([Rewritten()]) == 1 and not written.exists()


def test_compaction_abort_after_a_commit_leaves_its_files_on_a_damaged_lease_record(
        table, table_path):
    from paimon_commit.operations.compact import AppendCompaction
    history(table)
    comp = AppendCompaction(table.store)
    bucket = next(p for p, _, names in os.walk(str(table_path)) if p.endswith("bucket-0"))
    written = pathlib.Path(bucket) / "data-own-0.parquet"
    written.write_bytes(b"x")

    class Rewritten:
        paths = [str(written)]
    damaged = table_path / ".maintenance" / f"lease-{next_number(table_path) - 1}"
    damaged.write_text("{not json")
    with pytest.raises(LeaseRecordError, match=re.escape(f"{damaged}: unreadable")):
        comp.abort([Rewritten()])                          # an explicit run refuses
    comp.post_commit = True                                # after a commit: left, no error
    assert comp.abort([Rewritten()]) == 0
    assert written.exists()                                # left for orphan cleanup


# --- bad records -----------------------------------------------------------------------------

def _record(table_path, n, **fields):
    d = table_path / ".maintenance"
    d.mkdir(exist_ok=True)
    n = n if n is not None else next_number(table_path)
    now = int(time.time() * 1000)
    rec = {"table": os.path.realpath(str(table_path)), "host": "elsewhere", "pid": 1,
           "token": "t", "operation": "expire-snapshots", "startMillis": now,
           "expiryMillis": now + 60_000, "released": False}
    rec.update(fields)
    (d / f"lease-{n}").write_text(json.dumps(rec))
    return d / f"lease-{n}"


BAD = {
    "unreadable": (lambda p: (p / ".maintenance" / f"lease-{next_number(p)}")
                   .write_text("{not json"),
                   r"unreadable maintenance lease record \(not JSON \(.*\)\)"),
    "foreign": (lambda p: _record(p, None, table="/elsewhere/db.db/t"),
                r"this maintenance lease record belongs to table /elsewhere/db.db/t, not "
                r"\S+ \(a copied or moved table\?\)"),
    "far-future": (lambda p: _record(p, None, expiryMillis=int(time.time() * 1000) +
                                     11 * 3_600_000),
                   r"its lease expiry \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC is more than 10 h "
                   r"ahead \(a clock far off when it was written\?\)"),
}


@pytest.mark.parametrize("kind", sorted(BAD))
def test_a_bad_lease_record_is_refused_naming_the_file_and_break_clears_it(
        capsys, table, table_path, kind):
    history(table)
    make, problem = BAD[kind]
    n = next_number(table_path)
    make(table_path)
    before = files_under(table_path)
    with pytest.raises(LeaseRecordError) as e:
        table.expire_snapshots(retain_max=1, retain_min=1)
    path = os.path.join(str(table_path), ".maintenance", f"lease-{n}")
    assert re.fullmatch(
        rf"{re.escape(path)}: {problem}; nothing was deleted. If no maintenance of this table "
        rf"is running, supersede it with `paimon-commit lease {re.escape(str(table_path))} "
        rf"--break`", str(e.value)), str(e.value)
    assert files_under(table_path) == before
    assert main(["lease", str(table_path), "--break"]) == 0
    out, _ = capsys.readouterr()
    assert f"broke the lease: .maintenance/lease-{n + 1} supersedes it as released" in out
    assert table.expire_snapshots(retain_max=1, retain_min=1).expired_snapshots == 8


def test_a_released_or_expired_record_of_another_table_claims_nothing(table, table_path):
    history(table)
    _record(table_path, None, table="/elsewhere/db.db/t", released=True)   # copied along
    _record(table_path, None, table="/elsewhere/db.db/t", expiryMillis=1)
    assert table.expire_snapshots(retain_max=1, retain_min=1).expired_snapshots == 8


def test_lease_command_shows_the_holder(capsys, table, table_path):
    assert main(["lease", str(table_path)]) == 0
    assert capsys.readouterr()[0] == f"table {table_path}: no maintenance lease taken yet\n"
    holder = Holder(table, "remove-orphan-files")
    try:
        assert main(["lease", str(table_path)]) == 0
        out = capsys.readouterr()[0]
        assert out.startswith(f"table {table_path} is being maintained by "
                              f"{socket.gethostname()} pid {os.getpid()} (remove-orphan-files "
                              f"since "), out
    finally:
        holder.release()
    assert main(["lease", str(table_path)]) == 0
    assert "free (last lease released: remove-orphan-files" in capsys.readouterr()[0]


# --- storage ---------------------------------------------------------------------------------

def test_storage_without_atomic_create_is_refused_unless_single_writer(tmp_path, table,
                                                                       table_path):
    history(table)
    before = files_under(table_path)
    t = Table.open(str(table_path), file_io=PyArrowFileIO(pafs.LocalFileSystem(),
                                                          str(table_path)))
    with pytest.raises(AtomicCreateUnsupportedError,
                       match=r"the maintenance lease of .* cannot be taken: this storage "
                             r"cannot create a file only if it is absent"):
        t.expire_snapshots(retain_max=1, retain_min=1)
    n = next_number(table_path)
    with pytest.raises(AtomicCreateUnsupportedError):
        t.expire_snapshots(retain_max=1, retain_min=1)
    assert files_under(table_path) == before and next_number(table_path) == n   # no I/O
    # A table that declares a single writer gets it (check-then-create).
    path = tmp_path / "single" / "db.db" / "t"
    single = Table.create(str(path), SCHEMA, options={"commit.single-writer": "true"})
    for i in range(3):
        write(single, make_rows([i]))
    single = Table.open(str(path), file_io=PyArrowFileIO(pafs.LocalFileSystem(), str(path)))
    n = next_number(path)
    r = single.expire_snapshots(retain_max=1, retain_min=1)
    assert r.expired_snapshots == 2 and next_number(path) == n + 2


def test_orphan_cleanup_never_lists_the_lease_records(table, table_path):
    history(table)
    for p in (table_path / ".maintenance").iterdir():
        os.utime(p, (time.time() - OLD, time.time() - OLD))
    r = table.remove_orphan_files()
    assert r.deleted_files == 0 and not any(".maintenance" in p for p in r.deleted_paths)


def test_a_few_superseded_records_are_pruned_only_once_old(table, table_path):
    for _ in range(10):
        with maintenance_lease(table.store, "x"):
            pass
    names = lease_files(table_path)
    with maintenance_lease(table.store, "x"):
        pass
    assert set(names) <= set(lease_files(table_path))     # young: all kept
    old = time.time() - 3 * 3600
    for n in names:
        os.utime(table_path / ".maintenance" / n, (old, old))
    with maintenance_lease(table.store, "x") as lease:
        n = lease.record.number
    # The old superseded ones went through the gate; the young ones and ours stay.
    assert lease_files(table_path) == [f"lease-{i}" for i in range(n - 2, n + 2)]


def test_a_table_committed_often_keeps_its_lease_listing_short(table, table_path):
    # Post-commit maintenance takes and releases the lease after every commit (two records),
    # and every take lists the records. Kept 2 h whatever their number, 600 commits left
    # 1,200 young records and each commit took 4x its first, listing them. Past the newest
    # KEEP_RECENT superseded ones, young records go too: lowest first, the rest contiguous.
    from paimon_commit.lease import KEEP_RECENT, PRUNE_AT
    with table.new_commit() as c:
        for i in range(60):
            w = table.new_writer()
            w.write_arrow(make_rows([i], hr=i % 2))
            c.commit(w.prepare_commit())
    names = lease_files(table_path)
    numbers = [int(n.split("-")[1]) for n in names]
    assert numbers[-1] == 120                               # 60 takes, 60 releases
    assert numbers == list(range(numbers[0], 121))          # a suffix: the lowest went first
    assert KEEP_RECENT + 1 <= len(names) <= KEEP_RECENT + PRUNE_AT + 2, names
    assert [r["id"] for r in table.read_arrow().to_pylist()] == list(range(60))


def test_a_paused_holder_whose_successor_was_pruned_still_finds_it_lost(table, table_path,
                                                                        monkeypatch):
    from paimon_commit.io.deletion import StopDeleting, checkpoint
    monkeypatch.setattr(HeldLease, "start_renewer", lambda self: None)   # paused
    with maintenance_lease(table.store, "paused", duration_ms=100) as lease:
        n = lease.record.number
        time.sleep(0.2)                                   # expired
        Holder(table, "other").release()                  # lease-(n+1) taken, (n+2) released
        os.remove(table_path / ".maintenance" / f"lease-{n + 1}")   # as if pruned
        with pytest.raises(StopDeleting, match="lost the maintenance lease"):
            checkpoint()
    assert f"lease-{n + 1}" not in lease_files(table_path)     # never created again


def test_maintain_skips_a_table_another_process_maintains(table, table_path):
    from paimon_commit.warehouse import maintain_table
    history(table)
    before = files_under(table_path)
    holder = Holder(table)
    try:
        with lease_settings(wait_s=0):
            r = maintain_table(str(table_path), orphans=True)
    finally:
        holder.release()
    assert r.status == "skipped" and re.match(
        rf"table {re.escape(str(table_path))} is being maintained by .* \(hold since ", r.reason)
    assert files_under(table_path) == before
