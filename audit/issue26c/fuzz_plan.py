"""plan_compaction (28ce9c8: wanted once per partition, schema_problem once per schema id) vs
53adcc2's, with a `wanted` that records matches (as job.py's does) and a schema_problem that
depends only on the id. Compared: the whole CompactPlan (tasks with their entry objects,
live counts, remaining, skipped in order) and the matched-spec marks."""
import random, sys
sys.path.insert(0, "audit/issue26c/old")
import old_plan
from paimon_commit.operations.compact import plan as new_plan
from paimon_commit.format.manifest import DataFileMeta, ManifestEntry

rng = random.Random(3)
bad = 0
for trial in range(20000):
    parts = [bytes([i]) * rng.randrange(1, 3) for i in range(rng.randrange(1, 5))]
    ents = [ManifestEntry(0, rng.choice(parts), rng.choice([0, 0, 0, 1]), -1,
                          DataFileMeta(f"f{i}", rng.randrange(0, 300), 1, rng.randrange(0, 3)))
            for i in range(rng.randrange(0, 30))]
    opts = new_plan.CompactOptions(rng.choice([100, 200]), rng.choice([0.5, 0.7, 1.0]),
                                   rng.randrange(1, 5), rng.randrange(1, 20), rng.randrange(0, 50))
    specs = [rng.choice(parts + [b"\x09"]) for _ in range(rng.randrange(0, 3))]
    bad_ids = {i for i in range(3) if rng.random() < 0.3}
    def go(mod):
        matched = [False] * len(specs)
        def wanted(values):
            if not specs: return True
            hit = False
            for i, s in enumerate(specs):
                if s == values[0]:
                    matched[i] = hit = True
            return hit
        p = mod.plan_compaction(ents, opts, lambda b: (b,), wanted,
                                lambda sid: f"bad {sid}" if sid in bad_ids else None, 7)
        return ([(t.partition, t.values, [id(e) for e in t.files]) for t in p.tasks],
                dict(p.live), p.remaining, p.skipped, p.base_snapshot_id, matched)
    if go(old_plan) != go(new_plan):
        bad += 1
        if bad < 4: print("differs", trial)
print(f"20000 plans: {bad} differences")
