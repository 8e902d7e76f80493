"""Entries of `<table>/.maintenance` that are not lease records this library can follow
(paimon_commit/lease.py): refused with one error naming the entry and what to do, never a
hang, nothing deleted.

Records are `lease-<n>`, n in 1..999999999999999999 without a leading zero. Before, names
outside that pattern were passed over: after a record numbered 999999999999999999 every taker
tried to create the same 19-digit name, failed, and retried for ever, ignoring --lease-wait
(explicit commands, post-commit maintenance and batch commits hung); a directory named like
the next record failed with a bare IsADirectoryError, and a FIFO blocked its reader."""
import os
import subprocess
import sys
import threading
import time

import pytest

from conftest import files_under, make_rows, write

from paimon_commit import Table
from paimon_commit.cli import main
from paimon_commit.errors import LeaseRecordError
from paimon_commit.io.local import LocalFileIO

EXPIRE = ["expire-snapshots", "--retain-max", "1", "--retain-min", "1", "--lease-wait", "1 s"]


def _history(table, n=4):
    for i in range(1, n + 1):
        write(table, make_rows([i]))


def _next(table_path):
    d = table_path / ".maintenance"
    return max(int(n.split("-")[1]) for n in os.listdir(d)) + 1


def _cli(table_path, *args):
    """The CLI in a process of its own, so that a hang fails the test instead of stopping
    the run: (exit code, stderr)."""
    p = subprocess.run([sys.executable, "-m", "paimon_commit", args[0], str(table_path),
                        *args[1:]], capture_output=True, text=True, timeout=60,
                       env={**os.environ})
    return p.returncode, p.stderr


def _remove_it(table_path):
    return (f"; nothing was deleted. `paimon-commit lease {table_path} --break` cannot "
            f"supersede it: if no maintenance of this table is running, remove it\n")


# name -> (make it in .maintenance given the next record number, the problem stated)
NOT_RECORDS = {
    "directory": (lambda d, n: (d / f"lease-{n}").mkdir(),
                  "a directory named like a maintenance lease record"),
    "symlink": (lambda d, n: (d / f"lease-{n}").symlink_to(d / f"lease-{n - 1}"),
                "a symbolic link named like a maintenance lease record"),
    "fifo": (lambda d, n: os.mkfifo(d / f"lease-{n}"),
             "a FIFO named like a maintenance lease record"),
    "19-digits": (lambda d, n: (d / "lease-1000000000000000000").write_text("{}"),
                  "a file named like a maintenance lease record but numbered outside "
                  "1..999999999999999999 or with a leading zero, which this library never "
                  "writes"),
    "leading-zero": (lambda d, n: (d / f"lease-0{n}").write_text("{}"),
                     "a file named like a maintenance lease record but numbered outside "
                     "1..999999999999999999 or with a leading zero, which this library never "
                     "writes"),
}


def _made(d, kind, n):
    return {"19-digits": d / "lease-1000000000000000000",
            "leading-zero": d / f"lease-0{n}"}.get(kind, d / f"lease-{n}")


@pytest.mark.parametrize("kind", sorted(NOT_RECORDS))
def test_an_entry_named_like_a_record_is_refused_naming_it_then_removing_it_clears_it(
        table, table_path, kind):
    _history(table)
    d = table_path / ".maintenance"
    n = _next(table_path)
    make, problem = NOT_RECORDS[kind]
    make(d, n)
    entry = _made(d, kind, n)
    before = files_under(table_path)
    code, err = _cli(table_path, *EXPIRE)
    if kind == "fifo":   # found when read: `--break` would supersede it
        assert (code, err) == (1, f"error: {entry}: {problem}; nothing was deleted. If no "
                                  f"maintenance of this table is running, remove it\n")
    else:
        assert (code, err) == (1, f"error: {entry}: {problem}{_remove_it(table_path)}")
        # `lease --break` cannot supersede it, and says so the same way.
        code, err = _cli(table_path, "lease", "--break")
        assert (code, err) == (1, f"error: {entry}: {problem}{_remove_it(table_path)}")
    assert files_under(table_path) == before                  # nothing deleted
    (entry.rmdir if kind == "directory" else entry.unlink)()
    assert main([EXPIRE[0], str(table_path), *EXPIRE[1:]]) == 0
    assert [s.id for s in Table.open(str(table_path)).snapshots()] == [4]


def test_a_record_numbered_at_the_limit_is_refused_instead_of_hanging(table, table_path):
    _history(table)
    d = table_path / ".maintenance"
    top = d / "lease-999999999999999999"
    top.write_bytes((d / f"lease-{_next(table_path) - 1}").read_bytes())   # released
    before = files_under(table_path)
    code, err = _cli(table_path, *EXPIRE)
    assert (code, err) == (
        1, f"error: {top}: no maintenance lease record can follow it: its number is the "
           f"largest one a record can have (999999999999999999); nothing was deleted. If no "
           f"maintenance of this table is running, remove it (the next record then follows "
           f"the highest one left)\n")
    assert files_under(table_path) == before
    assert not (d / "lease-1000000000000000000").exists()
    top.unlink()
    assert main([EXPIRE[0], str(table_path), *EXPIRE[1:]]) == 0
    assert [s.id for s in Table.open(str(table_path)).snapshots()] == [4]


class _CreatesNoRecord(LocalFileIO):
    """Storage whose create-if-absent of a lease record answers "exists" while no listing
    ever shows that record (a store disagreeing with itself)."""

    def try_create_atomic(self, path, data, **kw):
        if "/.maintenance/lease-" in path:
            return False
        return super().try_create_atomic(path, data, **kw)


def test_a_record_that_exists_but_is_never_listed_is_refused_within_the_wait(
        table, table_path):
    _history(table)
    n = _next(table_path)
    t = Table.open(str(table_path), file_io=_CreatesNoRecord(str(table_path)))
    before = files_under(table_path)
    outcome = []

    def expire():
        try:
            t.expire_snapshots(retain_max=1, retain_min=1)
            outcome.append("expired")
        except LeaseRecordError as e:
            outcome.append(str(e))
    th = threading.Thread(target=expire, daemon=True)
    th.start()
    th.join(30)
    assert not th.is_alive(), "taking the lease never gave up"
    assert outcome == [
        f"{table_path}/.maintenance/lease-{n}: creating this maintenance lease record failed "
        f"as it exists, but listing the lease records does not show it; nothing was deleted. "
        f"`paimon-commit lease {table_path} --break` cannot supersede it: if no maintenance "
        f"of this table is running, remove it"]
    assert files_under(table_path) == before


def test_a_holder_whose_renewal_meets_such_an_entry_stops_before_its_next_delete(
        table, table_path):
    from paimon_commit.io.deletion import StopDeleting, checkpoint
    from paimon_commit.lease import maintenance_lease
    _history(table, 1)
    with maintenance_lease(table.store, "expire-snapshots", duration_ms=300) as held:
        d = table_path / ".maintenance"
        (d / f"lease-{held.record.number + 5}").mkdir()
        time.sleep(0.25)   # past half of the lease: its renewal lists the records
        with pytest.raises(StopDeleting) as e:
            checkpoint()
    assert e.value.cause == "lease"
    assert str(e.value) == (
        f"the maintenance lease of {table_path} cannot be renewed: {d}/lease-"
        f"{held.record.number + 5}: a directory named like a maintenance lease record; "
        f"nothing was deleted. `paimon-commit lease {table_path} --break` cannot supersede "
        f"it: if no maintenance of this table is running, remove it; stopped before the next "
        f"delete")


# --- the directory of the records ------------------------------------------------------------

def _outside_state(path):
    return sorted((n, (path / n).read_bytes()) for n in os.listdir(path))


def test_a_lease_directory_symlinked_out_of_the_table_is_refused_nothing_written_there(
        tmp_path, table, table_path):
    # (Another table's lease directory, say: both tables would share one lease.)
    _history(table)
    d = table_path / ".maintenance"
    elsewhere = tmp_path / "elsewhere"
    d.rename(elsewhere)
    d.symlink_to(elsewhere)
    outside, before = _outside_state(elsewhere), files_under(table_path)
    code, err = _cli(table_path, *EXPIRE)
    assert (code, err) == (
        1, f"error: {d}: the directory of the maintenance lease records is a symbolic link to "
           f"{elsewhere}: its records would be read and written outside the table; nothing "
           f"was deleted. If no maintenance of this table is running, remove the link: the "
           f"next run creates a directory of the table's own\n")
    assert _outside_state(elsewhere) == outside          # nothing written outside the table
    assert files_under(table_path) == before             # nothing deleted
    # A writer's post-commit maintenance skips its turn: the commit itself succeeds.
    assert write(table, make_rows([5])) == 5
    assert _outside_state(elsewhere) == outside
    d.unlink()
    assert main([EXPIRE[0], str(table_path), *EXPIRE[1:]]) == 0
    assert [s.id for s in Table.open(str(table_path)).snapshots()] == [5]
    assert d.is_dir() and not d.is_symlink() and os.listdir(d)
    assert _outside_state(elsewhere) == outside


def test_a_lease_directory_that_is_a_file_is_refused_naming_it(table, table_path):
    _history(table, 2)
    d = table_path / ".maintenance"
    for n in os.listdir(d):
        (d / n).unlink()
    d.rmdir()
    d.write_text("not a directory")
    before = files_under(table_path)
    code, err = _cli(table_path, *EXPIRE)
    assert (code, err) == (
        1, f"error: {d}: the directory of the maintenance lease records is a file; nothing "
           f"was deleted. If no maintenance of this table is running, remove it: the next run "
           f"creates the directory\n")
    assert files_under(table_path) == before


# --- the holder's check of its own record ------------------------------------------------------

def test_the_check_passes_on_its_own_record_however_written_and_stops_on_another_token(
        table, table_path):
    """A check compares the record's bytes with what the holder wrote first (it runs before
    every delete step); other bytes are parsed: the same token, written otherwise (another
    JSON layout), is still the holder's, any other token is not."""
    import json

    from paimon_commit.io.deletion import StopDeleting, checkpoint
    from paimon_commit.lease import maintenance_lease
    _history(table, 1)
    with maintenance_lease(table.store, "expire-snapshots") as held:
        own = table_path / ".maintenance" / f"lease-{held.record.number}"
        checkpoint()
        d = json.loads(own.read_bytes())
        own.write_text(json.dumps(d, separators=(",", ":")))   # same record, other bytes
        checkpoint()
        own.write_text(json.dumps({**d, "token": d["token"] + "x"}))
        with pytest.raises(StopDeleting) as e:
            checkpoint()
    assert e.value.cause == "lease"
    assert str(e.value) == (
        f"lost the maintenance lease of {table_path} (its record {own} is another holder's: "
        f"a later holder took the lease over and pruned the records below its own); stopped "
        f"before the next delete")


# --- huge regular files named like records (audit issue25v v1) -------------------------------

TB = 1 << 40


def _sparse(path, size=TB):
    """A regular file of `size` bytes that uses no disk."""
    with open(path, "wb") as f:
        f.truncate(size)


# Options making every commit's post-commit maintenance expire.
_EXPIRING = {"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "1",
             "snapshot.time-retained": "1 ms"}


def test_a_huge_lease_record_is_refused_naming_it_and_never_fails_a_published_commit(
        table, table_path):
    # Read whole, a sparse terabyte raised MemoryError into a commit that had published, and
    # out of an explicit expiration as a bare MemoryError.
    _history(table)
    path = table_path / ".maintenance" / f"lease-{_next(table_path)}"
    _sparse(path)
    problem = (f"{path}: too large to be a maintenance lease record ({TB} bytes); nothing "
               f"was deleted. If no maintenance of this table is running, supersede it with "
               f"`paimon-commit lease {table_path} --break`, or remove it")
    t = Table.open(str(table_path))
    with t.new_commit(options=_EXPIRING) as c:   # one-shot: published, maintenance skipped, nothing raised
        w = t.new_writer()
        w.write_arrow(make_rows([5]))
        c.commit(w.prepare_commit())
        assert c.last_maintenance.lease_skipped == (
            f"a maintenance lease record cannot be used: {problem}; skipped this turn")
    assert [s.id for s in t.snapshots()] == [1, 2, 3, 4, 5]
    with pytest.raises(LeaseRecordError) as e:
        t.expire_snapshots(retain_max=1, retain_min=1)
    assert str(e.value) == problem
    assert [s.id for s in t.snapshots()] == [1, 2, 3, 4, 5]
    assert main(["lease", str(table_path), "--break"]) == 0   # the remedy named works
    r = t.expire_snapshots(retain_max=1, retain_min=1)
    assert r.complete and [s.id for s in t.snapshots()] == [5]


def test_a_huge_waiter_record_is_no_waiter_and_never_fails_a_published_commit(
        table, table_path):
    import uuid
    from paimon_commit.lease import LeaseManager
    _history(table)
    name = f"wait-{int(time.time() * 1000) - 1000}-{uuid.uuid4().hex}"
    _sparse(table_path / ".maintenance" / name)   # fresh: within its TTL
    t = Table.open(str(table_path))
    with t.new_commit(options=_EXPIRING) as c:
        w = t.new_writer()
        w.write_arrow(make_rows([5]))
        c.commit(w.prepare_commit())
        assert c.last_maintenance.lease_skipped is None   # not a waiter: maintenance ran
    assert [s.id for s in t.snapshots()] == [5]
    m = LeaseManager(t.store.io, str(table_path))
    assert m.read_waiter(name) is None
    assert os.path.getsize(table_path / ".maintenance" / name) == TB   # left, not read


def test_a_record_over_the_cap_on_an_object_store_is_refused_after_one_get(tmp_path):
    # Object stores: the size comes with the GET's answer, before its body; no HEAD first.
    from obstore.store import MemoryStore
    from paimon_commit.io.base import FileTooLargeError
    from paimon_commit.io.object_store import ObjectStoreFileIO
    from paimon_commit.lease import MAX_RECORD_BYTES, LeaseManager
    io = ObjectStoreFileIO(MemoryStore(), "s3", "b", "t", "memory")
    m = LeaseManager(io, "s3://b/t")
    io.write_new(m.record_path(1), b" " * (MAX_RECORD_BYTES + 1))
    io.write_new(m.record_path(2), b"{}")
    calls = []
    real = io._request
    io._request = lambda what, path, fn: calls.append(what) or real(what, path, fn)
    with pytest.raises(FileTooLargeError) as e:
        io.read_bytes_at_most(m.record_path(1), MAX_RECORD_BYTES)
    assert e.value.size == MAX_RECORD_BYTES + 1 and calls == ["read"]
    assert io.read_bytes_at_most(m.record_path(2), MAX_RECORD_BYTES) == b"{}"
    with pytest.raises(LeaseRecordError) as e:
        m.read(1)
    assert f"too large to be a maintenance lease record ({MAX_RECORD_BYTES + 1} bytes)" in \
        str(e.value)
