"""Check: damaged manifests (byte flips, insertions, deletions, block counts changed, files
truncated or extended) decoded by decode_manifest (entry_codec, falling back to fastavro)
and by the previous path (fastavro records + ManifestEntry.from_record, as decode_manifest
was at 35beaf2). Any difference - one reads and the other fails, different errors, or both
read different entries - is printed. Differences whose only cause is a value outside the
Avro long range are finding f1 (overlong varints) and are counted separately.

Usage: c3_fuzz_decoder_vs_fastavro.py [seconds per codec, default 15] [seed]"""
import dataclasses
import os
import random
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))
from tests.unit.test_entry_codec import random_entries  # noqa: E402

from paimon_commit.errors import CorruptMetadataError  # noqa: E402
from paimon_commit.format.avro_container import _header  # noqa: E402
from paimon_commit.format.entry_codec import _long, _rlong  # noqa: E402
from paimon_commit.format.manifest import (DataFileMeta, ManifestEntry, _decode,  # noqa: E402
                                           decode_manifest, encode_manifest)

LONG = range(-2 ** 63, 2 ** 63)


def old(data):
    try:
        return "ok", [ManifestEntry.from_record(r) for r in _decode(data, "m")]
    except (KeyError, TypeError):
        return "ERR", "CorruptMetadataError"
    except Exception as e:   # noqa: BLE001
        return "ERR", type(e).__name__


def new(data):
    try:
        return "ok", decode_manifest(data, "m")
    except Exception as e:   # noqa: BLE001
        return "ERR", type(e).__name__


def ints(o):
    if isinstance(o, bool) or o is None:
        return
    if isinstance(o, int):
        yield o
    elif isinstance(o, dict):
        for v in o.values():
            yield from ints(v)
    elif isinstance(o, (list, tuple)):
        for v in o:
            yield from ints(v)


def mutate(rng, data0, hl):
    d = bytearray(data0)
    op = rng.random()
    if op < 0.15:
        _, p = _rlong(bytes(d), hl)
        d[hl:p] = _long(rng.choice([0, 1, 7, 9, 29, 31, 100, 2 ** 31]))
    elif op < 0.25:
        d = d[:rng.randrange(hl, len(d))]
    elif op < 0.35:
        d += os.urandom(rng.randrange(1, 40))
    else:
        for _ in range(rng.choice([1, 1, 2, 3])):
            i = rng.randrange(hl, len(d))
            r = rng.random()
            if r < 0.6:
                d[i] = rng.randrange(256)
            elif r < 0.8:
                del d[i]
            else:
                d.insert(i, rng.randrange(256))
    return bytes(d)


def main():
    secs = float(sys.argv[1]) if len(sys.argv) > 1 else 15
    seed = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    rng = random.Random(seed)
    simple = [ManifestEntry(rng.choice([0, 1]), os.urandom(rng.choice([0, 16])), 0, -1,
                            DataFileMeta(f"data-{i}.parquet", 1000 + i, 10, 0,
                                         creation_time=1_700_000_000_000 + i))
              for i in range(30)]
    other, f1_class = {}, 0
    for codec in ("null", "deflate", "zstandard"):
        bases = [encode_manifest(simple, codec), encode_manifest(random_entries(8, seed), codec)]
        t, n = time.time(), 0
        while time.time() - t < secs:
            data0 = rng.choice(bases)
            d = mutate(rng, data0, _header(data0)[2])
            n += 1
            a, b = old(d), new(d)
            if a == b:
                continue
            if a[0] == b[0] == "ok" and len(a[1]) == len(b[1]):
                x, y = next((x, y) for x, y in zip(a[1], b[1]) if x != y)
                if any(v not in LONG for v in ints(dataclasses.asdict(y))):
                    f1_class += 1
                    continue
            key = (codec, a[0] if a[0] == "ok" else a[1], b[0] if b[0] == "ok" else b[1])
            other.setdefault(key, d.hex()[:120])
        print(f"{codec}: {n} damaged manifests")
    print(f"differences caused by values outside int64 (finding f1): {f1_class}")
    for k, v in other.items():
        print("  other difference", k, v)
    if other:
        print(f"FINDING: {len(other)} kind(s) of decoding difference besides f1")
    else:
        print("NO FINDING (besides f1's class)")


if __name__ == "__main__":
    main()
