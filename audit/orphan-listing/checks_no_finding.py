"""What the audit checked and found sound, each as an assertion on a real table:

1. a stray with the SAME base name as a used file, in another partition/bucket, is kept
   (names, not paths, are matched, like Paimon: it can only keep a file), the used one too;
2. strays whose names hold a newline, unicode (NFC and NFD of one word), spaces, a leading
   dot, or are a prefix/suffix of another name are deleted exactly (the '/'-joined listing
   cannot split a local name: '/' is the one byte a name cannot hold) and nothing used is;
3. every used name the used set is built from is a str (hash(str) of equal strings is
   equal: a used name is always found); a colliding hash only keeps (monkeypatched hash);
4. a young stray, and an old-looking symlink stray, are kept (mtime read from the entry
   itself with lstat, symlinks not regular files);
5. a dry run deletes nothing and logs nothing;
6. the table reads back intact (tests/invariants.assert_intact: our reader and pypaimon).

Run: PYTHONPATH=$PWD .venv/bin/python audit/checks_no_finding.py
"""
import os
import unicodedata

from _table import files_under, make_table, old

from invariants import assert_intact
from paimon_commit.io.local import LocalFileIO
from paimon_commit.operations import orphan_select
from paimon_commit.operations.orphan import CleanContext, OrphanFilesCleaner
from paimon_commit.reachability import Reachability

tmp, path, strays = make_table(5)
(b1, _), (b2, _) = sorted(strays.items())
used_name = next(n for n in os.listdir(b1) if n.startswith("data-") and "stray" not in n)
# 1. same base name in another bucket
with open(os.path.join(b2, used_name), "wb") as f:
    f.write(b"same name, other partition")
old(os.path.join(b2, used_name))
# 2. odd names
odd = ["data-a\nb.parquet", "data-a", "b.parquet", unicodedata.normalize("NFC", "data-é.p"),
       unicodedata.normalize("NFD", "data-é.p"), "data with space", ".data-hidden.tmp",
       "data-a\x01b"]
for n in odd:
    with open(os.path.join(b2, n), "w") as f:
        f.write("odd")
    old(os.path.join(b2, n))
assert len(set(os.listdir(b2)) & set(odd)) == len(odd)
# 4. young stray and a symlink stray
with open(os.path.join(b2, "data-young.parquet"), "w") as f:
    f.write("young")
os.symlink(os.path.join(b1, used_name), os.path.join(b2, "data-link.parquet"))
old(os.path.join(b2, "data-link.parquet"))

# 3. the used names are str
cleaner = OrphanFilesCleaner(CleanContext(path, dry_run=True))
names, manifests = Reachability(cleaner.store).used_metadata(cleaner.roots())
from paimon_commit.reachability import manifest_names
allnames = list(names) + [n for m, need in manifests.items()
                          for n in manifest_names(Reachability(cleaner.store).mio, m, need)]
assert allnames and all(type(n) is str for n in allnames), {type(n) for n in allnames}
assert used_name in allnames

# 5. dry run
before = files_under(path)
io = LocalFileIO(path)
io.deletion_log = []
r = OrphanFilesCleaner(CleanContext(path, dry_run=True, file_io=io)).clean()
assert files_under(path) == before and io.deletion_log == []
expected = sorted(os.path.relpath(os.path.join(b, n), path)
                  for b, ns in strays.items() for n in ns) + \
    sorted(os.path.relpath(os.path.join(b2, n), path) for n in odd)
assert r.deleted_paths == sorted(expected), (set(r.deleted_paths) ^ set(expected))

# collision: every hash equal -> nothing deleted
orig = orphan_select.__dict__.get("hash")
orphan_select.hash = lambda n: 11
try:
    r0 = OrphanFilesCleaner(CleanContext(path)).clean()
finally:
    del orphan_select.hash
assert r0.deleted_paths == [] and files_under(path) == before

# real run
r = OrphanFilesCleaner(CleanContext(path, file_io=io)).clean()
after = files_under(path)
assert sorted(set(before) - set(after)) == sorted(expected) == r.deleted_paths
assert sorted(os.path.relpath(p, path) for p in io.deletion_log) == sorted(expected)
for keep in (used_name, "data-young.parquet", "data-link.parquet"):
    assert os.path.lexists(os.path.join(b2, keep)), keep
assert os.path.exists(os.path.join(b1, used_name))
assert_intact(path)
print("all checks passed:", len(expected), "strays deleted exactly; same-name stray, young,"
      " symlink kept; dry run and collision delete nothing; table intact")
