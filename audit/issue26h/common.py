"""Shared helpers for the issue26h audit scripts (commit b8f721b: the sized first chunk).

Run every script from the worktree root:  nice -n 19 .venv/bin/python audit/issue26h/<x>.py
"""
import contextlib
import os
import shutil
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
for p in (ROOT, os.path.join(ROOT, "tests")):
    if p not in sys.path:
        sys.path.insert(0, p)

from paimon_commit.operations import expire as expire_mod  # noqa: E402
from paimon_commit.operations.expire import ExpireConfig, ExpireSnapshots  # noqa: E402
from paimon_commit.store import FileStore  # noqa: E402

# Small production-shaped sizes: a fixed first chunk of 3 snapshots (old behaviour, with
# FIRST_CHUNK_FILES = 0) versus a first chunk sized for CHUNK_FILES files (new behaviour).
SMALL = dict(FIRST_CHUNK=3, CHUNK_FILES=60)


@contextlib.contextmanager
def sizes(first_chunk_files, **over):
    """expire_mod constants for one run. `first_chunk_files`:
      None  : the new sized first chunk (CHUNK_FILES), as b8f721b ships it;
      0     : FIRST_CHUNK_FILES = 0, how the test suite asks for a fixed first chunk (note:
              `_first_limit` still runs and reads, it only returns 0);
      "old" : the parent commit's code path exactly: b8f721b only added `_first_limit`
              and the block in `_plan` that applies it when it returns more than the limit,
              so `_first_limit` returning 0 without reading anything IS the old `_plan`."""
    names = dict(SMALL, **over)
    names["FIRST_CHUNK_FILES"] = 0 if first_chunk_files == "old" else first_chunk_files
    old = {k: getattr(expire_mod, k) for k in names}
    first_limit = ExpireSnapshots._first_limit
    try:
        for k, v in names.items():
            setattr(expire_mod, k, v)
        if first_chunk_files == "old":
            ExpireSnapshots._first_limit = lambda self, earliest, horizon: 0
        yield
    finally:
        ExpireSnapshots._first_limit = first_limit
        for k, v in old.items():
            setattr(expire_mod, k, v)


@contextlib.contextmanager
def chunk_log():
    """[(len(plan.expiring), files planned)] per chunk executed."""
    chunks = []
    execute = ExpireSnapshots._execute

    def noting(self, plan):
        done = execute(self, plan)
        if plan.end is not None:   # (plan.deleted: filled by the deletion)
            chunks.append((len(plan.expiring), sum(len(v) for v in plan.deleted.values())))
        return done
    ExpireSnapshots._execute = noting
    try:
        yield chunks
    finally:
        ExpireSnapshots._execute = execute


def table_files(root):
    out = set()
    for d, dirs, fs in os.walk(root):
        rel = os.path.relpath(d, root)
        if rel.startswith(".maintenance"):
            continue
        for f in fs:
            out.add(os.path.normpath(os.path.join(rel, f)))
    return out


def clone(src, dst):
    if os.path.exists(dst):
        shutil.rmtree(dst)
    shutil.copytree(src, dst)
    return dst


def run_until_done(path, cfg, clock=None, io=None, dry_run=False, max_runs=50, once=False):
    """Expire until a run expires nothing (complete). Returns a summary dict."""
    expired, deleted, skipped, error = [], set(), [], None
    runs = 0
    while runs < max_runs:
        runs += 1
        kw = {} if clock is None else {"clock": clock}
        try:
            r = ExpireSnapshots(FileStore.open(path, io=io), cfg, **kw).expire(dry_run=dry_run)
        except Exception as e:   # noqa: BLE001 (compared, not hidden)
            error = f"{type(e).__name__}: {str(e)[:160]}"
            break
        expired += list(r.expired_ids)
        deleted |= {os.path.relpath(p, path) for p in r.deleted_paths}
        skipped += [s for s in r.skipped]
        if once or dry_run or not r.expired_ids:
            break
    return dict(expired=expired, deleted=deleted, files=table_files(path), error=error,
                skipped=len(skipped), runs=runs)
