"""manifests.merge_entries against the straightforward merge it replaced (one dict keyed by
(identifier, kind)): the same entries in the same order, the same conflicts."""
import random
from typing import Any, Dict, Tuple

import pytest

from paimon_commit.errors import CommitConflictError
from paimon_commit.format.manifest import DataFileMeta, FileKind, ManifestEntry
from paimon_commit.manifests import live_entries, merge_entries


def reference(entries, strict=True):
    out: Dict[Tuple[Any, int], ManifestEntry] = {}
    for e in entries:
        ident = e.identifier
        if e.kind == FileKind.ADD:
            key = (ident, FileKind.ADD)
            if key in out:
                if strict:
                    raise CommitConflictError("added twice")
                continue
            out[key] = e
        else:
            add_key = (ident, FileKind.ADD)
            if add_key in out:
                del out[add_key]
                continue
            key = (ident, FileKind.DELETE)
            if key in out:
                if strict:
                    raise CommitConflictError("deleted twice")
                continue
            out[key] = e
    return list(out.values())


def _entries(rng, n):
    files = [DataFileMeta(f"f{i}", 10 + i, 1, 0, level=rng.choice([0, 1]),
                          extra_files=rng.choice([(), ("x",)])) for i in range(6)]
    return [ManifestEntry(rng.choice([FileKind.ADD, FileKind.DELETE]),
                          rng.choice([b"p1", b"p2"]), 0, -1, rng.choice(files))
            for _ in range(n)]


@pytest.mark.parametrize("seed", range(300))
def test_merge_is_the_reference_merge(seed):
    rng = random.Random(seed)
    entries = _entries(rng, rng.randrange(0, 40))
    want = reference(entries, strict=False)
    got = merge_entries(entries, strict=False)
    assert got == want and [id(e) for e in got] == [id(e) for e in want]
    assert live_entries(entries) == [e for e in want if e.kind == FileKind.ADD]
    try:
        strict_want = reference(entries)
    except CommitConflictError as e:
        with pytest.raises(CommitConflictError, match=str(e).split()[-1]):
            merge_entries(entries)
    else:
        assert merge_entries(entries) == strict_want


def test_the_same_entry_object_twice_is_a_double_add():
    e = ManifestEntry(FileKind.ADD, b"p", 0, -1, DataFileMeta("f", 1, 1, 0))
    with pytest.raises(CommitConflictError, match="added twice"):
        merge_entries([e, e])
    d = e.as_delete()
    with pytest.raises(CommitConflictError, match="deleted twice"):
        merge_entries([d, d])


@pytest.mark.parametrize("seed", range(100))
def test_live_identifiers_are_those_of_the_live_entries(seed):
    from paimon_commit.manifests import live_identifiers
    rng = random.Random(seed)
    entries = _entries(rng, rng.randrange(0, 40))
    live = live_entries(entries)
    assert live_identifiers(entries) == {e.identifier for e in live}
    assert live_identifiers(entries, {b"p1"}) == {e.identifier for e in live
                                                   if e.partition == b"p1"}
