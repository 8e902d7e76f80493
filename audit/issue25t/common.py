"""Set-up for audit 25t scripts: issue25s's common.py plus helpers."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
import importlib.util  # noqa: E402
_spec = importlib.util.spec_from_file_location(
    "common25s", os.path.join(os.path.dirname(HERE), "issue25s", "common.py"))
_c = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_c)
globals().update({k: v for k, v in vars(_c).items() if not k.startswith("__")})
from paimon_commit.operations import commit as commit_mod  # noqa: E402
from paimon_commit.operations import commit_record  # noqa: E402,F401
from paimon_commit.operations.commit import FileStoreCommit  # noqa: E402

OPTS = {"commit.max-retries": "3", "commit.min-retry-wait": "1 ms",
        "commit.max-retry-wait": "2 ms"}


def old_settle():
    """Context: _find_own_snapshot as before 5083184 (publish_base never restored)."""
    import contextlib

    @contextlib.contextmanager
    def cm():
        real = FileStoreCommit._find_own_snapshot

        def keep(self, state, latest):
            pb = state.publish_base
            try:
                return real(self, state, latest)
            finally:
                state.publish_base = pb
        FileStoreCommit._find_own_snapshot = keep
        try:
            yield
        finally:
            FileStoreCommit._find_own_snapshot = real
    return cm()


def recorded():
    """Every (file, Committed) the process record holds, as short strings."""
    r = commit_record.RECORD
    return [f"{k[1][-1] if isinstance(k[1], tuple) else k[1]}: snap={c.snapshot_id} "
            f"user={c.commit_user} lowest={c.lowest_id}" for k, (c, _) in r._files.items()]
