"""Manifests and lists pypaimon 2.1 writes (codecs zstd, deflate, null; appends, an
overwrite and a partition drop, so DELETE entries exist): the compiled readers give what
fastavro gives, and the lists' _NUM_DELETED_FILES equal the DELETE entries they count.

Run: PYTHONPATH=$PWD:$PWD/tests .venv/bin/python audit/pypaimon_manifests.py
"""
import io
import os
import shutil
import sys
import tempfile

import fastavro
import pyarrow as pa

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tests"))
from conftest import SCHEMA, make_rows  # noqa: E402
from oracle import pp_create, pp_drop, pp_write  # noqa: E402

from paimon_commit.format import avro_container as A, manifest as M  # noqa: E402

bad = deletes = files = compiled = 0
tmp = tempfile.mkdtemp()
for codec in ("zstd", "deflate", "null"):
    path = os.path.join(tmp, "wh", "db.db", f"t_{codec}")
    pp_create(path, SCHEMA, ["dt", "hr"], {"manifest.compression": codec})
    for i in range(5):
        pp_write(path, make_rows(range(i * 10, i * 10 + 5), hr=i % 3, name="y" * (i * 30)))
    pp_write(path, make_rows([500], hr=1), overwrite={"hr": 1})
    pp_drop(path, [{"hr": 2}])
    mdir = os.path.join(path, "manifest")
    for name in sorted(os.listdir(mdir)):
        data = open(os.path.join(mdir, name), "rb").read()
        recs = list(fastavro.reader(io.BytesIO(data)))
        files += 1
        if name.startswith("manifest-list"):
            got = M.decode_manifest_list_refs(data, name)
            exp = [M.ManifestRef(r["_FILE_NAME"], r["_FILE_SIZE"], r["_NUM_ADDED_FILES"],
                                 r["_NUM_DELETED_FILES"]) for r in recs]
            compiled += M._compiled_list_refs(data) is not None
            if got != exp:
                bad += 1
                print("LIST MISMATCH", codec, name)
            for ref in got:
                m = M.decode_manifest_files(open(os.path.join(mdir, ref.file_name), "rb")
                                            .read(), ref.file_name)
                d = sum(1 for e in m if e.kind == 1)
                deletes += d
                if d != ref.num_deleted_files or len(m) - d != ref.num_added_files:
                    bad += 1
                    print("COUNT MISMATCH", codec, name, ref, d)
        elif name.startswith("manifest-"):
            got = M.decode_manifest_files(data, name)
            compiled += M._compiled_file_refs(data, name) is not None
            exp = M._file_refs(iter(recs), name)
            if [g._replace(extra_files=tuple(g.extra_files or ())) for g in got] != exp:
                bad += 1
                print("ENTRY MISMATCH", codec, name)
print(f"files {files}, read by the compiled readers {compiled}, DELETE entries counted "
      f"{deletes}, mismatches {bad}")
shutil.rmtree(tmp)
sys.exit(1 if bad else 0)
