"""Tags and rollback: create_tag, delete_tag (with the files only that tag kept), rollback_to."""
from __future__ import annotations

import datetime
import logging
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Set

from ..errors import CorruptMetadataError
from ..format.snapshot import Snapshot, Tag
from ..store import FileStore
from ..tags import TagManager, validate_tag_name
from .expire import run_deletions, still_there

log = logging.getLogger(__name__)

__all__ = ["TagOperations", "TagDeleteResult", "RollbackResult"]


@dataclass
class TagDeleteResult:
    tag: str
    snapshot_id: int
    deleted_files: int = 0
    deleted_bytes: int = 0
    deleted_paths: List[str] = field(default_factory=list)
    skipped: List[str] = field(default_factory=list)

    def to_dict(self) -> Dict:
        return {"tag": self.tag, "snapshot_id": self.snapshot_id,
                "deleted_files": self.deleted_files, "deleted_bytes": self.deleted_bytes,
                "skipped": self.skipped}


@dataclass
class RollbackResult:
    snapshot_id: int
    deleted_snapshots: List[int]
    deleted_tags: List[str]

    def to_dict(self) -> Dict:
        return {"snapshot_id": self.snapshot_id, "deleted_snapshots": self.deleted_snapshots,
                "deleted_tags": self.deleted_tags}


class TagOperations:
    def __init__(self, store: FileStore):
        self.store = store
        self.tags = TagManager(store.io, store.root)

    def create_tag(self, name: str, snapshot_id: Optional[int] = None,
                   time_retained_ms: Optional[int] = None) -> Tag:
        validate_tag_name(name)
        if time_retained_ms is not None and time_retained_ms <= 0:
            raise ValueError(f"tag time retained must be positive, got {time_retained_ms} ms")
        sm = self.store.snapshots
        snap = sm.latest_snapshot() if snapshot_id is None else sm.try_snapshot(snapshot_id)
        if snap is None:
            what = "the table has no snapshot" if snapshot_id is None \
                else f"snapshot {snapshot_id} does not exist"
            raise ValueError(f"cannot create tag {name!r}: {what}")
        if self.tags.deletion_marker(name) is not None:
            raise ValueError(f"cannot create tag {name!r}: an earlier deletion of a tag with "
                             f"this name is unfinished; run delete_tag({name!r}) first")
        tag = Tag(name, snap, datetime.datetime.now() if time_retained_ms else None,
                  time_retained_ms)
        if not self.tags.create(tag):
            raise ValueError(f"tag {name!r} already exists")
        return tag

    def delete_tag(self, name: str) -> TagDeleteResult:
        """Delete a tag. If its snapshot already expired, also delete the data files and
        manifests that only this tag kept alive. Running it again for a tag whose deletion
        was interrupted (crash, failed delete) finishes the job."""
        validate_tag_name(name)
        tags = self.tags
        tag = tags.try_tag(name)
        resuming = tag is None
        if resuming:
            tag = tags.deletion_marker(name)
            if tag is None:
                raise ValueError(f"tag {name!r} does not exist")
        result = TagDeleteResult(name, tag.id)
        others = [t for t in tags.tags() if t.name != name]
        if self.store.snapshots.snapshot_exists(tag.id) or any(t.id == tag.id for t in others):
            # Snapshot expiration (or the other tag) takes care of its files.
            self._delete_tag_file(name)
            tags.delete_deletion_marker(name)
            return result
        try:
            data, metadata = self._only_this_tag(tag, others)
        except (FileNotFoundError, CorruptMetadataError) as e:
            # Delete the tag but none of its files: orphan cleanup can take them later. (On
            # a rerun this is the normal end: an earlier run deleted some of its manifests,
            # which it only starts once every data file is gone.)
            if not resuming:
                result.skipped.append(f"could not compute what else uses the tag's files "
                                      f"({e}); its files are left for orphan cleanup")
                log.warning("delete_tag %s: %s", name, result.skipped[-1])
            self._delete_tag_file(name)
            tags.delete_deletion_marker(name)
            return result
        # Marker, then tag file: from here on nothing reads the files the tag alone
        # referenced, and the marker is how a rerun finds them again.
        tags.write_deletion_marker(tag)
        try:
            self._delete_tag_file(name)
        except OSError:
            tags.delete_deletion_marker(name)   # the tag stays, whole: nothing to finish
            raise
        io = self.store.io
        for group in (data, metadata):
            deleted = run_deletions(io, group, None)
            result.deleted_paths.extend(deleted)
            result.deleted_bytes += sum(group[p] for p in deleted)
            left = still_there(io, group, deleted)
            if left:
                result.skipped.append(
                    f"{len(left)} file(s) could not be deleted (e.g. {left[0]}); run "
                    f"delete_tag({name!r}) again to finish")
                log.warning("delete_tag %s: %s", name, result.skipped[-1])
                break
        else:
            tags.delete_deletion_marker(name)
        result.deleted_files = len(result.deleted_paths)
        return result

    def _delete_tag_file(self, name: str) -> None:
        if not self.tags.delete_file(name) and self.tags.exists(name):
            raise OSError(f"could not delete tag file {self.tags.tag_path(name)}; its files "
                          f"were not touched")

    def _only_this_tag(self, tag: Tag, others: List[Tag]):
        store, mio = self.store, self.store.manifests
        used_data: Set[str] = set()
        used_meta: Set[str] = set()
        sm = store.snapshots
        retained = list(sm.snapshots())

        def meta_names(s: Snapshot) -> Set[str]:
            names = set(s.manifest_lists())
            for lst in s.manifest_lists():
                names.update(m.file_name for m in mio.read_list(lst))
            if s.index_manifest:
                names.add(s.index_manifest)
            return names

        # Files any retained snapshot can reach: live in the earliest, or added after it.
        if retained:
            used_data.update(store.data_file_path(e) for e in store.live_entries(retained[0]))
            for s in retained[1:]:
                used_data.update(store.data_file_path(e) for e in store.delta_entries(s)
                                 if e.kind == 0 and not e.file.external_path)
            for s in retained:
                used_meta |= meta_names(s)
        for t in others:
            used_data.update(store.data_file_path(e) for e in store.live_entries(t.snapshot)
                             if not e.file.external_path)
            used_meta |= meta_names(t.snapshot)
        data: Dict[str, int] = {}
        for e in store.live_entries(tag.snapshot):
            if e.file.external_path:
                continue
            p = store.data_file_path(e)
            if p not in used_data:
                data[p] = e.file.file_size
        metadata: Dict[str, int] = {}
        for n in meta_names(tag.snapshot) - used_meta:
            metadata[mio.path(n)] = 0
        return data, metadata

    def rollback_to(self, snapshot_id: Optional[int] = None, tag: Optional[str] = None
                    ) -> RollbackResult:
        """Make `snapshot_id` (or the tag's snapshot) the latest: newer snapshots and tags
        are deleted; their data is left for orphan cleanup."""
        if (snapshot_id is None) == (tag is None):
            raise ValueError("rollback_to needs exactly one of snapshot_id or tag")
        sm = self.store.snapshots
        if tag is not None:
            t = self.tags.try_tag(validate_tag_name(tag))
            if t is None:
                raise ValueError(f"tag {tag!r} does not exist")
            target = t.snapshot
            if not sm.snapshot_exists(target.id):
                # The tag outlived its snapshot: restore the snapshot file from the tag.
                sm.io.mkdirs(sm.snapshot_dir)
                sm.try_commit(target)
                sm.commit_earliest_hint(target.id)
        else:
            target = sm.try_snapshot(snapshot_id)
            if target is None:
                raise ValueError(f"cannot roll back to snapshot {snapshot_id}: it does not exist")
        # LATEST first, so that readers never resolve a snapshot about to disappear.
        sm.commit_latest_hint(target.id)
        # Every *listed* id above the target, newest first: hints can look valid after a
        # crashed rollback (the restored snapshot has no successor on disk), and a newer
        # snapshot left behind would come back as the latest after the next commit.
        deleted = []
        for sid in sorted((i for i in sm.list_snapshot_ids() if i > target.id), reverse=True):
            if self.store.io.delete_quietly(sm.snapshot_path(sid)):
                deleted.append(sid)
        deleted_tags = []
        for t in self.tags.tags():
            if t.id > target.id and self.tags.delete_file(t.name):
                deleted_tags.append(t.name)
        left = [i for i in sm.list_snapshot_ids() if i > target.id]
        left_tags = [t.name for t in self.tags.tags() if t.id > target.id]
        if left or left_tags:
            raise OSError(f"rollback to {target.id} incomplete: could not delete snapshot(s) "
                          f"{left} and tag(s) {left_tags}; run it again")
        return RollbackResult(target.id, sorted(deleted), deleted_tags)
