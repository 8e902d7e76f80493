"""Check (no finding expected): decode_manifest of a real 100,000-entry manifest (each codec
entry_codec writes) in a child process whose address space is capped (RLIMIT_AS) at a
range of sizes. A failed allocation - in entry_codec, in the fallback to fastavro, or in
zstd - must surface as MemoryError, never as CorruptMetadataError (see
avro_container.out_of_memory) or another error."""
import os
import subprocess
import sys
import tempfile

CHILD = r'''
import resource, sys
from paimon_commit.errors import CorruptMetadataError
from paimon_commit.format.manifest import decode_manifest
path, delta = sys.argv[1], int(sys.argv[2])
data = open(path, "rb").read()
vm = int([l for l in open("/proc/self/status") if l.startswith("VmSize")][0].split()[1]) * 1024
resource.setrlimit(resource.RLIMIT_AS, (vm + delta * 2 ** 20, resource.RLIM_INFINITY))
try:
    print("OK", len(decode_manifest(data, path)))
except MemoryError:
    print("MemoryError")
except CorruptMetadataError as e:
    print("CORRUPT", e)
except BaseException as e:
    print("OTHER", type(e).__name__, e)
'''


def main():
    from paimon_commit.format.manifest import DataFileMeta, ManifestEntry, encode_manifest
    e = DataFileMeta("data-" + "x" * 40 + ".parquet", 1000, 10, 0, value_stats_cols=("a",))
    entries = [ManifestEntry(0, b"\0" * 16, 0, -1, e)] * 100_000
    d = tempfile.mkdtemp()
    bad = []
    env = dict(os.environ, PYTHONPATH=os.getcwd())
    for codec in ("null", "deflate", "zstandard"):
        path = os.path.join(d, f"manifest-{codec}")
        with open(path, "wb") as f:
            f.write(encode_manifest(entries, codec))
        seen = []
        for delta in (0, 1, 2, 4, 8, 16, 32, 64, 96, 112, 128, 136, 144, 160, 192, 256):
            out = subprocess.run([sys.executable, "-c", CHILD, path, str(delta)], env=env,
                                 capture_output=True, text=True).stdout.strip().splitlines()
            last = out[-1] if out else "(no output)"
            seen.append(last.split()[0])
            if not (last.startswith("OK") or last == "MemoryError"):
                bad.append((codec, delta, last[:200]))
        print(codec, " ".join(seen))
    print(f"FINDING: {bad}" if bad else "NO FINDING")


if __name__ == "__main__":
    main()
