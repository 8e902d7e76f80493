"""Check (no finding expected): encode_manifest (zstd: a compressor context per thread)
and decode_manifest run at once on 6 threads with different entries; every file fastavro
reads back is exactly its thread's entries, and ours decodes it the same."""
import io
import os
import sys
import threading

import fastavro

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))
from tests.unit.test_entry_codec import random_entries  # noqa: E402

from paimon_commit.format.manifest import ManifestEntry, decode_manifest, encode_manifest  # noqa: E402


def main():
    sets = [random_entries(300, s) for s in range(6)]
    bad = []

    def run(i):
        for codec in ("zstandard", "deflate", "zstandard", "null", "zstandard"):
            d = encode_manifest(sets[i], codec)
            if [ManifestEntry.from_record(r) for r in fastavro.reader(io.BytesIO(d))] != sets[i]:
                bad.append(("fastavro", i, codec))
            if decode_manifest(d, "m") != sets[i]:
                bad.append(("ours", i, codec))

    ts = [threading.Thread(target=run, args=(i,)) for i in range(6)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    print(f"FINDING: {bad}" if bad else "NO FINDING")


if __name__ == "__main__":
    main()
