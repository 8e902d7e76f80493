"""Hand-encoded manifests with what fastavro's writer never produces but Avro allows:
array/map blocks with a negative count followed by their byte size, several array blocks,
an empty data block (count 0), non-canonical (padded) varints, and a container whose
header is byte-identical to one already cached but with another sync marker. The compiled
reader's answer must equal fastavro's, or the file must fall back to fastavro.

Run: PYTHONPATH=$PWD .venv/bin/python audit/handmade_blocks.py
"""
import io
import json
import os
import sys

import fastavro

from paimon_commit.format import manifest as M


def zz(n, pad=0):
    n = (n << 1) ^ (n >> 63)
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n or pad:
            out.append(b | 0x80)
            if not n:
                pad -= 1
                while pad > 0:
                    out.append(0x80)
                    pad -= 1
                out.append(0)
                return bytes(out)
        else:
            out.append(b)
            return bytes(out)


def s(x, pad=0):
    x = x.encode() if isinstance(x, str) else x
    return zz(len(x), pad) + x


SCHEMA = {"type": "record", "name": "ManifestEntry", "fields": [
    {"name": "_VERSION", "type": "int"}, {"name": "_KIND", "type": "int"},
    {"name": "_PARTITION", "type": "bytes"}, {"name": "_BUCKET", "type": "int"},
    {"name": "_FILE", "type": {"type": "record", "name": "DataFileMeta", "fields": [
        {"name": "_FILE_NAME", "type": "string"}, {"name": "_FILE_SIZE", "type": "long"},
        {"name": "_M", "type": {"type": "map", "values": "long"}},
        {"name": "_LEVEL", "type": "int"},
        {"name": "_EXTRA_FILES", "type": {"type": "array", "items": "string"}},
        {"name": "_EXTERNAL_PATH", "type": ["string", "null"]},
    ]}}]}


def record(name, extras, negative, pad=0):
    body = zz(2, pad) + zz(1) + s(b"") + zz(0) + s(name, pad) + zz(123)
    # map in two blocks, the first with a negative count and its size
    kv = s("k") + zz(5)
    body += (zz(-1) + zz(len(kv)) + kv if negative else zz(1) + kv) + zz(1) + s("j") + zz(6)
    body += zz(0) + zz(3)
    # extra files: one block per file, negative counts when asked
    for e in extras:
        item = s(e)
        body += zz(-1) + zz(len(item)) + item if negative else zz(1) + item
    body += zz(0)
    body += zz(1, pad)   # union branch 1: null (padded varint when pad)
    return body


def container(blocks, sync):
    meta = {"avro.schema": json.dumps(SCHEMA).encode(), "avro.codec": b"null"}
    out = b"Obj\x01" + zz(len(meta))
    for k, v in meta.items():
        out += s(k) + s(v)
    out += zz(0) + sync
    for count, body in blocks:
        out += zz(count) + zz(len(body)) + body + sync
    return out


def check(label, data):
    exp = M._file_refs(fastavro.reader(io.BytesIO(data)), "x")
    got = M.decode_manifest_files(data, "x")
    fix = [e._replace(extra_files=tuple(e.extra_files or ())) for e in got]
    ok = fix == exp
    print(("ok      " if ok else "MISMATCH"), label, [(e.file_name, e.extra_files) for e in got])
    return ok


ok = True
r1 = record("data-1.parquet", ["a.index", "b.index"], negative=True)
r2 = record("data-2.parquet", [], negative=False)
sync_a, sync_b = os.urandom(16), os.urandom(16)
ok &= check("negative array/map block counts", container([(2, r1 + r2)], sync_a))
ok &= check("same header, other sync marker", container([(1, r1), (1, r2)], sync_b))
ok &= check("an empty block between two", container([(1, r1), (0, b""), (1, r2)], sync_a))
ok &= check("padded varints (non-canonical)",
            container([(1, record("data-3.parquet", ["c"], True, pad=2))], sync_a))
sys.exit(0 if ok else 1)
