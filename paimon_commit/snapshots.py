"""SnapshotManager: snapshot files and the LATEST / EARLIEST hints.

Hints are only hints: LATEST = n is trusted when snapshot-n exists and snapshot-(n+1) does not,
EARLIEST = n when snapshot-n exists and snapshot-(n-1) does not; otherwise the directory is
listed. (pypaimon assumes 1 and probes 300 ids forward when EARLIEST is missing; we don't.)
"""
from __future__ import annotations

import logging
from typing import Iterator, List, Optional

from .errors import CommitFailedError, CorruptMetadataError
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
    def snapshot(self, snapshot_id: int) -> Snapshot:
        """Read one snapshot. FileNotFoundError if absent, CorruptMetadataError if bad."""
        path = self.snapshot_path(snapshot_id)
        s = Snapshot.from_json(self.io.read_bytes(path), path)
        if s.id != snapshot_id:
            raise CorruptMetadataError(path, f"holds id {s.id}, but its name says {snapshot_id}")
        return s

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
        try:
            text = self.io.read_bytes(self.io.join(self.snapshot_dir, name)).decode().strip()
            return int(text)
        except (FileNotFoundError, ValueError, UnicodeDecodeError):
            return None

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

    def latest_snapshot_of_user(self, commit_user: str) -> Optional[Snapshot]:
        latest = self.latest_snapshot_id()
        if latest is None:
            return None
        earliest = self.earliest_snapshot_id() or 1
        for sid in range(latest, earliest - 1, -1):
            s = self.try_snapshot(sid)
            if s is not None and s.commit_user == commit_user:
                return s
        return None

    # --- writing -------------------------------------------------------------------------
    def try_commit(self, snapshot: Snapshot, base_id: Optional[int] = None) -> bool:
        """Publish snapshot-<id> if absent. False = lost the race; exception = unknown.

        With `base_id` (the snapshot the commit was computed from), also False if that base
        is gone: expiration deletes snapshot files in ascending order, so a vanished base is
        the only way `id` could be a name that was published and expired meanwhile, and
        creating it again would put the commit outside the lineage. The check runs once the
        file is written and synced, right before the link; if the base is gone right after
        the link, link times tell a legitimate publish (every newer snapshot got its name
        later) from a re-created id (some newer snapshot is older), which is removed again:
        nothing can have been built on it."""
        path = self.snapshot_path(snapshot.id)
        check = None if base_id is None else (lambda: self.snapshot_exists(base_id))
        if not self.io.try_create_atomic(path, snapshot.to_json(), precondition=check):
            return False
        if base_id is None or self.snapshot_exists(base_id):
            return True
        if not self._recreated(snapshot.id, path):
            return True
        log.warning("snapshot %d was published and expired while this commit published it "
                    "again; removing the copy and retrying", snapshot.id)
        if not self.io.delete_quietly(path) and self.io.exists(path):
            raise CommitFailedError(
                f"{path} re-creates a snapshot id that was already published and expired, and "
                f"could not be removed; delete it by hand (newer snapshots exist)")
        return False

    def _recreated(self, snapshot_id: int, path: str) -> bool:
        mine = self.io.link_time_ns(path)
        if mine is None:
            log.warning("snapshot %d was expired while snapshot %d was being published on "
                        "top of it; this storage cannot tell whether %d is in the lineage",
                        snapshot_id - 1, snapshot_id, snapshot_id)
            return False
        for sid in self.list_snapshot_ids():
            if sid > snapshot_id:
                t = self.io.link_time_ns(self.snapshot_path(sid))
                if t is not None and t < mine:
                    return True
        return False

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

    def commit_changelog(self, changelog_id: int, data: bytes) -> None:
        """Write changelog-<id> with the expired snapshot's bytes (a rerun after a crash
        finds it written already), then move LATEST to it. Raises if it cannot be written:
        the snapshot file must then stay."""
        self.io.mkdirs(self.snapshot_dir)
        path = self.snapshot_path(changelog_id)
        if not self.io.try_create_atomic(path, data) and self.io.read_bytes(path) != data:
            raise CommitFailedError(f"{path} exists with other contents; the snapshot it "
                                    f"would keep is left in place")
        self.commit_latest_hint(changelog_id)
