"""Idea w4: request counts on the moto S3 server (tests/objectstore's MotoServer).
a) an ordinary write-only commit of 20 fresh files (post-commit maintenance off): requests by
   method, and any HEAD/GET on a data file (the old-file check must not look at fresh files).
b) the same with the files' creation time 2 h back (the check looks: one HEAD per file).
c) read_bytes_at_most on a 200-byte and on a 2 MiB object: requests made (the one-GET claim).
Run with PYTHONPATH at this tree; `W4_BASE=1` only labels the output (run it on an export of
2cb0e96 to compare: see README)."""
import collections
import os
import sys
import tempfile
import time
import dataclasses

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.getcwd()
for p in (ROOT, os.path.join(ROOT, "tests")):
    if p not in sys.path:
        sys.path.insert(0, p)
import boto3  # noqa: E402
from tests.objectstore.moto_server import ACCESS_KEY, SECRET_KEY, MotoServer, aws_env  # noqa
from conftest import make_rows  # noqa: E402

import paimon_commit  # noqa: E402
print("paimon_commit from", os.path.dirname(paimon_commit.__file__))
tmp = tempfile.mkdtemp(prefix="audit25w-moto-")
server = MotoServer(os.path.join(tmp, "moto.log"))
try:
    os.environ.update(aws_env(server.url))
    s3 = boto3.client("s3", endpoint_url=server.url, aws_access_key_id=ACCESS_KEY,
                      aws_secret_access_key=SECRET_KEY, region_name="us-east-1")
    s3.create_bucket(Bucket="bkt-audit")
    from paimon_commit import Table
    opts = {}
    try:
        t = Table.create("s3://bkt-audit/wh/db.db/t", make_rows([]).schema, partition_keys=["dt", "hr"],
                         options=opts)
    except Exception as e:  # noqa: BLE001
        print("create failed:", e)
        raise
    w = t.new_writer(); w.write_arrow(make_rows([1]))
    t.new_commit(commit_user="u").commit(w.prepare_commit())

    def run(label, age_h):
        msgs = []
        for i in range(20):
            w = t.new_writer(); w.write_arrow(make_rows([100 + i])); msgs += w.prepare_commit()
        if age_h:
            msgs = [dataclasses.replace(m, new_files=tuple(dataclasses.replace(
                f, creation_time=f.creation_time - int(age_h * 3600_000)) for f in m.new_files))
                    for m in msgs]
        mark = server.mark()
        r = t.new_commit(commit_user="u").commit(msgs)
        reqs = server.requests_since(mark, settle=0.3)
        by = collections.Counter(m for m, _, _ in reqs)
        data = [(m, p) for m, p, _ in reqs if "/bucket-" in p and m in ("HEAD", "GET")]
        print(f"{label}: snapshot {getattr(r, 'snapshot_id', r)}; requests {dict(by)}; HEAD/GET on data files "
              f"{len(data)}")
        return len(data)
    a = run("a fresh files", 0)
    b = run("b files 2 h old", 2)
    io = t.store.io
    s3.put_object(Bucket="bkt-audit", Key="wh/db.db/t/.maintenance/small", Body=b"x" * 200)
    s3.put_object(Bucket="bkt-audit", Key="wh/db.db/t/.maintenance/big", Body=b"x" * (2 << 20))
    c = []
    for name in ("small", "big"):
        mark = server.mark()
        try:
            got = len(io.read_bytes_at_most(io.join(io.join(io.root, ".maintenance"), name), 65536))
        except Exception as e:  # noqa: BLE001
            got = type(e).__name__
        reqs = server.requests_since(mark, settle=0.3)
        c.append(len(reqs))
        print(f"c {name}: read_bytes_at_most -> {got}; requests {[(m, s) for m, _, s in reqs]}")
finally:
    server.stop() if hasattr(server, "stop") else None
probs = []
if a:
    probs.append(f"a: a commit of fresh files made {a} HEAD/GET on data files")
if any(n != 1 for n in c):
    probs.append(f"c: read_bytes_at_most made {c} requests (small, big)")
print(("FINDING: " + "; ".join(probs)) if probs else "OK")
