"""The cheap path of `FileIO.delete_files` (orphan cleanup's delete phase on local disk):
the gate checks each directory once per call (`FileIO._check_all`), and
`LocalFileIO._unlink_in` unlinks in its own loop where `_unlink` is not overridden.

What must hold: every path passes the gate with the same verdict and message as
`_check_inside` path by path, before any unlink; the loop's outcomes are `_unlink`'s (a file
already gone is not deleted, a directory named as a file is refused, every attempt is a
request); an overridden `_unlink` (fault injection) is called for every file.
"""
import os
import random

import pytest

from paimon_commit import UnsafePathError
from paimon_commit.io.local import LocalFileIO
from paimon_commit.io.metered import metering


def _outcome(fn):
    try:
        return ("ok", fn())
    except UnsafePathError as e:
        return ("refused", str(e))
    except ValueError as e:   # (a NUL byte in a directory: os.path.realpath's own refusal)
        return ("refused", f"ValueError: {e}")


# --- the gate: _check_all gives _check_inside's verdicts ------------------------------------

def _hostile_tree(tmp_path):
    root = tmp_path / "t"
    for d in ("a", "a/b", "c", "real"):
        (root / d).mkdir(parents=True)
    (tmp_path / "tx").mkdir()                       # a sibling of the root: a prefix trick
    (tmp_path / "outside").mkdir()
    os.symlink(tmp_path / "outside", root / "link")           # a directory leading out
    os.symlink(root / "real", root / "inner")                 # one leading inside
    return str(root)


def _fuzz_paths(root, rng, n):
    segs = ["a", "b", "c", "x", "link", "inner", "real", ".", "..", "", "a b", "ü", "x\x00y"]
    starts = [root, root + "/", root + "x", os.path.dirname(root), "", "/", "a",
              os.path.dirname(root) + "/tx", os.path.dirname(root) + "/outside"]
    out = []
    for _ in range(n):
        k = rng.randint(0, 4)
        out.append(rng.choice(starts) + "/".join([""] * (k > 0) + [rng.choice(segs)
                                                                    for _ in range(k)]))
    return out


def test_check_all_gives_the_verdict_and_message_of_each_path_s_check(tmp_path):
    root = _hostile_tree(tmp_path)
    io = LocalFileIO(root)
    rng = random.Random(20261127)
    plain = [f"{root}/{d}/f{i}" for d in ("a", "a/b", "c", "inner") for i in range(3)]
    for _ in range(3000):
        paths = rng.sample(plain, rng.randint(0, 4)) + _fuzz_paths(root, rng, rng.randint(1, 3))
        rng.shuffle(paths)
        expected = ("ok", paths)
        for p in paths:   # the first refused path's refusal, as path-by-path checks give it
            got = _outcome(lambda: io._check_inside(p))
            if got[0] == "refused":
                expected = got
                break
        assert _outcome(lambda: io._check_all(paths)) == expected, paths


@pytest.mark.parametrize("hostile", [
    "{r}/a/..", "{r}/a/.", "{r}/a/", "{r}/a//f", "{r}/a/f/", "f", "a/f", "", "{r}", "{r}/",
    "{r}x/f", "{r}/../t/a/f", "{r}/link/f", "{r}/a/../link/f", "{r}/a/./f",
])
def test_a_hostile_path_after_an_accepted_sibling_is_refused(tmp_path, hostile):
    root = _hostile_tree(tmp_path)
    io = LocalFileIO(root)
    h = hostile.format(r=root)
    want = _outcome(lambda: io._check_inside(h))
    assert want[0] == "refused"
    for sibling in (f"{root}/a/f0", f"{root}/link0", f"{root}/a/b/f"):
        assert _outcome(lambda: io._check_all([sibling, h])) == want


def test_non_str_paths_are_refused_after_an_accepted_sibling(tmp_path):
    root = _hostile_tree(tmp_path)
    io = LocalFileIO(root)
    for bad in (None, f"{root}/a/f".encode(), 7):
        with pytest.raises(UnsafePathError, match="not a path"):
            io._check_all([f"{root}/a/f0", bad])


def test_a_root_of_slash_needs_the_slash_of_the_directory(tmp_path):
    # root "/": "/f" is accepted in directory "" - a relative "g" is not in it
    io = LocalFileIO("/")
    assert io._check_all(["/f"]) == ["/f"]
    for bad in ("g", "//g", "/"):
        want = _outcome(lambda: io._check_inside(bad))
        assert want[0] == "refused"
        assert _outcome(lambda: io._check_all(["/f", bad])) == want


def test_an_overridden_check_is_asked_for_every_path(tmp_path):
    root = _hostile_tree(tmp_path)
    seen = []

    class Watching(LocalFileIO):
        def _check_resolved(self, path, norm):
            seen.append(norm)
            super()._check_resolved(path, norm)

    paths = [f"{root}/a/f{i}" for i in range(5)]
    assert Watching(root)._check_all(paths) == paths
    assert seen == paths


# --- the unlink loop: the outcomes of _unlink -----------------------------------------------

def test_the_loop_unlinks_bills_and_refuses_as_unlink_does(tmp_path):
    root = tmp_path / "t"
    (root / "d").mkdir(parents=True)
    names = [f"f{i}" for i in range(40)]
    for n in names:
        (root / "d" / n).write_bytes(b"x")
    paths = [str(root / "d" / n) for n in names]
    os.unlink(paths[3])                     # already gone: not deleted, still a request
    io = LocalFileIO(str(root))
    io.deletion_log = []
    with metering() as meter:
        deleted = io.delete_files(paths)
    assert deleted == paths[:3] + paths[4:] == io.deletion_log
    assert meter.bill()["DELETE"] == len(paths)
    # a directory named as a file: refused there, what went before it logged
    for n in names:
        (root / "d" / n).write_bytes(b"x")
    (root / "d" / "f20").unlink()
    (root / "d" / "f20").mkdir()
    io.deletion_log = []
    with pytest.raises(UnsafePathError, match="refusing to delete directory"):
        io.delete_files(paths)
    assert io.deletion_log == paths[:20]
    assert sorted(os.listdir(root / "d")) == sorted(names[20:])


def test_an_overridden_unlink_is_called_for_every_file(tmp_path):
    root = tmp_path / "t"
    (root / "d").mkdir(parents=True)
    paths = []
    for i in range(40):
        (root / "d" / f"f{i}").write_bytes(b"x")
        paths.append(str(root / "d" / f"f{i}"))
    called = []

    class Counting(LocalFileIO):
        def _unlink(self, norm):
            called.append(norm)
            return super()._unlink(norm)

    assert Counting(str(root)).delete_files(paths) == paths == called
    io = LocalFileIO(str(root))
    io._unlink = lambda norm: called.append(norm) or False   # an instance attribute too
    called.clear()
    assert io.delete_files([str(root / "d" / "x")]) == [] and called == [str(root / "d" / "x")]


def test_the_root_resolved_for_a_directory_s_rechecks_is_forgotten_after_it(tmp_path):
    # A pool thread resolves the root once per directory it unlinks in (a scope around
    # `_unlink_in`), never across calls: the next call resolves it afresh.
    from concurrent.futures import ThreadPoolExecutor
    root = tmp_path / "t"
    (root / "d").mkdir(parents=True)
    paths = []
    for i in range(100):
        (root / "d" / f"f{i}").write_bytes(b"x")
        paths.append(str(root / "d" / f"f{i}"))
    io = LocalFileIO(str(root))
    with ThreadPoolExecutor(1) as pool:
        assert sorted(io.delete_files(paths, pool)) == sorted(paths)
        assert pool.submit(lambda: getattr(io._resolver._local, "dirs", None)).result() is None


def test_an_unlink_wrapped_in_place_on_the_class_is_called_for_every_file(tmp_path, monkeypatch):
    # tests/faults/kill_worker.py counts (and kills at) each `_unlink` by replacing
    # LocalFileIO._unlink itself: the loop must not bypass it.
    root = tmp_path / "t"
    (root / "d").mkdir(parents=True)
    paths = []
    for i in range(40):
        (root / "d" / f"f{i}").write_bytes(b"x")
        paths.append(str(root / "d" / f"f{i}"))
    called = []
    original = LocalFileIO._unlink

    def counting(self, norm):
        called.append(norm)
        return original(self, norm)
    monkeypatch.setattr(LocalFileIO, "_unlink", counting)
    assert LocalFileIO(str(root)).delete_files(paths) == paths == called


def test_a_gate_check_wrapped_in_place_on_the_class_is_asked_for_every_path(tmp_path,
                                                                            monkeypatch):
    from paimon_commit.io.base import FileIO
    root = _hostile_tree(tmp_path)
    seen = []
    original = FileIO._check_inside

    def watching(self, path):
        seen.append(path)
        return original(self, path)
    monkeypatch.setattr(FileIO, "_check_inside", watching)
    paths = [f"{root}/a/f{i}" for i in range(5)]
    assert LocalFileIO(root)._check_all(paths) == paths == seen
