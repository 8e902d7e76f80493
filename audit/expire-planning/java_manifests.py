"""Manifests Paimon Java 1.0 writes (zstd, the default; and deflate), read by the compiled
readers vs fastavro, their list counts vs the entries, and how their zstd blocks are framed.

Java's Avro zstandard codec writes each block through a ZstdOutputStream: a frame without
the content size in its header. The reused zstandard context (`dctx.decompress`) refuses
such a frame, so every block of a Java-written manifest raises there and is decompressed
again by the standard module: the 'reused context' speed-up never applies to Java tables,
and each block pays a failed attempt first.

Run: PYTHONPATH=$PWD:$PWD/tests/java .venv/bin/python audit/java_manifests.py
"""
import io
import os
import sys
import tempfile
import time

import fastavro
import pyarrow as pa
import zstandard

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tests", "java"))
from javaoracle import JavaOracle  # noqa: E402

from paimon_commit.format import avro_container as A, manifest as M  # noqa: E402

tmp = tempfile.mkdtemp()
sizes = {}
with JavaOracle() as j:
    for codec in ("zstd",):
        path = os.path.join(tmp, "wh", "db.db", codec)
        j.create_table(path, [("id", "BIGINT NOT NULL"), ("v", "STRING"),
                              ("dt", "STRING NOT NULL")], partition_keys=["dt"],
                       primary_keys=["id", "dt"],
                       options={"manifest.compression": codec, "bucket": "2",
                                "write-only": "true"})
        for i in range(4):
            ids = list(range(i * 3, i * 3 + 12))
            j.write(path, pa.table({"id": pa.array(ids, pa.int64()),
                                    "v": ["x" * (k % 90) for k in ids],
                                    "dt": [f"d{k % 3}" for k in ids]}))
        j.compact(path)          # DELETEs of the compacted files
        j.drop_partitions(path, [{"dt": "d0"}])
        sizes[codec] = path

bad = 0
total_deletes = 0
for codec, path in sizes.items():
    mdir = os.path.join(path, "manifest")
    frames = {"with size": 0, "without size": 0}
    for name in sorted(os.listdir(mdir)):
        data = open(os.path.join(mdir, name), "rb").read()
        raw = A.raw_blocks(data)
        meta, sync, pos = A._parse_header(data)
        if meta.get("avro.codec") == b"zstandard" and pos < len(data):
            # first block's frame
            count, p = A._long(data, pos)
            size, p = A._long(data, p)
            cs = zstandard.get_frame_parameters(data[p:p + size]).content_size
            frames["without size" if cs == zstandard.CONTENTSIZE_UNKNOWN else "with size"] += 1
        recs = list(fastavro.reader(io.BytesIO(data)))
        if name.startswith("manifest-list"):
            got = M.decode_manifest_list_refs(data, name)
            exp = [M.ManifestRef(r["_FILE_NAME"], r["_FILE_SIZE"], r["_NUM_ADDED_FILES"],
                                 r["_NUM_DELETED_FILES"]) for r in recs]
            if got != exp:
                bad += 1
                print("LIST MISMATCH", name)
            for ref in got:   # Java's counts vs the manifest's entries
                m = M.decode_manifest_files(open(os.path.join(mdir, ref.file_name), "rb").read(),
                                            ref.file_name)
                dels = sum(1 for e in m if e.kind == 1)
                total_deletes += dels
                if dels != ref.num_deleted_files or len(m) - dels != ref.num_added_files:
                    bad += 1
                    print("COUNT MISMATCH", name, ref, dels, len(m) - dels)
        elif name.startswith("manifest-"):
            got = M.decode_manifest_files(data, name)
            exp = M._file_refs(iter(recs), name)
            if [g._replace(extra_files=tuple(g.extra_files or ())) for g in got] != exp:
                bad += 1
                print("ENTRY MISMATCH", name)
    print(codec, "files:", len(os.listdir(mdir)), "zstd first-block frames:", frames)

# Cost of the failed context attempt on a Java-framed block vs the standard module alone.
data = open(os.path.join(sizes["zstd"], "manifest",
                         [n for n in os.listdir(os.path.join(sizes["zstd"], "manifest"))
                          if n.startswith("manifest-") and "list" not in n][0]), "rb").read()
meta, sync, pos = A._parse_header(data)
count, p = A._long(data, pos)
size, p = A._long(data, p)
blk = data[p:p + size]
for label, fn in (("avro_container._zstd_decompress", A._zstd_decompress),
                  ("standard module only", A._zstd.decompress),
                  ("reused context, decompressobj()", lambda b, d=zstandard.ZstdDecompressor():
                   d.decompressobj().decompress(b))):
    t = time.perf_counter()
    for _ in range(5000):
        fn(blk)
    print(f"{label}: {(time.perf_counter() - t) / 5000 * 1e6:.1f} us per Java block")
# A whole Java manifest, through decode_manifest_files (compiled reader) as planning reads it.
t = time.perf_counter()
for _ in range(2000):
    M.decode_manifest_files(data, "m")
print(f"decode_manifest_files on a Java manifest: {(time.perf_counter() - t) / 2000 * 1e6:.1f} us")
print("DELETE entries checked against list counts (with repeats across lists):",
      total_deletes)
print("mismatches:", bad)
sys.exit(1 if bad else 0)
