"""F1 through Spark's distributed cleaner (paimon_commit/spark/orphan.py): its find_orphans
lists the candidates, then calls `self.roots()` on the driver (`_roots_of`: newest listed
first, the mark); its delete runs `_not_committed_since_plan` once before the delete job.
Same setup and hook as f1_restore_below_listed_earliest.py, on the driver's FileIO (the
executors get a plain LocalFileIO of the same root).

Usage: python f1_spark.py   (AUDIT_CODE=... for a parent, as the F1 script)
"""
import os
import sys

import f1_restore_below_listed_earliest as f1
from common import CODE, LocalFileIO

os.environ["PYTHONPATH"] = CODE + os.pathsep + os.environ.get("PYTHONPATH", "")
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

from pyspark.sql import SparkSession  # noqa: E402

from paimon_commit.spark.orphan import DistributedOrphanFilesCleaner  # noqa: E402


class ShippableHookIO(f1.HookIO):
    def __reduce__(self):   # executors: a plain LocalFileIO of the same root (no hooks)
        return (LocalFileIO, (self.root,))


if __name__ == "__main__":
    spark = (SparkSession.builder.master("local[2]").appName("issue26f-f1")
             .config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "4").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    f1.HookIO = ShippableHookIO
    print(f"code: {CODE}; cleaner: DistributedOrphanFilesCleaner (Spark local[2])")
    for conc in (1, 8):
        f1.run(conc, lambda ctx: DistributedOrphanFilesCleaner(ctx, spark, 2))
    spark.stop()
