"""C4 (check): bench_s3's commit_expire_one accounting after b347868. The (b) scenario of
bench_s3 (a commit object in use whose maintenance expires one snapshot per commit) on a
moto server, with a smaller history (N snapshots, argv[1], default 60); every request printed
with whether bench_s3._lease() counts it apart. What must hold: only `.maintenance/` requests
(lease records, waiter records, expiring marks) are set apart."""
import collections
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path[:0] = [ROOT, os.path.join(ROOT, "tests"), os.path.join(ROOT, "benchmarks")]

import boto3  # noqa: E402
from tests.objectstore.moto_server import ACCESS_KEY, SECRET_KEY, MotoServer, aws_env  # noqa
import bench_s3  # noqa: E402

N = int(sys.argv[1]) if len(sys.argv) > 1 else 60
server = MotoServer(os.path.join(tempfile.mkdtemp(), "moto.log"))
try:
    os.environ.update(aws_env(server.url))
    boto3.client("s3", endpoint_url=server.url, aws_access_key_id=ACCESS_KEY,
                 aws_secret_access_key=SECRET_KEY, region_name="us-east-1"
                 ).create_bucket(Bucket="bench26a")
    import pyarrow as pa
    from paimon_commit import Table
    schema = pa.schema([("id", pa.int64()), ("dt", pa.string())])
    t = Table.create("s3://bench26a/db.db/t", schema, ["dt"],
                     options={"snapshot.num-retained.min": "10"})
    with t.new_commit(options={"write-only": "true"}) as c:
        for i in range(N):
            bench_s3._write_commit(t, i, c)
    c = t.new_commit(options={"snapshot.num-retained.max": str(N),
                              "snapshot.expire.limit": "10"})
    bench_s3._write_commit(t, N + 1, c)     # warms the commit object
    mark = server.mark()
    bench_s3._write_commit(t, N + 2, c)
    reqs = server.requests_since(mark, settle=0.2)
    c.close()
    s = bench_s3.summarize(reqs)
    apart = [(m, p) for m, p, _ in reqs if bench_s3._lease(p)]
    wrong = [(m, p) for m, p in apart if "/.maintenance" not in p.split("?")[0]
             and not any(x in p for x in ("prefix=db.db/t/.maintenance/",
                                                "prefix=db.db%2Ft%2F.maintenance%2F"))]
    print(f"N={N}: requests {s['requests']}, lease_requests {s['lease_requests']}, "
          f"requests_outside_lease {s['requests_outside_lease']}")
    print("set apart, by kind:", dict(collections.Counter(
        (m, p.split("?")[0].rsplit("/", 1)[-1].split("-")[0] or p.split("?")[1][:60])
        for m, p in apart)))
    for m, p in apart:
        print("   apart:", m, p[:120])
    print("set apart but not under .maintenance/:", wrong)
    print("outside, by kind:", s["by_kind"])
finally:
    server.stop()
