"""The set-up of audit/issue25n/common.py (issue27 + 25k + 25l + 25m + 25n), shared by these
scripts, plus the Spark data source's driver-side helpers (no Spark session is started)."""
import importlib.util
import os

_spec = importlib.util.spec_from_file_location(
    "_audit_common_issue25n_25o", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                               "issue25n", "common.py"))
_shared = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_shared)
globals().update({k: v for k, v in vars(_shared).items() if not k.startswith("__")})

# --- issue25o additions -----------------------------------------------------------------


def spark_schema():
    from pyspark.sql.types import LongType, StringType, StructField, StructType
    return StructType([StructField("id", LongType()), StructField("v", StringType())])


def batches(ids):
    return pa.table({"id": list(ids), "v": [f"r{i}" for i in ids]}, schema=SCHEMA).to_batches()


def batch_writer(root, **opts):
    """A PaimonBatchWriter as Spark's driver builds it for df.write.format('paimon')."""
    from paimon_commit.spark import datasource
    datasource.RUN_SWEEP_GRACE_S = 0.0   # (the abort's second listing right away)
    return datasource.PaimonBatchWriter(dict({"path": root}, **opts), spark_schema(),
                                        overwrite=False)


def run_files(root, marker):
    return sorted(f for f in files(root) if os.path.basename(f).startswith(marker))


def ids(root):
    return sorted(Table.open(root).read_arrow().column("id").to_pylist())


def spark_records(root):
    d = os.path.join(root, ".maintenance")
    return sorted(n for n in (os.listdir(d) if os.path.isdir(d) else [])
                  if n.startswith("spark-aborted-"))
