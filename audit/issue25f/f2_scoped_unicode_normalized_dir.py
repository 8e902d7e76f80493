"""F2: a partition-scoped orphan cleanup deletes a live data file when the file system lists
a partition directory in another Unicode normalization form than the one written (macOS
HFS+ stores and lists every name decomposed, NFD; so do some SMB/AFP shares): the value
'\u00e9' (NFC, in the manifest's partition statistics) is listed as `p=e\u0301`.

orphan_scope.PartitionScope.add_partition types the listed name 'e\u0301' exactly (it is
spelled as Paimon escapes it), and 'e\u0301' < '\u00e9' (code points and UTF-8 bytes), so
may_hold() says the manifest (min = max = '\u00e9') cannot hold it; the live file's name is
missing from the used set. A full run compares only file names and deletes nothing.
Simulated on Linux by renaming the directory to its NFD spelling (what HFS+ lists)."""
import os
import unicodedata

import pyarrow as pa

from common import new_table, write_rows, age_all, files
from paimon_commit import Table

schema = pa.schema([("id", pa.int64()), ("p", pa.string())])
t = new_table(schema=schema, partition_keys=["p"])
write_rows(t, {"id": [1], "p": ["\u00e9"]}, schema=schema)       # NFC, as typed
write_rows(t, {"id": [2], "p": ["zz"]}, schema=schema)
nfc = os.path.join(t.path, "p=\u00e9")
assert os.path.isdir(nfc), sorted(os.listdir(t.path))
nfd = os.path.join(t.path, unicodedata.normalize("NFD", "p=\u00e9"))
os.rename(nfc, nfd)                                             # what HFS+ lists
live = sorted(f for f in files(t.path) if "bucket-" in f)
age_all(t.path)
full = Table.open(t.path).remove_orphan_files(older_than_duration="1 d", dry_run=True)
print("full run (dry run) would delete:", full.deleted_paths)
res = Table.open(t.path).remove_orphan_files(older_than_duration="1 d", partitions=["p=e*"])
print("scoped run p=e* deleted:", res.deleted_paths, "manifests read/skipped:",
      getattr(res, "manifests_read", None), getattr(res, "manifests_skipped", None))
lost = [f for f in live if not os.path.exists(os.path.join(t.path, f))]
if lost and not full.deleted_paths:
    print(f"FINDING: scoped remove-orphan-files --partition 'p=e*' deleted live {lost!r} "
          f"(directory listed in NFD, statistics hold the NFC value); a full run deletes "
          f"nothing")
else:
    print("NO FINDING")
