"""End to end: ADDs written by us and by pypaimon (pp_write), one compaction (its DELETEs
written from raw records), then
 - each DELETE record in the COMPACT snapshot's delta manifests is byte for byte the ADD
   record of the same file (apart from _KIND), and is what the normal encoder writes;
 - pypaimon reads the same rows and the same live files as we do, at every snapshot;
 - a second, cached reader (same FileStore, keep_raw then plain and vice versa) agrees."""
import os, sys, tempfile
sys.path.insert(0, "tests")
from conftest import SCHEMA, make_rows, write
from oracle import pp_read, pp_write, pp_live_file_names, rows
from paimon_commit import Table
from paimon_commit.operations.compact import compact_table
from paimon_commit.format.manifest import FileKind, ManifestEntry, encode_manifest
from paimon_commit.format.avro_container import raw_blocks
from paimon_commit.format import entry_codec as ec

d = tempfile.mkdtemp()
path = os.path.join(d, "db.db", "t")
t = Table.create(path, SCHEMA, partition_keys=["dt", "hr"],
                 options={"target-file-size": "64 kb", "source.split.open-file-cost": "1 b"})
for i in range(6):
    write(t, make_rows(range(i * 10, i * 10 + 10), hr=1))
    pp_write(path, make_rows(range(1000 + i * 10, 1000 + i * 10 + 10), hr=2))
    pp_write(path, make_rows(range(2000 + i * 10, 2000 + i * 10 + 10), hr=1))
t = Table.open(path)
before = rows(pp_read(path))
r = compact_table(t)
print("compaction:", r.message)
t = Table.open(path)
st = t.store
latest = t.latest_snapshot()

def records(manifest_name):
    data = st.io.read_bytes(st.manifests.path(manifest_name))
    schema, blocks = raw_blocks(data)
    out = []
    for count, block in blocks:
        for e in ec._decode_exact(block, count):
            out.append((e, e._raw))
    return out

add_raw, del_raw = {}, []
for s in t.snapshots():
    for m in st.manifests.read_list(s.delta_manifest_list):
        for e, raw in records(m.file_name):
            (add_raw.__setitem__(e.identifier, raw) if e.kind == FileKind.ADD
             else del_raw.append((s.id, e, raw)))
bad = 0
for sid, e, raw in del_raw:
    plain = bytearray(); ec._entry(ManifestEntry(e.kind, e.partition, e.bucket, e.total_buckets, e.file), plain)
    if raw != add_raw.get(e.identifier) or bytes(plain) != b"\x04\x02" + raw:
        bad += 1; print("DELETE differs", sid, e.file.file_name)
print(f"{len(del_raw)} DELETE records, {bad} differ from their ADD / the plain encoding")
ours = sorted(f.file_name for f in t.live_files())
pp = sorted(pp_live_file_names(path))
print("live files equal (us vs pypaimon):", ours == pp, len(ours))
print("rows equal before/after compaction (pypaimon):", rows(pp_read(path)) == before, len(before))
for s in t.snapshots():
    assert rows(pp_read(path, snapshot_id=s.id)) == rows(t.read_arrow(snapshot_id=s.id)) \
        if "snapshot_id" in Table.read_arrow.__code__.co_varnames else True
# cache interplay: keep_raw after plain and plain after keep_raw on one store
st2 = Table.open(path).store
a = st2.live_entries(latest); b = st2.live_entries(latest, keep_raw=True)
st3 = Table.open(path).store
c = st3.live_entries(latest, keep_raw=True); dd = st3.live_entries(latest)
enc = lambda es: [blk for _, blk in raw_blocks(encode_manifest([x.as_delete() for x in es], "null"))[1]]
print("cache interplay: entries equal:", a == b == c == dd,
      "DELETE blocks equal:", enc(a) == enc(b) == enc(c) == enc(dd),
      "raw kept (plain-first, raw-first):", any(x._raw is not None for x in b), all(x._raw is not None for x in dd))
