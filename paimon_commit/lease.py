"""The maintenance lease: one destructive maintenance run per table at a time.

Every change that removes history (snapshot, changelog, tag, partition and consumer
expiration, rollback, tag deletion and replacement, the delete phase of orphan cleanup and of
compaction's abort) runs while holding this table-level lease. Commits never take it.

Records: `<root>/.maintenance/lease-<n>`, JSON, append-only (outside every directory Paimon,
pypaimon and our orphan cleanup list, like `.tag-deletions/`). Each names the table (the
commit record's key: one however the table is spelled, s3a:// as s3://), the holder
(host, pid, a random token), the operation, start and expiry (epoch ms) and `released`.

- Take: read the highest record n. None, expired (expiry < now) or released: create
  lease-(n+1) with the storage's create-if-absent, the primitive that publishes snapshots.
  Losing that race means someone else holds it. Two takers of one free lease both try to
  create the same name and one of them wins. Then list the records once more: a record
  above n+1 means ours re-created a name that was used and pruned while this take was
  paused between its listing and its create; it is not taken (it waits or skips as if
  held) and nothing is deleted. The highest record is never pruned, so nothing above n+1
  proves that n+1 was new.
- Renew: the holder lists the records and creates lease-(n+1) with its own token and a new
  expiry. A failed create means someone took it over: the lease is lost. So does a record
  above n+1 in the listing made after the create (as for a take). Renewed from the check
  when less than half of the duration is left, and from a daemon thread (planning can take
  minutes).
- Still holds: before every delete step (`io.deletion.checkpoint`, through `guarded`; among
  expiration's snapshot files, every GUARD_EVERY_FILES files or GUARD_EVERY_S), the
  holder checks that record n+1 does not exist and then that its own record n still exists
  and is its own (two requests: a HEAD, then a GET). A holder that lost the lease raises
  StopDeleting(cause="lease") there: nothing of that step is deleted.
- Release: create lease-(n+1) with released=true.
- Pruning: a taker deletes old superseded records below its own, through the FileIO gate, so
  they do not pile up (also young ones past the newest KEEP_RECENT: a table committed to
  every few seconds writes two records per commit): lowest first, stopping at the first it
  keeps or fails to delete. So a record is gone before any higher one is, and a holder whose
  successor was pruned finds its own record gone (see `HeldLease._check_own_record`).
- Re-entrant on one thread for one table: a nested operation joins the held lease (never
  across a fork: a forked child holds none of its parent's leases).
- Waiting in line: a command that waits for the lease writes `wait-<since ms>-<token>` beside
  the records and rewrites it every WAITER_REFRESH_S while it waits (its storage time is its
  heartbeat); it deletes it once it took the lease or gave up. A taker that finds the lease
  free but a waiter ahead of it in line (by since, then token; one whose record's time lies
  in the taker's window, see `LeaseManager.waiting`, and not left by a killed process of
  this machine)
  treats the lease as held: post-commit maintenance skips its turn, a command waits in line.
  Without it a holder that takes the lease again right after releasing it (a looping
  expiration, a stream's post-commit maintenance) starved a waiter backing off to 2 s
  pauses. Fairness only: who may delete is decided by the records above, and a waiter
  record nobody rewrites holds the line of any one taker for WAITER_TTL_MS at most,
  whatever the clocks.
- Names: records are numbered 1..MAX_NUMBER without leading zeros; any other entry named
  `lease-<digits>` (a directory, a symlink, 19 digits, ...) is refused naming it, and taking
  the lease is bounded however its races go: never a loop that ignores its wait.

Clocks only decide when an expired lease may be taken over (and which records are old
enough to prune, which safety does not rest on); whether a holder may delete is decided by
the records, which it checks before every step. docs/safety.md, "The
maintenance lease", states what a holder paused past its expiry can still do.
"""
from __future__ import annotations

import contextlib
import datetime
import json
import logging
import os
import random
import re
import socket
import stat as _stat
import threading
import time
import uuid
from dataclasses import dataclass, replace
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

from .io.metered import in_context
from .errors import AtomicCreateUnsupportedError, LeaseHeldError, LeaseRecordError, \
    OptionError
from .io import FileIO
from .io.base import FileTooLargeError
from .io.deletion import StopDeleting, guarded, stop_requested
from .io.uri import AZURE_SCHEMES, GCS_SCHEMES, S3_SCHEMES

log = logging.getLogger(__name__)

__all__ = ["LEASE_DIR", "LeaseRecord", "LeaseManager", "HeldLease", "maintenance_lease",
           "lease_settings", "current_lease_settings", "table_identity", "lease_manager",
           "DEFAULT_DURATION_MS", "DEFAULT_WAIT_S", "MAX_DURATION_MS", "check_lease_duration_ms",
           "check_lease_wait_s"]

LEASE_DIR = ".maintenance"
# Every name a record of ours could collide with: `lease-` and digits. Ours are numbered
# 1..MAX_NUMBER without leading zeros; any other such name (a directory, a number of more
# than 18 digits or with a leading zero, hand-made or written by a tool that overflowed) is
# refused naming it, never passed over: a taker that passed over the highest record would
# try to create a name that exists and, before, retried forever.
_NAME = re.compile(r"^lease-(\d+)$")
MAX_NUMBER = 10 ** 18 - 1
_MAX_DIGITS = len(str(MAX_NUMBER))
# A command waiting for the lease says so: `wait-<since ms>-<token>`, rewritten while it waits
# (its storage time is its heartbeat), deleted when it takes the lease or gives up. Only
# fairness rests on these; never safety (see "Waiting in line" in maintenance_lease).
_WAITER = re.compile(r"^wait-(\d{1,19})-([0-9a-f]{32})$")
WAITER_TTL_MS = 30_000      # a waiter record not rewritten for this long is a gone waiter's
WAITER_REFRESH_S = 10.0     # how often a waiter rewrites it (well inside the TTL)
# A waiter record is counted only while its time lies within WAITER_SKEW_MS of the taker's
# clock either way, and for WAITER_TTL_MS at most after a process first saw it (that time):
# the second bounds what a record nobody rewrites holds, the first tolerates clocks that
# disagree (see LeaseManager.waiting).
WAITER_SKEW_MS = 30_000
# Lease records, waiter records and expiring marks are a few hundred bytes. A file of such a
# name that is larger (a hand-made or damaged one, a sparse terabyte) is not read: read whole,
# it raised MemoryError into a commit that had published (audit issue25v v1).
MAX_RECORD_BYTES = 64 * 1024
_UNSEEN_TRIES = 3   # lost races for a name that the listing then does not show, before refusing
_LOST_RACES = 10    # races lost in a row past the wait, before giving up (skip or refuse)

DEFAULT_DURATION_MS = 5 * 60 * 1000     # renewed at half: a holder alive renews long before
DEFAULT_WAIT_S = 60.0                   # how long an explicit command waits for a holder
MAX_DURATION_MS = 60 * 60 * 1000        # longer leases only delay taking over a dead holder
PRUNE_AT = 8                            # superseded records kept before they are deleted
PRUNE_AGE_MS = 2 * 60 * 60 * 1000       # ... and how old they must be (2 x the longest lease)
KEEP_RECENT = 32                        # ... unless more than this many are younger
FAR_FUTURE_FACTOR = 10                  # an expiry further ahead than this x the maximum
                                        # duration was not written by a sane clock


# This process, in every record it writes: a record of this process whose token no lease of
# this process holds any more was left by an operation that ended without releasing it (its
# release failed, or a test's simulated crash): nobody can be using it, so it is free. A forked
# child is another process (a new id), so it never frees a record its parent still holds.
_PROCESS = uuid.uuid4().hex
_live_lock = threading.Lock()
_live_tokens: set = set()
# (lease directory, waiter record name, its mtime) -> this process's clock (the manager's, ms)
# when it first saw that record so: see LeaseManager.waiting.
_seen_lock = threading.Lock()
_waiters_seen: Dict[Tuple[str, str, int], int] = {}
_SEEN_MAX = 10_000


def _after_fork_in_child() -> None:
    """A forked child is another process and holds none of its parent's leases: a new
    process id, no live tokens, and no held-lease map. Only the forking thread survives a
    fork, but its thread-local `held` map is copied: left there, a maintenance run in the
    child would join the lease its parent still holds, and both would delete at once. The
    maps are replaced, not emptied, so that a `maintenance_lease` block the child was forked
    inside still finds its own entry when it ends (and `HeldLease.release` then writes
    nothing: see its pid). The locks too: another thread may have held one at the fork."""
    global _PROCESS, _live_tokens, _live_lock, _local, _settings_lock
    _PROCESS, _live_tokens = uuid.uuid4().hex, set()
    _live_lock, _settings_lock = threading.Lock(), threading.Lock()
    _local = threading.local()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _this_machine() -> str:
    """This kernel and pid namespace (boot id + the pid namespace's inode), or "" where they
    cannot be read: a holder's pid means something only where both are ours. Not the host
    name: containers and machines share names; a process of another pid namespace (another
    container) is not visible here though it runs."""
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            boot = f.read().strip()
        ns = os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return ""
    return f"{boot}/{ns}" if boot else ""


_MACHINE = _this_machine()


def _pid_gone(pid: int) -> bool:
    """True only when no process `pid` exists here (ESRCH); a live process, one of another
    user (EPERM) or a re-used pid all count as the holder alive: wait, never take over."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except (OSError, OverflowError, ValueError):
        # (A pid no process can have, in a damaged or hand-made record: OverflowError. Not
        # proof of anything; raised, it failed commits that had published: audit 25p p2.)
        return False
    return False


def _kind(mode: int) -> str:
    """What a non-regular file is, in words."""
    return ("file" if _stat.S_ISREG(mode) else "symbolic link" if _stat.S_ISLNK(mode)
            else "directory" if _stat.S_ISDIR(mode)
            else "FIFO" if _stat.S_ISFIFO(mode) else "socket" if _stat.S_ISSOCK(mode)
            else "device file" if _stat.S_ISCHR(mode) or _stat.S_ISBLK(mode)
            else "special file")


def _now_ms() -> int:
    return int(time.time() * 1000)


def _shown(ms: int) -> str:
    return datetime.datetime.fromtimestamp(ms / 1000, datetime.timezone.utc) \
        .strftime("%Y-%m-%d %H:%M:%S UTC")


def check_lease_duration_ms(value: Any, name: str = "lease_duration") -> int:
    """A lease duration in ms: 1 ms .. MAX_DURATION_MS (refused before any I/O)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise OptionError(f"{name}={value!r} must be an integer number of milliseconds")
    if not 0 < value <= MAX_DURATION_MS:
        raise OptionError(f"{name}={value!r} must be longer than 0 and at most "
                          f"{MAX_DURATION_MS} ms (1 h)")
    return value


def check_lease_wait_s(value: Any, name: str = "lease_wait") -> float:
    """How long to wait for another holder, in seconds (>= 0)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
        raise OptionError(f"{name}={value!r} must be a number of seconds")
    if value < 0:
        raise OptionError(f"{name}={value!r} must not be negative")
    return float(value)


def table_identity(io: FileIO) -> str:
    """The table a lease record belongs to, so that a copied or moved table does not inherit
    a lease: the commit record's key (operations/commit_record.table_identity), one string
    however the table is spelled. Locally the physical path; on an object store the store
    (scheme family: s3, s3a and s3n are one; endpoint; bucket) and the key prefix. A table
    reached as s3a:// by one process and s3:// by another is one table with one lease: keyed
    by the spelling, each saw the other's live record as another table's and was told to
    `--break` it. So is one endpoint however it is spelled (`normal_endpoint`: a trailing
    `/`, a default port, the case of its host)."""
    known = io.__dict__.get("_lease_identity")
    if known is not None:   # once per FileIO: every operation asks (nested ones to join)
        return known
    # (Imported here: commit_record imports much of the library, which imports this.)
    from .operations.commit_record import _SCHEME_FAMILY, normal_endpoint, \
        table_identity as resolved
    store = getattr(io, "_identity", None)
    if isinstance(store, tuple) and len(store) == 3:
        # An object store's (scheme, endpoint, bucket), the key commit_record gives it, also
        # through a FileIO wrapping one that hands its attributes through (a wrapper keyed
        # by its class would call the store's own records another table's).
        scheme, endpoint, bucket = store
        identity = (f"{_SCHEME_FAMILY.get(scheme, scheme)}://{normal_endpoint(endpoint)}|"
                    f"{bucket}|{io.root}")
    else:
        identity = resolved(io)
    io.__dict__["_lease_identity"] = identity
    return identity


_FAMILIES = (S3_SCHEMES, GCS_SCHEMES, AZURE_SCHEMES)


def _earlier_identities(io: FileIO) -> frozenset:
    """How records written before table_identity was the commit record's key named this
    table (a holder of an earlier version may still run): the root's realpath locally, the
    URI as spelled on object stores (any scheme of its family: such a record was written
    through one spelling or another of this table), pyarrow.fs's class name and root."""
    uri = getattr(io, "uri", None)
    root = io.root.rstrip("/")
    if callable(uri):
        spelled = uri(root)
        scheme = spelled.split("://", 1)[0]
        family = next((f for f in _FAMILIES if scheme in f), (scheme,))
        return frozenset([spelled] + [f"{s}://{root}" for s in family])
    if getattr(io, "fs", None) is not None:
        return frozenset([f"{type(io.fs).__name__}:{root}"])
    return frozenset([os.path.realpath(io.root)])


def _same_table(recorded: str, identity: str, io: FileIO) -> bool:
    """Whether a record's `table` names this table: our identity, an earlier one, or an
    object store's identity written before the endpoint was spelled one way (audit issue25c
    c4: `http://host:port/` and `http://host:port` are one endpoint), whatever its spelling."""
    if recorded == identity or recorded in _earlier_identities(io):
        return True
    store, sep, rest = recorded.partition("://")
    endpoint, bar, bucket_root = rest.partition("|")
    if not sep or not bar or "|" not in bucket_root:
        return False
    # The record was read from this table's own `.maintenance/`: one that differs from our
    # identity only in the endpoint (`localhost` vs `127.0.0.1`, no endpoint vs AWS's own,
    # audit/final f2, f3) is this table reached by another name of its server. Counted as
    # another table's, a live holder's record was answered "supersede it with --break"; as
    # ours, the worst case (a bucket replicated from another store with its records) is a
    # wait until the record's expiry (a far-future one is refused anyway).
    mine_store, _, mine_rest = identity.partition("://")
    return store == mine_store and bucket_root == mine_rest.partition("|")[2]


@dataclass(frozen=True)
class LeaseRecord:
    """One lease record (`.maintenance/lease-<number>`)."""
    number: int
    table: str
    host: str
    pid: int
    token: str
    operation: str
    start_ms: int
    expiry_ms: int
    released: bool = False
    process: str = ""    # a random id of the holder's process (see _PROCESS)
    machine: str = ""    # the holder's kernel and pid namespace (_this_machine), "" unknown

    def to_json(self) -> bytes:
        return json.dumps({"table": self.table, "host": self.host, "pid": self.pid,
                           "process": self.process, "machine": self.machine,
                           "token": self.token, "operation": self.operation,
                           "startMillis": self.start_ms, "expiryMillis": self.expiry_ms,
                           "released": self.released}, indent=2).encode()

    @classmethod
    def from_json(cls, number: int, data: bytes) -> "LeaseRecord":
        """ValueError (the problem, in words) when it is not a lease record."""
        try:
            d = json.loads(data)
        except (ValueError, UnicodeDecodeError) as e:
            raise ValueError(f"not JSON ({e})") from None
        except RecursionError:   # (nested deeper than the parser goes: audit 25q l1)
            raise ValueError("not JSON (nested too deeply)") from None
        if not isinstance(d, dict):
            raise ValueError("not a JSON object")
        fields = {"table": str, "host": str, "pid": int, "token": str, "operation": str,
                  "startMillis": int, "expiryMillis": int, "released": bool}
        for key, kind in fields.items():
            if not isinstance(d.get(key), kind) or (kind is int and isinstance(d[key], bool)):
                raise ValueError(f"field {key!r} is missing or not a {kind.__name__}")
        process, machine = d.get("process"), d.get("machine")
        return cls(number, d["table"], d["host"], d["pid"], d["token"], d["operation"],
                   d["startMillis"], d["expiryMillis"], d["released"],
                   process if isinstance(process, str) else "",
                   machine if isinstance(machine, str) else "")

    def describe(self, table: str) -> str:
        """`table T is being maintained by HOST pid PID (OP since T0, lease until T1)`."""
        return (f"table {table} is being maintained by {self.host} pid {self.pid} "
                f"({self.operation} since {_shown(self.start_ms)}, lease until "
                f"{_shown(self.expiry_ms)})")


@dataclass(frozen=True)
class Waiter:
    """A command waiting for the lease (`.maintenance/wait-<since_ms>-<token>`), as listed:
    the line is ordered by (since_ms, token); `mtime_ms` (the storage's time of its last
    rewrite) says whether its waiter is still there."""
    name: str
    since_ms: int
    token: str
    mtime_ms: int

    @property
    def order(self) -> Tuple[int, str]:
        return (self.since_ms, self.token)


class LeaseManager:
    """Reads and creates the lease records of one table (no policy: see maintenance_lease).

    Args:
        io: the table's storage.
        path: the table as the user named it (for messages).
        single_writer: commit.single-writer: the storage's create may be check-then-create.
    """

    def __init__(self, io: FileIO, path: str, single_writer: bool = False,
                 clock: Callable[[], int] = _now_ms):
        self.io, self.path, self.clock = io, path, clock
        self.identity = table_identity(io)
        self.single_writer = single_writer
        self.lease_dir = io.join(io.root, LEASE_DIR)
        # Storage on a local file system (the deletion gate resolves its symlinks there):
        # entries can be symlinks, FIFOs, ..., which an object store's keys cannot.
        self.local = getattr(io, "_resolver", None) is not None

    def record_path(self, number: int) -> str:
        return self.io.join(self.lease_dir, f"lease-{number}")

    def check_storage(self) -> None:
        """AtomicCreateUnsupportedError unless records can be created only-if-absent (or the
        table declares a single writer); pyarrow.fs storage refuses here without I/O."""
        if self.single_writer:
            return
        try:
            self.io.check_atomic_create()
        except AtomicCreateUnsupportedError as e:
            raise AtomicCreateUnsupportedError(
                f"the maintenance lease of {self.path} cannot be taken: this storage cannot "
                f"create a file only if it is absent, so two maintenance runs could both "
                f"believe they hold it; nothing was deleted. Declare 'commit.single-writer' = "
                f"'true' in the table options if only one process ever writes and maintains "
                f"this table ({e})") from None

    def check_dir(self) -> None:
        """LeaseRecordError unless `.maintenance` is absent or a directory of the table's own
        (on a local file system; object stores have no symlinks): records read and written
        through a symlink would be another directory's, outside the table (another table's
        lease records, or anything). Before every listing and every create: one lstat."""
        if not self.local:
            return
        try:
            mode = os.lstat(self.lease_dir).st_mode
        except FileNotFoundError:
            return   # created by the first record
        if _stat.S_ISDIR(mode):
            return
        if _stat.S_ISLNK(mode):
            try:
                target = f" to {os.readlink(self.lease_dir)}"
            except OSError:
                target = ""
            raise self._bad(self.lease_dir,
                            f"the directory of the maintenance lease records is a symbolic "
                            f"link{target}: its records would be read and written outside "
                            f"the table",
                            remedy="If no maintenance of this table is running, remove the "
                                   "link: the next run creates a directory of the table's own")
        raise self._bad(self.lease_dir, f"the directory of the maintenance lease records is a "
                                        f"{_kind(mode)}",
                        remedy="If no maintenance of this table is running, remove it: the "
                               "next run creates the directory")

    def record_exists(self, number: int) -> bool:
        """Whether record `number` exists: one HEAD on object stores (`exists` would also
        list, to find a directory of that name), one stat locally."""
        try:
            self.io.file_size(self.record_path(number))
            return True
        except FileNotFoundError:
            return False

    def numbers(self) -> List[int]:
        return [n for n, _ in self.listing()]

    def listing(self) -> List[Tuple[int, int]]:
        """(number, modification time in ms) of every record, by number. LeaseRecordError
        for an entry named like a record that is not one of ours (see _NAME)."""
        return self.scan()[0]

    def scan(self) -> Tuple[List[Tuple[int, int]], List[Waiter]]:
        """One listing of the lease directory: (`listing()`'s records, the waiter records
        in line order)."""
        out = []
        waiters: List[Waiter] = []
        self.check_dir()
        for st in self.io.list_status(self.lease_dir):
            m = _NAME.match(st.name)
            if m is None:
                w = _WAITER.match(st.name)
                if w is not None and not st.is_dir and not st.is_symlink:
                    waiters.append(Waiter(st.name, int(w.group(1)), w.group(2), st.mtime_ms))
                continue   # not a record: temp files (`.lease-N.<uuid>.tmp`), anything else
            digits = m.group(1)
            path = self.io.join(self.lease_dir, st.name)
            # (A FIFO or another special file is found by `read`, which lstat()s the one
            # record it reads: the listing may hold thousands of records younger than
            # PRUNE_AGE_MS, and one below the highest is never read.)
            if st.is_dir or st.is_symlink:
                kind = "symbolic link" if st.is_symlink else "directory"
                raise self._bad(path, f"a {kind} named like a maintenance lease record",
                                remedy=self._remove)
            if len(digits) > _MAX_DIGITS or digits != str(int(digits)):
                raise self._bad(path, f"a file named like a maintenance lease record but "
                                      f"numbered outside 1..{MAX_NUMBER} or with a leading "
                                      f"zero, which this library never writes",
                                remedy=self._remove)
            out.append((int(digits), st.mtime_ms))
        return sorted(out), sorted(waiters, key=lambda w: w.order)

    def read(self, number: int, check: bool = True) -> LeaseRecord:
        """Record `number`; FileNotFoundError if absent, LeaseRecordError if it is not a
        usable record of this table (with `check`)."""
        path = self.record_path(number)
        return self.parse(number, path, self.read_raw(path), check)

    def read_raw(self, path: str) -> bytes:
        """The bytes of the record at `path` (FileNotFoundError if absent; LeaseRecordError
        for a directory, FIFO, symlink, ... of that name)."""
        try:
            if self.local:
                # Not read through a symlink, nor from a FIFO (a read that never returns).
                st = os.lstat(path)   # FileNotFoundError if absent, as read_bytes
                if not _stat.S_ISREG(st.st_mode):
                    # (`--break` would supersede it, but it had better not stay.)
                    raise self._bad(path, f"a {_kind(st.st_mode)} named like a maintenance "
                                          f"lease record",
                                    remedy="If no maintenance of this table is running, "
                                           "remove it")
                # The size the lstat gave: no further call. (A file swapped in between the
                # lstat and the read is not guarded against: a hand-made race.)
                if st.st_size > MAX_RECORD_BYTES:
                    raise FileTooLargeError(path, st.st_size)
                return self.io.read_bytes(path)
            # Object stores: one GET whose body is read only when small (the size comes with
            # the answer's metadata); no HEAD before it.
            return self.io.read_bytes_at_most(path, MAX_RECORD_BYTES)
        except FileTooLargeError as e:
            raise self._bad(path, f"too large to be a maintenance lease record ({e.size} "
                                  f"bytes)", remedy=self._supersede_or_remove) from None
        except IsADirectoryError:   # (object stores, pyarrow.fs: no lstat above)
            raise self._bad(path, "a directory named like a maintenance lease record",
                            remedy=self._remove) from None

    def parse(self, number: int, path: str, data: bytes, check: bool = True) -> LeaseRecord:
        """Record `number` from its bytes `data` (read at `path`), as `read`."""
        try:
            record = LeaseRecord.from_json(number, data)
        except ValueError as e:
            raise self._bad(path, f"unreadable maintenance lease record ({e})") from None
        if check:
            self._validate(path, record)
        return record

    def _bad(self, path: str, problem: str, remedy: Optional[str] = None) -> LeaseRecordError:
        """`PATH: PROBLEM; nothing was deleted. REMEDY` (default: `lease --break`)."""
        if remedy is None:
            remedy = (f"If no maintenance of this table is running, supersede it with "
                      f"`paimon-commit lease {self.path} --break`")
        return LeaseRecordError(self.io._describe(path), f"{problem}; nothing was deleted. "
                                                         f"{remedy}")

    @property
    def _supersede_or_remove(self) -> str:
        return (f"If no maintenance of this table is running, supersede it with "
                f"`paimon-commit lease {self.path} --break`, or remove it")

    @property
    def _remove(self) -> str:
        """The remedy for what `lease --break` cannot supersede (it creates the next
        record, which a name outside the protocol blocks or follows)."""
        return (f"`paimon-commit lease {self.path} --break` cannot supersede it: if no "
                f"maintenance of this table is running, remove it")

    def _validate(self, path: str, record: LeaseRecord) -> None:
        if record.released or record.expiry_ms < self.clock():
            return   # claims nothing (a released or expired record copied along is harmless)
        if not _same_table(record.table, self.identity, self.io):
            raise self._bad(path, f"this maintenance lease record belongs to table "
                                  f"{record.table}, not {self.identity} (a copied or moved "
                                  f"table?)")
        limit = self.clock() + FAR_FUTURE_FACTOR * MAX_DURATION_MS
        if record.expiry_ms > limit:
            raise self._bad(path, f"its lease expiry {_shown(record.expiry_ms)} is more than "
                                  f"{FAR_FUTURE_FACTOR * MAX_DURATION_MS // 3_600_000} h "
                                  f"ahead (a clock far off when it was written?)")

    def latest(self, check: bool = True) -> Optional[LeaseRecord]:
        """The highest record (None: none yet)."""
        return self.listed(check)[1]

    def listed(self, check: bool = True
               ) -> Tuple[List[Tuple[int, int]], Optional[LeaseRecord]]:
        """(the records listed: (number, mtime ms), the highest record). A record pruned
        between the listing and the read sends it back to the listing."""
        listing, latest, _ = self.listed_with_waiters(check)
        return listing, latest

    def listed_with_waiters(self, check: bool = True
                            ) -> Tuple[List[Tuple[int, int]], Optional[LeaseRecord],
                                       List[Waiter]]:
        """`listed()` and the waiter records of the same listing."""
        for _ in range(10):
            listing, waiters = self.scan()
            if not listing:
                return listing, None, waiters
            try:
                return listing, self.read(listing[-1][0], check), waiters
            except FileNotFoundError:
                continue
        raise OSError(f"the lease records under {self.io._describe(self.lease_dir)} keep "
                      f"changing while being read")

    # --- waiting in line (fairness only: see maintenance_lease) ---

    def waiter_path(self, name: str) -> str:
        return self.io.join(self.lease_dir, name)

    def waiting(self, waiters: List[Waiter]) -> List[Waiter]:
        """The waiters still there. A record is counted only while both hold:

        - its time (the storage's, of its last rewrite) lies within WAITER_SKEW_MS (30 s) of
          this taker's clock either way: a waiter rewrites it every WAITER_REFRESH_S (10 s),
          so a live one counts while the storage's clock runs up to 30 s ahead of the
          taker's or about 20 s behind (a narrower window, 5 s ahead, let a storage clock
          6 s ahead pass live waiters over: starvation again, audit issue25w w6);
        - this process first saw the record (its name and that time) less than WAITER_TTL_MS
          (30 s) ago: a rewrite is a new time, so a live waiter keeps counting, and a record
          nobody rewrites stops counting 30 s after this process first saw it, however far
          ahead its time lies, also after this clock stepped back.

        So a record nobody rewrites holds the line of any one taker for 30 s at most,
        whatever the clocks say (before, with the window alone, a record timed 29 s ahead
        held the line about 59 s, audit issue25v v5).
        Fairness only: a taker that does not count a waiter takes a turn out of order."""
        now = self.clock()
        out = []
        with _seen_lock:
            if len(_waiters_seen) > _SEEN_MAX:   # (rewrites add keys): forget the old ones
                for key in [k for k, t in _waiters_seen.items()
                            if not 0 <= now - t < 2 * WAITER_TTL_MS]:
                    del _waiters_seen[key]
                if len(_waiters_seen) > _SEEN_MAX:
                    _waiters_seen.clear()
            for w in waiters:
                key = (self.lease_dir, w.name, w.mtime_ms)
                first = _waiters_seen.setdefault(key, now)
                if now - WAITER_SKEW_MS <= w.mtime_ms <= now + WAITER_SKEW_MS \
                        and 0 <= now - first < WAITER_TTL_MS:
                    out.append(w)
        return out

    def ahead_of(self, waiters: List[Waiter], token: Optional[str]) -> List[Waiter]:
        """The waiters still there ahead of the waiter `token` in line (all of them others',
        for a taker not in line: it comes last)."""
        live = self.waiting(waiters)
        mine = next((w for w in waiters if w.token == token), None) if token else None
        if mine is None:
            return [w for w in live if w.token != token]
        return [w for w in live if w.order < mine.order]

    def write_waiter(self, name: str, operation: str, since_ms: int) -> None:
        """Write (or rewrite: its heartbeat) the waiter record `name`. One PUT on object
        stores; a temp file and a rename locally."""
        body = {"table": self.identity, "host": socket.gethostname(), "pid": os.getpid(),
                "machine": _MACHINE, "operation": operation, "sinceMillis": since_ms}
        self.check_dir()
        self.io.mkdirs(self.lease_dir)
        self.io.overwrite_atomic(self.waiter_path(name), json.dumps(body).encode())

    def waiter_gone(self, waiter: Waiter) -> bool:
        """Whether `waiter` was left by a process of this machine that no longer exists (a
        killed command: its record would hold the line until its TTL ran out). One read;
        anything unreadable or from elsewhere counts as there (the TTL decides)."""
        if self.local and not self._regular(waiter.name):
            return True
        if not _MACHINE:
            return False
        try:
            d = json.loads(self._read_waiter_bytes(waiter.name))
            if isinstance(d, dict) and d.get("machine") == _MACHINE \
                    and isinstance(d.get("pid"), int) and not isinstance(d["pid"], bool):
                return _pid_gone(d["pid"])
        except (FileNotFoundError, FileTooLargeError):
            return True   # (too large: no waiter wrote it, as a FIFO of that name)
        except (OSError, ValueError, UnicodeDecodeError, RecursionError):
            pass   # (RecursionError: a body nested deeper than the parser goes, audit 25q l1)
        return False

    def _regular(self, name: str) -> bool:
        """Whether the local entry `name` of the lease directory is a regular file of at most
        MAX_RECORD_BYTES (not read otherwise: a FIFO's read never returns, a symlink's
        target is outside the protocol, a huge file would be read whole). Anything else named
        like a waiter record is no waiter; absent counts as gone too."""
        try:
            st = os.lstat(self.waiter_path(name))
        except OSError:
            return False
        if _stat.S_ISREG(st.st_mode) and st.st_size > MAX_RECORD_BYTES:
            log.warning("%s is too large to be a maintenance lease waiter record (%d bytes); "
                        "not a waiter: remove it", self.waiter_path(name), st.st_size)
            return False
        return _stat.S_ISREG(st.st_mode)

    def _read_waiter_bytes(self, name: str) -> bytes:
        """The body of waiter record `name` (FileTooLargeError past MAX_RECORD_BYTES,
        unread). Locally `_regular` checked it just before: a plain read."""
        path = self.waiter_path(name)
        if self.local:
            return self.io.read_bytes(path)
        return self.io.read_bytes_at_most(path, MAX_RECORD_BYTES)

    def read_waiter(self, name: str) -> Optional[Dict[str, Any]]:
        """The body of waiter record `name` (None: gone, not a regular file, or not a JSON
        object); for `lease TABLE`."""
        if self.local and not self._regular(name):
            return None
        try:
            body = json.loads(self._read_waiter_bytes(name))
        except (OSError, ValueError, UnicodeDecodeError, RecursionError, FileTooLargeError):
            return None
        return body if isinstance(body, dict) else None

    def remove_waiter(self, name: str) -> None:
        """Best effort (a record left is a gone waiter's after WAITER_TTL_MS): through the
        gate, and not in the run's deletion log (bookkeeping, as pruned records)."""
        path = self.waiter_path(name)
        try:
            deleted = self.io.delete_quietly(path)
        except OSError as e:
            log.info("could not delete the lease waiter record %s (%s)", path, e)
            return
        if deleted and self.io.deletion_log is not None:
            try:
                self.io.deletion_log.remove(path)
            except ValueError:
                pass

    def is_free(self, record: Optional[LeaseRecord]) -> bool:
        if record is None or record.released or record.expiry_ms < self.clock():
            return True
        if record.process == _PROCESS:
            with _live_lock:
                return record.token not in _live_tokens   # left unreleased by this process
        if _MACHINE and record.machine == _MACHINE and _pid_gone(record.pid):
            # A holder of this kernel and pid namespace that no longer exists (killed,
            # crashed) deletes nothing more: its lease need not be waited out. Anywhere
            # else a pid proves nothing, and the expiry decides.
            log.info("the holder of the maintenance lease of %s (pid %d, %s) is gone; "
                     "taking it over", self.path, record.pid, record.operation)
            return True
        return False

    def create(self, record: LeaseRecord) -> bool:
        """Create record `record.number` only if absent; True if it is ours.
        LeaseRecordError past MAX_NUMBER or where a directory has the record's name."""
        if record.number > MAX_NUMBER:
            raise self._bad(self.record_path(record.number - 1),
                            f"no maintenance lease record can follow it: its number is the "
                            f"largest one a record can have ({MAX_NUMBER})",
                            remedy=f"If no maintenance of this table is running, remove it "
                                   f"(the next record then follows the highest one left)")
        self.check_dir()
        self.io.mkdirs(self.lease_dir)
        extra = {"single_writer": True} if self.single_writer else {}
        path = self.record_path(record.number)
        try:
            return self.io.try_create_atomic(path, record.to_json(), **extra)
        except IsADirectoryError:   # made since the listing, which would have refused it
            raise self._bad(path, "a directory named like a maintenance lease record",
                            remedy=self._remove) from None

    def new_record(self, number: int, operation: str, duration_ms: int, token: str,
                   start_ms: Optional[int] = None, released: bool = False) -> LeaseRecord:
        now = self.clock()
        return LeaseRecord(number, self.identity, socket.gethostname(), os.getpid(), token,
                           operation, now if start_ms is None else start_ms,
                           now + duration_ms, released, _PROCESS, _MACHINE)

    def prune_below(self, number: int, listed: List[Tuple[int, int]]) -> None:
        """Delete the oldest records of `listed` numbered below `number` (superseded: only
        the highest record decides anything) written more than PRUNE_AGE_MS ago, and beyond
        those all but the newest KEEP_RECENT, through the gate, once PRUNE_AT of them piled
        up (not after every take: post-commit maintenance takes the lease after every commit,
        and each request counts on object stores). Best effort: a record left is harmless.

        Why a count as well as an age: post-commit maintenance takes and releases the lease
        after every commit (two records), and every take lists them all. Kept for PRUNE_AGE_MS
        alone, a table committed to every second listed up to 14,400 records per commit;
        600 commits through one commit object: the last ones took 19 ms, 4x the first, most
        of it that listing.

        Safety rests on the order, not on the age: the records deleted are a prefix of the
        listing (from the lowest number up to the first record below `number` that is young
        and among the newest KEEP_RECENT), deleted in ascending order, stopping at the first
        one not deleted (a failed delete is logged and answered False like an absent file:
        either way, stop).
        So a record is deleted only once every lower one is gone, which a holder's check
        relies on (`HeldLease._check_own_record`): its successor gone means its own record
        is gone. Storage times are not monotonic (an NTP step, another server of an object
        store): filtering them one by one left a younger record n while deleting n+1.

        The age is judged against this taker's clock, which may run hours ahead: it only
        keeps recent records around (a paused holder then finds the record that superseded
        it and names its holder), never proves anything."""
        cutoff = self.clock() - PRUNE_AGE_MS
        # The lowest `surplus` superseded records go whatever their age (a prefix as well).
        surplus = sum(1 for n, _ in listed if n < number) - KEEP_RECENT
        old: List[int] = []
        for i, (n, mtime) in enumerate(listed):   # ascending
            if n >= number or (i >= surplus and mtime >= cutoff):
                break
            old.append(n)
        if len(old) < PRUNE_AT:
            return
        for n in old:
            path = self.record_path(n)
            try:
                deleted = self.io.delete_quietly(path)
            except OSError as e:
                log.info("could not delete the superseded lease record %s (%s); pruning "
                         "stops there", path, e)
                return
            if not deleted:
                log.info("the superseded lease record %s was not deleted (already gone, or "
                         "the delete failed); pruning stops there", path)
                return
            if self.io.deletion_log is not None:
                # Bookkeeping, not what the user's run deleted (the CLI lists that log).
                try:
                    self.io.deletion_log.remove(path)
                except ValueError:
                    pass

    def break_lease(self) -> Optional[LeaseRecord]:
        """Supersede whatever the latest record says by creating the next one as released
        (`paimon-commit lease TABLE --break`). Returns the released record created."""
        self.check_storage()
        for _ in range(10):
            numbers = self.numbers()
            n = numbers[-1] if numbers else 0
            record = self.new_record(n + 1, "lease --break", 0, uuid.uuid4().hex,
                                     released=True)
            if self.create(record):
                log.info("lease of %s broken: %s created as released", self.path,
                         self.record_path(n + 1))
                return record
        raise OSError(f"could not break the lease of {self.path}: the records keep changing")


class HeldLease:
    """A lease this process holds (from maintenance_lease)."""

    def __init__(self, manager: LeaseManager, record: LeaseRecord, duration_ms: int):
        self.manager, self.record, self.duration_ms = manager, record, duration_ms
        self.lost: Optional[str] = None
        self._lock = threading.RLock()
        self._stop = threading.Event()
        self._renewer: Optional[threading.Thread] = None
        self.listed: List[Tuple[int, int]] = []   # the records listed when it was taken
        self._written: Optional[Tuple[LeaseRecord, bytes]] = None   # see _own_bytes
        # The process that took it. A forked child has a copy of this object but not the
        # lease: there it neither passes a check nor releases the parent's lease.
        self.pid = os.getpid()

    @property
    def token(self) -> str:
        return self.record.token

    def start_renewer(self) -> None:
        # in_context: its renewals count for the operation holding the lease (io/metered.py)
        self._renewer = threading.Thread(target=in_context(self._renew_loop), daemon=True,
                                         name=f"paimon-lease-{self.record.number}")
        self._renewer.start()

    def _renew_loop(self) -> None:
        period = max(0.005, self.duration_ms / 4000.0)
        while not self._stop.wait(period):
            try:
                with self._lock:
                    if self.lost is not None:
                        return
                    self._renew_if_due()
            except StopDeleting:
                return   # lost: the operation's next check stops it
            except LeaseRecordError as e:
                with self._lock:
                    self._unusable(e)
                return
            except Exception as e:  # noqa: BLE001 - the operation's own check retries
                log.warning("renewing the maintenance lease of %s failed: %s",
                            self.manager.path, e)

    def check(self) -> None:
        """Before a delete step: StopDeleting(cause="lease") if a newer record than ours
        exists (someone took the lease over, or broke it); renews when due."""
        if os.getpid() != self.pid:
            raise StopDeleting(self._forked(), cause="lease")
        with self._lock:
            if self.lost is not None:
                raise StopDeleting(self.lost, cause="lease")
            m = self.manager
            adopted = None
            while m.record_exists(self.record.number + 1):
                try:
                    newer = m.read(self.record.number + 1, check=False)
                except (FileNotFoundError, LeaseRecordError):
                    newer = None
                if newer is not None and newer.token == self.token:
                    # Our own renewal whose reply was lost: ours if nothing is above it
                    # (its create may have landed late, under a pruned name).
                    self.record = adopted = newer
                    continue
                self._lose(newer)
            if adopted is not None:
                try:
                    self._hold_if_newest(self.record)
                except LeaseRecordError as e:
                    raise StopDeleting(self._unusable(e), cause="lease") from e
            self._check_own_record()
            try:
                self._renew_if_due()
            except LeaseRecordError as e:
                raise StopDeleting(self._unusable(e), cause="lease") from e
            except (OSError, AtomicCreateUnsupportedError) as e:
                # No newer record exists: the lease is ours until its expiry whether or not
                # this renewal landed; past it, nothing proves it, so stop there.
                if self.record.expiry_ms - m.clock() > 0:
                    log.warning("renewing the maintenance lease of %s failed (%s); it holds "
                                "until %s", m.path, e, _shown(self.record.expiry_ms))
                    return
                self.lost = (f"could not renew the maintenance lease of {m.path} before it "
                             f"expired ({e}); stopped before the next delete")
                raise StopDeleting(self.lost, cause="lease") from e

    def _check_own_record(self) -> None:
        """Lost unless our own record is still there, ours (one GET, after the HEAD of the
        next record: that order matters, see below).

        Why: a missing successor proves nothing by itself. Old records are pruned by a later
        taker (only one numbered above ours: `prune_below` deletes below its own number),
        judged by their storage time against *its* clock, and a taker whose clock runs hours
        ahead may take over a live lease and prune its successor away (audit issue25b b1).
        Pruning deletes a prefix of the records in ascending order and stops at the first it
        does not delete, so by the time record n+1 is deleted, record n is gone. And our
        record n was the first ever created under its name: we hold it only after a listing
        made after its create showed no record above it (`_take`, `_hold_if_newest`), and
        the highest record is never pruned, so had the name been used and pruned before, a
        record above it would have existed from then on. So every record above n was
        created after ours, and we write our token under n only once. Hence: n+1 absent at
        the HEAD and n still ours at this later read means n+1 had not been created at the
        HEAD (had it been created and deleted by then, our n would have been deleted before
        it), so no record above ours existed then: nobody else held the lease. (Read in the
        other order, both could be pruned between the two requests.) A GET, not a HEAD: an
        object store's FileIO answers a HEAD of a file it wrote from its cache, and the token
        tells our record from one that another created again under a pruned name (a paused
        holder's release creates the name after its own blindly; a paused take creates the
        name it chose before the pause)."""
        m = self.manager
        number = self.record.number
        path = m.record_path(number)
        try:
            data = m.read_raw(path)
            # Cheap first (a run checks before every delete step, thousands of times): the
            # very bytes we wrote under this number are ours; anything else is parsed.
            if data == self._own_bytes(number):
                return
            own = m.parse(number, path, data, check=False)
        except FileNotFoundError:
            own = None
        except LeaseRecordError as e:
            raise StopDeleting(self._unusable(e), cause="lease") from e
        if own is not None and own.token == self.token:
            return
        what = "gone" if own is None else "another holder's"
        self.lost = (f"lost the maintenance lease of {m.path} (its record "
                     f"{m.io._describe(m.record_path(self.record.number))} is {what}: a later "
                     f"holder took the lease over and pruned the records below its own); "
                     f"stopped before the next delete")
        log.warning("%s", self.lost)
        raise StopDeleting(self.lost, cause="lease")

    def _own_bytes(self, number: int) -> bytes:
        """What we wrote as record `number` (self.record, whose number it is)."""
        cached = self._written
        if cached is None or cached[0] is not self.record:
            cached = self._written = (self.record, self.record.to_json())
        return cached[1]

    def _unusable(self, e: LeaseRecordError) -> str:
        """Lost: a record that cannot be read or followed appeared among the records (a
        renewal lists them, and creates the next). Whether someone took the lease over is
        then unknown, so the holder stops, as one that lost it."""
        self.lost = (f"the maintenance lease of {self.manager.path} cannot be renewed: {e}; "
                     f"stopped before the next delete")
        log.warning("%s", self.lost)
        return self.lost

    def _forked(self) -> str:
        return (f"this process (pid {os.getpid()}) was forked from pid {self.pid}, which "
                f"holds the maintenance lease of {self.manager.path}: a forked child does not "
                f"hold its parent's lease; stopped before the next delete")

    def _lose(self, newer: Optional[LeaseRecord]) -> None:
        who = ("it was broken (lease --break)" if newer is not None and newer.released else
               f"{newer.host} pid {newer.pid} took it over ({newer.operation})"
               if newer is not None else "a newer lease record exists")
        self.lost = (f"lost the maintenance lease of {self.manager.path} ({who}); stopped "
                     f"before the next delete")
        log.warning("%s", self.lost)
        raise StopDeleting(self.lost, cause="lease")

    def _renew_if_due(self) -> None:
        m = self.manager
        if self.record.expiry_ms - m.clock() >= self.duration_ms / 2:
            return
        # One listing per renewal: a newer record than ours anywhere (not only right after
        # ours, which pruning may have removed after a long pause) means it was taken over.
        highest = m.numbers()
        if highest and highest[-1] > self.record.number:
            try:
                newer = m.read(highest[-1], check=False)
            except (FileNotFoundError, LeaseRecordError):
                newer = None
            if newer is None or newer.token != self.token:
                self._lose(newer)
            self.record = newer   # our own renewal whose reply was lost
            return
        new = m.new_record(self.record.number + 1, self.record.operation, self.duration_ms,
                           self.token, start_ms=self.record.start_ms)
        if m.create(new):
            self._hold_if_newest(new)
            return
        try:
            newer = m.read(new.number, check=False)
        except (FileNotFoundError, LeaseRecordError):
            newer = None
        if newer is not None and newer.token == self.token:
            self._hold_if_newest(newer)   # our own renewal whose reply was lost
            return
        self._lose(newer)

    def _hold_if_newest(self, record: LeaseRecord) -> None:
        """Hold `record`, our renewal just created (or found: its reply was lost), only if
        no record numbered above it exists: one listing. Lost otherwise, deleting nothing.

        Why: a renewal lists the records, then creates its own number + 1. Paused between
        the two (SIGSTOP, a VM or GC pause, a slow PUT), it may create a name that a later
        holder used and pruned meanwhile (pruning deletes below the pruner's own record):
        the create succeeds, and the HEAD of the next name and the GET of ours would then
        both pass while that holder holds a higher record (audit issue25c c1). The highest
        record is never pruned, so once a record above ours was created one exists from then
        on: a listing after our create that shows none proves that our create was the first
        of that name, which the check's argument rests on (`_check_own_record`)."""
        m = self.manager
        numbers = m.numbers()
        if numbers and numbers[-1] > record.number:
            try:
                newer = m.read(numbers[-1], check=False)
            except (FileNotFoundError, LeaseRecordError):
                newer = None
            if newer is None or newer.token != self.token:
                self._lose(newer)
            record = newer   # (our own, listed highest)
        self.record = record

    def release(self) -> None:
        if os.getpid() != self.pid:
            # A forked child leaving a block it inherited: the lease is its parent's, which
            # goes on using it. Releasing it here would let a third process in.
            log.info("%s; not releasing it", self._forked().split(";")[0])
            return
        self._stop.set()
        if self._renewer is not None and self._renewer is not threading.current_thread():
            self._renewer.join()
        with _live_lock:   # from here on, a record of ours left behind counts as free
            _live_tokens.discard(self.token)
        with self._lock:
            if self.lost is not None:
                return
            m = self.manager
            try:
                record = replace(self.record, number=self.record.number + 1,
                                 expiry_ms=m.clock(), released=True)
                if not m.create(record):
                    log.warning("the maintenance lease of %s was taken over before it was "
                                "released", m.path)
            except (OSError, AtomicCreateUnsupportedError, LeaseRecordError) as e:
                # It expires on its own. (A 501 to the create, as any I/O error or a record
                # that cannot follow ours: releasing is bookkeeping; after a commit it must
                # not turn a published snapshot into a reported failure.)
                log.warning("could not release the maintenance lease of %s (%s); it "
                            "expires at %s", m.path, e, _shown(self.record.expiry_ms))


# --- policy: who waits, who skips, re-entrancy ---------------------------------------------

_local = threading.local()   # .held: {identity: [HeldLease, depth]} of this thread


def _held() -> Dict[str, List[Any]]:
    held = getattr(_local, "held", None)
    if held is None:
        held = _local.held = {}
    return held


_settings: List[Dict[str, Any]] = []   # lease_settings, innermost last (process-wide)
_settings_lock = threading.Lock()


def _setting(name: str, default: Any) -> Any:
    with _settings_lock:
        for s in reversed(_settings):
            if s.get(name) is not None:
                return s[name]
    return default


@contextlib.contextmanager
def lease_settings(wait_s: Optional[float] = None, duration_ms: Optional[int] = None
                   ) -> Iterator[None]:
    """How maintenance_lease waits for another holder (seconds) and how long it takes the
    lease for (ms), for every operation of this process inside the block that does not say
    (the CLI's --lease-wait and --lease-duration; process-wide, so that `maintain`'s
    threads see them, and maintain_warehouse hands them to its worker processes). Checked
    before any I/O."""
    if wait_s is not None:
        check_lease_wait_s(wait_s)
    if duration_ms is not None:
        check_lease_duration_ms(duration_ms)
    entry = {"wait_s": wait_s, "duration_ms": duration_ms}
    with _settings_lock:
        _settings.append(entry)
    try:
        yield
    finally:
        with _settings_lock:
            _settings.remove(entry)


def current_lease_settings() -> Dict[str, Any]:
    """The lease_settings in force here (`wait_s`, `duration_ms`; None: the default), as
    lease_settings(**them) takes them: for processes this one starts (maintain's workers), which
    do not share this process's settings."""
    wait, duration = _setting("wait_s", None), _setting("duration_ms", None)
    # Plain numbers: they are pickled for the workers (the CLI's are int subclasses).
    return {"wait_s": None if wait is None else float(wait),
            "duration_ms": None if duration is None else int(duration)}


def lease_manager(store) -> LeaseManager:
    """The lease records of a FileStore, honouring its commit.single-writer option."""
    return LeaseManager(store.io, store.path, bool(store.options.get("commit.single-writer")))


def held_here(store) -> Optional[str]:
    """The operation this thread runs under the maintenance lease of `store`'s table, or None
    (maintenance_lease re-enters a lease its thread holds)."""
    joined = _held().get(lease_manager(store).identity)
    if joined is None or joined[0].pid != os.getpid():
        return None
    return joined[0].record.operation


@contextlib.contextmanager
def maintenance_lease(store, operation: str, *, wait_s: Optional[float] = None,
                      duration_ms: Optional[int] = None, skip_if_held: bool = False,
                      manager: Optional[LeaseManager] = None,
                      skipped: Optional[List[str]] = None
                      ) -> Iterator[Optional[HeldLease]]:
    """Hold the table's maintenance lease for the block; nested blocks of this thread on the
    same table join it. While held, every safe point (`io.deletion.checkpoint`) of this
    thread checks it is still ours.

    Args:
        store: the table's FileStore (or anything with io, path, options).
        operation: what runs (shown to those who wait: "expire-snapshots").
        wait_s: how long to wait for another holder (default: lease_settings, else 60 s).
        duration_ms: the lease's duration (default: lease_settings, else 5 min).
        skip_if_held: yield None at once when another holder has it (post-commit
            maintenance: the holder does the work) instead of waiting.
        skipped: with skip_if_held, why it yielded None is appended to it (the lease held,
            a waiter ahead in line, ...), in words.

    Raises:
        LeaseHeldError: another holder kept it past the wait (the message names it).
        StopDeleting: the run was asked to stop (an interrupt) while it waited.
        LeaseRecordError: the latest record is unreadable, another table's, or expires far
            in the future (nothing was deleted).
        AtomicCreateUnsupportedError: the storage cannot create only-if-absent and the table
            does not declare commit.single-writer (before any I/O on pyarrow.fs storage).
    """
    m = manager or lease_manager(store)
    held = _held()
    joined = held.get(m.identity)
    if joined is not None and joined[0].pid == os.getpid():   # (see _after_fork_in_child)
        joined[1] += 1
        try:
            yield joined[0]
        finally:
            joined[1] -= 1
        return
    wait = check_lease_wait_s(wait_s if wait_s is not None else
                              _setting("wait_s", DEFAULT_WAIT_S))
    duration = check_lease_duration_ms(duration_ms if duration_ms is not None else
                                       _setting("duration_ms", DEFAULT_DURATION_MS))
    m.check_storage()
    lease = _take(m, operation, duration, 0.0 if skip_if_held else wait, skip_if_held,
                  skipped)
    if lease is None:
        yield None
        return
    held[m.identity] = [lease, 1]
    try:
        lease.start_renewer()
        # (inside: whatever fails from here on, the lease is released)
        m.prune_below(lease.record.number, lease.listed)
        with guarded(lease.check):
            yield lease
    finally:
        held.pop(m.identity, None)
        lease.release()


def _take(m: LeaseManager, operation: str, duration_ms: int, wait_s: float,
          skip_if_held: bool, skipped: Optional[List[str]] = None) -> Optional[HeldLease]:
    token = uuid.uuid4().hex
    line = _Line(m, operation, token)
    try:
        return _take_in_line(m, operation, duration_ms, wait_s, skip_if_held, token, line,
                             skipped)
    finally:
        line.leave()


class _Line:
    """This take's place in line (its waiter record), from its first wait on."""

    def __init__(self, m: LeaseManager, operation: str, token: str):
        self.m, self.operation, self.token = m, operation, token
        self.name: Optional[str] = None
        self.written = 0.0   # time.monotonic() of the last write
        self._gone: Dict[str, bool] = {}   # waiters ahead, looked at once each

    def gone(self, waiter: Waiter) -> bool:
        """Whether a waiter ahead was left by a killed process of this machine (read once)."""
        if waiter.name not in self._gone:
            self._gone[waiter.name] = self.m.waiter_gone(waiter)
            if self._gone[waiter.name]:
                log.info("the lease waiter record %s was left by a process that is gone; "
                         "not waiting for it", self.m.waiter_path(waiter.name))
        return self._gone[waiter.name]

    def stand(self) -> None:
        """Write the waiter record the first time, rewrite it when due. A failed write only
        costs this waiter its place (logged): waiting goes on as before."""
        if self.name is not None and time.monotonic() - self.written < WAITER_REFRESH_S:
            return
        first = self.name is None
        if first:
            self.name = f"wait-{self.m.clock()}-{self.token}"
        try:
            self.m.write_waiter(self.name, self.operation,
                                int(self.name.split("-")[1]))
            self.written = time.monotonic()
        except OSError as e:
            log.info("could not write the lease waiter record %s (%s); waiting without a "
                     "place in line", self.m.waiter_path(self.name), e)
            self.written = time.monotonic()   # (not retried at every pause)
        if first:
            log.info("waiting in line for the maintenance lease of %s (%s)", self.m.path,
                     self.m.waiter_path(self.name))

    def leave(self) -> None:
        if self.name is not None:
            self.m.remove_waiter(self.name)
            self.name = None


def _take_in_line(m: LeaseManager, operation: str, duration_ms: int, wait_s: float,
                  skip_if_held: bool, token: str, line: _Line,
                  skipped: Optional[List[str]] = None) -> Optional[HeldLease]:
    deadline = time.monotonic() + wait_s
    pause = 0.05
    tried: Optional[int] = None   # the record number of the race just lost
    lost = unseen = 0             # races lost in a row; of them, won by no listed record
    while True:
        listed, latest, waiters = m.listed_with_waiters()
        number = latest.number if latest is not None else 0
        if tried is not None and number < tried:
            # Record `tried` exists (its create failed) but the listing does not show it:
            # retrying would fail the same way for ever. (Listing refuses every name like a
            # record's that is not one; this is the storage disagreeing with itself.)
            unseen += 1
            if unseen >= _UNSEEN_TRIES:
                raise m._bad(m.record_path(tried),
                             "creating this maintenance lease record failed as it exists, "
                             "but listing the lease records does not show it",
                             remedy=m._remove)
            time.sleep(pause)
        tried = None
        free = m.is_free(latest)
        # The line applies to a lease free for every taker (none, released, expired). One
        # free only to this taker (its holder a killed process of this machine, or a record
        # this process left unreleased) is taken at once: a waiter of another machine sees
        # it held until its expiry and would hold the line that long (audit issue25p p3).
        in_line = free and (latest is None or latest.released
                            or latest.expiry_ms < m.clock())
        ahead = [w for w in m.ahead_of(waiters, line.name and token)
                 if not line.gone(w)] if in_line else []
        if free and not ahead:
            n = number + 1
            record = m.new_record(n, operation, duration_ms, token)
            with _live_lock:   # live before it exists: no thread of ours may free it
                _live_tokens.add(token)
            created = False
            try:
                created = m.create(record)
            finally:
                if not created:
                    with _live_lock:
                        _live_tokens.discard(token)
            if created:
                try:
                    after = m.listing()
                except BaseException:
                    with _live_lock:   # (it expires on its own; nobody holds it here)
                        _live_tokens.discard(token)
                    raise
                if not after or after[-1][0] <= n:
                    log.info("took the maintenance lease of %s (%s, record %d)", m.path,
                             operation, n)
                    lease = HeldLease(m, record, duration_ms)
                    lease.listed = after   # what maintenance_lease prunes, once it holds it
                    return lease
                # A record above ours exists: ours re-created a name that a later holder
                # used and pruned while this take was paused between its listing and its
                # create (see _stale). Not taken: someone else holds it or held it since;
                # nothing is deleted, and the next listing shows who.
                with _live_lock:
                    _live_tokens.discard(token)
                log.info("the maintenance lease record %d of %s that this take created is "
                         "stale (record %d exists); not taken", n, m.path, after[-1][0])
            # Lost the race (or created a stale record): read who won. Bounded by the wait
            # like any other try: others taking and releasing it between our reading and our
            # create, race after race, hold it as much as one holder does.
            tried, lost = n, lost + 1
            if lost >= _LOST_RACES and time.monotonic() >= deadline:
                why = (f"the maintenance lease of {m.path} changed hands {lost} times while "
                       f"taking it")
                if skip_if_held:
                    log.info("%s; skipping %s", why, operation)
                    if skipped is not None:
                        skipped.append(f"the maintenance lease changed hands {lost} times "
                                       f"while taking it")
                    return None
                raise LeaseHeldError(f"{why}; rerun later or raise --lease-wait")
            continue
        lost = 0
        # Held, or free with others waiting in line ahead of this take: their turn.
        who = latest.describe(m.path) if not free else _describe_line(m, ahead)
        if skip_if_held:
            log.info("%s; skipping %s (%s)", who, operation,
                     "it does the work" if free else "the holder does the work")
            if skipped is not None:
                skipped.append("the maintenance lease is held by another process" if not free
                               else f"the maintenance lease is free but "
                                    f"{_describe_waiter(m, ahead[0])}")
            return None
        left = deadline - time.monotonic()
        if left <= 0:
            raise LeaseHeldError(f"{who}; rerun later or raise --lease-wait",
                                 None if free else latest)
        line.stand()
        if pause == 0.05:
            log.info("%s; waiting up to %.0f s for it (--lease-wait)", who, left)
        _sleep_unless_stopped(min(left, pause * (0.5 + random.random())))
        pause = min(2.0, pause * 2)


def _describe_line(m: LeaseManager, ahead: List[Waiter]) -> str:
    """`N command(s) wait(s) for the maintenance lease of T ahead of this one (the first
    since T0, .maintenance/wait-...)`."""
    first = ahead[0]
    n = len(ahead)
    return (f"{n} other command{'s' if n > 1 else ''} wait{'' if n > 1 else 's'} for the "
            f"maintenance lease of {m.path} ahead of this one (the first since "
            f"{_shown(first.since_ms)}: {LEASE_DIR}/{first.name})")


def _describe_waiter(m: LeaseManager, waiter: Waiter) -> str:
    """`a waiter is ahead in line: HOST pid PID (OP) since T (.maintenance/wait-...)`: one
    read of its record (a skipped turn only); what it does not say is left out."""
    body = m.read_waiter(waiter.name) or {}
    host, pid, op = body.get("host"), body.get("pid"), body.get("operation")
    who = ""
    if isinstance(host, str) and host:
        who += f"{host[:200]} "
    if isinstance(pid, int) and not isinstance(pid, bool):
        who += f"pid {pid} "
    if isinstance(op, str) and op:
        who += f"({op[:200]}) "
    return (f"a waiter is ahead in line: {who}since {_shown(waiter.since_ms)} "
            f"({LEASE_DIR}/{waiter.name})")


def _sleep_unless_stopped(seconds: float) -> None:
    """Wait for another holder, unless the run is asked to stop (an interrupt): waiting is a
    safe point (nothing was done yet), and a Ctrl-C must not wait out --lease-wait."""
    end = time.monotonic() + seconds
    while True:
        stop = stop_requested()
        if stop is not None:
            raise StopDeleting(stop.reason, stop.cause)
        left = end - time.monotonic()
        if left <= 0:
            return
        time.sleep(min(left, 0.1))


def current_holder(m: LeaseManager) -> Tuple[Optional[LeaseRecord], bool]:
    """(latest record, whether it holds the lease now), for `paimon-commit lease`."""
    latest = m.latest(check=False)
    return latest, not m.is_free(latest)
