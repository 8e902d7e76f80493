"""What this process has committed: the memory that makes a repeated commit call a no-op.

A retried notebook cell or a caller that retries on an error hands the same CommitMessages to
`commit()` again. Checking every append against the live files of the table would make each
commit read all of them (measured: twice the commit latency after 400 commits, growing), so
the files this process committed are remembered instead, per table and commit user, and only a
commit that names one of them is checked further (see FileStoreCommit._screen). A duplicate from
another process is not seen here; filter_and_commit, overwrites and commits that delete files
check the table itself.
"""
from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, Optional, Tuple

from ..errors import CommitConflictError
from ..format.manifest import FileKind, ManifestEntry
from ..format.snapshot import BATCH_COMMIT_IDENTIFIER
from ..manifests import live_entries

log = logging.getLogger(__name__)

__all__ = ["Committed", "CommitRecord", "RECORD", "RepeatScreen"]

# The most recent files remembered per process (a few tens of MB at most); older ones are only
# caught by the table checks.
CAPACITY = 50_000


@dataclass(frozen=True)
class Committed:
    """One data file handed to a commit call of this process."""
    commit_user: str
    identifier: int
    kind: str
    snapshot_id: Optional[int]   # None: the call raised; whether it published is unknown


class CommitRecord:
    """Thread-safe, bounded map (table root, file identity) -> Committed, plus the last
    identifier each commit user published per table."""

    def __init__(self, capacity: int = CAPACITY):
        self.capacity = capacity
        # value: (what was committed, the file's creation time or None)
        self._files: "OrderedDict[Tuple[str, Any], Tuple[Committed, Optional[int]]]" = \
            OrderedDict()
        self._last: Dict[Tuple[str, str], Tuple[int, int]] = {}
        # root -> newest creation time among the files evicted under it (inf: one had none).
        # A file created after it was never evicted, so the record's silence about it is
        # reliable; an older one may have been committed and forgotten.
        self._horizon: Dict[str, float] = {}
        self._lock = threading.Lock()

    def lookup(self, root: str, keys: Iterable[Any]) -> Dict[Any, Committed]:
        with self._lock:
            out = {}
            for k in keys:
                c = self._files.get((root, k))
                if c is not None:
                    out[k] = c[0]
            return out

    def record(self, root: str, keys: Iterable[Any], committed: Committed,
               replace: bool = True, times: Optional[Iterable[Optional[int]]] = None) -> None:
        """Remember the files (`times`: their creation times, in the order of `keys`);
        `replace=False` keeps what is already known about a file."""
        keys = list(keys)
        times = list(times) if times is not None else [None] * len(keys)
        with self._lock:
            for k, t in zip(keys, times):
                if not replace and (root, k) in self._files:
                    continue
                self._files[(root, k)] = (committed, t)
                self._files.move_to_end((root, k))
            while len(self._files) > self.capacity:
                (r, _), (_, t) = self._files.popitem(last=False)
                self._horizon[r] = max(self._horizon.get(r, float("-inf")),
                                       float("inf") if t is None else t)

    def maybe_forgotten(self, root: str, creation_time: Optional[int]) -> bool:
        """Whether a file of `root` created at `creation_time` may have been committed by
        this process and evicted since (the record is bounded)."""
        with self._lock:
            h = self._horizon.get(root)
        return h is not None and (creation_time is None or creation_time <= h)

    def note_identifier(self, root: str, commit_user: str, identifier: int,
                        snapshot_id: int) -> None:
        """A streaming identifier (not the batch one) this user published as snapshot_id."""
        with self._lock:
            last = self._last.get((root, commit_user))
            if last is None or identifier >= last[0]:
                self._last[(root, commit_user)] = (identifier, snapshot_id)

    def forget(self, root: str, keys: Iterable[Any]) -> None:
        with self._lock:
            for k in keys:
                self._files.pop((root, k), None)

    def last_identifier(self, root: str, commit_user: str) -> Optional[Tuple[int, int]]:
        """(identifier, snapshot id) of the highest identifier this user published here."""
        with self._lock:
            return self._last.get((root, commit_user))

    def forget_user(self, root: str, commit_user: str) -> None:
        with self._lock:
            self._last.pop((root, commit_user), None)


RECORD = CommitRecord()


class RepeatScreen:
    """What a commit call of `commit_user` does with ADDs this process may have committed
    before: nothing (a repeat), refuse, or check the table's live files."""

    def __init__(self, store, commit_user: str):
        self.store = store
        self.commit_user = commit_user

    def screen(self, adds: List[ManifestEntry], identifier: int, kind: str
                ) -> Tuple[Optional[int], bool]:
        """Decide from memory what to do with ADDs this process may have committed before.

        Returns (snapshot id, False) when this commit user already committed exactly these
        files with this identifier and kind: the call is a repeat and publishes nothing.
        Raises CommitConflictError when this commit user committed some of them otherwise,
        or when a streaming identifier does not increase (Paimon's filterCommitted treats
        identifiers up to the user's last one as committed, so a restart would drop it).
        Otherwise returns (None, check_table): True when a file was handed to another commit
        user or to a call that raised, so the commit must check the live files of the table
        (an ADD of a live file is refused there, as Paimon's conflict check does)."""
        if not adds:
            return None, False
        root, user = self.store.root, self.commit_user
        hits = RECORD.lookup(root, [e.identifier for e in adds])
        check_table = False
        mine: List[Tuple[ManifestEntry, Committed]] = []
        valid: Dict[int, bool] = {}
        unknown = 0   # files of an earlier call like this one that raised
        forgotten = 0   # files the bounded record may have committed and evicted
        for e in adds:
            c = hits.get(e.identifier)
            if c is None:
                if RECORD.maybe_forgotten(root, e.file.creation_time):
                    forgotten += 1
                    check_table = True
                continue
            if c.commit_user != user or c.snapshot_id is None:
                check_table = True
                unknown += (c.commit_user, c.identifier, c.kind, c.snapshot_id) == \
                    (user, identifier, kind, None)
                continue
            if c.snapshot_id not in valid:
                same = [a for a in adds if hits.get(a.identifier) == c]
                valid[c.snapshot_id] = self.still_committed(c.snapshot_id, user,
                                                             c.identifier, c.kind, same)
            if valid[c.snapshot_id]:
                mine.append((e, c))
            else:   # rolled back since: not committed any more
                RECORD.forget(root, [e.identifier])
                check_table = True
        if mine:
            first = mine[0][1]
            if len(mine) == len(adds) and first.identifier == identifier \
                    and first.kind == kind and all(c == first for _, c in mine):
                log.info("commit %s/%s was already published as snapshot %d; not again",
                         user, _ident_str(identifier), first.snapshot_id)
                return first.snapshot_id, False
            e, c = mine[0]
            raise CommitConflictError(
                f"data file {self.store.data_file_path(e)} was already committed by commit "
                f"user {user!r} ({_ident_str(c.identifier)}, {c.kind} snapshot "
                f"{c.snapshot_id}); refusing to commit it again ({_ident_str(identifier)}, "
                f"{kind}): its rows would be read twice")
        if identifier != BATCH_COMMIT_IDENTIFIER:
            last = RECORD.last_identifier(root, user)
            if last is not None and identifier <= last[0]:
                if self.still_committed(last[1], user, last[0]):
                    raise CommitConflictError(
                        f"commit identifier {identifier} of commit user {user!r} is not above "
                        f"{last[0]}, which it committed to {root} as snapshot {last[1]}: "
                        f"identifiers must increase (filter_committed treats every identifier "
                        f"up to {last[0]} as committed)")
                RECORD.forget_user(root, user)   # rolled back since
        if unknown == len(adds) or forgotten == len(adds):
            # A call that raised, or one the record forgot: the table tells whether this
            # user published exactly these files with this identifier (a repeat, as if
            # remembered); otherwise the table check refuses an ADD of a live file.
            done = self._published_by_raised_call(adds, identifier, kind)
            if done is not None:
                RECORD.record(root, [e.identifier for e in adds],
                              Committed(user, identifier, kind, done),
                              times=[e.file.creation_time for e in adds])
                log.info("commit %s/%s was published as snapshot %d by an earlier call; "
                         "not again", user, _ident_str(identifier), done)
                return done, False
        return None, check_table

    def _published_by_raised_call(self, adds: List[ManifestEntry], identifier: int,
                                  kind: str) -> Optional[int]:
        """The snapshot an earlier call with these ADDs published before it raised (e.g.
        interrupted right after the publish), or None. Only on that rare path: it reads the
        live files of the partitions touched, and walks back to the snapshot of this commit
        user, identifier and kind whose delta adds them."""
        store = self.store
        latest = store.snapshots.latest_snapshot()
        if latest is None or not self._all_live(adds):
            return None
        first = adds[0].identifier
        earliest = store.snapshots.earliest_snapshot_id() or 1
        for sid in range(latest.id, earliest - 1, -1):
            s = store.snapshots.try_snapshot(sid)
            if s is None or (s.commit_user, s.commit_identifier, s.commit_kind) != \
                    (self.commit_user, identifier, kind):
                continue
            if any(e.kind == FileKind.ADD and e.identifier == first
                   for e in store.delta_entries(s)):
                return sid
        return None

    def still_committed(self, snapshot_id: int, user: str, identifier: int,
                         kind: Optional[str] = None,
                         adds: Optional[List[ManifestEntry]] = None) -> bool:
        """Whether snapshot `snapshot_id` that this process published is still in the table:
        a rollback removes it, and the id may then name another commit.

        When it is gone and older than the earliest, ids cannot tell an expiration (its
        changes stay) from a rollback whose id was re-used and expired since (its changes are
        gone). With `adds` (the files that commit added): if they are all live in the latest
        snapshot, it is committed; if not, a compaction or an overwrite may have replaced them
        (the rows are still there, in other files) as well as a rollback (they are gone), and
        the table cannot tell which: CommitConflictError, never a second copy. Without
        `adds` (the identifier check, which only refuses), an expired id counts as
        committed."""
        sm = self.store.snapshots
        s = sm.try_snapshot(snapshot_id)
        if s is not None:
            return (s.commit_user, s.commit_identifier) == (user, identifier) and \
                kind in (None, s.commit_kind)
        earliest = sm.earliest_snapshot_id()
        if earliest is None or snapshot_id >= earliest:
            return False
        if adds is None or self._all_live(adds):
            return True
        raise CommitConflictError(
            f"commit user {user!r} committed these files ({_ident_str(identifier)}) to "
            f"{self.store.root} as snapshot {snapshot_id}, which has expired since, and they "
            f"are no longer all live (e.g. {self.store.data_file_path(adds[0])}): a "
            f"compaction or an overwrite replaced them (their rows are still in the table) "
            f"or a rollback removed them, which the table cannot tell apart; refusing to "
            f"commit them again, as their rows could be read twice. Write the rows again with "
            f"a new writer if they are missing")

    def _all_live(self, adds: List[ManifestEntry]) -> bool:
        """Whether every file of `adds` is live in the latest snapshot (reads the live files
        of the partitions they belong to)."""
        store = self.store
        latest = store.snapshots.latest_snapshot()
        if latest is None:
            return False
        changed = {e.partition for e in adds}
        mio = store.manifests
        live = {e.identifier for e in live_entries(mio.read_entries(
            mio.read_list(latest.base_manifest_list) + mio.read_list(latest.delta_manifest_list)))
            if e.partition in changed}
        return all(e.identifier in live for e in adds)


def _ident_str(identifier: int) -> str:
    return "a batch commit" if identifier == BATCH_COMMIT_IDENTIFIER \
        else f"identifier {identifier}"
