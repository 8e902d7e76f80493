"""A forked child holds none of its parent's maintenance leases (paimon_commit/lease.py).

A child forked while a thread holds the lease used to inherit that thread's held-lease map and
deletion guards: maintenance in the child joined the parent's lease and both deleted at once.
What a user notices: the child's expiration waits for the parent's lease and gives up naming
it, no snapshot is deleted, the parent still holds its lease afterwards, and the child writes
no lease record (in particular it does not release the parent's lease)."""
import os
import re

import pytest

from conftest import make_rows, write
from forking import in_child

from paimon_commit.errors import LeaseHeldError
from paimon_commit.io.deletion import StopDeleting, checkpoint
from paimon_commit.lease import lease_settings, maintenance_lease

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")


def _records(table_path):
    d = os.path.join(str(table_path), ".maintenance")
    return sorted(os.listdir(d))


def test_a_child_forked_while_the_lease_is_held_waits_for_it_instead_of_joining(
        table, table_path):
    for i in range(1, 6):
        write(table, make_rows([i]))
    snapshots = [s.id for s in table.snapshots()]

    def child():
        with lease_settings(wait_s=0.3):
            table.expire_snapshots(retain_max=1, retain_min=1)
        return "expired"

    with maintenance_lease(table.store, "parent-op") as parent:
        held = _records(table_path)
        out = in_child(child)
        assert _records(table_path) == held            # the child wrote no record
        parent.check()                                 # the parent still holds it
    assert out.startswith(f"LeaseHeldError: table {table_path} is being maintained by "), out
    assert f"pid {os.getpid()} (parent-op since " in out
    assert [s.id for s in table.snapshots()] == snapshots   # nothing expired


def test_the_parents_lease_neither_passes_a_check_nor_is_released_in_a_child(
        table, table_path):
    write(table, make_rows([1]))

    with maintenance_lease(table.store, "parent-op") as parent:
        held = _records(table_path)

        def child():
            checkpoint()   # no guard of the parent's: a forked worker's own deletes go on
            try:
                parent.check()
                checked = "passed"
            except StopDeleting as e:
                checked = str(e)
            parent.release()   # as when the child leaves the block it was forked inside
            return checked

        out = in_child(child)
        assert _records(table_path) == held            # not released by the child
        parent.check()
    assert re.fullmatch(
        rf"this process \(pid \d+\) was forked from pid {os.getpid()}, which holds the "
        rf"maintenance lease of {re.escape(table.store.path)}: a forked child does not hold "
        rf"its parent's lease; stopped before the next delete", out), out
    assert len(_records(table_path)) == len(held) + 1  # the parent released it
