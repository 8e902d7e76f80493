"""Finding 4 (cosmetic): `clean()` leaves `self._stat_executor` pointing at the I/O pool it
shut down; a later `find_orphans(None, result)` on the same cleaner (a public method: phases
1-3) reads the statuses on that dead pool and fails with RuntimeError (nothing deleted).

    PYTHONPATH=$PWD .venv/bin/python audit/f4_stale_stat_executor.py
"""
from _table import make_table

from paimon_commit.operations.orphan import CleanContext, OrphanFilesCleaner
from paimon_commit.operations.orphan_context import OrphanCleanResult

tmp, path, strays = make_table(3)
cleaner = OrphanFilesCleaner(CleanContext(path, dry_run=True))
print("clean:", len(cleaner.clean().deleted_paths), "would be deleted")
try:
    found, _ = cleaner.find_orphans(None, OrphanCleanResult(True, cleaner.ctx.older_than_ms))
    print("find_orphans after clean:", len(found), "(no finding)")
except RuntimeError as e:
    print("FINDING: find_orphans after clean() fails:", e)
