"""Abort: delete the files of a write that will not be committed. The one implementation
behind `TableCommit.abort`, `TableWriter.abort` and the Spark data source's abort.

An abort is asked to delete files that, as far as the caller knows, were never committed. The
caller can be wrong: a commit that raised may still have published (an unknown outcome, a
process killed after the publish), a replay may abort what an earlier attempt committed, and
once published a file can be kept by a tag or a long-lived changelog long after the snapshot
that added it is gone. So a file is deleted only if all of these hold:

- it was never handed out in a CommitMessage (TableWriter.abort), or
- no snapshot, tag or long-lived changelog of the table or of any branch names it (the used
  set of orphan cleanup, computed by `reachability.py`, read strictly: if anything a root
  needs cannot be read, nothing is deleted), and
- when the caller knows who would have published it (a commit user and the snapshot it
  started from, or a commit identifier), that user has not published since (Spark's rule:
  a write whose snapshot was published is never aborted, even in part).

Files kept are reported; what could not be proven unused is left for orphan cleanup, which
applies the same rules plus an age threshold. Deletes go through the FileIO gate.

An abort does not stop a commit of the same messages that is still running elsewhere: never
abort messages that another thread or process may still be committing.
"""
from __future__ import annotations

import logging
import posixpath
from dataclasses import dataclass, field
from typing import Optional, Sequence, Tuple

from ..io.metered import RequestBill, billed
from ..errors import PaimonCommitError
from ..io.deletion import StopDeleting, checkpoint

log = logging.getLogger(__name__)

__all__ = ["AbortResult", "abort_files"]


@dataclass(frozen=True)
class AbortResult:
    """What an abort deleted and what it kept (and, if it kept everything, why)."""

    deleted: Tuple[str, ...] = ()
    kept: Tuple[str, ...] = ()           # still named by the table, or not provably unused
    reason: Optional[str] = None         # why everything was kept, if it was
    # What the operation asked of the storage (io/metered.py).
    requests: RequestBill = field(default_factory=RequestBill)


@billed   # result.requests: what it asked of the storage
def abort_files(store, paths: Sequence[str], *, handed_out: bool = True,
                commit_user: Optional[str] = None, since_snapshot: Optional[int] = None,
                commit_identifier: Optional[int] = None) -> AbortResult:
    """Delete the files at `paths` (data files of an aborted write) that nothing needs.

    Args:
        store: the table's FileStore.
        paths: the files to delete (from `writer.message_paths` or a writer's own list).
        handed_out: False only for files a TableWriter wrote since its last prepare_commit:
            they were never in a CommitMessage, so no snapshot can name them and reading
            the table's metadata to prove it is skipped.
        commit_user: who would have published the files. With `since_snapshot` (the latest
            snapshot id when the write started, 0 if the table had none), nothing is
            deleted if a snapshot of this user newer than it exists. With
            `commit_identifier`, nothing is deleted if this user has committed that
            identifier (or a later one) already.

    Returns:
        AbortResult. Never raises for an unreadable table: that keeps everything.
    """
    paths = list(dict.fromkeys(paths))
    if not paths:
        return AbortResult()
    if handed_out:
        reason = _published(store, commit_user, since_snapshot, commit_identifier)
        if reason is None:
            used, reason = used_names(store)
            if reason is None:
                kept = [p for p in paths if posixpath.basename(p) in used]
                if kept:
                    log.warning("abort on %s: not deleting %d file(s) a snapshot, tag or "
                                "changelog names (committed after all?), e.g. %s",
                                store.path, len(kept), kept[0])
                paths = [p for p in paths if p not in set(kept)]
                reason = _stop_reason()
                if reason is None:
                    deleted = store.io.delete_files(paths)
                    return AbortResult(tuple(deleted), tuple(kept))
                paths += kept
    else:
        reason = _stop_reason()
        if reason is None:
            return AbortResult(tuple(store.io.delete_files(paths)))
    log.warning("abort on %s: deleting none of %d file(s): %s; orphan cleanup removes "
                "them once nothing can need them", store.path, len(paths), reason)
    return AbortResult((), tuple(paths), reason)


def _stop_reason() -> Optional[str]:
    """The abort's one delete step passes a safe point like every other (`checkpoint()`):
    under the maintenance lease (compaction's abort) a holder that lost it deletes nothing,
    and an interrupted process stops there. Why it must not delete, or None."""
    try:
        checkpoint()
    except StopDeleting as e:
        return f"stopped before deleting ({e.reason})"
    return None


def _published(store, commit_user: Optional[str], since: Optional[int],
               identifier: Optional[int]) -> Optional[str]:
    """Why the write counts as published (Spark's rule), or None."""
    if commit_user is None:
        return None
    sm = store.snapshots
    if identifier is not None:
        last = sm.latest_snapshot_of_user(commit_user)
        if last is not None and last.commit_identifier >= identifier:
            return (f"commit user {commit_user} already committed identifier "
                    f"{last.commit_identifier} (snapshot {last.id})")
    if since is None:
        return None
    latest = sm.latest_snapshot_id()
    for sid in range(since + 1, (latest or 0) + 1):
        s = sm.try_snapshot(sid)
        if s is not None and s.commit_user == commit_user:
            return f"snapshot {sid} of commit user {commit_user} was published"
    return None


def used_names(store):
    """(names of every file any snapshot, tag, long-lived changelog or branch uses, None),
    or (None, why they cannot be known). The one answer to "is this file used?" outside
    orphan cleanup: abort, and filter_and_commit when the table cannot tell what a commit
    user committed."""
    from .orphan import CleanContext, OrphanFilesCleaner
    try:
        return OrphanFilesCleaner(CleanContext(store.path, file_io=store.io)).used_files(), None
    except (PaimonCommitError, OSError, ValueError) as e:
        return None, f"what the table uses cannot be read ({e})"
