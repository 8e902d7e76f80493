"""F-codec: raw records (entry._raw) vs the normal encoder, under valid and mutated blocks.

Properties checked:
 P1 decode(keep_raw) of our own files: every entry has _raw, equals the plain decoding and
    fastavro's reading; raw == what _entry writes for the entry's fields (an un-raw copy).
 P2 as_delete of a raw entry encodes to exactly the normal encoding of
    ManifestEntry(DELETE, same fields) and to the ADD's bytes apart from _KIND.
 P3 mutated blocks (byte flips, varints lengthened, inserted/removed bytes): whenever the
    exact decoder returns, raw == re-encoding of the fields; values == plain decoder ==
    old (53adcc2) decoder == fastavro schemaless reading of the block.
 P4 dataclasses.replace / copy / pickle drop _raw; equality/hash/repr equal cls(...)."""
import copy, dataclasses, io, pickle, random, sys
import fastavro
sys.path.insert(0, "audit/issue26c/old")
import old_entry_codec
from paimon_commit.format import entry_codec as ec
from paimon_commit.format.avro_container import raw_blocks
from paimon_commit.format.manifest import (_PARSED_ENTRY, FileKind, ManifestEntry,
                                           DataFileMeta, SimpleStats, encode_manifest,
                                           decode_manifest)
from tests.unit.test_entry_codec import random_entries

def plain_copy(e):
    return ManifestEntry(e.kind, e.partition, e.bucket, e.total_buckets, e.file)

def enc1(e):
    out = bytearray(); ec._entry(e, out); return bytes(out)

def fa_read(block, count):
    bio = io.BytesIO(block)
    recs = [fastavro.schemaless_reader(bio, _PARSED_ENTRY, _PARSED_ENTRY) for _ in range(count)]
    if bio.tell() != len(block):
        raise ValueError("fastavro left bytes")
    return [ManifestEntry.from_record(r) for r in recs]

bad = {"P1": 0, "P2": 0, "P3": 0, "P4": 0}
stats = {"mut": 0, "exact_ok": 0, "exact_norw": 0, "fa_ok": 0}
for seed in range(40):
    ents = random_entries(30, seed)
    for codec in ("null", "zstandard"):
        data = encode_manifest(ents, codec)
        got = decode_manifest(data, "m", keep_raw=True)
        plain = decode_manifest(data, "m")
        if got != ents or plain != ents:
            bad["P1"] += 1; print("P1 values", seed)
        for e in got:
            if e._raw is None or enc1(e)[:0] != b"" or e._raw != enc1(plain_copy(e))[len(enc1(plain_copy(e))) - len(e._raw):]:
                bad["P1"] += 1; print("P1 raw", seed); break
            d = e.as_delete()
            want = ManifestEntry(FileKind.DELETE, e.partition, e.bucket, e.total_buckets, e.file)
            a = encode_manifest([d], "null"); b = encode_manifest([want], "null")
            if a[:-16 - 0].split(a[-16:])[1:] != b[:].split(b[-16:])[1:] and \
               raw_blocks(a)[1] != raw_blocks(b)[1]:
                bad["P2"] += 1; print("P2", seed)
            if enc1(d)[2:] != enc1(plain_copy(e))[2:] or enc1(d)[:2] != b"\x04\x02":
                bad["P2"] += 1; print("P2b", seed)
        # P4
        e = got[0]
        for other in (dataclasses.replace(e), copy.copy(e), copy.deepcopy(e),
                      pickle.loads(pickle.dumps(e)), pickle.loads(pickle.dumps(e.as_delete()))):
            if other._raw is not None or "_raw" in other.__dict__:
                bad["P4"] += 1; print("P4 raw survived", type(other))
        pc = plain_copy(e)
        if not (e == pc and hash(e) == hash(pc) and repr(e) == repr(pc)
                and pickle.dumps(e) == pickle.dumps(pc)
                and hash(e.file) == hash(DataFileMeta(**{f.name: getattr(e.file, f.name) for f in dataclasses.fields(DataFileMeta)}))):
            bad["P4"] += 1; print("P4 eq/hash/repr/pickle", seed)
        r = dataclasses.replace(e, file=dataclasses.replace(e.file, file_name="other.parquet"))
        if enc1(r) != enc1(ManifestEntry(e.kind, e.partition, e.bucket, e.total_buckets, r.file)):
            bad["P4"] += 1; print("P4 replace kept raw")

# P3 mutations
rng = random.Random(7)
def lengthen(b, pos):
    """make the varint at pos one byte longer, same value (non-shortest)."""
    end = pos
    while b[end] & 0x80: end += 1
    return b[:end] + bytes([b[end] | 0x80, 0]) + b[end + 1:]

for seed in range(300):
    ents = random_entries(rng.choice([1, 3]), 1000 + seed)
    data = encode_manifest(ents, "null")
    _, blocks = raw_blocks(data)
    count, block = blocks[0]
    for _ in range(60):
        b = bytearray(block); op = rng.random(); p = rng.randrange(len(b))
        if op < 0.4: b[p] = rng.randrange(256)
        elif op < 0.6: b = bytearray(lengthen(bytes(b), p))
        elif op < 0.8: b.insert(p, rng.randrange(256))
        else: del b[p]
        b = bytes(b); stats["mut"] += 1
        def tryit(f):
            try: return f()
            except Exception as x: return x
        ex = tryit(lambda: ec._decode_exact(b, count))
        pl = tryit(lambda: ec._decode_plain(b, count))
        od = tryit(lambda: old_entry_codec.decode_entries(b, count))
        fa = tryit(lambda: fa_read(b, count))
        kr = tryit(lambda: ec.decode_entries(b, count, True))
        if isinstance(ex, list):
            stats["exact_ok"] += 1
            for e in ex:
                if e._raw != enc1(plain_copy(e))[len(enc1(plain_copy(e))) - len(e._raw):] or \
                   len(enc1(plain_copy(e))) - len(e._raw) != len(enc1(plain_copy(e))) - len(e._raw):
                    bad["P3"] += 1; print("P3 raw != re-encoding", seed, e); break
                full = enc1(plain_copy(e))
                if full != b"\x04" + ec._long(e.kind) + e._raw:
                    bad["P3"] += 1; print("P3 head", seed)
        if isinstance(pl, list) != isinstance(od, list) or (isinstance(pl, list) and pl != od):
            bad["P3"] += 1; print("P3 plain vs old", seed, type(pl), type(od))
        if isinstance(pl, list):
            if isinstance(fa, list):
                stats["fa_ok"] += 1
                if fa != pl:
                    bad["P3"] += 1; print("P3 plain vs fastavro", seed)
        if isinstance(kr, list) and isinstance(pl, list) and kr != pl:
            bad["P3"] += 1; print("P3 keep_raw vs plain values", seed)
        if isinstance(kr, list) != isinstance(pl, list):
            bad["P3"] += 1; print("P3 keep_raw vs plain accept", seed, kr, pl)
        if isinstance(kr, list) and not isinstance(ex, list):
            stats["exact_norw"] += 1
            if any(e._raw is not None for e in kr):
                bad["P3"] += 1; print("P3 fallback kept raw")
print("violations:", bad)
print("stats:", stats)
