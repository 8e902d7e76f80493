"""F1: _roots_of lists snapshot/, changelog/ and tag/ in one concurrent wave. The tag (or
changelog) listing can come back before the snapshot listing is made; a tag created from
snapshot k (or a long-lived changelog written for k) right after the tag (changelog) listing,
then snapshot k expired before the snapshot listing, is seen in neither listing. Its files
are not in the used set, and the delete-phase re-check only reads snapshots above the mark:
orphan cleanup deletes the files the tag / changelog keeps.

Before 788846d the tag listing came after every snapshot of the listing was read, and the
changelog listing after the snapshot listing: a tag created after the tag listing names a
snapshot that was listed and read (or the read failed: abort); likewise for changelogs.

Usage: python f1_tag_or_changelog_missed.py   (runs every variant)
"""
import os
import shutil

from common import (CleanContext, LocalFileIO, MainLeaseGate, OrphanFilesCleaner, Table,
                    age_everything, cutoff, data_files, describe, expire_keeping, new_table,
                    threads_now, write)


class HookIO(LocalFileIO):
    """Runs `inject` right after the roots phase's listing of `watch` (tag/ or changelog/)
    returned; with concurrency, the roots phase's snapshot listing waits for it (a
    listing that simply answers later than its neighbours)."""

    def __init__(self, root, concurrency, watch, inject):
        super().__init__(root)
        self.read_concurrency = concurrency
        self.root_ = root
        self.watch, self.inject = watch, inject
        self.snapshot_listings = 0
        self.done = None
        import threading
        self.done = threading.Event()
        self.gate = MainLeaseGate()

    def list_names(self, path):
        p = path.rstrip("/")
        if p == os.path.join(self.root_, "snapshot"):
            self.snapshot_listings += 1
            # 1: the mark (_snapshot_mark); 2: the roots phase (_roots_of)
            if self.snapshot_listings == 2 and self.read_concurrency > 1:
                self.done.wait(20)
        out = super().list_names(path)
        if p == os.path.join(self.root_, self.watch) and not self.done.is_set():
            try:
                self.inject()
            finally:
                self.done.set()
                self.gate.open.set()
        return out

    def list_status(self, path, *a, **kw):
        self.gate.maybe_wait(path)
        return super().list_status(path, *a, **kw)


def build(changelog):
    opts = {"changelog.num-retained.min": "1000", "changelog.num-retained.max": "1000"} \
        if changelog else {}
    path = new_table(opts)
    write(path, [1])                    # snapshot 1: file A
    write(path, [2], overwrite=True)    # snapshot 2: A replaced by B (A no longer live)
    age_everything(path)
    return path


def run(variant, concurrency):
    changelog = variant == "changelog-ours"
    path = build(changelog)
    a = [f for f in data_files(path)]
    snap2 = Table.open(path).store.snapshots.snapshot(2)
    live = {e.file.file_name for e in Table.open(path).store.live_entries(snap2)}
    a = [f for f in a if os.path.basename(f) not in live]
    assert len(a) == 1, a
    a = a[0]

    def inject_java():
        # Paimon Java (no lease): createTag T on snapshot 1 (the tag file is the snapshot's
        # JSON), then its expiration of snapshot 1 (the tag keeps A and snapshot 1's lists).
        os.makedirs(os.path.join(path, "tag"), exist_ok=True)
        shutil.copy(os.path.join(path, "snapshot", "snapshot-1"),
                    os.path.join(path, "tag", "tag-T"))
        os.remove(os.path.join(path, "snapshot", "snapshot-1"))
        with open(os.path.join(path, "snapshot", "EARLIEST"), "w") as f:
            f.write("2")

    def inject_ours():
        # This library's own create_tag and expiration, each under the maintenance lease
        # (the orphan run's own lease take is not through yet: it waits at MainLeaseGate).
        Table.open(path).create_tag("T", 1)
        r = expire_keeping(path, 1)
        assert r.expired_ids == [1], r.expired_ids

    def inject_changelog():
        # This library's expiration with a decoupled changelog lifecycle: snapshot 1 becomes
        # the long-lived changelog-1 (read by its delta list, which ADDs A).
        r = expire_keeping(path, 1, changelog_retain_min=1000, changelog_retain_max=1000)
        assert r.expired_ids == [1], r.expired_ids

    watch, inject = {"tag-java": ("tag", inject_java), "tag-ours": ("tag", inject_ours),
                     "changelog-ours": ("changelog", inject_changelog)}[variant]
    io = HookIO(path, concurrency, watch, inject)
    io.gate.armed = variant != "tag-java"
    cleaner = OrphanFilesCleaner(CleanContext(path, older_than_ms=cutoff(), file_io=io))
    try:
        r = cleaner.clean()
        res = describe(r)
    except Exception as e:  # noqa: BLE001
        res = f"raised {type(e).__name__}: {str(e)[:200]}"
    print(f"--- {variant}, read_concurrency={concurrency}")
    print(f"  injected: {io.done.is_set()}; orphan run: {res}")
    print(f"  A ({os.path.relpath(a, path)}) exists: {os.path.exists(a)}")
    chk = Table.open(path).check()
    print(f"  check(): healthy={chk.healthy} problems="
          f"{[(p.path, p.kind, p.state) for p in chk.problems][:3]}")
    if changelog:
        print(f"  changelog/: {sorted(os.listdir(os.path.join(path, 'changelog')))}")
    else:
        try:
            ids = sorted(Table.open(path).read_arrow(tag="T").column("id").to_pylist())
            print(f"  read_arrow(tag='T'): {ids}")
        except Exception as e:  # noqa: BLE001
            print(f"  read_arrow(tag='T') FAILS: {type(e).__name__}: {str(e)[:200]}")
    print(f"  threads left: {threads_now()}")


if __name__ == "__main__":
    for variant in ("tag-java", "tag-ours", "changelog-ours"):
        for conc in (1, 8):
            run(variant, conc)
