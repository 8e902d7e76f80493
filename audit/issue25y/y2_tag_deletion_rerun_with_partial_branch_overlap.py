"""y2: an interrupted delete_tag whose tag shares only part of its files with a branch.
Branch b is made from snapshot 2 (Paimon 0.8 createBranch(name, snapshotId)); tag T is on
snapshot 3 (+30), so T's base list names the manifests of 1 and 2 (the branch's) and its delta
list a manifest of its own. Compaction, +50, expiration (retain 1): T alone holds 3. delete_tag
spares 10 and 20 and the shared manifests (the branch uses them) and deletes 30's file, T's
own manifest, then T's lists. For each unlink n: a KeyboardInterrupt at n, then delete_tag(T)
again (resuming from the deletion marker). Checked: the branch and every snapshot read; the
rerun finishes (no marker left, T's own files gone)."""
import os

from common import (fresh, prepared, Table, Interrupt, state, copy_table, make_branch)


def commit(t, ids):
    with t.new_commit(commit_user="w") as c:
        return c.commit(prepared(t, ids))


path, t = fresh({"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "1",
                 "write-only": "true", "manifest.merge-min-count": "2",
                 "manifest.full-compaction-threshold-size": "1 b"})
commit(t, [10])
commit(t, [20])
make_branch(path, "b", os.path.join(path, "snapshot", "snapshot-2"), 2)
print("manifests of 2:", len(os.listdir(os.path.join(path, "manifest"))))
commit(t, [30])
t.create_tag("T", 3)
t.compact()
commit(t, [50])
t.expire_snapshots(retain_min=1, retain_max=1)
before = state(path)
print("before:", before)

ref = copy_table(path)
with Interrupt() as cnt:
    r = Table.open(ref).delete_tag("T")
K = cnt.count
print(f"reference: deleted {sorted(os.path.basename(p) for p in r.deleted_paths)}; "
      f"skipped {r.skipped}; unlinks {K}")
ref_state = state(ref)
bad = []
for n in range(1, K + 1):
    p = copy_table(path)
    with Interrupt(n):
        try:
            Table.open(p).delete_tag("T")
        except KeyboardInterrupt:
            pass
    try:
        r2 = Table.open(p).delete_tag("T")
        rerun = f"complete={r2.complete} deleted={len(r2.deleted_paths)} skipped={r2.skipped}"
    except Exception as e:  # noqa: BLE001
        rerun = f"{type(e).__name__}: {str(e)[:150]}"
    s = state(p)
    markers = [n_ for d in ("tag", ".tag-deletions") if os.path.isdir(os.path.join(p, d))
           for n_ in os.listdir(os.path.join(p, d)) if "T" in n_]
    left = sorted(set(os.listdir(os.path.join(p, "manifest"))) -
                  set(os.listdir(os.path.join(ref, "manifest"))))
    print(f"n={n}: rerun {rerun[:300]}; tag dir {markers}; metadata left vs reference {left}")
    if s != ref_state:
        bad.append(f"n={n}: roots differ {[(k, s.get(k), ref_state.get(k)) for k in ref_state if s.get(k) != ref_state[k]]}")
    elif markers or left:
        bad.append(f"n={n}: the rerun cannot finish: marker {markers}, {len(left)} metadata "
                   f"file(s) left ({rerun[:200]})")
for b in bad:
    print(b)
if any("roots differ" in b for b in bad):
    print(f"FINDING: loss: {bad[0]}")
elif bad:
    print(f"FINDING: (no loss) {bad[0]}")
else:
    print("OK")

# (b) a kill in the middle of the (parallel) manifest step leaves any subset of it (the
# code's own model): here the delta manifest (30) gone, the merged base manifest (10, 20:
# the branch's rows, spared) still there. Built from the run interrupted at the first
# manifest unlink.
log = []
from paimon_commit.io.local import LocalFileIO  # noqa: E402
p = copy_table(path)
real = LocalFileIO._unlink


def unlink(io, norm):
    if os.path.basename(norm).startswith("manifest-") and \
            not os.path.basename(norm).startswith("manifest-list"):
        if not log:
            log.append(norm)
            raise KeyboardInterrupt("kill in the manifest step")
    return real(io, norm)


LocalFileIO._unlink = unlink
try:
    Table.open(p).delete_tag("T")
except KeyboardInterrupt:
    pass
finally:
    LocalFileIO._unlink = real
mdir = os.path.join(p, "manifest")
# T's own manifests are those the reference run deleted
ref_deleted = [os.path.basename(x) for x in r.deleted_paths if "/manifest/manifest-" in x
               and "manifest-list" not in x]
other = [n for n in ref_deleted if os.path.join(mdir, n) != log[0]]
for n in other:
    os.unlink(os.path.join(mdir, n))
print(f"b: kill at {os.path.basename(log[0])[:24]}, {[o[:24] for o in other]} deleted as a "
      f"parallel step may leave it")
try:
    r3 = Table.open(p).delete_tag("T")
    rerun = f"complete={r3.complete} deleted={len(r3.deleted_paths)} skipped={r3.skipped}"
except Exception as e:  # noqa: BLE001
    rerun = f"{type(e).__name__}: {str(e)[:200]}"
s = state(p)
markers = [n_ for d in ("tag", ".tag-deletions") if os.path.isdir(os.path.join(p, d))
           for n_ in os.listdir(os.path.join(p, d)) if "T" in n_]
left = sorted(set(os.listdir(mdir)) - set(os.listdir(os.path.join(ref, "manifest"))))
print(f"b: rerun {rerun[:400]}; tag dir {markers}; metadata left vs reference {left}")
if s != ref_state:
    print(f"FINDING: b: roots differ {s} vs {ref_state}")
elif markers or left:
    print(f"FINDING: (no loss) b: the rerun cannot finish: marker {markers}, {len(left)} "
          f"metadata file(s) left, the tag's own manifest naming only branch-used files kept")
else:
    print("OK")
