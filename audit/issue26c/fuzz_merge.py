"""merge_entries/_merge/live_identifiers (28ce9c8) vs merge_entries/live_entries of 53adcc2 on
adversarial sequences: ADD/DELETE/re-ADD, duplicate ADDs, dangling DELETEs, kinds other than
0/1, strict and not. Compared: result list (order and object identity), exception type and
message, live_entries, and live_identifiers (with and without a partition filter) against the
old callers' expressions (commit.py, commit_record.RepeatScreen, publish._live_ids)."""
import logging, random, sys
sys.path.insert(0, "audit/issue26c/old")
logging.disable(logging.CRITICAL)
import old_manifests as old
from paimon_commit import manifests as new
from paimon_commit.format.manifest import DataFileMeta, FileKind, ManifestEntry

rng = random.Random(1)
parts = [b"p0", b"p1", b""]
def ent(kind, i):
    f = DataFileMeta(f"f{i % 4}.parquet", 10, 1, 0, level=i % 2,
                     extra_files=() if i % 3 else ("x",),
                     embedded_file_index=None, external_path=None if i % 5 else "s3://x/f")
    return ManifestEntry(kind, parts[i % 3], i % 2, 1, f)

def run(fn):
    try: return ("ok", fn())
    except Exception as e: return ("err", type(e).__name__, str(e))

bad = 0
n = 0
for trial in range(200000):
    seq = [ent(rng.choice([0, 0, 1, 1, 2]), rng.randrange(8)) for _ in range(rng.randrange(0, 9))]
    for strict in (True, False):
        o = run(lambda: old.merge_entries(seq, strict))
        w = run(lambda: new.merge_entries(seq, strict))
        same = o[0] == w[0] and (o[1:] == w[1:] if o[0] == "err" else
               len(o[1]) == len(w[1]) and all(a is b for a, b in zip(o[1], w[1])))
        if not same:
            bad += 1
            if bad < 5: print("merge differs", strict, [(e.kind, e.identifier) for e in seq], o, w)
    ol = old.live_entries(seq); nl = new.live_entries(seq)
    if len(ol) != len(nl) or any(a is not b for a, b in zip(ol, nl)):
        bad += 1; print("live_entries differs")
    changed = set(rng.sample(parts, rng.randrange(0, 4)))
    if {e.identifier for e in ol if e.partition in changed} != new.live_identifiers(seq, changed):
        bad += 1; print("live_identifiers(partitions) differs")
    if frozenset(e.identifier for e in ol) != frozenset(new.live_identifiers(seq)):
        bad += 1; print("live_identifiers differs")
    n += 1
print(f"{n} sequences x strict/non-strict: {bad} differences")
