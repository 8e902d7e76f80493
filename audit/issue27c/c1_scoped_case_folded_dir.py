"""C1: a partition-scoped orphan cleanup deletes a live data file on a case-insensitive file
system (macOS APFS/HFS+ default, NTFS, SMB shares, ZFS casesensitivity=insensitive): string
partition values 'A' and 'a' share ONE directory, spelled as the first writer created it
(`p=A`); the file of value 'a' is written to, and listed under, `p=A`.

orphan_scope.PartitionScope.add_partition types the listed name 'A' exactly (it is spelled as
Paimon escapes it, and NFC == NFD), so may_hold() prunes the manifest whose statistics are
min = max = 'a'; the live file of 'a' is not in the used set and is deleted. A full run
compares only file names and deletes nothing. Simulated on Linux by moving the 'a' files into
`p=A` (what a case-insensitive file system holds and lists)."""
import os
import shutil

import pyarrow as pa

from common import new_table, write_rows, age_all, files
from paimon_commit import Table

schema = pa.schema([("id", pa.int64()), ("p", pa.string())])
t = new_table(schema=schema, partition_keys=["p"])
write_rows(t, {"id": [1], "p": ["A"]}, schema=schema)   # creates p=A first
write_rows(t, {"id": [2], "p": ["a"]}, schema=schema)   # on a case-folding FS: into p=A
up, low = os.path.join(t.path, "p=A"), os.path.join(t.path, "p=a")
for dp, _, fs in os.walk(low):
    for f in fs:
        src = os.path.join(dp, f)
        dst = os.path.join(up, os.path.relpath(src, low))
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        shutil.move(src, dst)
shutil.rmtree(low)
# What a case-insensitive file system also shows (and the cleaner probes): `SCHEMA` is
# the table's `schema` directory. On Linux a symlink stands in for it (added after the
# fix, which reads the manifests of cased values only where names may fold case).
os.symlink("schema", os.path.join(t.path, "SCHEMA"))
live = sorted(f for f in files(t.path) if "bucket-" in f)
print("live data files:", live)
age_all(t.path)
full = Table.open(t.path).remove_orphan_files(older_than_duration="1 d", dry_run=True)
print("full run (dry run) would delete:", full.deleted_paths)
res = Table.open(t.path).remove_orphan_files(older_than_duration="1 d", partitions=["p=A"])
print("scoped run p=A deleted:", res.deleted_paths)
lost = [f for f in live if not os.path.exists(os.path.join(t.path, f))]
if lost and not full.deleted_paths:
    print(f"FINDING: scoped remove-orphan-files --partition 'p=A' deleted live {lost!r} "
          f"(case-insensitive FS: value 'a' lives in directory p=A; its manifest's statistics "
          f"min=max='a' were pruned); a full run deletes nothing")
else:
    print("NO FINDING")
