"""Pruning old lease records never hides a takeover from the holder it took over
(paimon_commit/lease.py, docs/safety.md 5b; audit issue25b b1).

A holder of record n checks, before each delete step, that record n+1 does not exist. Old
records are pruned by comparing their storage time with the *pruner's* clock. Before, a
taker whose clock ran 3 h fast took over a live lease (its expiry looked past: the docs accept
that), later pruned every record below its own, the record right after the old holder's
included, and the old holder's next check passed: two holders deleting at once. Now the check
also reads the holder's own record (pruning is ascending, so once n+1 is gone n is gone), and
pruning removes only a prefix of the records, stopping at the first it keeps or fails to
delete, so a record out of order in storage time or a failed delete never opens a gap; and it
reads the record's token, since a paused holder's release may create a pruned name again.

Each scenario runs with two takers B: one whose clock runs 3 h fast (it prunes by age and
takes A's live lease over) and one with a sane clock that takes A's expired lease and runs
until young records go by their count (lease.KEEP_RECENT, written with its outside audit).
The skew is one holder's clock (LeaseManager's clock); the records are real files; the
pauses are hooks on LeaseManager and HeldLease methods."""
import os
import threading
import time

import pytest
from conftest import files_under, make_rows, write

from paimon_commit.errors import LeaseHeldError
from paimon_commit.io.deletion import StopDeleting, checkpoint
from paimon_commit.lease import (KEEP_RECENT, PRUNE_AT, HeldLease, LeaseManager, lease_settings,
                                 maintenance_lease)

SKEW_MS = 3 * 3600 * 1000   # the skewed taker's clock runs 3 h fast: more than PRUNE_AGE_MS (2 h)
CYCLES = (KEEP_RECENT + PRUNE_AT) // 2 + 6   # takes and releases that prune n, n+1 by count

# kind -> (B's clock skew ms, B's takes, B's wait s), (A's lease ms, A's pause s before B):
# the skewed B takes A's live lease over (its expiry looks past to B); the sane one waits
# until A's lease expired.
KINDS = {"skewed": ((SKEW_MS, 5, 0), (300_000, 0.0)),
         "counting": ((0, CYCLES, 5), (300, 0.4))}
both_takers = pytest.mark.parametrize("kind", list(KINDS))


class Taker:
    """B, on a thread of its own (a lease is re-entrant per thread), its clock `skew_ms`
    ahead: takes the lease `runs` times (`first`: the first one's record), then takes it
    again ("B again") and holds it until `release()`. Each take prunes what its rule allows."""

    def __init__(self, table, kind):
        skew_ms, runs, wait_s = KINDS[kind][0]
        self.held, self.done = threading.Event(), threading.Event()
        self.first = self.number = None
        self.error = None
        m = LeaseManager(table.store.io, table.store.path,
                         clock=lambda: int(time.time() * 1000) + skew_ms)

        def run():
            try:
                for i in range(runs):
                    with maintenance_lease(table.store, f"B run {i}", manager=m,
                                           wait_s=wait_s) as b:
                        if self.first is None:
                            self.first = b.record.number
                with maintenance_lease(table.store, "B again", manager=m, wait_s=wait_s) as b:
                    self.number = b.record.number
                    self.held.set()
                    self.done.wait(60)
                    b.check()   # B holds it: its own check passes
            except BaseException as e:  # noqa: BLE001 - reported by the test
                self.error = e
                self.held.set()
        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()
        assert self.held.wait(60) and self.error is None, self.error

    def release(self):
        self.done.set()
        self.thread.join(30)
        assert self.error is None, self.error


def _records(table_path):
    # (not an expiration's mark beside them, expiring.py: `expiring-<first>-<end>-<token>`)
    return sorted(int(n.split("-")[1]) for n in os.listdir(table_path / ".maintenance")
                  if n.startswith("lease-"))


def _history(table):
    for i in range(1, 6):   # 5 snapshots; each commit's maintenance adds two lease records
        write(table, make_rows([i]))


def _stopped_with_nothing_deleted(r, table, table_path, before):
    assert not r.complete and r.stopped_by == "lease", r
    assert "lost the maintenance lease" in r.message
    assert r.expired_snapshots == 0 and r.deleted_files == 0
    assert files_under(table_path) == before      # A deleted nothing while B held the lease
    assert [s.id for s in table.snapshots()] == [1, 2, 3, 4, 5]


def _a_stops_with_nothing_deleted(table, table_path, monkeypatch, kind,
                                  before_b=lambda n: None, a_lag_ms=0):
    """A holds the lease (paused: no renewer); B takes it over and prunes; A's expiration
    (joining A's lease) must stop at its first delete step with nothing deleted. a_lag_ms:
    A's clock runs that far behind, so that its 5 min lease looks live and not due for
    renewal to A while it is long expired to B. Returns (A's record number, B, the records
    while B holds the lease)."""
    monkeypatch.setattr(HeldLease, "start_renewer", lambda self: None)
    _history(table)
    before = files_under(table_path)
    duration_ms, pause_s = (300_000, 0.0) if a_lag_ms else KINDS[kind][1]
    a_mgr = LeaseManager(table.store.io, table.store.path,
                         clock=lambda: int(time.time() * 1000) - a_lag_ms)
    with maintenance_lease(table.store, "A", manager=a_mgr, duration_ms=duration_ms) as a:
        n = a.record.number
        time.sleep(pause_s)
        before_b(n)
        b = Taker(table, kind)
        try:
            records = _records(table_path)
            r = table.expire_snapshots(retain_max=1, retain_min=1)
        finally:
            b.release()
    assert b.first == n + 1                       # B took A's lease over
    _stopped_with_nothing_deleted(r, table, table_path, before)
    assert b.number in records
    return n, b, records


@both_takers
def test_a_taker_pruning_the_records_of_a_takeover_does_not_let_the_old_holder_delete(
        table, table_path, monkeypatch, kind):
    # Audit b1: B's pruning removed A's record n and B's first record n+1 (3 h old to the
    # skewed B's clock; young but past the newest KEEP_RECENT to the sane one); A's check
    # used to find no n+1 and pass.
    n, b, records = _a_stops_with_nothing_deleted(table, table_path, monkeypatch, kind)
    assert n not in records and n + 1 not in records   # both were pruned


def test_a_lagging_holder_finds_the_takeover_that_count_pruning_hid(table, table_path,
                                                                   monkeypatch):
    # A's clock 10 min behind: its 5 min lease is expired to B at once, yet live and not due
    # for renewal to A, so A's check does not list: the HEAD of n+1 and the GET of n alone
    # must find the takeover after B's count pruning removed n and n+1 (both young).
    n, b, records = _a_stops_with_nothing_deleted(table, table_path, monkeypatch, "counting",
                                                  a_lag_ms=600_000)
    assert n not in records and n + 1 not in records


@both_takers
def test_a_record_out_of_order_in_storage_time_stops_pruning_before_a_gap(
        table, table_path, monkeypatch, kind):
    # A's record n carries a storage time later than its successors' (storage clocks are
    # not monotonic: an NTP step locally, another server of an object store): young even
    # to the skewed B, while n+1 looks old. Pruning only by age removed n+1 and kept n, so
    # A's check found its own record and no successor. Pruning stops at the first record it
    # keeps; the count rule goes by position, not time: n goes first.
    def young_a(n):
        later = time.time() + SKEW_MS / 1000
        os.utime(table_path / ".maintenance" / f"lease-{n}", (later, later))
    n, b, records = _a_stops_with_nothing_deleted(table, table_path, monkeypatch, kind,
                                                  before_b=young_a)
    if kind == "skewed":
        assert records[0] == n and n + 1 in records   # kept from the first record it kept on
    else:
        assert n not in records and n + 1 not in records


@both_takers
def test_a_failed_delete_of_a_record_stops_pruning_before_a_gap(table, table_path,
                                                               monkeypatch, kind):
    # Deleting A's record n fails (an I/O error, logged; `delete_quietly` says False): B
    # pruned on and removed n+1, so A's check again found its own record and no successor.
    # Pruning stops at the first record it did not delete.
    io = table.store.io
    unlink = io._unlink
    failing = {}

    def flaky_unlink(norm):
        if norm.endswith(f"/.maintenance/lease-{failing.get('n')}"):
            return False   # what `_unlink` answers to a failed delete (it logs it)
        return unlink(norm)
    monkeypatch.setattr(io, "_unlink", flaky_unlink)
    n, b, records = _a_stops_with_nothing_deleted(
        table, table_path, monkeypatch, kind, before_b=lambda n: failing.update(n=n))
    assert records[0] == n and n + 1 in records         # pruning stopped at n, every time


@both_takers
def test_a_paused_holder_releasing_under_a_pruned_name_does_not_vouch_for_another(
        table, table_path, monkeypatch, kind):
    # X held record k and was paused past its lease (no renewer, no check); A took k+1; B
    # took over from A and pruned k, k+1 and its own first records. X resumes and releases:
    # a release creates the name after its own without looking, so record k+1 exists again,
    # X's. A's check must see that k+1 is not its own: record present is not enough.
    monkeypatch.setattr(HeldLease, "start_renewer", lambda self: None)   # paused holders
    _history(table)
    before = files_under(table_path)
    x_took, x_release = threading.Event(), threading.Event()

    def x():
        with maintenance_lease(table.store, "X", duration_ms=1):
            x_took.set()
            x_release.wait(60)
    xt = threading.Thread(target=x, daemon=True)
    xt.start()
    assert x_took.wait(30)
    time.sleep(0.05)                                      # X's lease expires
    duration_ms, pause_s = KINDS[kind][1]
    with maintenance_lease(table.store, "A", duration_ms=duration_ms, wait_s=5) as a:
        n = a.record.number
        time.sleep(pause_s)
        b = Taker(table, kind)
        try:
            assert n not in _records(table_path) and n + 1 not in _records(table_path)
            x_release.set()
            xt.join(30)
            assert n in _records(table_path)              # X's release, under A's number
            with pytest.raises(StopDeleting, match="another holder's"):
                checkpoint()
            r = table.expire_snapshots(retain_max=1, retain_min=1)
        finally:
            b.release()
    assert b.first == n + 1
    _stopped_with_nothing_deleted(r, table, table_path, before)
    assert "another holder's" in r.message


@both_takers
def test_a_renewal_paused_between_its_listing_and_its_create_does_not_hold_a_pruned_name(
        table, table_path, monkeypatch, kind):
    # Audit issue25c c1: A's renewal (from its expiration's check) listed the records (n
    # highest), then was paused; meanwhile B took over and pruned n, n+1 and more. A's
    # create of n+1 succeeded (the name was free again) and its check passed, the HEAD of
    # n+2 and the GET of n+1 both fine, while B held a higher record. Now a renewal lists
    # the records once more after its create: a record above means lost.
    monkeypatch.setattr(HeldLease, "start_renewer", lambda self: None)
    _history(table)
    before = files_under(table_path)
    a_mgr = LeaseManager(table.store.io, table.store.path)
    listing = a_mgr.numbers
    paused = {}

    def numbers():
        out = listing()
        if "armed" in paused and "b" not in paused:
            time.sleep(0.5)                    # A's lease (0.6 s) expires during the pause
            paused["b"] = Taker(table, kind)   # B takes over and prunes
        return out
    monkeypatch.setattr(a_mgr, "numbers", numbers)
    with maintenance_lease(table.store, "A", manager=a_mgr, duration_ms=600) as a:
        n = a.record.number
        time.sleep(0.35)                       # A's renewal is due at its first check
        paused["armed"] = True
        try:
            r = table.expire_snapshots(retain_max=1, retain_min=1)
        finally:
            if "b" in paused:
                paused["b"].release()
    b = paused["b"]
    assert b.first == n + 1 and n + 1 in _records(table_path)   # A's renewal re-created it
    _stopped_with_nothing_deleted(r, table, table_path, before)
    assert "B again" in r.message


@both_takers
def test_a_take_paused_between_its_listing_and_its_create_does_not_take_a_pruned_name(
        table, table_path, monkeypatch, kind):
    # Audit issue25c c3: A's take listed the records (the highest released: free), chose
    # n+1, then was paused before creating it; meanwhile B took n+1, ran, and pruned every
    # record below its own. A's create of n+1 succeeded and A's expiration deleted while B
    # held the lease. Now a take lists the records once more after its create: a record
    # above its own means not taken, and A waits for B as for any holder.
    _history(table)
    before = files_under(table_path)
    create = LeaseManager.create
    a_thread = threading.get_ident()
    paused = {}

    def paused_create(self, record):
        if threading.get_ident() == a_thread and "b" not in paused:
            paused["n"] = record.number
            paused["b"] = Taker(table, kind)   # the pause: B takes n+1, runs, prunes
        return create(self, record)
    monkeypatch.setattr(LeaseManager, "create", paused_create)
    try:
        with lease_settings(wait_s=0):
            with pytest.raises(LeaseHeldError, match="B again"):
                table.expire_snapshots(retain_max=1, retain_min=1)
    finally:
        if "b" in paused:
            paused["b"].release()
    n = paused["n"]
    assert paused["b"].first == n and n in _records(table_path)   # A re-created B's first
    assert files_under(table_path) == before
    assert [s.id for s in table.snapshots()] == [1, 2, 3, 4, 5]
