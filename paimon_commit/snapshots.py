"""SnapshotManager: snapshot files and the LATEST / EARLIEST hints.

Hints are only hints: LATEST = n is trusted when snapshot-n exists and snapshot-(n+1) does not,
EARLIEST = n when snapshot-n exists and snapshot-(n-1) does not; otherwise the directory is
listed. (pypaimon assumes 1 and probes 300 ids forward when EARLIEST is missing; we don't.)
"""
from __future__ import annotations

import logging
from typing import Callable, Iterator, List, Optional

from .errors import CommitFailedError, CorruptMetadataError, PublishOutcomeUnknownError
from .io import FileIO
from .format import paths as P
from .format.snapshot import Snapshot

log = logging.getLogger(__name__)

__all__ = ["SnapshotManager", "ChangelogManager"]

LATEST = "LATEST"
EARLIEST = "EARLIEST"


class SnapshotManager:
    _DIR = P.SNAPSHOT_DIR
    _file_name = staticmethod(P.snapshot_file_name)
    _parse_id = staticmethod(P.parse_snapshot_id)

    def __init__(self, io: FileIO, root: str):
        self.io = io
        self.root = root
        self.snapshot_dir = io.join(root, self._DIR)

    def snapshot_path(self, snapshot_id: int) -> str:
        return self.io.join(self.snapshot_dir, self._file_name(snapshot_id))

    def snapshot_exists(self, snapshot_id: int) -> bool:
        return self.io.exists(self.snapshot_path(snapshot_id))

    # --- reading -------------------------------------------------------------------------
    @staticmethod
    def parse(data: bytes, path: str, snapshot_id: int) -> Snapshot:
        """The one parse-and-verify of a snapshot (or changelog) file's bytes: every reader of
        snapshot files goes through it. CorruptMetadataError if the JSON is bad or holds
        another id than its name."""
        s = Snapshot.from_json(data, path)
        if s.id != snapshot_id:
            raise CorruptMetadataError(path, f"holds id {s.id}, but its name says {snapshot_id}")
        return s

    def snapshot(self, snapshot_id: int) -> Snapshot:
        """Read one snapshot. FileNotFoundError if absent, CorruptMetadataError if bad."""
        path = self.snapshot_path(snapshot_id)
        return self.parse(self.io.read_bytes(path), path, snapshot_id)

    def try_snapshot(self, snapshot_id: int) -> Optional[Snapshot]:
        try:
            return self.snapshot(snapshot_id)
        except FileNotFoundError:
            return None

    def list_snapshot_ids(self) -> List[int]:
        ids = []
        for name in self.io.list_names(self.snapshot_dir):
            sid = self._parse_id(name)
            if sid is not None:
                ids.append(sid)
        ids.sort()
        return ids

    def _read_hint(self, name: str) -> Optional[int]:
        """The id a LATEST / EARLIEST hint holds; None if absent or not a snapshot id (a hint
        is advisory: every use verifies it). An id past Java's long range is none either:
        taken as one, it made every commit and read raise (audit issue25x x4)."""
        try:
            text = self.io.read_bytes(self.io.join(self.snapshot_dir, name)).decode().strip()
            value = int(text)
        except (FileNotFoundError, ValueError, UnicodeDecodeError):
            return None
        return value if 0 < value < (1 << 63) - 1 else None

    def latest_snapshot_id(self) -> Optional[int]:
        hint = self._read_hint(LATEST)
        if hint is not None and hint > 0 and self.snapshot_exists(hint) \
                and not self.snapshot_exists(hint + 1):
            return hint
        ids = self.list_snapshot_ids()
        return ids[-1] if ids else None

    def earliest_snapshot_id(self) -> Optional[int]:
        hint = self._read_hint(EARLIEST)
        if hint is not None and hint > 0 and self.snapshot_exists(hint) \
                and not self.snapshot_exists(hint - 1):
            return hint
        if self.snapshot_exists(1):
            return 1   # nothing was ever expired (pypaimon never writes EARLIEST)
        ids = self.list_snapshot_ids()
        return ids[0] if ids else None

    def latest_snapshot(self) -> Optional[Snapshot]:
        # A concurrent expiration cannot remove the latest snapshot, but a rollback can:
        # re-resolve a few times instead of failing on a vanished file.
        for _ in range(5):
            sid = self.latest_snapshot_id()
            if sid is None:
                return None
            s = self.try_snapshot(sid)
            if s is not None:
                return s
        raise FileNotFoundError(f"latest snapshot under {self.snapshot_dir} keeps vanishing")

    def snapshots(self) -> Iterator[Snapshot]:
        """Every snapshot on disk, ascending; ones deleted while listing are skipped."""
        for sid in self.list_snapshot_ids():
            s = self.try_snapshot(sid)
            if s is not None:
                yield s

    def latest_snapshot_of_user(self, commit_user: str,
                                accept: Optional[Callable[[Snapshot], bool]] = None
                                ) -> Optional[Snapshot]:
        """The newest retained snapshot of `commit_user` (for which `accept` holds)."""
        latest = self.latest_snapshot_id()
        if latest is None:
            return None
        earliest = self.earliest_snapshot_id() or 1
        for sid in range(latest, earliest - 1, -1):
            s = self.try_snapshot(sid)
            if s is not None and s.commit_user == commit_user and \
                    (accept is None or accept(s)):
                return s
        return None

    # --- writing -------------------------------------------------------------------------
    def try_commit(self, snapshot: Snapshot, base_id: Optional[int] = None,
                   built_on: Optional[Callable[[Snapshot], bool]] = None,
                   single_writer: bool = False,
                   base: Optional[Snapshot] = None) -> bool:
        """Publish snapshot-<id> if absent. True = published and in the lineage; False = not
        published (lost the race, or removed again, see below); OSError = outcome unknown;
        PublishOutcomeUnknownError = published, but whether later snapshots build on it
        cannot be decided.

        With `base_id` (the snapshot the commit was computed from), also False if that base
        is gone before the create: expiration deletes snapshot files in ascending order, so a
        vanished base is the only way `id` could be a name that was published and expired
        meanwhile, and creating it again would put the commit outside the lineage. The check
        runs once the file is written and synced, right before the create. If the base is
        gone right after the create, `in_lineage` decides from content whether ours is the
        snapshot later ones build on (a legitimate publish whose base was then expired) or
        a re-created id (removed again: expiring it would delete files its delta DELETEs).
        `built_on(next)` tells whether snapshot id+1 was computed from ours.

        `base` (the base snapshot as the commit read it) makes the check one of identity, not
        of name: after a rollback the id can hold another snapshot, and a commit computed from
        the old one must not be published on top of the new one. `base_id` 0 is the first
        commit of a table: `snapshot-1` is created only if no snapshot is listed. Expiration
        never deletes the latest snapshot and rollback keeps its target, so once anything was
        published a snapshot file exists at every instant: an empty listing proves nothing was
        ever published (snapshot 1 could otherwise be an expired id re-created). A `base_id`
        of None publishes without a check (rollback restoring a tagged snapshot)."""
        path = self.snapshot_path(snapshot.id)
        data = snapshot.to_json()
        check = self._base_check(base_id, base)
        # Passed only when set, so that storages written for the three-argument form work.
        extra = {"single_writer": True} if single_writer else {}
        if not self.io.try_create_atomic(path, data, precondition=check, **extra):
            return False
        return self.confirm_published(snapshot.id, data, base_id, built_on, base)

    def _base_check(self, base_id: Optional[int], base: Optional[Snapshot]
                    ) -> Optional[Callable[[], bool]]:
        """The precondition of a create computed from `base_id` (see try_commit)."""
        if base_id is None:
            return None
        if base_id == 0:
            return lambda: not self.list_snapshot_ids()
        if base is not None:
            # Content, not name: the same id after a rollback is another snapshot.
            return lambda: self.try_snapshot(base_id) == base
        return lambda: self.snapshot_exists(base_id)

    def confirm_published(self, snapshot_id: int, data: bytes, base_id: Optional[int],
                          built_on: Optional[Callable[[Snapshot], bool]],
                          base: Optional[Snapshot] = None) -> bool:
        """Our snapshot `snapshot_id` (holding `data`, computed from `base_id`) exists: True if
        it is in the lineage; False if it re-created an expired id and was removed again;
        PublishOutcomeUnknownError if that cannot be decided (see try_commit)."""
        path = self.snapshot_path(snapshot_id)
        if base_id is None:
            return True
        if base_id != 0:
            check = self._base_check(base_id, base)
            if check is not None and check():
                return True
        # The base is gone or is another snapshot now, or this is a first commit: whether
        # ours is the snapshot later ones build on is decided from content.
        verdict = self.in_lineage(snapshot_id, data, built_on)
        if verdict is None:
            raise PublishOutcomeUnknownError(
                f"snapshot {snapshot_id} was published at {path} while its base snapshot "
                f"{base_id} was expired, and the snapshots that would tell whether later ones "
                f"build on it are gone too: the commit may or may not be in the table. Every "
                f"file it names is kept; check whether its rows are there before committing "
                f"it again")
        if verdict:
            return True
        log.warning("snapshot %d was published and expired while this commit published it "
                    "again; removing the copy and retrying", snapshot_id)
        if not self.io.delete_quietly(path) and self.io.exists(path):
            raise CommitFailedError(
                f"{path} re-creates a snapshot id that was already published and expired, and "
                f"could not be removed; delete it by hand (newer snapshots exist)")
        return False

    def in_lineage(self, snapshot_id: int, data: bytes,
                   built_on: Optional[Callable[[Snapshot], bool]]) -> Optional[bool]:
        """Whether snapshot `snapshot_id`, holding `data` and published by us, is the one
        later snapshots build on; None if that cannot be decided. Used when its base was
        expired around the publish (on every storage: file times cannot tell, a link(2)
        changes the inode's ctime again when the temp name is unlinked).

        Expiration deletes snapshot files in ascending order and never the latest one:
        - nothing newer exists: ours is the latest, so in the lineage (had an earlier
          snapshot of this id been expired, something newer would have to be retained);
        - id+1 is gone while newer ones and ours exist: id+1 could only be expired after
          id, so ours came after that expiration, a re-created id;
        - otherwise id+1 decides: was it computed from ours (`built_on`)?"""
        path = self.snapshot_path(snapshot_id)
        if not any(i > snapshot_id for i in self.list_snapshot_ids()):
            return True
        nxt = self.try_snapshot(snapshot_id + 1)
        if nxt is None:
            try:
                ours = self.io.read_bytes(path) == data
            except FileNotFoundError:
                return None   # ours was expired too: nothing left to compare
            return False if ours else None
        if built_on is None:
            return None
        try:
            return built_on(nxt)
        except FileNotFoundError as e:   # id+1 is being expired: its manifests go first
            log.warning("cannot tell whether snapshot %d builds on snapshot %d: %s",
                        snapshot_id + 1, snapshot_id, e)
            return None

    def commit_latest_hint(self, snapshot_id: int) -> None:
        self._write_hint(LATEST, snapshot_id)

    def commit_earliest_hint(self, snapshot_id: int) -> None:
        self._write_hint(EARLIEST, snapshot_id)

    def _write_hint(self, name: str, snapshot_id: int) -> None:
        try:
            self.io.overwrite_atomic(self.io.join(self.snapshot_dir, name),
                                     str(snapshot_id).encode())
        except OSError as e:  # a hint is best effort: readers verify it anyway
            log.warning("could not write %s hint = %d: %s", name, snapshot_id, e)


class ChangelogManager(SnapshotManager):
    """Long-lived changelogs, `changelog/changelog-<id>` with their own LATEST / EARLIEST
    hints: when changelog is retained longer than snapshots, an expired snapshot's JSON lives
    on here so that streaming readers can still read its changes (Paimon's format: the
    snapshot's JSON, unchanged). The snapshot-named methods work on changelogs."""
    _DIR = P.CHANGELOG_DIR
    _file_name = staticmethod(P.changelog_file_name)
    _parse_id = staticmethod(P.parse_changelog_id)

    @staticmethod
    def _same_snapshot(a: bytes, b: bytes, path: str) -> bool:
        """Whether two snapshot JSONs are one snapshot written in two layouts (Paimon Java
        writes `"id" : 2`, we `"id": 2`): a rollback that restored an expired snapshot from a
        tag left its changelog, written from the other bytes, failing every later expiration
        (audit issue25ab ab3)."""
        try:
            return Snapshot.from_json(a, path) == Snapshot.from_json(b, path)
        except (ValueError, CorruptMetadataError):
            return False

    def commit_changelog(self, changelog_id: int, data: bytes) -> None:
        """Write changelog-<id> with the expired snapshot's bytes (a rerun after a crash
        finds it written already), then move LATEST to it. Raises if it cannot be written:
        the snapshot file must then stay."""
        self.io.mkdirs(self.snapshot_dir)
        path = self.snapshot_path(changelog_id)
        # Every expirer writes the same bytes (the snapshot's) and reads them back below, so
        # check-then-create is safe where the store rejects conditional creates.
        if not self.io.try_create_atomic(path, data, single_writer=True):
            there = self.io.read_bytes(path)
            if there != data and not self._same_snapshot(there, data, path):
                raise CommitFailedError(f"{path} exists with other contents; the snapshot it "
                                        f"would keep is left in place")
        self.commit_latest_hint(changelog_id)
