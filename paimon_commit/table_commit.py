"""TableCommit: the commit object a job holds. Wraps FileStoreCommit; post-commit maintenance
(expiration) hooks in here."""
from __future__ import annotations

import logging
from typing import Any, Dict, List, Mapping, Optional, Sequence

from .format.commit_message import CommitMessage
from .operations.commit import CommitConfig, CommitResult, FileStoreCommit
from .options import validate_options
from .store import FileStore
from .writer import message_paths

log = logging.getLogger(__name__)

__all__ = ["TableCommit"]


class TableCommit:
    def __init__(self, store: FileStore, commit_user: Optional[str] = None,
                 options: Optional[Mapping[str, Any]] = None):
        if options:
            merged = dict(store.schema.options)
            merged.update({k: str(v).lower() if isinstance(v, bool) else str(v)
                           for k, v in options.items()})
            parsed = validate_options(merged)  # before any I/O
        else:
            parsed = store.options
        self.store = store
        self.options = parsed
        self._commit = FileStoreCommit(store, commit_user, CommitConfig.from_options(parsed))
        self.last_result: Optional[CommitResult] = None
        self._closed = False

    @property
    def commit_user(self) -> str:
        return self._commit.commit_user

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("this TableCommit is closed")

    def commit(self, messages: Sequence[CommitMessage],
               commit_identifier: Optional[int] = None) -> Optional[int]:
        """Publish the messages as one snapshot; returns its id, or None if nothing was
        committed (no files and snapshot.ignore-empty-commit = true)."""
        self._check_open()
        self.last_result = self._commit.commit(list(messages), commit_identifier)
        return self.last_result.snapshot_id

    def overwrite(self, messages: Sequence[CommitMessage],
                  partition: Optional[Mapping[str, Any]] = None,
                  commit_identifier: Optional[int] = None) -> Optional[int]:
        self._check_open()
        self.last_result = self._commit.overwrite(list(messages), partition, commit_identifier)
        return self.last_result.snapshot_id

    def drop_partitions(self, partitions: Sequence[Mapping[str, Any]],
                        commit_identifier: Optional[int] = None) -> Optional[int]:
        self._check_open()
        self.last_result = self._commit.drop_partitions(partitions, commit_identifier)
        return self.last_result.snapshot_id

    def filter_committed(self, identifiers) -> List[int]:
        return self._commit.filter_committed(identifiers)

    def filter_and_commit(self, by_identifier: Mapping[int, Sequence[CommitMessage]]
                          ) -> List[Optional[int]]:
        self._check_open()
        return [r.snapshot_id for r in self._commit.filter_and_commit(by_identifier)]

    def abort(self, messages: Sequence[CommitMessage]) -> int:
        """Delete the data files of messages that will not be committed."""
        return sum(self.store.io.delete_quietly(p) for p in message_paths(self.store, messages))

    def close(self) -> None:
        self._closed = True

    def __enter__(self) -> "TableCommit":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
