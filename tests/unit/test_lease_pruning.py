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

The skew is one holder's clock (LeaseManager's clock); the records are real files."""
import os
import threading
import time

import pytest
from conftest import files_under, make_rows, write

from paimon_commit.errors import LeaseHeldError
from paimon_commit.lease import HeldLease, LeaseManager, lease_settings, maintenance_lease

SKEW_MS = 3 * 3600 * 1000   # the taker's clock runs 3 h fast: more than PRUNE_AGE_MS (2 h)


def _skewed(table):
    return LeaseManager(table.store.io, table.store.path,
                        clock=lambda: int(time.time() * 1000) + SKEW_MS)


def _records(table_path):
    # (not an expiration's mark beside them, expiring.py: `expiring-<first>-<end>-<token>`)
    return sorted(int(n.split("-")[1]) for n in os.listdir(table_path / ".maintenance")
                  if n.startswith("lease-"))


class SkewedTaker:
    """B, on a thread of its own (a lease is re-entrant per thread), with a clock 3 h fast:
    takes the lease over while A holds it (A's expiry looks past to B), runs four times, then
    takes it again and holds it until `release()`. Each take prunes: every record written
    before B's takes is more than 2 h old to B's clock. `before` runs before B's first take."""

    def __init__(self, table, before=lambda: None):
        self.held, self.done = threading.Event(), threading.Event()
        self.first = self.number = None
        self.error = None
        m = _skewed(table)

        def run():
            try:
                before()
                with maintenance_lease(table.store, "B first", manager=m, wait_s=0) as b:
                    self.first = b.record.number
                for i in range(4):
                    with maintenance_lease(table.store, f"B run {i}", manager=m, wait_s=0):
                        pass
                with maintenance_lease(table.store, "B again", manager=m, wait_s=0) as b:
                    self.number = b.record.number
                    self.held.set()
                    self.done.wait(60)
                    b.check()   # B holds it: its own check passes
            except BaseException as e:  # noqa: BLE001 - reported by the test
                self.error = e
                self.held.set()
        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()
        assert self.held.wait(30) and self.error is None, self.error

    def release(self):
        self.done.set()
        self.thread.join(30)
        assert self.error is None, self.error


def _history(table):
    for i in range(1, 6):   # 5 snapshots; each commit's maintenance adds two lease records
        write(table, make_rows([i]))


def _a_stops_with_nothing_deleted(table, table_path, before_b=lambda n: None):
    """A holds the lease; B takes it over and prunes; A's expiration (joining A's lease)
    must stop at its first delete step with nothing deleted. Returns (A's record number,
    B)."""
    _history(table)
    before = files_under(table_path)
    with maintenance_lease(table.store, "A", duration_ms=300_000) as a:
        n = a.record.number
        b = SkewedTaker(table, lambda: before_b(n))
        try:
            r = table.expire_snapshots(retain_max=1, retain_min=1)
        finally:
            b.release()
    assert b.first == n + 1                       # B took A's live lease over
    assert not r.complete and r.stopped_by == "lease", r
    assert "lost the maintenance lease" in r.message
    assert r.expired_snapshots == 0 and r.deleted_files == 0
    assert files_under(table_path) == before      # A deleted nothing while B held the lease
    assert [s.id for s in table.snapshots()] == [1, 2, 3, 4, 5]
    return n, b


def test_a_skewed_taker_pruning_the_records_of_a_takeover_does_not_let_the_old_holder_delete(
        table, table_path):
    # Audit b1: B's pruning removed A's record n and B's first record n+1 (their storage
    # times are 3 h old to B's clock); A's check used to find no n+1 and pass.
    n, b = _a_stops_with_nothing_deleted(table, table_path)
    records = _records(table_path)
    assert n not in records and n + 1 not in records   # both were pruned
    assert b.number in records


def test_a_record_out_of_order_in_storage_time_stops_pruning_before_a_gap(table, table_path):
    # A's record n carries a storage time later than its successors' (storage clocks are
    # not monotonic: an NTP step locally, another server of an object store): young to B,
    # while n+1 looks old. Pruning only by age removed n+1 and kept n, so A's check found
    # its own record and no successor. Pruning stops at the first record it keeps.
    def young_a(n):
        later = time.time() + SKEW_MS / 1000   # young even to B's clock
        os.utime(table_path / ".maintenance" / f"lease-{n}", (later, later))
    n, b = _a_stops_with_nothing_deleted(table, table_path, before_b=young_a)
    records = _records(table_path)
    assert records[0] == n and n + 1 in records     # kept from the first record it kept on
    assert b.number in records


def test_a_failed_delete_of_a_record_stops_pruning_before_a_gap(table, table_path,
                                                               monkeypatch):
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

    def fail_a(n):
        failing["n"] = n
    monkeypatch.setattr(io, "_unlink", flaky_unlink)
    n, b = _a_stops_with_nothing_deleted(table, table_path, before_b=fail_a)
    records = _records(table_path)
    assert records[0] == n and n + 1 in records
    assert b.number in records


def test_a_paused_holder_releasing_under_a_pruned_name_does_not_vouch_for_another(
        table, table_path, monkeypatch):
    # X held record k and was paused past its lease (no renewer, no check); A took k+1; B,
    # 3 h fast, took over from A and pruned k, k+1 and its own first records. X resumes and
    # releases: a release creates the name after its own without looking, so record k+1
    # exists again, X's. A's check must see that k+1 is not its own: record present is not
    # enough.
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
    with maintenance_lease(table.store, "A", duration_ms=300_000, wait_s=5) as a:
        n = a.record.number
        b = SkewedTaker(table)
        try:
            assert n not in _records(table_path) and n + 1 not in _records(table_path)
            x_release.set()
            xt.join(30)
            assert n in _records(table_path)              # X's release, under A's number
            r = table.expire_snapshots(retain_max=1, retain_min=1)
        finally:
            b.release()
    assert b.first == n + 1
    assert not r.complete and r.stopped_by == "lease", r
    assert "lost the maintenance lease" in r.message and "another holder's" in r.message
    assert r.expired_snapshots == 0 and r.deleted_files == 0
    assert files_under(table_path) == before


def test_a_renewal_paused_between_its_listing_and_its_create_does_not_hold_a_pruned_name(
        table, table_path, monkeypatch):
    # Audit issue25c c1: A's renewal (from its expiration's check) listed the records (n
    # highest), then was paused; meanwhile B, 3 h fast, took over and pruned n, n+1 and
    # more. A's create of n+1 succeeded (the name was free again) and its check passed,
    # the HEAD of n+2 and the GET of n+1 both fine, while B held a higher record. Now a
    # renewal lists the records once more after its create: a record above means lost.
    _history(table)
    before = files_under(table_path)
    offset = [0]
    a_mgr = LeaseManager(table.store.io, table.store.path,
                         clock=lambda: int(time.time() * 1000) + offset[0])
    listing = a_mgr.numbers
    paused = {}

    def numbers():
        out = listing()
        if "armed" in paused and "b" not in paused:
            paused["b"] = SkewedTaker(table)   # the pause: B takes over and prunes
        return out
    monkeypatch.setattr(a_mgr, "numbers", numbers)
    with maintenance_lease(table.store, "A", manager=a_mgr, duration_ms=300_000) as a:
        n = a.record.number
        offset[0] = 200_000          # A's renewal is due at its first check
        paused["armed"] = True
        try:
            r = table.expire_snapshots(retain_max=1, retain_min=1)
        finally:
            if "b" in paused:
                paused["b"].release()
    b = paused["b"]
    assert b.first == n + 1 and n + 1 in _records(table_path)   # A's renewal re-created it
    assert not r.complete and r.stopped_by == "lease", r
    assert "lost the maintenance lease" in r.message and "B again" in r.message
    assert r.expired_snapshots == 0 and r.deleted_files == 0
    assert files_under(table_path) == before
    assert [s.id for s in table.snapshots()] == [1, 2, 3, 4, 5]


def test_a_take_paused_between_its_listing_and_its_create_does_not_take_a_pruned_name(
        table, table_path, monkeypatch):
    # Audit issue25c c3: A's take listed the records (the highest released: free), chose
    # n+1, then was paused before creating it; meanwhile B, 3 h fast, took n+1, ran, and
    # pruned every record below its own. A's create of n+1 succeeded and A's expiration
    # deleted while B held the lease. Now a take lists the records once more after its
    # create: a record above its own means not taken, and A waits for B as for any holder.
    _history(table)
    before = files_under(table_path)
    create = LeaseManager.create
    a_thread = threading.get_ident()
    paused = {}

    def paused_create(self, record):
        if threading.get_ident() == a_thread and "b" not in paused:
            paused["n"] = record.number
            paused["b"] = SkewedTaker(table)   # the pause: B takes n+1, runs, prunes
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
