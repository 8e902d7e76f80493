"""y3: a listing of snapshot/ that misses one existing snapshot (a listing that came back
short: a just-created key, a paginated listing that lost a page). Table: 10 snapshots,
compaction at 5 (files of 1..4 expirable), tag T3, retain_max 3 (end = 8). For each hidden
id k in 1..10, and for 'first listing only' / 'every listing of the run':
expire_snapshots(retain_min=1, retain_max=3), then (with listings honest again) a second run.
Checked: every snapshot and tag still on disk reads as before."""
from common import fresh, prepared, Table, state, copy_table
from paimon_commit.io.local import LocalFileIO


def commit(t, ids):
    with t.new_commit(commit_user="w") as c:
        return c.commit(prepared(t, ids))


path, t = fresh({"snapshot.num-retained.min": "1", "write-only": "true"})
for i in range(1, 5):
    commit(t, [i])
t.create_tag("T3", 3)
t.compact()                                   # 5
for i in range(6, 11):
    commit(t, [i])
before = state(path)


class Hide:
    def __init__(self, sid, once):
        self.name, self.once, self.hits = f"snapshot-{sid}", once, 0

    def __enter__(self):
        self.rn, self.rs = LocalFileIO.list_names, LocalFileIO.list_status
        self.rv = getattr(LocalFileIO, "file_versions", None)
        me = self

        def hide(directory):
            if not directory.rstrip("/").endswith("/snapshot"):
                return False
            me.hits += 1
            return not me.once or me.hits == 1

        def ln(io, directory):
            out = me.rn(io, directory)
            return [n for n in out if n != me.name] if hide(directory) else out

        def ls(io, directory):
            out = me.rs(io, directory)
            return [s for s in out if s.name != me.name] if hide(directory) else out
        LocalFileIO.list_names, LocalFileIO.list_status = ln, ls
        if self.rv is not None:
            def fv(io, directory):
                out = me.rv(io, directory)
                if out is not None and hide(directory):
                    out = {k: v for k, v in out.items() if k != me.name}
                return out
            LocalFileIO.file_versions = fv
        return self

    def __exit__(self, *exc):
        LocalFileIO.list_names, LocalFileIO.list_status = self.rn, self.rs
        if self.rv is not None:
            LocalFileIO.file_versions = self.rv
        return False


ref = copy_table(path)
Table.open(ref).expire_snapshots(retain_min=1, retain_max=3)
ref_state = state(ref)
print("reference keeps", sorted(ref_state))
bad = []
for once in (True, False):
    for k in range(1, 11):
        p = copy_table(path)
        try:
            with Hide(k, once):
                r = Table.open(p).expire_snapshots(retain_min=1, retain_max=3)
            first = f"expired {r.expired_ids}"
        except Exception as e:  # noqa: BLE001
            first = f"{type(e).__name__}: {str(e)[:100]}"
        s1 = state(p)
        Table.open(p).expire_snapshots(retain_min=1, retain_max=3)
        s2 = state(p)
        for label, s in (("after the short-listed run", s1), ("after the rerun", s2)):
            broken = {k2: v for k2, v in s.items() if before.get(k2) != v}
            if broken:
                bad.append(f"hide {k} once={once}: {label}: {broken} ({first})")
        print(f"hide snapshot-{k} {'first listing' if once else 'every listing'}: {first}; "
              f"kept {sorted(s2) == sorted(ref_state)}")
for b in bad:
    print(b)
print(f"FINDING: (below retention, no retained root) a snapshot the short listing hid stays on "
      f"disk below EARLIEST and no longer reads; the rerun leaves it: {bad[0][:200]}"
      if bad else "OK")
