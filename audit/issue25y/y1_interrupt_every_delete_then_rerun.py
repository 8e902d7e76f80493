"""y1: crash-and-rerun at every delete. On the rich table (rich.py: changelog files, decoupled
changelog retention, tags T2/T5, branch b from T2 with its tag, branch c from snapshot 5, an
index manifest + statistics, consumer c1 at 6, a compaction), each operation is run once
uninterrupted (the reference: its state and its number of unlinks K), then for n = 1..K on a
fresh copy: a KeyboardInterrupt at the n-th unlink, then the same operation again (the
rerun). Every root left on disk must read as in the reference (same rows), and every root
the reference keeps must still be there. Operations:
 A expire_snapshots(retain_min=1, retain_max=3) (consumer at 6 holds 6..; decoupled:
   expired snapshots become changelogs)
 B after A: delete_tag('T2') (its snapshot expired; branch b uses everything), then
   delete_tag('T5') (branch c uses everything of 5)
 C after A: consumer removed, changelog.num-retained.max 4 (dynamic option): changelog
   expiration and snapshot expiration
 D after A + B: every file aged 3 days, orphans added, remove_orphan_files('1 d')
 E rollback_to(5) on the base table
 F after A: consumer removed, expire again with retain_max=1 (changelogs of 6..9)."""
import os
import time

from common import Table, Interrupt, state, copy_table, age_tree
from rich import build


def op_A(p):
    Table.open(p).expire_snapshots(retain_min=1, retain_max=3)


def op_B(p):
    t = Table.open(p)
    for name in ("T2", "T5"):
        if any(g.name == name for g in t.tags()) or \
                os.path.exists(os.path.join(p, "tag", f"tag-{name}")) or \
                any(n.startswith(".") or name in n for n in os.listdir(os.path.join(p, "tag"))):
            try:
                t.delete_tag(name)
            except ValueError as e:
                if "does not exist" not in str(e):
                    raise


def op_C(p):
    cons = os.path.join(p, "consumer", "consumer-c1")
    if os.path.exists(cons):
        os.unlink(cons)
    Table.open(p, options={"changelog.num-retained.max": "4"}).expire_snapshots(
        retain_min=1, retain_max=3)


def op_D(p):
    Table.open(p).remove_orphan_files(older_than_duration="1 d")


def op_E(p):
    Table.open(p).rollback_to(5)


def op_F(p):
    cons = os.path.join(p, "consumer", "consumer-c1")
    if os.path.exists(cons):
        os.unlink(cons)
    Table.open(p).expire_snapshots(retain_min=1, retain_max=1)


def prep_D(p):
    op_B(p)
    age_tree(p)
    for d in ("manifest", "dt=2024-01-01/hr=0/bucket-0" if os.path.isdir(
            os.path.join(p, "dt=2024-01-01")) else "manifest", "index", "statistics"):
        os.makedirs(os.path.join(p, d), exist_ok=True)
        f = os.path.join(p, d, f"orphan-{d.replace('/', '_')}")
        open(f, "w").write("x")
        os.utime(f, (time.time() - 3 * 86400,) * 2)


prep_F = None


base = build()
after_A = copy_table(base)
op_A(after_A)
cases = [("A expire", base, op_A, None), ("B delete_tag", after_A, op_B, None),
         ("C changelog expire", after_A, op_C, None), ("D orphans", after_A, op_D, prep_D),
         ("E rollback", base, op_E, None), ("F expire past the consumer", after_A, op_F, None)]
bad = []
runs = 0
t0 = time.time()
for name, src, op, prep in cases:
    ref = copy_table(src)
    if prep:
        prep(ref)
    before = state(ref)
    with Interrupt() as cnt:
        op(ref)
    ref_state = state(ref)
    K = cnt.count
    lost_in_ref = {k: v for k, v in ref_state.items() if isinstance(v, str) and v not in ("ok", "held")}
    if lost_in_ref:
        bad.append(f"{name} (uninterrupted): {lost_in_ref}")
    for n in range(1, K + 1):
        p = copy_table(src)
        if prep:
            prep(p)
        first = "done"
        with Interrupt(n) as it:
            try:
                op(p)
            except KeyboardInterrupt:
                first = "interrupted"
        try:
            op(p)
            rerun = "ok"
        except Exception as e:  # noqa: BLE001
            rerun = f"{type(e).__name__}: {str(e)[:120]}"
        s = state(p)
        runs += 1
        diff = {k: (ref_state[k], s.get(k, "GONE")) for k in ref_state if s.get(k, "GONE") != ref_state[k]}
        extra = {k: v for k, v in s.items() if k not in ref_state and isinstance(v, str)
                 and v not in ("ok", "held")}
        if diff or extra or rerun != "ok":
            bad.append(f"{name} n={n}/{K} ({first}, rerun {rerun}): differs {diff} "
                       f"extra-unreadable {extra}")
            print(bad[-1])
    print(f"{name}: K={K} unlinks, roots {len(ref_state)}: {sorted(ref_state)}")
print(f"{runs} interrupted runs in {time.time() - t0:.1f}s")
if bad:
    print(f"FINDING: {len(bad)} runs: {bad[0][:300]}")
else:
    print("OK")
