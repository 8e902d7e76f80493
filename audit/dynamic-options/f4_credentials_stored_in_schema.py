"""F4: storage credentials end up in the table's schema file (readable by every reader of the
table, copied into every later schema by Paimon's ALTER TABLE), although the README says
storage options "are never written into the table" and Table.open(options=...) refuses the
very same keys as dynamic options:
  a) Table.create(path, schema, options={'s3.secret-key': ...}) stores it;
  b) Spark: .option('paimon.s3.secret-key', ...) on the write that creates the table (the
     documented 'paimon.' prefix of table options) stores it;
  c) Table.open(path, options={'s3.secret-key': ...}) is refused (the check exists, for
     dynamic options only).
Run with SPARK=0 to skip the Spark part."""
import glob
import os
import common  # noqa: F401
from common import Table, SCHEMA, new_path

found = []
p = new_path("a")
Table.create(p, SCHEMA, options={"s3.secret-key": "SECRET-A"})
if "SECRET-A" in open(glob.glob(p + "/schema/schema-0")[0]).read():
    found.append("Table.create stored s3.secret-key")
try:
    Table.open(p, options={"s3.secret-key": "x"})
    print("c) Table.open(options=s3.secret-key) accepted")
except Exception as e:   # noqa: BLE001
    print("c) Table.open refuses:", str(e)[:120])

if os.environ.get("SPARK", "1") != "0":
    import sys
    from pyspark.sql import SparkSession
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from paimon_commit.spark import register
    spark = (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    q = new_path("b")
    (spark.createDataFrame([(1, "x")], "id long, p string").write.format("paimon")
     .option("paimon.s3.secret-key", "SECRET-B").mode("append").save(q))
    if "SECRET-B" in open(glob.glob(q + "/schema/schema-0")[0]).read():
        found.append("Spark .option('paimon.s3.secret-key') stored s3.secret-key")
    spark.stop()
print(found)
print("FINDING REPRODUCED" if found else "NO FINDING")
