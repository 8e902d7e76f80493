"""Note: with the used set read beside the candidate listing (3a04c07, `_list_beside_reads`),
the roots' tag/ listing may come before the candidates' one; a tag created in between (Paimon
Java's createTag, or automatic tag creation on commit) is in the first listing and not in the
roots': the deferred check (`_check_roots_seen`) aborts the run. Safe (the tag names a
snapshot that was read, or one above the mark), but a run that listed first (sequential, or
3a04c07^) completes with the same tag creation at its candidate listing.

Usage: python n_tag_created_aborts.py   (AUDIT_CODE=/tmp/issue26e-3a04c07-parent)
"""
import os
import shutil
import threading

from common import (CODE, CleanContext, LocalFileIO, OrphanFilesCleaner, Table,
                    age_everything, cutoff, describe, new_table, write)


class HookIO(LocalFileIO):
    def __init__(self, root, concurrency):
        super().__init__(root)
        self.read_concurrency = concurrency
        self.tag_dir = os.path.join(root, "tag")
        self.roots_listed_tags = threading.Event()
        self.fired = False
        self.roots_first = None

    def list_names(self, path):   # the roots' listing of tag/
        out = super().list_names(path)
        if path.rstrip("/") == self.tag_dir:
            self.roots_listed_tags.set()
        return out

    def list_files(self, path, *a, **kw):   # the candidates' listing of tag/
        if path.rstrip("/") == self.tag_dir and not self.fired:
            self.fired = True
            if self.read_concurrency > 1:
                self.roots_listed_tags.wait(5)
            self.roots_first = self.roots_listed_tags.is_set()
            shutil.copy(os.path.join(self.root, "snapshot", "snapshot-2"),
                        os.path.join(self.tag_dir, "tag-T"))   # createTag T on 2 (Java)
        return super().list_files(path, *a, **kw)


def run(conc):
    path = new_table()
    write(path, [1])
    write(path, [2])
    os.makedirs(os.path.join(path, "tag"), exist_ok=True)
    age_everything(path)
    io = HookIO(path, conc)
    try:
        r = OrphanFilesCleaner(CleanContext(path, older_than_ms=cutoff(), file_io=io)).clean()
        res = describe(r)
    except Exception as e:  # noqa: BLE001
        res = f"raised {type(e).__name__}: {str(e)[:220]}"
    print(f"--- read_concurrency={conc}: roots listed tag/ before the candidates: "
          f"{io.roots_first}")
    print(f"  orphan run: {res}")
    print(f"  read_arrow(tag='T'): {Table.open(path).read_arrow(tag='T').column('id').to_pylist()}")


if __name__ == "__main__":
    print(f"code: {CODE}")
    for conc in (1, 8):
        run(conc)
