"""Abort: delete the files of a write that will not be committed. The one implementation
behind `TableCommit.abort`, `TableWriter.abort` and the Spark data source's abort.

An abort is asked to delete files that, as far as the caller knows, were never committed. The
caller can be wrong: a commit that raised may still have published (an unknown outcome, a
process killed after the publish), a replay may abort what an earlier attempt committed, and
once published a file can be kept by a tag or a long-lived changelog long after the snapshot
that added it is gone. So a file is deleted only if all of these hold:

- no commit call of this process was handed it (the process's commit record,
  `commit_record.RECORD`, asked first, without I/O: see `_handed_to_a_commit`), and
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
from . import commit_record

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
    held = _handed_to_a_commit(store, paths)
    if held:
        held_set = set(held)
        paths = [p for p in paths if p not in held_set]
        if not paths:
            return AbortResult((), tuple(held))
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
                    return AbortResult(tuple(deleted), tuple(held + kept))
                paths += kept
    else:
        reason = _stop_reason()
        if reason is None:
            return AbortResult(tuple(store.io.delete_files(paths)), tuple(held))
    log.warning("abort on %s: deleting none of %d file(s): %s; orphan cleanup removes "
                "them once nothing can need them", store.path, len(paths), reason)
    return AbortResult((), tuple(held + paths), reason)


def _handed_to_a_commit(store, paths: Sequence[str]) -> list:
    """The files of `paths` that a commit call of this process was handed (the process's
    commit record, keyed like commit.py keys it: the table's resolved identity and the data
    file, found here by its name, which is unique within a table). No I/O. Logged.

    Kept, whatever the table says now:
    - a file of a call that raised after it may have published (`snapshot_id` None): its
      publish failed with an I/O error (a conditional PUT whose reply was lost) and may still
      land, after this abort, as a snapshot naming the file: deleted now, the table would be
      unreadable then (audit issue25u u8). No snapshot names it yet, nor need the commit user
      have published since, so the table checks below cannot see it;
    - a file a call of this process published (`snapshot_id` set): an abort is for files
      never committed, so deleting one is never right. The table check keeps it while a
      snapshot, tag or changelog names it; after a compaction and an expiration nothing may
      name it and it is not needed, but that is orphan cleanup's call, not an abort's.
    Either way orphan cleanup removes it once nothing can need it. A file the bounded record
    evicted (50,000 files committed by this process since) is not seen here; nor is a
    commit of another process (docs/safety.md)."""
    record = commit_record.RECORD   # looked up per call: a test swaps in a fresh process's
    root = commit_record.table_identity(store.io)
    handed = record.handed_names(root, {posixpath.basename(p) for p in paths})
    if not handed:
        return []
    held = [p for p in paths if posixpath.basename(p) in handed]
    uncertain = [p for p in held if handed[posixpath.basename(p)].snapshot_id is None]
    if uncertain:
        log.warning("abort on %s: not deleting %d file(s), e.g. %s: a commit call of this "
                    "process may have published it: its publish failed with an I/O error "
                    "and may still land; orphan cleanup removes it once nothing can need it",
                    store.path, len(uncertain), uncertain[0])
    published = [p for p in held if p not in set(uncertain)]
    if published:
        c = handed[posixpath.basename(published[0])]
        log.warning("abort on %s: not deleting %d file(s), e.g. %s: a commit call of this "
                    "process published it (snapshot %d of commit user %s); an abort deletes "
                    "only files never committed, orphan cleanup removes it once nothing can "
                    "need it", store.path, len(published), published[0], c.snapshot_id,
                    c.commit_user)
    return held


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
