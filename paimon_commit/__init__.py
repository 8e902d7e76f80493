"""paimon_commit: commit to and maintain Apache Paimon append tables from Python and PySpark."""
from .errors import (
    CommitConflictError, CommitFailedError, CorruptMetadataError, OptionError, PaimonCommitError,
    TableExistsError, TableNotFoundError, UnsafePathError, UnsupportedTableError,
)
from .format.commit_message import CommitMessage
from .format.snapshot import Snapshot, Tag
from .operations.check import CheckProblem, CheckResult
from .operations.compact import (
    CompactionConflictError, CompactionError, CompactResult, PartitionCompaction,
)
from .operations.expire import ExpireConfig, ExpireResult, ExpireSnapshots
from .operations.orphan import CleanContext, OrphanCleanAborted, OrphanFilesCleaner
from .operations.partition_expire import PartitionExpire, PartitionExpireConfig
from .operations.repair import RepairError, RepairFile, RepairGroup, RepairResult
from .table import LiveFile, Table
from .table_commit import TableCommit
from .writer import SchemaMismatchError, TableWriter

__all__ = [
    "Table", "TableCommit", "TableWriter", "CommitMessage", "Snapshot", "Tag", "LiveFile",
    "ExpireConfig", "ExpireSnapshots", "ExpireResult", "CleanContext", "OrphanFilesCleaner",
    "OrphanCleanAborted", "PartitionExpire", "PartitionExpireConfig",
    "CompactResult", "PartitionCompaction", "CompactionConflictError", "CompactionError",
    "PaimonCommitError", "OptionError", "CorruptMetadataError", "TableNotFoundError",
    "TableExistsError", "UnsafePathError", "CommitConflictError", "CommitFailedError",
    "UnsupportedTableError", "SchemaMismatchError",
    "CheckResult", "CheckProblem", "RepairResult", "RepairFile", "RepairGroup", "RepairError",
]
__version__ = "0.1.0"
