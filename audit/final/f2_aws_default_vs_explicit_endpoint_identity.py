"""Idea (c4 follow-up): normal_endpoint unifies trailing '/', case and default ports, but the
commit record and the lease key an S3 table by the endpoint as configured. On AWS one bucket is
reached with no endpoint at all (the SDK default), with `s3.endpoint=https://s3.amazonaws.com`,
with the regional `https://s3.us-east-1.amazonaws.com`, or a fully qualified `...com.` host.
Two jobs on one table configured these ways get two identities: by c4's mechanism a repeat of
the same messages through the other configuration is not recognised (rows published twice), and
a live lease holder's record is "another table's" (advice to `lease --break` it), or no
exclusion. Offline: only the identities are computed (no request is made)."""
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
distinct = {v for v in ids.values()}
if len(distinct) > 1:
    print(f"FINDING (duplicate rows / lease exclusion): one AWS bucket and prefix, "
          f"{len(distinct)} identities for the commit record and the lease; a repeat through "
          f"another configuration is published again, a live holder is another table's")
else:
    print("NO FINDING")
