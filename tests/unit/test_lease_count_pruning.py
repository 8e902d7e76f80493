"""With the count rule (lease.KEEP_RECENT), young records are pruned within seconds by takers
whose clocks are *sane* (written by the outside audit of that rule). The takeover scenarios
of test_lease_pruning.py (which needed a taker 3 h fast) again, with a sane (or slow) taker
B that takes over after A's lease expired and then runs enough take/release cycles that A's
record and its successor are pruned by the count alone. In every case A must stop at its
first delete step with nothing deleted; real files under tmp_path; the pauses are hooks on
LeaseManager/HeldLease methods."""
import os
import threading
import time

import pytest
from conftest import files_under, make_rows, write

from paimon_commit.errors import LeaseHeldError
from paimon_commit.io.deletion import StopDeleting, checkpoint
from paimon_commit.lease import (KEEP_RECENT, PRUNE_AT, HeldLease, LeaseManager,
                                 lease_settings, maintenance_lease)

CYCLES = (KEEP_RECENT + PRUNE_AT) // 2 + 6   # takes+releases enough to prune A's n, n+1


def _records(table_path):
    return sorted(int(n.split("-")[1]) for n in os.listdir(table_path / ".maintenance")
                  if n.startswith("lease-"))


def _history(table):
    for i in range(1, 6):
        write(table, make_rows([i]))


class Busy:
    """B on its own thread, a sane clock (or one running `skew_ms` off): CYCLES takes and
    releases, then takes again and holds until release()."""

    def __init__(self, table, skew_ms=0, cycles=CYCLES):
        m = LeaseManager(table.store.io, table.store.path,
                         clock=lambda: int(time.time() * 1000) + skew_ms)
        self.held, self.done = threading.Event(), threading.Event()
        self.first = self.number = self.error = None

        def run():
            try:
                for i in range(cycles):
                    with maintenance_lease(table.store, f"B run {i}", manager=m,
                                           wait_s=5) as b:
                        if self.first is None:
                            self.first = b.record.number
                with maintenance_lease(table.store, "B again", manager=m, wait_s=5) as b:
                    self.number = b.record.number
                    self.held.set()
                    self.done.wait(60)
                    b.check()
            except BaseException as e:  # noqa: BLE001
                self.error = e
                self.held.set()
        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()
        assert self.held.wait(60) and self.error is None, self.error

    def release(self):
        self.done.set()
        self.thread.join(30)
        assert self.error is None, self.error


def _a_paused_past_expiry(table, table_path, monkeypatch, skew_ms=0, before_b=lambda n: None,
                          a_lag_ms=0):
    """A_lag_ms: A's clock runs that far behind (its lease, 5 min, then looks live and not due
    for renewal to A while it is long expired to B): only the own-record read protects A."""
    monkeypatch.setattr(HeldLease, "start_renewer", lambda self: None)   # A paused
    _history(table)
    before = files_under(table_path)
    a_mgr = LeaseManager(table.store.io, table.store.path,
                         clock=lambda: int(time.time() * 1000) - a_lag_ms)
    with maintenance_lease(table.store, "A", manager=a_mgr,
                           duration_ms=300_000 if a_lag_ms else 300) as a:
        n = a.record.number
        if not a_lag_ms:
            time.sleep(0.4)                  # A's lease expired (A is "paused")
        before_b(n)
        b = Busy(table, skew_ms=skew_ms)
        try:
            records = _records(table_path)
            r = table.expire_snapshots(retain_max=1, retain_min=1)
        finally:
            b.release()
    assert b.first == n + 1
    assert not r.complete and r.stopped_by == "lease", r
    assert r.expired_snapshots == 0 and r.deleted_files == 0
    assert files_under(table_path) == before
    return n, records


def test_sane_taker_count_pruning_hides_no_takeover(table, table_path, monkeypatch):
    n, records = _a_paused_past_expiry(table, table_path, monkeypatch)
    assert n not in records and n + 1 not in records      # pruned, young, by count only


def test_lagging_holder_count_pruning_hides_no_takeover(table, table_path, monkeypatch):
    # A's clock 10 min behind: its 5 min lease is expired to B at once, yet to A it is live
    # and not due for renewal, so A's check does not list: the HEAD of n+1 and the GET of n
    # alone must find the takeover after B's count pruning removed n and n+1 (both young).
    n, records = _a_paused_past_expiry(table, table_path, monkeypatch, a_lag_ms=600_000)
    assert n not in records and n + 1 not in records


def test_future_mtime_on_a_record_does_not_open_a_gap(table, table_path, monkeypatch):
    def future(n):
        t = time.time() + 3 * 3600
        os.utime(table_path / ".maintenance" / f"lease-{n}", (t, t))
    n, records = _a_paused_past_expiry(table, table_path, monkeypatch, before_b=future)
    assert n not in records and n + 1 not in records


def test_failed_delete_of_a_record_stops_count_pruning(table, table_path, monkeypatch):
    io = table.store.io
    unlink = io._unlink
    failing = {}

    def flaky(norm):
        if norm.endswith(f"/.maintenance/lease-{failing.get('n')}"):
            return False
        return unlink(norm)
    monkeypatch.setattr(io, "_unlink", flaky)
    n, records = _a_paused_past_expiry(table, table_path, monkeypatch,
                                       before_b=lambda n: failing.update(n=n))
    assert n in records and n + 1 in records            # pruning stopped at n, every time


def test_take_paused_between_listing_and_create_with_count_pruning(table, table_path,
                                                                  monkeypatch):
    _history(table)
    before = files_under(table_path)
    create = LeaseManager.create
    a_thread = threading.get_ident()
    paused = {}

    def paused_create(self, record):
        if threading.get_ident() == a_thread and "b" not in paused:
            paused["n"] = record.number
            paused["b"] = Busy(table)        # B takes that name, cycles, prunes it, holds
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
    assert paused["b"].first == n and n in _records(table_path)   # A re-created the name
    assert files_under(table_path) == before


def test_renewal_paused_between_listing_and_create_with_count_pruning(table, table_path,
                                                                     monkeypatch):
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
            paused["b"] = Busy(table)
        return out
    monkeypatch.setattr(a_mgr, "numbers", numbers)
    with maintenance_lease(table.store, "A", manager=a_mgr, duration_ms=600) as a:
        n = a.record.number
        time.sleep(0.35)                       # renewal due (less than half left)
        paused["armed"] = True
        try:
            r = table.expire_snapshots(retain_max=1, retain_min=1)
        finally:
            if "b" in paused:
                paused["b"].release()
    b = paused["b"]
    assert b.first == n + 1 and n + 1 in _records(table_path)   # A's renewal re-created it
    assert not r.complete and r.stopped_by == "lease", r
    assert r.expired_snapshots == 0 and r.deleted_files == 0
    assert files_under(table_path) == before


def test_paused_release_under_a_count_pruned_name_vouches_for_nobody(table, table_path,
                                                                    monkeypatch):
    monkeypatch.setattr(HeldLease, "start_renewer", lambda self: None)
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
    time.sleep(0.05)
    with maintenance_lease(table.store, "A", duration_ms=300, wait_s=5) as a:
        n = a.record.number
        time.sleep(0.4)
        b = Busy(table)
        try:
            assert n not in _records(table_path) and n + 1 not in _records(table_path)
            x_release.set()
            xt.join(30)
            assert n in _records(table_path)                 # X's release, under A's number
            with pytest.raises(StopDeleting, match="another holder's"):
                checkpoint()
            r = table.expire_snapshots(retain_max=1, retain_min=1)
        finally:
            b.release()
    assert not r.complete and r.stopped_by == "lease", r
    assert files_under(table_path) == before
