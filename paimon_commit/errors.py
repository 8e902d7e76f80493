"""Exception types. Every message names the file, option or value that is wrong."""
from __future__ import annotations


class PaimonCommitError(Exception):
    """Base class of every error this library raises on purpose."""


class OptionError(PaimonCommitError, ValueError):
    """An option or argument value is invalid. Raised before any I/O."""


class CorruptMetadataError(PaimonCommitError):
    """A metadata file (schema, snapshot, manifest, tag, consumer) cannot be parsed."""

    def __init__(self, path: str, problem: str):
        super().__init__(f"{path}: {problem}")
        self.path = path
        self.problem = problem


class TableNotFoundError(PaimonCommitError, FileNotFoundError):
    """The path is not a Paimon table (no schema/schema-N)."""


class TableExistsError(PaimonCommitError, FileExistsError):
    """Table.create found a table already there."""


class UnsafePathError(PaimonCommitError):
    """A path would lead outside the table root or through a symlink."""


class CommitConflictError(PaimonCommitError):
    """A commit cannot be applied to the latest snapshot; retrying would not help."""


class CommitFailedError(PaimonCommitError):
    """A commit gave up after its retry budget (commit.max-retries / commit.timeout)."""


class UnsupportedTableError(PaimonCommitError):
    """The table uses a feature this library does not implement (e.g. deletion vectors)."""


class ObjectStoreError(PaimonCommitError, OSError):
    """A request to an object store failed (unreachable endpoint, credentials refused,
    missing bucket, ...). The message names the store and the path, never a credential."""


class AtomicCreateUnsupportedError(CommitFailedError):
    """The storage cannot create a file only if it is absent: several writers could publish the
    same snapshot id and all but one commit would be lost silently."""


class PublishOutcomeUnknownError(CommitFailedError):
    """Whether a commit's snapshot is in the table cannot be decided (the snapshots that would
    tell were expired meanwhile). Every file the snapshot names is kept; the message says which
    snapshot to look at."""


class LeaseHeldError(PaimonCommitError):
    """Another process holds the table's maintenance lease (paimon_commit/lease.py) and kept
    it past the wait: the message names the holder, its operation and until when. Nothing
    was deleted; rerun later (the CLI exits 75, EX_TEMPFAIL)."""

    def __init__(self, message: str, holder=None):
        super().__init__(message)
        self.holder = holder   # the LeaseRecord that holds it


class LeaseRecordError(CorruptMetadataError):
    """A maintenance lease record cannot be trusted (unreadable, another table's, an expiry
    far in the future): nothing was deleted; `paimon-commit lease TABLE --break` supersedes
    it once no maintenance is running."""


class OrphanCleanAborted(PaimonCommitError):
    """Orphan cleanup could not prove which files are used; nothing was deleted."""
