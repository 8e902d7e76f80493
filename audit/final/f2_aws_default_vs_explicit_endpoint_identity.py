"""Idea (c4 follow-up): normal_endpoint unifies trailing '/', case and default ports, but the
commit record and the lease key an S3 table by the endpoint as configured. On AWS one bucket is
reached with no endpoint at all (the SDK default), with `s3.endpoint=https://s3.amazonaws.com`,
with the regional `https://s3.us-east-1.amazonaws.com`, or a fully qualified `...com.` host.
Two jobs on one table configured these ways get two identities: by c4's mechanism a repeat of
the same messages through the other configuration is not recognised (rows published twice), and
a live lease holder's record is "another table's" (advice to `lease --break` it), or no
exclusion. Offline: only the identities are computed (no request is made). Rewritten after the
fix to check behaviour: one commit-record key, and every lease record read as this table's."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import common  # noqa: F401,E402  (sys.path)

os.environ.setdefault("AWS_ACCESS_KEY_ID", "x")
os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "y")
os.environ.setdefault("AWS_REGION", "us-east-1")
os.environ.pop("AWS_ENDPOINT_URL", None)

from paimon_commit.io import for_path  # noqa: E402
from paimon_commit.lease import table_identity as lease_identity  # noqa: E402
from paimon_commit.operations.commit_record import table_identity  # noqa: E402

uri = "s3://bkt/wh/db.db/t"
spellings = [{}, {"s3.endpoint": "https://s3.amazonaws.com"},
             {"s3.endpoint": "https://s3.us-east-1.amazonaws.com"},
             {"s3.endpoint": "https://s3.amazonaws.com."}]
ids = {}
for o in spellings:
    io = for_path(uri, o)
    ids[str(o)] = (table_identity(io), lease_identity(io))
    print(f"{o or '(no endpoint: AWS default)'}: commit key {ids[str(o)][0]!r}; "
          f"lease key {ids[str(o)][1]!r}")
# What decides behaviour: the commit record's key (a repeat through another configuration is
# recognised only if it is the same) and whether a lease record written through one spelling
# is this table's for a process using another (lease._same_table; the lease record itself
# names the endpoint it was written through, by design).
from paimon_commit.lease import _same_table  # noqa: E402
commit_keys = {v[0] for v in ids.values()}
foreign = [(a, b) for a in spellings for b in spellings
           if not _same_table(ids[str(a)][1], ids[str(b)][1], for_path(uri, b))]
if len(commit_keys) > 1 or foreign:
    print(f"FINDING (duplicate rows / lease exclusion): one AWS bucket and prefix, "
          f"{len(commit_keys)} commit-record keys; lease records read as another table's: "
          f"{foreign}")
else:
    print("NO FINDING")
