"""Sweep (notes N2-N4): other processes' actions injected at four points of a real run, both
modes (read_concurrency 1 and 8), on a table whose commits compact their manifests; after
each run every snapshot and tag is read back and check() runs. Points:
  roots-snapshot-listed  right after the used set's listing of snapshot/ (the mark's source)
  roots-tag-listed       right after the used set's listing of tag/
  candidates-bucket      when the candidates' listing lists the bucket directory
  lease-take             when the main thread starts taking the delete phase's lease
Actions: a retried job's commit of an old file F; that commit then an overwrite dropping F
and a commit merging the manifests; Paimon Java's createTag + commits + expiration (no lease);
this library's expiration with a decoupled changelog; this library's rollback; Paimon Java's
createBranch from a tag, then deleteTag; the F1 sequence (rollback + re-commits).

Usage: python n_sweep.py
"""
import os
import shutil
import threading

from common import (CODE, CleanContext, LocalFileIO, OrphanFilesCleaner, Table,
                    age_everything, cutoff, expire_keeping, make_rows, new_table, write)

POINTS = ["roots-snapshot-listed", "roots-tag-listed", "candidates-bucket", "lease-take"]


class HookIO(LocalFileIO):
    def __init__(self, root, concurrency, point, inject):
        super().__init__(root)
        self.read_concurrency = concurrency
        self.root_, self.point, self.inject = root, point, inject
        self.fired = False
        self.lock = threading.Lock()

    def _fire(self, point):
        with self.lock:
            if point == self.point and not self.fired:
                self.fired = True
                self.inject()

    def list_names(self, path):
        out = sorted(super().list_names(path))
        p = path.rstrip("/")
        if p == os.path.join(self.root_, "snapshot"):
            self._fire("roots-snapshot-listed")
        elif p == os.path.join(self.root_, "tag"):
            self._fire("roots-tag-listed")
        return out

    def list_files(self, path, *a, **kw):
        if os.path.basename(path.rstrip("/")).startswith("bucket-"):
            self._fire("candidates-bucket")
        return super().list_files(path, *a, **kw)

    def list_status(self, path, *a, **kw):
        if "/.maintenance" in path and threading.current_thread() is threading.main_thread():
            self._fire("lease-take")
        return super().list_status(path, *a, **kw)


def java_expire(path, keep_from):
    for n in os.listdir(os.path.join(path, "snapshot")):
        if n.startswith("snapshot-") and int(n[9:]) < keep_from:
            os.remove(os.path.join(path, "snapshot", n))
    with open(os.path.join(path, "snapshot", "EARLIEST"), "w") as fh:
        fh.write(str(keep_from))


def latest(path):
    return max(Table.open(path).store.snapshots.list_snapshot_ids())


def actions(path, msgs):
    def commit_f():
        with Table.open(path).new_commit(commit_user="job") as c:
            c.commit(msgs, 7)

    def commit_then_remove():
        commit_f()
        write(path, [5], overwrite=True)
        write(path, [6])

    def tag_then_java_expire():
        os.makedirs(os.path.join(path, "tag"), exist_ok=True)
        shutil.copy(os.path.join(path, "snapshot", f"snapshot-{latest(path)}"),
                    os.path.join(path, "tag", "tag-T"))
        write(path, [5], overwrite=True)
        write(path, [6])
        java_expire(path, latest(path))

    def changelog_expire():
        write(path, [5], overwrite=True)
        expire_keeping(path, 1, changelog_retain_min=100, changelog_retain_max=100)

    def rollback():
        Table.open(path).rollback_to(1)

    def branch_from_tag_java():
        os.makedirs(os.path.join(path, "tag"), exist_ok=True)
        shutil.copy(os.path.join(path, "snapshot", "snapshot-2"),
                    os.path.join(path, "tag", "tag-T"))
        b = os.path.join(path, "branch", "branch-B")
        os.makedirs(os.path.join(b, "snapshot"))
        shutil.copytree(os.path.join(path, "schema"), os.path.join(b, "schema"))
        shutil.copy(os.path.join(path, "tag", "tag-T"), os.path.join(b, "snapshot", "snapshot-2"))
        for h, v in (("LATEST", "2"), ("EARLIEST", "2")):
            with open(os.path.join(b, "snapshot", h), "w") as fh:
                fh.write(v)
        os.remove(os.path.join(path, "tag", "tag-T"))
        write(path, [5], overwrite=True)
        write(path, [6])
        java_expire(path, latest(path))

    def rollback_recommit():
        Table.open(path).rollback_to(1)
        commit_f()
        write(path, [5], overwrite=True)
        write(path, [6])

    return {"job-commits-F": commit_f, "commit-F-then-drop-F": commit_then_remove,
            "java-tag-then-expire": tag_then_java_expire,
            "ours-expire-changelog": changelog_expire, "ours-rollback": rollback,
            "java-branch-from-tag": branch_from_tag_java,
            "rollback-recommit (F1)": rollback_recommit}


def verify(path):
    bad = []
    t = Table.open(path)
    roots = [("snapshot", i) for i in t.store.snapshots.list_snapshot_ids()]
    tagdir = os.path.join(path, "tag")
    if os.path.isdir(tagdir):
        roots += [("tag", n[4:]) for n in os.listdir(tagdir) if n.startswith("tag-")]
    for kind, key in roots:
        try:
            t.read_arrow(**({"snapshot_id": key} if kind == "snapshot" else {"tag": key}))
        except Exception as e:  # noqa: BLE001
            bad.append(f"{kind} {key}: {type(e).__name__}")
    # (check() covers every branch's snapshots and tags too)
    chk = t.check()
    if not chk.healthy:
        bad.append(f"check: {[(p.path[-30:], p.state) for p in chk.problems][:2]}")
    return bad


def run(action, point, conc):
    path = new_table({"manifest.full-compaction-threshold-size": "1b",
                      "manifest.merge-min-count": "1"})
    write(path, [1])
    write(path, [2])
    write(path, [3], overwrite=True)
    t = Table.open(path)
    w = t.new_writer()
    w.write_arrow(make_rows([9]))
    msgs = w.prepare_commit()
    age_everything(path)
    io = HookIO(path, conc, point, actions(path, msgs)[action])
    try:
        r = OrphanFilesCleaner(CleanContext(path, older_than_ms=cutoff(), file_io=io)).clean()
        res = f"complete={r.complete} stopped_by={r.stopped_by} deleted={len(r.deleted_paths)}"
    except Exception as e:  # noqa: BLE001
        res = f"{type(e).__name__}"
    bad = verify(path)
    print(f"{action:24s} {point:22s} rc={conc}  fired={io.fired!s:5s} {res:45s} "
          f"{'DAMAGE ' + str(bad) if bad else 'intact'}", flush=True)
    shutil.rmtree(os.path.dirname(os.path.dirname(os.path.dirname(path))), ignore_errors=True)


if __name__ == "__main__":
    import logging
    logging.disable(logging.WARNING)
    print(f"code: {CODE}")
    for action in actions("", None):
        for point in POINTS:
            for conc in (1, 8):
                run(action, point, conc)
