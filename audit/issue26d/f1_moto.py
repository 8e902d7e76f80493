"""F1 on the object-store path (ObjectStoreFileIO over moto's S3 server, read_concurrency 32,
the store's own code paths): the tag listing of `_roots_of`'s wave answered before the
snapshot listing; meanwhile Paimon Java creates tag T on snapshot 1 and expires snapshot 1.
Orphan cleanup deletes snapshot 1's manifest lists, which tag T needs.

Run from the repository root's audit/issue26d directory (needs moto, boto3: the venv has them).
"""
import os
import sys
import tempfile
import threading
import time
import uuid

from common import ROOT, CODE, describe, make_rows, SCHEMA, threads_now  # noqa: F401

sys.path.insert(1, ROOT)   # tests.objectstore
import boto3  # noqa: E402

from tests.objectstore.moto_server import ACCESS_KEY, SECRET_KEY, MotoServer, aws_env  # noqa
from paimon_commit import Table  # noqa: E402
from paimon_commit.io.object_store import ObjectStoreFileIO  # noqa: E402
from paimon_commit.operations.orphan import CleanContext, OrphanFilesCleaner  # noqa: E402


def main(inject_at_all=True):
    server = MotoServer(os.path.join(tempfile.mkdtemp(), "moto.log"))
    try:
        os.environ.update(aws_env(server.url))
        client = boto3.client("s3", endpoint_url=server.url, aws_access_key_id=ACCESS_KEY,
                              aws_secret_access_key=SECRET_KEY, region_name="us-east-1")
        bucket = f"t-{uuid.uuid4().hex[:12]}"
        client.create_bucket(Bucket=bucket)
        uri = f"s3://{bucket}/db.db/t"
        Table.create(uri, SCHEMA, partition_keys=["dt", "hr"])
        for ids, ow in (([1], False), ([2], True)):   # 1: file A; 2: overwrite (A not live)
            t = Table.open(uri)
            w = t.new_writer()
            w.write_arrow(make_rows(ids))
            with t.new_commit() as c:
                (c.overwrite if ow else c.commit)(w.prepare_commit())
        time.sleep(2.2)   # last-modified has 1 s resolution
        cutoff = int(time.time() * 1000) - 1000
        k = "db.db/t/"

        def inject():   # Paimon Java: createTag T on 1, then expire 1 (no lease)
            body = client.get_object(Bucket=bucket, Key=k + "snapshot/snapshot-1")["Body"].read()
            client.put_object(Bucket=bucket, Key=k + "tag/tag-T", Body=body)
            client.delete_object(Bucket=bucket, Key=k + "snapshot/snapshot-1")
            client.put_object(Bucket=bucket, Key=k + "snapshot/EARLIEST", Body=b"2")

        done = threading.Event()
        state = {"snap": 0}

        class Hook(ObjectStoreFileIO):
            def list_names(self, path):
                p = path.rstrip("/")
                if p.endswith("/db.db/t/snapshot"):
                    state["snap"] += 1
                    if state["snap"] == 2:      # the roots phase's listing (1: the mark)
                        done.wait(20)
                out = super().list_names(path)
                if p.endswith("/db.db/t/tag") and not done.is_set():
                    try:
                        if inject_at_all:
                            inject()
                    finally:
                        done.set()
                return out

        io = Hook.from_uri(uri)
        print(f"io: {type(io).__mro__[1].__name__}, read_concurrency={io.read_concurrency}, "
              f"removes_dirs={getattr(io, 'removes_dirs', 'n/a')}")
        r = OrphanFilesCleaner(CleanContext(uri, older_than_ms=cutoff, allow_recent_cutoff=True,
                                            file_io=io)).clean()
        print(f"orphan run: {describe(r)}")
        keys = sorted(o["Key"][len(k):] for o in client.list_objects_v2(
            Bucket=bucket, Prefix=k)["Contents"])
        print(f"tag/tag-T exists: {'tag/tag-T' in keys}; snapshot-1 exists: "
              f"{'snapshot/snapshot-1' in keys}")
        chk = Table.open(uri).check()
        print(f"check(): healthy={chk.healthy} problems="
              f"{[(p.path, p.kind, p.state) for p in chk.problems][:3]}")
        try:
            ids = sorted(Table.open(uri).read_arrow(tag="T").column("id").to_pylist())
            print(f"read_arrow(tag='T'): {ids}")
        except Exception as e:  # noqa: BLE001
            print(f"read_arrow(tag='T') FAILS: {type(e).__name__}: {str(e)[:200]}")
        print(f"threads left: {[t for t in threads_now() if 'paimon' in t]}")
    finally:
        server.stop()


if __name__ == "__main__":
    main()
