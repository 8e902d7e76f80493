"""A4. Accumulation: every failed batch write leaves `.maintenance/spark-aborted-<marker>` for
good (datasource.py: "The record stays (a few bytes per failed write)"). Checked: does any
maintenance operation remove or trip over them (orphan cleanup with every file aged 3 days,
snapshot expiration, `check`, the lease), and does a table with records still take writes,
tags and a rollback?"""
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import *  # noqa
from paimon_commit.operations.tag_ops import TagOperations

t = new_table("t", KEEP)
root = t.store.root
write(t, 0)
for i in range(3):                                   # three failed Spark writes
    w = batch_writer(root)
    msg = w.write(iter(batches([100 + i])))
    w.abort([msg])
recs = spark_records(root)
write(Table.open(root), 10)
age_all(root)
rc_o, doc_o, _ = orphan_clean(root)
rc_e, _, err_e = cli("expire-snapshots", root, "--retain-max", "1", "--retain-min", "1")
rc_c, problems = check_problems(root)
TagOperations(Table.open(root).store).create_tag("t1", 2)
TagOperations(Table.open(root).store).rollback_to(tag="t1")
after = spark_records(root)
print("records after 3 failed writes:", len(recs), "| after orphan cleanup (rc", rc_o,
      "), expire (rc", rc_e, "), check (rc", rc_c, ", problems", len(problems or []),
      "), tag + rollback:", len(after))
print("orphans deleted:", doc_o.get("deleted_files") if isinstance(doc_o, dict) else doc_o,
      "| ids now:", ids(root))
ok = len(after) == 3 and rc_o == 0 and rc_e == 0 and rc_c == 0 and ids(root) == [0, 1, 2, 10, 11, 12]
print("OK (as documented): nothing removes the records and nothing trips over them; they only "
      "grow (one per failed write) and are listed by every take of the lease (a3)" if ok
      else "FINDING: see above")
