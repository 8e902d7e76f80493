"""Changelog expiration (Paimon's ExpireChangelogImpl), the second half of ExpireSnapshots.

Decoupled changelog lifecycle (Paimon's `changelog.num-retained.*`, `changelog.time-retained`
larger than the snapshot values): an expiring snapshot is first written to
`changelog/changelog-<id>`, and what its changelog readers need is kept: its changelog list
and files (and with `changelog-producer` = none its lists and the APPEND files its deltas
delete). Changelog expiration then removes those in Paimon's order and moves
`changelog/EARLIEST`.
"""
from __future__ import annotations

import logging
from typing import Callable, Dict, List, Optional, Set, Tuple

from ..errors import CorruptMetadataError
from ..format.snapshot import Snapshot, Tag
from ..reachability import Reachability, Root, Unreadable
from ..snapshots import ChangelogManager, SnapshotManager
from ..store import FileStore
from ..tags import ConsumerManager, TagManager
from .expire_config import ExpireConfig
from .expire_plan import ExpirePlan

log = logging.getLogger("paimon_commit.operations.expire")   # (the expirer's log)

__all__ = ["ChangelogExpiration"]


class ChangelogExpiration:
    """Planning changelog expiration; mixed into ExpireSnapshots, which provides the table,
    the config, the managers and the per-run snapshot reader used here."""

    store: FileStore
    config: ExpireConfig
    clock: Callable[[], float]
    tags: TagManager
    consumers: ConsumerManager
    changelogs: ChangelogManager
    reach: Reachability
    _memo: Dict[Tuple[str, int], Optional[Snapshot]]

    def _keep_seen(self) -> None:
        raise NotImplementedError

    def _read(self, manager: SnapshotManager, sid: int) -> Optional[Snapshot]:
        raise NotImplementedError

    def _prune(self) -> None:
        raise NotImplementedError

    def _list_with_versions(self, manager: SnapshotManager) -> List[int]:
        raise NotImplementedError

    def _keep(self, plan: ExpirePlan, manager: SnapshotManager, sid: int, what: str) -> None:
        raise NotImplementedError

    def _tag_data(self, tags: List[Tag], end: int) -> Set[str]:
        raise NotImplementedError

    def _tag_roots(self, tags: List[Tag]) -> List[Root]:
        raise NotImplementedError

    def plan_changelogs(self) -> ExpirePlan:
        """The changelog expiration this run would do (nothing is deleted). Runs after
        `plan()`: what both read stays cached for the next run."""
        self._keep_seen()   # (plan()'s reads are kept by the prune below)
        self._memo = {}
        try:
            return self._plan_changelogs()
        finally:
            self._prune()

    def _plan_changelogs(self) -> ExpirePlan:
        cfg, sm, cm = self.config, self.store.snapshots, self.changelogs
        latest, earliest_snap = sm.latest_snapshot_id(), sm.earliest_snapshot_id()
        ids = self._list_with_versions(cm)
        plan = ExpirePlan(ids[0] if ids else None, ids[-1] if ids else None, changelogs=True)
        if latest is None or earliest_snap is None or not ids:
            return plan
        earliest, latest_cl = ids[0], ids[-1]
        lo = max(latest - cfg.cl_max + 1, earliest)
        hi = min(latest - cfg.cl_min + 1, earliest + cfg.max_deletes, latest_cl)
        consumer_min = self.consumers.min_next_snapshot()
        if consumer_min is not None:
            hi = min(hi, consumer_min)
        if hi <= earliest:
            return plan
        end = hi
        older_than = int(self.clock() * 1000) - cfg.cl_time_ms
        for cid in range(lo, hi + 1):
            # Paimon measures a changelog's age on its own commit time.
            try:
                c = self._read(cm, cid)
            except CorruptMetadataError as e:
                log.warning("expire: cannot read %s; keeping changelog %d", e.path, cid)
                end = cid
                break
            if cfg.cl_time_ms > 0 and c is not None and c.time_millis >= older_than:
                end = cid
                break
        end = min([i for i in ids if i >= end] or [end])   # a missing end: the next one
        expiring = [i for i in ids if i < end]
        if not expiring or end not in ids:
            return plan
        changelogs = {i: self._read(cm, i) for i in ids}   # unreadable raises: no deletion
        tags = self.tags.tags()
        plan.tag_names = sorted(t.name for t in tags)
        plan.tags = {t.name: t.snapshot for t in tags}
        # A changelog listed but gone when read was expired concurrently: not this run's.
        plan.begin, plan.end = expiring[0], end
        plan.consumer_floor = end if consumer_min is None else min(end, consumer_min)
        plan.expiring = [i for i in expiring if changelogs[i] is not None]
        roots = [Root(cm.snapshot_path(i), c, "changelog") for i, c in changelogs.items()
                 if i >= end and c is not None]
        for i, c in changelogs.items():
            if i >= end and c is not None:
                self._keep(plan, cm, i, f"changelog {i}")
        for sid in self._list_with_versions(sm):
            s = self._read(sm, sid)
            if s is not None:
                roots.append(Root(sm.snapshot_path(sid), s))
                self._keep(plan, sm, sid, f"snapshot {sid}")
        try:
            keep = self.reach.kept_metadata(roots + self._tag_roots(tags))
        except Unreadable as e:
            plan.skip(f"{e}; no changelog is expired")
            plan.begin = plan.end = None
            plan.expiring = []
            return plan
        # Without a changelog list (producer none) a changelog's delta is its changelog:
        # the files its delta deletes were kept for it, and go now unless a tag or a later
        # re-add needs them.
        if cfg.changelog_producer == "none" and any(
                c is not None and not c.changelog_manifest_list
                for c in (changelogs[i] for i in expiring)):
            # One lineage, changelogs then snapshots; a hole hides what it may re-add.
            lineage = [(i, changelogs.get(i) if i <= latest_cl else self._read(sm, i))
                       for i in range(earliest, latest + 1)]
            plan.add("data", self.reach.deleted_files(
                lineage, end - 1, lambda: self._tag_data(tags, end), plan.skip))
        for cid in plan.expiring:
            c = changelogs[cid]
            if c.changelog_manifest_list:
                if c.changelog_manifest_list not in keep:
                    plan.add("changelog", self.reach.added_files(c.changelog_manifest_list,
                                                                 plan.skip))
                lists: Tuple[str, ...] = (c.changelog_manifest_list,)
            else:
                lists = (c.delta_manifest_list, c.base_manifest_list)
            # Index and statistics files belong to the snapshot: its expiration removed them.
            plan.add_metadata(self.reach.unused_metadata(c, lists, keep, plan.skip,
                                                         index_and_statistics=False))
            plan.add_expiring(cid, cm.snapshot_path(cid), 0)
        return plan
