"""The request bill: what an operation asked of the storage, by kind, counted where the
storage layer makes each request, for the operation's whole duration and in its worker
threads; and a read-only view of a FileIO for `check`.

What a count means. Kinds are named as object stores bill them; on local disk (and through
pyarrow.fs) each kind counts the equivalent call:

    kind    object store (S3, GCS, Azure via obstore)        local disk
    LIST    one listing page (up to 1,000 keys and common    one directory listed (scandir or
            prefixes each: a directory of 2,500 entries      listdir; the status the listing
            is 3 LIST)                                       returns comes with it)
    GET     one object read (read_bytes, a parquet file,     one file read (read_bytes, a
            the read-back after a lost conditional create)   file opened for reading)
    HEAD    one status asked (exists, file_size; a size      one stat (exists, file_size,
            this process wrote is known: no HEAD)            each entry stat'ed after a
                                                             names-only listing)
    PUT     one PUT; a multipart upload counts its create,   one file written (a publish by
            each part and its completion (S3 bills each as   temp file + link + unlink of
            a PUT-class request)                             the temp is one write)
    DELETE  one DELETE, or one batched delete of up to       one unlink, or one rmdir of an
            1,000 keys (S3 DeleteObjects: one POST)          empty directory

`bytes_read` adds the bytes of every GET that returned them (a local file opened as a stream
for a reader is counted without bytes); `bytes_written` the bytes of every PUT and of every
object-store stream (data files, compaction output; local streams: no bytes).

Where a count may differ from the store's own bill (the tests allow exactly these):
- a request the store's client retried (obstore retries throttling, 5xx and timeouts with
  backoff) is one request here and as many as were sent on the bill;
- directory creation is never counted (object stores have none; local mkdir is not a
  request anyone pays for);
- on object stores, a multipart upload's part count is computed from the bytes written and
  the client's part size, not observed.

Whose requests. `metering()` opens a meter in the current context (contextvars); every
request made by this thread while it is open is counted in it and in every meter open around
it (a `maintain` counts each table's operations in the table's meter and in its own total).
Worker threads count for the operation that submitted their work when the pool is a
`ContextExecutor` (every pool of this library is), and threads started with
`in_context(fn)` (the lease renewer) likewise. Two operations running at once in one process
(a commit and its ASYNC maintenance thread, two tables of a parallel `maintain`) never mix:
each counts in its own context. A commit's meter closes before its post-commit maintenance
starts, so `CommitResult.requests` holds the commit's requests and
`MaintenanceResult.requests` the maintenance's; a meter open around both (the caller's own)
holds both, an ASYNC maintenance's too. Not counted: work on an executor that is not a
ContextExecutor (one a caller passes in), and Spark executors (other processes).

A storage counts through `note(storage, kind, ...)`: a new primitive that makes requests
must call it, or the tests comparing the counts with the S3 server's log fail.
"""
from __future__ import annotations

import contextvars
import functools
import json
import math
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Tuple

from .base import FileEntries, FileIO, FileStatus

__all__ = ["MeteredReadOnlyIO", "REQUEST_KINDS", "RequestBill", "Meter", "metering", "note",
           "billed", "attach_bill", "credit", "ContextExecutor", "in_context", "PRICE_TABLES",
           "load_prices", "estimated_cost", "format_bill", "format_cost"]

REQUEST_KINDS = ("LIST", "GET", "HEAD", "PUT", "DELETE")
_BYTE_KEYS = ("bytes_read", "bytes_written")


class RequestBill(Mapping[str, int]):
    """What one operation asked of the storage: {kind: count} for every kind of
    REQUEST_KINDS, plus `bytes_read` and `bytes_written` (a read-only mapping), and
    `storage`: the storages the requests went to ("s3", "gs", "az", "local", "pyarrow"),
    sorted. Empty (all zero) where nothing was metered."""

    __slots__ = ("_counts", "storage")

    def __init__(self, counts: Optional[Mapping[str, int]] = None, storage=()):
        self._counts = {k: int((counts or {}).get(k, 0)) for k in REQUEST_KINDS + _BYTE_KEYS}
        self.storage: Tuple[str, ...] = tuple(sorted(set(storage)))

    def __getitem__(self, key: str) -> int:
        return self._counts[key]

    def __iter__(self):
        return iter(self._counts)

    def __len__(self) -> int:
        return len(self._counts)

    def __repr__(self) -> str:
        return f"RequestBill({self._counts!r}, storage={self.storage!r})"

    @property
    def total(self) -> int:
        """Requests of every kind together."""
        return sum(self._counts[k] for k in REQUEST_KINDS)

    @property
    def local(self) -> bool:
        """Whether every request went to local disk (the counts are system calls)."""
        return bool(self.storage) and set(self.storage) <= {"local"}

    def __add__(self, other: "RequestBill") -> "RequestBill":
        return RequestBill({k: self[k] + other[k] for k in self}, self.storage + other.storage)

    def to_dict(self) -> Dict[str, Any]:
        """JSON-ready: the counts, the bytes, `total` and `storage`."""
        return {**self._counts, "total": self.total, "storage": list(self.storage)}


class Meter:
    """Counts of one metering() scope; `bill()` is what it counted so far."""

    __slots__ = ("_lock", "_counts", "_storage")

    def __init__(self):
        self._lock = threading.Lock()
        self._counts = dict.fromkeys(REQUEST_KINDS + _BYTE_KEYS, 0)
        self._storage: set = set()

    def add(self, storage: str, kind: str, n: int, read: int, written: int) -> None:
        with self._lock:
            c = self._counts
            c[kind] += n
            if read:
                c["bytes_read"] += read
            if written:
                c["bytes_written"] += written
            self._storage.add(storage)

    def bill(self) -> RequestBill:
        with self._lock:
            return RequestBill(self._counts, self._storage)


# The meters open in this context, innermost last.
_OPEN: contextvars.ContextVar[Tuple[Meter, ...]] = contextvars.ContextVar(
    "paimon_commit_request_meters", default=())


@contextmanager
def metering() -> Iterator[Meter]:
    """Count every request of this context (and of its ContextExecutor tasks) until the
    block ends, in a new meter and in the ones already open around it."""
    meter = Meter()
    token = _OPEN.set(_OPEN.get() + (meter,))
    try:
        yield meter
    finally:
        _OPEN.reset(token)


def note(storage: str, kind: str, n: int = 1, read: int = 0, written: int = 0) -> None:
    """`n` requests of `kind` made now (by a storage), counted in every open meter."""
    meters = _OPEN.get()
    for m in meters:   # () when nothing meters: the cost of an unmetered request
        m.add(storage, kind, n, read, written)


def credit(bill: Mapping[str, int], storage=()) -> None:
    """Count a bill of requests made elsewhere (a worker process of `maintain`) in every open
    meter, as if made here."""
    storages = tuple(getattr(bill, "storage", storage)) or ("local",)
    for m in _OPEN.get():
        for k in REQUEST_KINDS:
            if bill[k]:
                m.add(storages[0], k, bill[k], 0, 0)
        m.add(storages[0], "LIST", 0, bill["bytes_read"], bill["bytes_written"])
        with m._lock:
            m._storage.update(storages)


def attach_bill(result: Any, bill: RequestBill) -> Any:
    """Set `result.requests` (also on a frozen dataclass); the result."""
    if result is not None:
        try:
            object.__setattr__(result, "requests", bill)
        except AttributeError:   # a result without the field (a list, a bool): nothing
            pass
    return result


def billed(fn: Callable) -> Callable:
    """Run `fn` metered and set the result's `requests` to its bill (one wrapper per
    operation entry point)."""
    @functools.wraps(fn)
    def run(*args, **kwargs):
        with metering() as meter:
            result = fn(*args, **kwargs)
        return attach_bill(result, meter.bill())
    return run


class ContextExecutor(ThreadPoolExecutor):
    """A ThreadPoolExecutor whose tasks run in the context of the code that submitted them:
    their requests count for the operation that submitted them (`map` submits too)."""

    def submit(self, fn, /, *args, **kwargs):
        return super().submit(contextvars.copy_context().run, fn, *args, **kwargs)


def in_context(fn: Callable) -> Callable:
    """`fn` to run on another thread, in a copy of the current context (its requests count
    for the operation that started the thread)."""
    return functools.partial(contextvars.copy_context().run, fn)


# --- prices --------------------------------------------------------------------------------

# USD per 1,000 requests, as the vendors' list prices state them for their standard/hot
# tier (S3: us-east-1; GCS: a regional bucket's Class A/B operations; Azure: Blob Storage
# hot tier, LRS, per 10,000 divided by 10), read from their pricing pages in 2024:
#   https://aws.amazon.com/s3/pricing/              PUT, COPY, POST, LIST $0.005;
#                                                   GET, SELECT and all other $0.0004;
#                                                   DELETE free
#   https://cloud.google.com/storage/pricing        Class A (insert, list) $0.005;
#                                                   Class B (get, metadata) $0.0004;
#                                                   delete free
#   https://azure.microsoft.com/pricing/details/storage/blobs/
#                                                   hot: write and list $0.065 per 10,000,
#                                                   read $0.005 per 10,000, all other
#                                                   $0.005 per 10,000, delete free
# Checked again 2026-11-27: GCS's pricing-examples page bills Class A (adds, listings) at
# $0.005 and Class B (gets, metadata) at $0.0004 per 1,000, and S3's LIST/PUT price is $0.005
# per 1,000, as above; the Azure figures could not be re-read here (they vary by region and
# redundancy more than the others: give yours as a file).
# Prices change and contracts differ: `--price FILE.json` takes your own.
PRICE_TABLES: Dict[str, Dict[str, float]] = {
    "s3-standard": {"LIST": 0.005, "GET": 0.0004, "HEAD": 0.0004, "PUT": 0.005, "DELETE": 0.0},
    "gcs-standard": {"LIST": 0.005, "GET": 0.0004, "HEAD": 0.0004, "PUT": 0.005,
                     "DELETE": 0.0},
    "azure-hot": {"LIST": 0.0065, "GET": 0.0005, "HEAD": 0.0005, "PUT": 0.0065, "DELETE": 0.0},
}


def load_prices(spec: str) -> Tuple[str, Dict[str, float]]:
    """(name, {kind: USD per 1,000 requests}) of a price table name (PRICE_TABLES) or of a
    JSON file holding one number >= 0 for each of LIST, GET, HEAD, PUT and DELETE (a
    "name" key may name it). ValueError, in one line, for anything else."""
    if spec in PRICE_TABLES:
        return spec, dict(PRICE_TABLES[spec])
    names = ", ".join(PRICE_TABLES)
    if not (spec.endswith(".json") or os.sep in spec or os.path.exists(spec)):
        raise ValueError(f"--price {spec!r}: not a price table ({names}) nor a .json file")
    try:
        with open(spec, "rb") as f:
            data = json.loads(f.read())
    except OSError as e:
        raise ValueError(f"--price {spec!r}: cannot read it ({e.strerror or e})") from None
    except ValueError as e:
        raise ValueError(f"--price {spec!r}: not JSON ({e})") from None
    if not isinstance(data, dict):
        raise ValueError(f"--price {spec!r}: expected a JSON object of USD per 1,000 "
                         f"requests by kind ({', '.join(REQUEST_KINDS)})")
    name = data.pop("name", os.path.basename(spec))
    unknown = sorted(set(data) - set(REQUEST_KINDS))
    missing = [k for k in REQUEST_KINDS if k not in data]
    if unknown or missing:
        raise ValueError(f"--price {spec!r}: " + "; ".join(
            x for x in (f"unknown key(s) {', '.join(unknown)}" if unknown else "",
                        f"missing {', '.join(missing)}" if missing else "") if x) +
            f" (give USD per 1,000 requests for each of {', '.join(REQUEST_KINDS)})")
    prices = {}
    for k in REQUEST_KINDS:
        v = data[k]
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) \
                or v < 0:
            raise ValueError(f"--price {spec!r}: {k} must be a number >= 0 (USD per 1,000 "
                             f"requests), not {v!r}")
        prices[k] = float(v)
    return str(name), prices


def estimated_cost(bill: Mapping[str, int], prices: Mapping[str, float]) -> float:
    """USD: each kind's count times its price per 1,000 requests."""
    return sum(bill[k] * prices[k] for k in REQUEST_KINDS) / 1000.0


def format_cost(usd: float) -> str:
    """$0.0012: as many decimals as the smallest price needs (7), no trailing zeros."""
    text = f"{usd:.7f}".rstrip("0").rstrip(".")
    return f"${text if text else '0'}"


def _size(n: int) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"


_LOCAL_WORDS = {"LIST": ("listing", "listings"), "GET": ("read", "reads"),
                "HEAD": ("stat", "stats"), "PUT": ("write", "writes"),
                "DELETE": ("unlink", "unlinks")}


def format_bill(bill: Mapping[str, Any]) -> str:
    """The `requests:` line: `requests: 12 LIST, 340 GET (5.1 MB), 3 PUT (1.2 kB), 2 DELETE`
    (kinds with a count only); on local disk in its words (`2 listings, 5 reads (1.0 kB),
    1 write, 3 unlinks (local disk)`); `requests: none` when there were none."""
    storage = bill.storage if isinstance(bill, RequestBill) else \
        tuple(bill.get("storage", ()))
    local = bool(storage) and set(storage) <= {"local"}
    parts = []
    for k in REQUEST_KINDS:
        n = bill[k]
        if not n:
            continue
        word = _LOCAL_WORDS[k][n != 1] if local else k
        size = bill["bytes_read"] if k == "GET" else bill["bytes_written"] if k == "PUT" \
            else 0
        parts.append(f"{n} {word}" + (f" ({_size(size)})" if size else ""))
    if not parts:
        return "requests: none"
    return "requests: " + ", ".join(parts) + (" (local disk)" if local else "")


# --- check's view: read-only --------------------------------------------------------------

class MeteredReadOnlyIO(FileIO):
    """`inner` for reading only, counting each call made through it by kind (`requests()`:
    one per call, whatever the storage made of it; an operation's bill is its meter's)."""

    def __init__(self, inner: FileIO):
        self.inner = inner
        self.root = inner.root
        self._lock = threading.Lock()
        self._counts: Dict[str, int] = {k: 0 for k in REQUEST_KINDS}
        self._bytes = 0

    def requests(self) -> Dict[str, int]:
        """{kind: count} for every kind of REQUEST_KINDS, and `bytes_read`."""
        with self._lock:
            return {**self._counts, "bytes_read": self._bytes}

    def _note(self, kind: str, size: int = 0) -> None:
        with self._lock:
            self._counts[kind] += 1
            self._bytes += size

    # --- what is passed through (paths are the inner storage's) ----------------------------
    def join(self, *parts: str) -> str:
        return self.inner.join(*parts)

    def _describe(self, path: str) -> str:
        return self.inner._describe(path)

    def read_bytes(self, path: str) -> bytes:
        data = self.inner.read_bytes(path)
        self._note("GET", len(data))
        return data

    def read_bytes_at_most(self, path: str, limit: int) -> bytes:
        try:
            data = self.inner.read_bytes_at_most(path, limit)
        except BaseException:
            self._note("GET")
            raise
        self._note("GET", len(data))
        return data

    def open_input_file(self, path: str):
        self._note("GET")
        return self.inner.open_input_file(path)

    def exists(self, path: str) -> bool:
        self._note("HEAD")
        return self.inner.exists(path)

    def file_size(self, path: str) -> int:
        self._note("HEAD")
        return self.inner.file_size(path)

    def list_status(self, directory: str) -> List[FileStatus]:
        self._note("LIST")
        return self.inner.list_status(directory)

    def list_names(self, directory: str) -> List[str]:
        self._note("LIST")
        return self.inner.list_names(directory)

    def list_files(self, directory: str) -> FileEntries:
        self._note("LIST")
        return self.inner.list_files(directory)

    # --- refused: this view only reads --------------------------------------------------------
    def _refuse(self, what: str, path: str):
        raise PermissionError(f"read-only view of {self._describe(self.root)}: refusing to "
                              f"{what} {self._describe(path)}")

    def mkdirs(self, directory: str) -> None:
        self._refuse("create", directory)

    def write_new(self, path: str, data: bytes) -> None:
        self._refuse("write", path)

    def overwrite_atomic(self, path: str, data: bytes) -> None:
        self._refuse("write", path)

    def try_create_atomic(self, path: str, data: bytes,
                          precondition: Optional[Callable[[], bool]] = None,
                          single_writer: bool = False) -> bool:
        self._refuse("write", path)
        return False   # (not reached)

    def open_output_stream(self, path: str):
        self._refuse("write", path)

    def _unlink(self, norm: str) -> bool:
        self._refuse("delete", norm)
        return False   # (not reached)

    def _rmdir(self, norm: str) -> bool:
        self._refuse("delete", norm)
        return False   # (not reached)
