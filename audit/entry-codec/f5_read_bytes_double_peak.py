"""io/local.py read_bytes now reads 1 MiB chunks into a list and joins them: a file of S
bytes holds 2 S at the moment of the join (the chunks and the joined copy), where
open().read() sized one buffer from fstat and held S. Compaction reads inputs up to
WHOLE_FILE_BYTES (64 MiB) whole, one per read-ahead thread, so its peak per file doubles
(a memory/OOM regression for large files; small files - one chunk - are not copied).

Measured with tracemalloc on a real 48 MiB file in a temp directory."""
import os
import tempfile
import tracemalloc

from paimon_commit.io.local import LocalFileIO

SIZE = 48 << 20


def peak(fn):
    tracemalloc.start()
    tracemalloc.reset_peak()
    data = fn()
    _, p = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert len(data) == SIZE
    del data
    return p


def main():
    root = tempfile.mkdtemp()
    path = os.path.join(root, "big.parquet")
    with open(path, "wb") as f:
        f.write(os.urandom(SIZE))
    io = LocalFileIO(root)

    def old():
        with open(path, "rb") as f:
            return f.read()

    new_peak, old_peak = peak(lambda: io.read_bytes(path)), peak(old)
    print(f"peak while reading {SIZE >> 20} MiB: read_bytes {new_peak / 2**20:.1f} MiB, "
          f"open().read() {old_peak / 2**20:.1f} MiB")
    if new_peak > 1.5 * old_peak:
        print(f"FINDING: read_bytes peaks at {new_peak / old_peak:.2f}x the memory of "
              f"open().read() for a {SIZE >> 20} MiB file")
    else:
        print("NO FINDING")


if __name__ == "__main__":
    main()
