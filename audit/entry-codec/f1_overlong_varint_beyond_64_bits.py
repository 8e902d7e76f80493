"""entry_codec._rlong accepts a 10-byte varint whose last byte carries bits above bit 63 and
returns a Python int outside the Avro long range. fastavro (and Avro Java, whose readLong
keeps only bit 63 of the 10th byte) read the low 64 bits. So a damaged manifest decodes to a
different entry than fastavro / pypaimon / Paimon Java read from the same bytes, and the
entry read cannot be written back (encode_manifest raises OverflowError), e.g. by the
manifest merge of a later commit.

The manifest is a real file in a temp directory: fastavro's encoding of one entry, with the
_FILE_SIZE varint replaced by a 10-byte one whose last byte is 0x02 (bit 64)."""
import io
import os
import tempfile

import fastavro

from paimon_commit.format.entry_codec import _long
from paimon_commit.format.manifest import (_PARSED_ENTRY, DataFileMeta, ManifestEntry,
                                           decode_manifest, encode_manifest)

SENTINEL = 0x1234567


def main():
    e = ManifestEntry(0, b"", 0, -1, DataFileMeta("data-x.parquet", SENTINEL, 5, 0))
    rec = io.BytesIO()
    fastavro.schemaless_writer(rec, _PARSED_ENTRY, e.to_record())
    block = rec.getvalue()
    assert block.count(_long(SENTINEL)) == 1
    overlong = bytes([0x82] + [0x80] * 8 + [0x02])   # low 64 bits: 1; bit 64 set
    block = block.replace(_long(SENTINEL), overlong)
    # the container around it as fastavro frames it (header, count, size, block, sync)
    buf = io.BytesIO()
    fastavro.writer(buf, _PARSED_ENTRY, [], codec="null")
    header, sync = buf.getvalue()[:-16], buf.getvalue()[-16:]
    data = header + sync + _long(1) + _long(len(block)) + block + sync
    path = os.path.join(tempfile.mkdtemp(), "manifest-x-0")
    with open(path, "wb") as f:
        f.write(data)
    with open(path, "rb") as f:
        raw = f.read()
    ours = decode_manifest(raw, path)[0].file.file_size
    theirs = next(iter(fastavro.reader(io.BytesIO(raw))))["_FILE"]["_FILE_SIZE"]
    print("entry_codec file_size:", ours, " fastavro file_size:", theirs)
    try:
        encode_manifest(decode_manifest(raw, path), "zstandard")
        rewrite = "ok"
    except Exception as x:   # noqa
        rewrite = f"{type(x).__name__}: {x}"
    print("re-encoding the decoded entry:", rewrite)
    if ours != theirs:
        print(f"FINDING: decoder reads _FILE_SIZE {ours} (outside int64) where fastavro/Java "
              f"read {theirs}; re-encoding: {rewrite}")
    else:
        print("NO FINDING")


if __name__ == "__main__":
    main()
