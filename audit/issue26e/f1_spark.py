"""F1 through Spark's distributed cleaner (paimon_commit/spark/orphan.py): its find_orphans
lists the candidates (driver + executors), then calls `self.roots()` on the driver, which
makes the 3a04c07 mark (`_mark_from`); its delete calls `_not_committed_since_plan` once
before the one delete job. Same interleaving and hooks as f1_rollback_between_reads.py
(the driver's FileIO; the executors get a plain LocalFileIO of the same root).

Usage: python f1_spark.py   (AUDIT_CODE=/tmp/issue26e-3a04c07-parent for the parent)
"""
import os
import sys

import f1_rollback_between_reads as f1
from common import CODE, LocalFileIO

os.environ["PYTHONPATH"] = CODE + os.pathsep + os.environ.get("PYTHONPATH", "")
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

from pyspark.sql import SparkSession  # noqa: E402

from paimon_commit.spark.orphan import DistributedOrphanFilesCleaner  # noqa: E402


class ShippableHookIO(f1.HookIO):
    def __reduce__(self):   # executors: a plain LocalFileIO of the same root (no hooks)
        return (LocalFileIO, (self.root,))


if __name__ == "__main__":
    spark = (SparkSession.builder.master("local[2]").appName("issue26e-f1")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false").config("spark.sql.shuffle.partitions", "4")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    f1.HookIO = ShippableHookIO
    f1.OrphanFilesCleaner = lambda ctx: DistributedOrphanFilesCleaner(ctx, spark, 2)
    print(f"code: {CODE}; cleaner: DistributedOrphanFilesCleaner (Spark local[2])")
    for conc in (1, 8):
        f1.run(conc)
    spark.stop()
