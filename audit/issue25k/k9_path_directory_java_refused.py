"""A healthy table written by the Paimon Java the project tests against (the bridge jar of
tests/java) with `data-file.path-directory = data` is refused by rollback_to: that Java
version keeps the files at <root>/dt=.../bucket-0 (it does not apply the option), this
library looks under <root>/data/dt=.../bucket-0, finds nothing and refuses with "its data file
... does not exist (an expiration stopped half-way deleted it, or it was lost)" -- blaming an
expiration for a table Java reads in full. (check reports every file missing too: the layout
assumption is library-wide; rollback_to's message should at least not name a cause it did
not establish. Needs a JVM.)"""
import os, sys, tempfile
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import *  # noqa
sys.path.insert(0, os.path.join(ROOT, "tests", "java"))
from javaoracle import JavaOracle

j = JavaOracle()
try:
    base = tempfile.mkdtemp(prefix="audit25k-")
    path = os.path.join(base, "wh", "db.db", "t")
    os.makedirs(os.path.dirname(path))
    j.create_table(path, [("id", "BIGINT NOT NULL"), ("v", "STRING"), ("dt", "STRING NOT NULL")],
                   partition_keys=["dt"], primary_keys=("id", "dt"),
                   options={"bucket": "1", "data-file.path-directory": "data", **KEEP})
    def rows_(ids, tag):
        return pa.table({"id": pa.array(ids, pa.int64()), "v": [f"{tag}{i}" for i in ids],
                         "dt": ["2024-01-01"] * len(ids)})
    j.write(path, rows_(list(range(20)), "a"))
    j.write(path, rows_([1, 2], "b"))
    j.write(path, rows_([3], "c"))
    print("data files as Java wrote them:", sorted(data_files(path)))
    print("Java reads snapshot 2:", j.read(path, snapshot_id=2).num_rows, "rows")
    try:
        Table.open(path).rollback_to(snapshot_id=2)
        print("OK: rollback_to(2) of the healthy table went through; Java reads",
              j.read(path).num_rows)
    except ValueError as e:
        print("FINDING: a healthy Java-written table (Java reads every snapshot) is refused:", e)
finally:
    j.close()
