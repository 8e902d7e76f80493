"""Deciding from content whether a commit's snapshot is in the table's lineage.

Two situations leave a publish without a plain yes or no:
- our create of `snapshot-N` succeeded, but our base N-1 was expired around it: the id may have
  been published by another writer and expired before ours re-created it
  (SnapshotManager.confirm_published);
- our create failed with an I/O error (a lost reply): it may or may not have landed, and by the
  time the retry looks, `snapshot-N` may have been expired (`resolve_uncertain`).

No storage's file times can answer either (object stores have none that order creates; on
local disk link(2) and the unlink of the temp name both change the inode's ctime). Content
can: snapshot N+1's base manifest list is, by construction, the full state of the snapshot N it
was computed from, and our snapshot's state is its base list plus its delta list, whose files
have names no other commit uses. N+1 was built on ours exactly when the two live sets agree.
"""
from __future__ import annotations

import logging
from typing import Callable, FrozenSet, Optional, Tuple

from ..errors import PublishOutcomeUnknownError
from ..format.snapshot import Snapshot
from ..manifests import live_identifiers
from ..snapshots import ChangelogManager
from ..store import FileStore

log = logging.getLogger(__name__)

__all__ = ["built_on_check", "own_in_lineage", "resolve_uncertain"]


def _live_ids(store: FileStore, *lists: str) -> FrozenSet[Tuple]:
    mio = store.manifests
    metas = [m for name in lists for m in mio.read_list(name)]
    return frozenset(live_identifiers(mio.read_entries(metas)))


def built_on_check(store: FileStore, ours: Snapshot) -> Callable[[Snapshot], bool]:
    """`built_on(next)`: whether snapshot `next` (id ours.id + 1) was computed from `ours`.
    FileNotFoundError when a list or manifest of `next` is gone (it is being expired)."""
    mine: list = []

    def built_on(nxt: Snapshot) -> bool:
        theirs = _live_ids(store, nxt.base_manifest_list)
        if not mine:   # our own lists: written by this commit, never deleted while undecided
            mine.append(_live_ids(store, ours.base_manifest_list, ours.delta_manifest_list))
        return theirs == mine[0]
    return built_on


def own_in_lineage(store: FileStore, s: Snapshot) -> Optional[bool]:
    """Whether snapshot `s`, one of ours found by its commit user, identifier and files, is
    the one later snapshots build on (`SnapshotManager.in_lineage`); None if that cannot be
    decided."""
    return store.snapshots.in_lineage(s.id, s.to_json(), built_on_check(store, s))


def resolve_uncertain(store: FileStore, ours: Snapshot, base_id: int,
                      base: Optional[Snapshot] = None) -> Optional[bool]:
    """Whether `ours`, whose publish failed with an I/O error, is in the table now: True (it
    landed and is in the lineage), False (not now: another writer's snapshot holds the id,
    it re-created an expired id and was removed again, or it has not landed). False is not
    "never": a create that failed on the client can still land on the store later, whenever
    the name is free (a conditional PUT whose reply timed out), so a caller asks again before
    each later publish. PublishOutcomeUnknownError when nothing left can tell."""
    sm = store.snapshots
    n, data = ours.id, ours.to_json()
    try:
        there: Optional[bytes] = sm.io.read_bytes(sm.snapshot_path(n))
    except FileNotFoundError:
        there = None
    built_on = built_on_check(store, ours)
    if there is not None:
        if there != data:
            return False   # another writer's snapshot holds the id: ours never landed
        return sm.confirm_published(n, data, base_id, built_on, base)
    # Read after snapshot-N was found absent, not before: in between, ours may have landed,
    # been built on and been expired (audit issue25u u5: a latest read before the look was
    # still below N and settled "not landed").
    if (sm.latest_snapshot_id() or 0) < n:
        # Had ours landed, it would be the latest or older than one: expiration never
        # deletes the latest snapshot.
        return False
    # snapshot-N was published and expired. By us? A long-lived changelog keeps its bytes;
    # otherwise snapshot N+1 was computed from it.
    changelogs = ChangelogManager(sm.io, sm.root)
    try:
        if sm.io.read_bytes(changelogs.snapshot_path(n)) == data:
            return True
    except FileNotFoundError:
        pass
    nxt = sm.try_snapshot(n + 1)
    if nxt is not None:
        try:
            return built_on(nxt)
        except FileNotFoundError as e:
            log.warning("cannot read snapshot %d to settle snapshot %d: %s", n + 1, n, e)
    raise PublishOutcomeUnknownError(
        f"publishing snapshot {n} failed with an I/O error, and by the time the commit looked "
        f"again snapshot {n} and the snapshot after it had been expired: whether this commit "
        f"is in the table cannot be decided. Every file it names is kept (delta manifest list "
        f"{ours.delta_manifest_list}); check whether its rows are there before committing it "
        f"again")
