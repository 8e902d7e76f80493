"""Orphan cleanup fed by a file list (an inventory) instead of a listing: the cleaner's side.

`orphan_inventory` reads and checks the list (rows, columns, times); this module turns its rows
into the candidates a listing would give, checks that the list covers the table, and reads
each candidate's status again before it is deleted. Mixed into `OrphanFilesCleaner`."""
from __future__ import annotations

import logging
import posixpath
from array import array
from typing import Any, Dict, List, Optional, Set, Tuple

from ..format.paths import is_bucket_dir
from .orphan_inventory import FileListError, read_rows, storage_path_of

log = logging.getLogger("paimon_commit.operations.orphan")

__all__ = ["FromFileList"]

# --- the cleaner's side: candidates from the list, its coverage, the status read again -------
_METADATA = ("manifest", "index", "statistics", "snapshot", "changelog", "tag", "consumer",
             "schema")


class FromFileList:
    """OrphanFilesCleaner's methods for an inventory-fed run (mixed into it)."""

    def _read_file_list(self) -> Dict[str, Any]:
        """Every row checked (FileListError with its line), and the candidates it shows,
        in the places a listing takes them from, as `Listed` per directory."""
        from ..format import paths as P
        from ..io.base import check_path_shape
        from ..errors import UnsafePathError
        from .orphan_select import SEP, Listed
        ctx, io, root = self.ctx, self.io, self.root
        manifest = ctx.manifest
        if manifest is not None and manifest.bucket != getattr(io, "bucket", None):
            where = (f"bucket {io.bucket!r}" if getattr(io, "bucket", None) is not None
                     else "local disk")
            raise FileListError(f"the file list manifest {manifest.path} is an inventory of "
                                f"bucket {manifest.bucket!r}, but the table is on {where}: not "
                                f"a listing of this table; nothing was deleted")
        shown, kind, rows = read_rows(ctx.file_list, manifest)
        shown = "stdin" if ctx.file_list == "-" else shown
        shown_root = io.uri(root) if hasattr(io, "uri") else root
        branches = {posixpath.basename(b.rstrip("/")) for b in self._branch_roots()}
        keys = [P.escape_path_name(k) + "=" for k in self.store.partition_keys]
        # (directory, kind) -> {name: (size, mtime_ms)}
        groups: Dict[Tuple[str, Optional[str]], Dict[str, Tuple[int, int]]] = {}
        cover: Dict[str, Set[Any]] = {"snapshot": set(), "schema": set(), "metadata": set()}
        partitions: Set[Tuple[str, ...]] = set()
        prefix = root + "/"
        n = 0
        for row in rows:
            n += 1
            path = storage_path_of(row, kind, io, shown)
            if path.endswith("/") and row.size == 0 and path.startswith(prefix):
                # A folder marker (the zero-byte `dir/` object consoles and some tools
                # create; S3 Inventory lists it): no file, never a candidate (a listing
                # does not take it either).
                continue
            try:
                check_path_shape(path, root)
            except UnsafePathError:
                raise FileListError(
                    f"file list {shown}, {row.where}: {row.location!r} is not a file inside "
                    f"the table root {shown_root}: not a listing of this table (an inventory "
                    f"of a whole bucket: keep only this table's rows); nothing was deleted"
                    ) from None
            placed = self._place(path[len(prefix):], branches, keys, partitions, cover)
            if placed is None:
                continue
            directory, name, what = placed
            files = groups.setdefault((prefix + directory, what), {})
            status = (row.size, row.mtime_ms)
            if files.setdefault(name, status) != status:
                raise FileListError(f"file list {shown}, {row.where}: {row.location!r} is "
                                    f"listed twice, with different sizes or times")
        if self.scope is not None:
            self.scope.fold_case = self.folds_case()
            for values in sorted(partitions):
                self.scope.add_partition(values)
        listed = []
        for (directory, what), files in groups.items():
            names = list(files)
            listed.append(Listed(directory, SEP.join(names), len(names), what,
                                 array("q", [files[x][0] for x in names]),
                                 array("q", [files[x][1] for x in names])))
        log.info("orphan clean of %s: file list %s has %d row(s), %d candidate(s) in %d "
                 "directories", root, shown, n, sum(d.count for d in listed), len(listed))
        return {"shown": shown, "rows": n, "listed": listed, "cover": cover}

    def _place(self, rel: str, branches: Set[str], keys: List[str],
               partitions: Set[Tuple[str, ...]], cover: Dict[str, Set[Any]]
               ) -> Optional[Tuple[str, str, Optional[str]]]:
        """(directory relative to the root, name, kind) of a candidate the listing would
        take, or None: the same places (`list_candidates`). Notes what coverage needs."""
        from ..format import paths as P
        parts = rel.split("/")
        name, dirs = parts[-1], parts[:-1]
        if dirs and dirs[0] == "branch":
            if len(dirs) == 3 and dirs[1] in branches and self.scope is None:
                what = self._metadata_kind(dirs[2], name, branch=True)
                if what is not False:
                    return "/".join(dirs), name, what
            return None
        if len(dirs) == 1 and dirs[0] in _METADATA:
            sub = dirs[0]
            if sub == "snapshot":
                sid = P.parse_snapshot_id(name)
                if sid is not None:
                    cover["snapshot"].add(sid)
            elif sub == "schema":
                sid = P.parse_schema_id(name)
                if sid is not None:
                    cover["schema"].add(sid)
            elif sub in ("manifest", "index", "statistics"):
                cover["metadata"].add(name)
            if self.scope is None:
                what = self._metadata_kind(sub, name, branch=False)
                if what is not False:
                    return sub, name, what
            return None
        # Data files: under the table's data-file.path-directory, if it has one.
        top = self.store.data_root_names
        if tuple(dirs[:len(top)]) != top:
            return None
        inner = dirs[len(top):]
        if len(inner) != len(keys) + 1 or not is_bucket_dir(inner[-1]):
            return None
        scope = self.scope
        active = scope.all() if scope is not None else ()
        values = []
        for d, key, real in zip(inner, keys, self.store.partition_keys):
            if not d.startswith(key):
                return None
            value = d[len(key):]
            if scope is not None:
                active = scope.match(real, value, active)
                if not active:
                    return None
            values.append(value)
        if scope is not None:
            partitions.add(tuple(values))
        return "/".join(dirs), name, "data"

    @staticmethod
    def _metadata_kind(sub: str, name: str, branch: bool):
        """The kind of a candidate in a metadata directory (as `_list_metadata_dirs`
        narrows its listings), None (by name), or False: not a candidate."""
        from ..format import paths as P
        if sub == "manifest" and not branch:
            return None
        if sub in ("index", "statistics") and not branch:
            return sub
        if sub in ("snapshot", "changelog"):
            parse = P.parse_snapshot_id if sub == "snapshot" else P.parse_changelog_id
            ok = parse(name) is None and name not in (P.LATEST_HINT, P.EARLIEST_HINT)
            return sub if ok else False
        if sub in ("tag", "consumer", "schema"):
            return "temp" if P.is_temp_file(name) else False
        return False

    def _check_covers(self) -> None:
        """The list must be a listing of this table, whole when it was taken: it shows the
        table's first schema file, and of the retained snapshots (of the table, not its
        branches) the newest it shows, every older one, and every list, manifest, index and
        statistics file that one uses. Otherwise FileListError: it is foreign, stale or
        partial, and nothing is deleted."""
        from ..format import paths as P
        from ..reachability import Unreadable
        from ..store import SchemaManager
        from ..errors import OrphanCleanAborted
        inv = self._inventory
        cover, shown, io = inv["cover"], inv["shown"], self.io
        table = io.uri(self.root) if hasattr(io, "uri") else self.root
        refuse = f"file list {shown} is not a whole listing of {table}"
        ids = SchemaManager(io, io.root).list_ids()
        if ids and ids[0] not in cover["schema"]:
            raise FileListError(
                f"{refuse}: it does not show schema/{P.schema_file_name(ids[0])}, which the "
                f"table has had since it was created (another table's list, a partial one, "
                f"or one from before the table was created); nothing was deleted")
        snapshot_dir = io.join(self.root, "snapshot")
        snaps = sorted((r for r in self._roots if r.kind == "snapshot" and
                        posixpath.dirname(r.where) == snapshot_dir),
                       key=lambda r: r.snapshot.id)
        if not snaps:
            return
        shown_snaps = [r for r in snaps if r.snapshot.id in cover["snapshot"]]
        if not shown_snaps:
            raise FileListError(
                f"{refuse}: it shows none of the table's {len(snaps)} retained snapshot(s) "
                f"({P.snapshot_file_name(snaps[0].snapshot.id)} .. "
                f"{P.snapshot_file_name(snaps[-1].snapshot.id)}); nothing was deleted")
        anchor = shown_snaps[-1]
        older = [r.snapshot.id for r in snaps
                 if r.snapshot.id < anchor.snapshot.id and r.snapshot.id not in
                 cover["snapshot"]]
        if older:
            raise FileListError(
                f"{refuse}: it shows {P.snapshot_file_name(anchor.snapshot.id)} but not the "
                f"older {P.snapshot_file_name(older[0])}, which is retained ({len(older)} in "
                f"all): a partial list; nothing was deleted")
        try:
            used = self._reach.metadata_names(anchor)
        except Unreadable as e:
            raise OrphanCleanAborted(f"{e}; nothing was deleted") from None
        missing = sorted(used - cover["metadata"])
        if missing:
            raise FileListError(
                f"{refuse}: it shows {P.snapshot_file_name(anchor.snapshot.id)} but not "
                f"{missing[0]}, which that snapshot uses ({len(missing)} in all): a partial "
                f"list; nothing was deleted")

    @staticmethod
    def _listed_status(found) -> Dict[str, Tuple[int, int]]:
        """path -> (size, mtime_ms) as the list showed each orphan found."""
        return {d + "/" + e[0]: (e[1], e[2]) for d, _, entries in found.groups
                for e in entries}

    def _still_as_listed(self, paths: List[str], listed: Dict[str, Tuple[int, int]]
                         ) -> List[str]:
        """`paths` whose status, read again now (one listing of each directory, as a run
        without a list takes it: regular files only, never through a symlink), is what the
        list showed (size, and the last-modified time to the second: what every store
        keeps) and still older than the cutoff. The others are kept and counted."""
        from ..io import read_ahead
        by_dir: Dict[str, List[str]] = {}
        for p in paths:
            d, _, n = p.rpartition("/")
            by_dir.setdefault(d, []).append(n)
        older = self.ctx.older_than_ms
        keep: List[str] = []
        changed: List[str] = []
        dirs = list(by_dir)
        for d, got in zip(dirs, read_ahead.ordered(self._relist, dirs,
                                                    read_ahead.concurrency_of(self.io))):
            now = got.result()
            current = {} if now is None else dict(zip(now.names, zip(now.sizes,
                                                                     now.mtimes_ms)))
            for n in by_dir[d]:
                p = d + "/" + n
                size, mtime = listed[p]
                c = current.get(n)
                if c is not None and c[0] == size and c[1] // 1000 == mtime // 1000 \
                        and c[1] < older:
                    keep.append(p)
                else:
                    changed.append(p)
        if changed:
            self._result.file_list_changed += len(changed)
            log.info("orphan clean of %s: keeping %d file(s) whose status changed since the "
                     "file list (gone, rewritten or a symlink now), e.g. %s", self.root,
                     len(changed), changed[0])
        return keep

    def _relist(self, directory: str):
        """The directory's regular files now, or None when a directory on the way from the
        root is a symlink (a listing never enters one)."""
        from ..io.local import LocalFileIO
        if isinstance(self.io, LocalFileIO):
            import os
            p = self.root
            for part in directory[len(self.root) + 1:].split("/"):
                p = p + "/" + part
                try:
                    if os.path.islink(p):
                        return None
                except OSError:
                    return None
        return self.io.list_files(directory)
