"""Reads kept in flight on latency-bound storage: a bounded, ordered concurrent map.

On an object store every metadata read is one request of one round trip (tens of ms): an
operation that reads its snapshots, manifest lists and manifests one after the other waits
for each in turn, however many there are. `ordered` runs a function (a read, and its decode)
over items with a few of them in flight, and hands back the outcomes in the items' order, so
a caller's loop keeps its sequential shape and semantics: each outcome is a Future whose
`result()` returns the value or raises the item's own error, at the item's turn. At most
`window` outcomes are held at once (the memory of a long run stays bounded), and an early exit
from the loop cancels what has not started.

How many in flight: `FileIO.read_concurrency` (1 on local storage, where a read costs no
round trip and threads only contend for the GIL: the loop stays serial there, unchanged).
These threads bound what one operation asks for; what the store gets is bounded again by the
store's adaptive limit (io/adaptive.py, applied to every request in io/object_store.py): a
read whose turn has not come waits for a slot, and a store that answers 503 SlowDown gets
half as many in flight, not the same number again after each thread's own backoff.
"""
from __future__ import annotations

import collections
from concurrent.futures import Future
from typing import Callable, Deque, Iterable, Iterator, Optional, TypeVar

from .metered import ContextExecutor

__all__ = ["ordered", "concurrency_of"]

T = TypeVar("T")
R = TypeVar("R")


def concurrency_of(io, override: Optional[int] = None) -> int:
    """Reads in flight for `io`: `override` (a table's file-operation.thread-num) when set,
    else the storage's own `read_concurrency` (1 when it declares none)."""
    if override:
        return max(1, int(override))
    return max(1, int(getattr(io, "read_concurrency", 1) or 1))


def _done(fn: Callable[[T], R], item: T) -> "Future[R]":
    f: "Future[R]" = Future()
    try:
        f.set_result(fn(item))
    except BaseException as e:  # noqa: BLE001 - handed to the caller, raised at its turn
        f.set_exception(e)
    return f


def ordered(fn: Callable[[T], R], items: Iterable[T], workers: int,
            window: Optional[int] = None) -> Iterator["Future[R]"]:
    """`fn(item)` for each item, up to `workers` at once, as Futures in the items' order
    (call `result()`). With `workers` <= 1 each runs when its turn comes (no thread)."""
    if workers <= 1:
        for item in items:
            yield _done(fn, item)
        return
    window = max(workers, window or 2 * workers)
    pending: Deque["Future[R]"] = collections.deque()
    pool = ContextExecutor(workers, thread_name_prefix="paimon-read")
    try:
        for item in items:
            pending.append(pool.submit(fn, item))
            if len(pending) >= window:
                f = pending.popleft()
                f.exception()   # (wait without raising here)
                yield f
        while pending:
            f = pending.popleft()
            f.exception()
            yield f
    finally:
        for f in pending:
            f.cancel()
        pool.shutdown(wait=True)
