"""TagManager (`tag/tag-<name>`) and ConsumerManager (`consumer/consumer-<id>`)."""
from __future__ import annotations

import logging
import re
from typing import List, Optional

from .errors import AtomicCreateUnsupportedError
from .io import FileIO
from .io.deletion import StopDeleting, checkpoint
from .format import paths as P
from .format.snapshot import Consumer, Tag

log = logging.getLogger(__name__)

__all__ = ["TagManager", "ConsumerManager", "ConsumerExpireResult", "validate_tag_name"]

# Not in tag/: pypaimon lists every file there as a tag. Paimon's own tools never enter an
# unknown directory at the table root.
_MARKER_DIR = ".tag-deletions"
_BAD_TAG = re.compile(r"[/\\\x00-\x1f]")


def validate_tag_name(name: str) -> str:
    if not isinstance(name, str) or not name.strip() or name.startswith(".") \
            or _BAD_TAG.search(name) or name in (".", ".."):
        raise ValueError(f"invalid tag name {name!r}: it must be non-empty, not start with '.', "
                         f"and contain no '/', '\\' or control characters")
    if name.isdigit():
        # Paimon resolves numeric time-travel arguments as snapshot ids, never as tags.
        raise ValueError(f"invalid tag name {name!r}: a tag name cannot be all digits")
    return name


class TagManager:
    def __init__(self, io: FileIO, root: str, single_writer: bool = False):
        self.io = io
        # commit.single-writer: on a storage that cannot create atomically (a store answering
        # 501 to a conditional PUT), the user declared nobody else writes this table.
        self._single_writer = single_writer
        self._create = {"single_writer": True} if single_writer else {}
        self.tag_dir = io.join(root, "tag")
        self.marker_dir = io.join(root, _MARKER_DIR)

    def tag_path(self, name: str) -> str:
        return self.io.join(self.tag_dir, P.tag_file_name(name))

    def tag_names(self) -> List[str]:
        names = [P.parse_tag_name(n) for n in self.io.list_names(self.tag_dir)]
        return sorted(n for n in names if n is not None)

    def tag(self, name: str) -> Tag:
        path = self.tag_path(name)
        return Tag.from_json(name, self.io.read_bytes(path), path)

    def try_tag(self, name: str) -> Optional[Tag]:
        try:
            return self.tag(name)
        except FileNotFoundError:
            return None

    def tags(self) -> List[Tag]:
        """All tags sorted by snapshot id. A tag file that cannot be parsed raises: callers
        that delete must not proceed without knowing what every tag protects."""
        out = []
        for name in self.tag_names():
            t = self.try_tag(name)
            if t is not None:
                out.append(t)
        out.sort(key=lambda t: (t.id, t.name))
        return out

    def exists(self, name: str) -> bool:
        return self.io.exists(self.tag_path(name))

    def create(self, tag: Tag) -> bool:
        """Create tag/tag-<name>; False if a tag of that name exists.

        Raises:
            ValueError: the deletion of an earlier tag of that name is unfinished. Its marker
                is the only record of the files that tag alone kept: a new tag of the name
                would hide it from the runs that finish deletions, and deleting the new tag
                would overwrite it (those files would stay forever). delete_tag(name)
                finishes it.
        """
        if self.has_deletion_marker(tag.name):
            raise ValueError(f"cannot create tag {tag.name!r}: an earlier deletion of a tag "
                             f"with this name is unfinished; run delete_tag({tag.name!r}) first")
        self._check_atomic_create(f"tag {tag.name!r} was not created")
        self.io.mkdirs(self.tag_dir)
        return self.io.try_create_atomic(self.tag_path(tag.name), tag.to_json(), **self._create)

    def _check_atomic_create(self, what: str) -> None:
        """As a commit does before publishing: a storage that cannot create a file only if
        it is absent (pyarrow.fs, HDFS: check-then-move replaces an existing target; a store
        ignoring conditional PUTs) would let two clients both create one tag (or deletion
        marker), one silently replacing the other. Refused unless commit.single-writer
        declares that one process writes this table."""
        if self._single_writer:
            return
        try:
            self.io.check_atomic_create()
        except AtomicCreateUnsupportedError as e:
            raise AtomicCreateUnsupportedError(
                f"{what}: this storage cannot create a file only if it is absent, so a second "
                f"client creating the same name would silently replace it; declare "
                f"'commit.single-writer' = 'true' in the table options if only one process "
                f"ever writes this table, tags included ({e})") from None

    def delete_tag_file(self, name: str) -> bool:
        """Delete one tag file through the gate (the tag's data is delete_tag's business)."""
        return self.io.delete_quietly(self.tag_path(name))

    # A tag whose snapshot expired owns files nothing else references. Once its tag file is
    # gone, the only record of those files would be gone too, so delete_tag first writes a
    # marker holding the tag's JSON: an interrupted deletion can be finished from it.
    def deletion_marker_path(self, name: str) -> str:
        return self.io.join(self.marker_dir, P.tag_file_name(name))

    def write_deletion_marker(self, tag: Tag) -> None:
        path = self.deletion_marker_path(tag.name)
        data = tag.to_json()
        self._check_atomic_create(f"tag {tag.name!r} was not deleted")
        self.io.mkdirs(self.marker_dir)
        if self.io.try_create_atomic(path, data, **self._create):
            return
        if self.io.read_bytes(path) != data:
            # A marker from an earlier tag of the same name (created by another client).
            self.io.delete_quietly(path)
            if not self.io.try_create_atomic(path, data, **self._create):
                raise OSError(f"could not write tag deletion marker {path}")

    def has_deletion_marker(self, name: str) -> bool:
        return self.io.exists(self.deletion_marker_path(name))

    def deletion_marker(self, name: str) -> Optional[Tag]:
        path = self.deletion_marker_path(name)
        try:
            return Tag.from_json(name, self.io.read_bytes(path), path)
        except FileNotFoundError:
            return None

    def delete_deletion_marker(self, name: str) -> None:
        self.io.delete_quietly(self.deletion_marker_path(name))

    def pending_deletions(self) -> List[str]:
        """Names of tags whose deletion was interrupted; delete_tag(name) finishes each."""
        names = (P.parse_tag_name(n) for n in self.io.list_names(self.marker_dir))
        return sorted(n for n in names if n is not None)


class ConsumerExpireResult(list):
    """The ids of the consumers an expiration removed (a list, as it always was), and how the
    run ended: `complete` False when a safe point stopped it (a lost maintenance lease, an
    interrupt: `stopped_by`, `message`); `kept`: stale consumers kept because their reader
    wrote them again after the listing."""

    def __init__(self, *a):
        super().__init__(*a)
        self.complete: bool = True
        self.stopped_by: Optional[str] = None
        self.message: Optional[str] = None
        self.kept: List[str] = []

    def to_dict(self) -> dict:
        return {"expired": list(self), "kept": self.kept, "complete": self.complete,
                "stopped_by": self.stopped_by, "message": self.message}


class ConsumerManager:
    def __init__(self, io: FileIO, root: str):
        self.io = io
        self.consumer_dir = io.join(root, "consumer")

    def _statuses(self):
        for st in self.io.list_status(self.consumer_dir):
            cid = P.parse_consumer_id(st.name)
            if cid is not None and not st.is_dir:
                yield cid, st

    def consumers(self) -> List[Consumer]:
        """Every consumer. An unreadable consumer file raises: its reader's position is
        unknown, so nothing it might still need may be expired (Paimon skips it instead)."""
        out = []
        for cid, st in self._statuses():
            try:
                out.append(Consumer.from_json(cid, self.io.read_bytes(st.path), st.path,
                                              st.mtime_ms))
            except FileNotFoundError:
                continue
        return out

    def min_next_snapshot(self) -> Optional[int]:
        ids = [c.next_snapshot for c in self.consumers()]
        return min(ids) if ids else None

    def expire(self, older_than_ms: int, dry_run: bool = False, lease=None
               ) -> "ConsumerExpireResult":
        """Remove consumers whose file was last modified before `older_than_ms`, readable or
        not (a damaged file of a dead reader must not block expiration forever). Under the
        table's maintenance lease (`lease`: a LeaseManager; lease.py), checked before each
        removal; a dry run takes none. A lost lease (or an interrupt) stops it there: the
        result (a list of the consumers removed) then says `complete` False, `stopped_by`
        and `message`; a rerun removes the rest.

        Readers (Flink, Java, any engine) advance their consumer without the lease: right
        before each removal the file is looked at again (its status and its bytes), and a
        consumer that changed since the listing, or is no longer older than the cutoff, is
        kept (`kept` says which): its reader is alive and its position is what snapshot
        expiration must stop at."""
        from .lease import LeaseManager, maintenance_lease
        result = ConsumerExpireResult()
        if dry_run:
            result.extend(cid for cid, st in self._statuses() if st.mtime_ms < older_than_ms)
            return result
        manager = lease if lease is not None else LeaseManager(self.io, self.io.root)
        with maintenance_lease(None, "expire-consumers", manager=manager):
            try:
                # What each stale consumer was when chosen: its status and its bytes.
                stale = [(cid, st, self._bytes(st.path)) for cid, st in self._statuses()
                         if st.mtime_ms < older_than_ms]
                for cid, st, data in stale:
                    if data is None:
                        continue   # removed since the listing (another expirer)
                    checkpoint()
                    why = self._changed(st, data, older_than_ms)
                    if why is not None:
                        result.kept.append(f"consumer {cid} kept: {why}")
                        log.info("consumer expiration of %s: %s", self.io.root,
                                 result.kept[-1])
                        continue
                    if self.io.delete_quietly(st.path):
                        result.append(cid)
            except StopDeleting as e:
                result.complete, result.stopped_by = False, e.cause
                result.message = (f"stopped before removing a consumer: {e.reason}; removed "
                                  f"{len(result)} consumer(s); a rerun continues")
                log.warning("consumer expiration of %s: %s", self.io.root, result.message)
        return result

    def _bytes(self, path: str) -> Optional[bytes]:
        try:
            return self.io.read_bytes(path)
        except FileNotFoundError:
            return None

    def _changed(self, listed, data: bytes, older_than_ms: int) -> Optional[str]:
        """Why the consumer at `listed` (a FileStatus, `data` its bytes when chosen) must be
        kept, read right before its removal; None if it is still the stale file chosen. This
        narrows the window a reader has to advance it, it does not close it (readers never
        take the lease)."""
        now = self._status(listed.name)
        if now is None:
            return "it was removed since the listing"
        if now.mtime_ms != listed.mtime_ms or now.mtime_ms >= older_than_ms:
            return "its reader wrote it again since the listing"
        if self._bytes(listed.path) != data:
            return "its position changed since the listing"
        return None

    def _status(self, name: str):
        """The file's status now (one file's stat where the storage has it, else a listing
        of consumer/: consumers are few), or None if it is gone."""
        of = getattr(self.io, "list_status_of", None)
        found = of(self.consumer_dir, [name]) if of is not None else \
            [st for st in self.io.list_status(self.consumer_dir) if st.name == name]
        return found[0] if found else None

    def write(self, consumer_id: str, next_snapshot: int) -> None:
        self.io.mkdirs(self.consumer_dir)
        self.io.overwrite_atomic(self.io.join(self.consumer_dir,
                                              P.consumer_file_name(consumer_id)),
                                 Consumer(consumer_id, next_snapshot).to_json())


def tag_manager(store) -> TagManager:
    """The tag manager of a FileStore, honouring its commit.single-writer option."""
    return TagManager(store.io, store.root, bool(store.options.get("commit.single-writer")))
