"""Object stores (S3 and S3-compatible servers, GCS, Azure Blob) through `obstore`.

Why obstore: it exposes the stores' conditional create (`put(..., mode="create")`: S3
`If-None-Match: *`, GCS `ifGenerationMatch=0`, Azure `If-None-Match: *`), which is what makes
publishing `snapshot-N` safe with several writers and no lock; pyarrow's S3FileSystem has no
conditional put and emulates directories (marker objects, a HEAD before reads).

Request economy: a metadata file is one PUT (never multipart), a read is one GET (404 means
FileNotFoundError, no HEAD first), directories do not exist (no markers, `mkdirs` is free),
a listing is one delimited LIST per 1,000 entries with sizes and last-modified times, and
deletes go in batches of up to 1,000 keys.

Requests in flight adapt to the store (io/adaptive.py): every GET, HEAD, LIST, PUT and DELETE
this module sends, from whichever thread, takes a slot of one AIMD limit per store (scheme,
endpoint, bucket) in the process, and is retried here, not inside obstore, so that a 503
SlowDown, a 429 or a timeout reaches the limit and cuts it. Two exceptions keep obstore's own
retries, exactly as before: the conditional create (`put(mode="create")`, the snapshot and
lease publish), whose retry after a lost answer is told apart from a lost race by reading the
object back, and multipart uploads (data files), whose parts obstore retries one by one.

Paths are `bucket/key` strings (`container/key` on Azure): the table root is `bucket/prefix`,
and the deletion gate refuses anything that is not strictly below it.
"""
from __future__ import annotations

import datetime
import logging
import re
import threading
import uuid
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Tuple, TypeVar

from ..errors import AtomicCreateUnsupportedError, ObjectStoreError, UnsafePathError
from . import adaptive
from .base import FileIO, FileStatus, FileTooLargeError
from .metered import note as _bill
from .object_store_config import build_store
from .uri import AZURE_SCHEMES, GCS_SCHEMES, parse_object_store_uri

log = logging.getLogger(__name__)

__all__ = ["ObjectStoreFileIO", "SINGLE_WRITER_OPTION"]

#: Declared in options.py as CoreOptions.COMMIT_SINGLE_WRITER; repeated here for messages.
SINGLE_WRITER_OPTION = "commit.single-writer"

# Names that are files in a Paimon table, never directories: exists() needs no LIST for them.
_FILE_NAME = re.compile(r"^(snapshot|changelog|schema)-\d+$|^(tag|consumer|manifest|index|stat)-"
                        r"|\.(parquet|orc|avro)$|^(LATEST|EARLIEST)$|^\.")
_SIZES_MAX = 100_000          # sizes of files this process wrote, remembered at most
_DELETE_BATCH = 1000          # S3 DeleteObjects takes at most 1,000 keys
_SINGLE_PUT_MAX = 64 << 20    # below this a file is one PUT (S3 allows 5 GiB)
_WRITER_BUFFER = 16 << 20     # data files up to this size are one PUT, larger ones multipart
# Metadata reads in flight per operation (io/read_ahead.py): each is one round trip, so a
# reader keeping 32 in flight waits ~1/32 of the latency per file; S3 serves thousands of
# GETs per second per prefix. A store that serves fewer is met by the adaptive limit below.
_READS_IN_FLIGHT = 32
# The adaptive limit of requests in flight per store (io/adaptive.py). The ceiling is above
# one operation's read-ahead: orphan cleanup lists (16 threads) while it reads (64: it holds
# only names, `OrphanFilesCleaner._reads`), and the limit, not the pools, then bounds it. It
# starts at 16 and doubles per round trip while the store keeps up: a store that throttles
# at 8 refuses 8 of the first burst, not 24.
_REQUESTS_IN_FLIGHT_MAX = 64
_REQUESTS_IN_FLIGHT_START = 16
# obstore's own RetryConfig defaults (a store built without one).
_OBSTORE_RETRY_DEFAULTS = adaptive.RetryPolicy(retries=10, timeout_s=180.0, init_s=0.1,
                                               max_s=15.0, base=2.0)
_T = TypeVar("_T")
_LIST_PAGE = 1000             # keys and common prefixes per LIST page (S3, GCS, Azure)
_MULTIPART_CHUNK = 5 << 20    # obstore.put's part size when use_multipart


# --- the probe: once per table root and process ------------------------------------------

_probe_lock = threading.Lock()
_probe_results: Dict[Tuple[str, str, str], Optional[str]] = {}  # None = atomic


def _first_line(e: BaseException) -> str:
    text = str(e).split("\n\nDebug source", 1)[0].strip()
    lines = [ln for ln in text.splitlines() if ln.strip()]
    first = lines[0] if lines else type(e).__name__
    # obstore appends the server's XML body; its <Code> is the useful part.
    if "<Code>" in text:
        code = text.split("<Code>", 1)[1].split("</Code>", 1)[0]
        first = first.split(": <?xml", 1)[0] + f" ({code})"
    return first[:400]


class _CountingWriter:
    """A writable binary stream for pyarrow: obstore's buffered writer (one PUT for files up
    to the buffer size, multipart above) that remembers how many bytes went in."""

    def __init__(self, owner: "ObjectStoreFileIO", path: str):
        import obstore
        self._owner = owner
        self._path = path
        self._w = obstore.open_writer(owner.store, owner._key(path),
                                      buffer_size=_WRITER_BUFFER)
        self._n = 0
        self._closed = False

    @property
    def closed(self) -> bool:
        return self._closed

    def writable(self) -> bool:
        return True

    def readable(self) -> bool:
        return False

    def seekable(self) -> bool:
        return False

    def tell(self) -> int:
        return self._n

    def write(self, data) -> int:
        n = len(memoryview(data).cast("B"))
        try:
            self._w.write(data)
        except Exception as e:  # noqa: BLE001 - mapped to a clear error
            raise self._owner._error("write", self._path, e) from None
        self._n += n
        return n

    def flush(self) -> None:
        pass  # buffered until close: flushing early would start a multipart upload

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        # The request bill (io/metered.py): one PUT up to the buffer; above, a multipart
        # upload of buffer-sized parts (create, the parts, complete: PUT-class requests).
        n = self._n
        _bill(self._owner.scheme, "PUT", 1 if n <= _WRITER_BUFFER else
              2 + -(-n // _WRITER_BUFFER), written=n)
        try:
            self._w.close()
        except Exception as e:  # noqa: BLE001
            raise self._owner._error("write", self._path, e) from None
        self._owner._remember_size(self._path, self._n)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class ObjectStoreFileIO(FileIO):
    """One table root on S3 (or an S3-compatible server), GCS or Azure Blob."""

    delete_batch_size = _DELETE_BATCH
    read_concurrency = _READS_IN_FLIGHT

    def __init__(self, store, scheme: str, bucket: str, prefix: str, description: str,
                 secrets: Iterable[str] = (), endpoint: str = ""):
        self.store = store
        self.scheme = scheme
        self.bucket = bucket
        self.root = f"{bucket}/{prefix}" if prefix else bucket
        self.description = description
        self._secrets = sorted({s for s in secrets if s}, key=len, reverse=True)
        self._identity = (scheme, endpoint, bucket)
        # Sizes of immutable files this process wrote: no HEAD needed to learn them.
        self._sizes: Dict[str, int] = {}
        # What we retry ourselves goes through a twin of the store with obstore's retries
        # off (else a 503 is retried, invisibly, inside obstore and never reaches the limit).
        self._direct, self._retry = _without_retries(store)
        self._limit = self._store_limit()

    def _store_limit(self) -> adaptive.AdaptiveLimit:
        return adaptive.limit_for(("requests",) + self._identity, _REQUESTS_IN_FLIGHT_MAX,
                                  _REQUESTS_IN_FLIGHT_START, name=self.description)

    # Shipped to Spark executors (pickled) or copied: the limit is the process's, found again.
    def __getstate__(self) -> Dict[str, Any]:
        state = dict(self.__dict__)
        state.pop("_limit", None)
        return state

    def __setstate__(self, state: Dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._limit = self._store_limit()

    @property
    def request_limit(self) -> adaptive.AdaptiveLimit:
        """The adaptive limit of requests in flight to this store (shared by the process)."""
        return self._limit

    def _request(self, what: str, path: str, fn: Callable[[Any], _T]) -> _T:
        """`fn(store)`: one idempotent request, in a slot of the store's limit, retried
        with backoff and jitter on a throttling answer, a 5xx or a transport fault (as
        obstore would: object-store.max-retries, object-store.retry-timeout-seconds). What
        it finally raises is what obstore would have raised."""
        return adaptive.call(self._limit, lambda: fn(self._direct), _verdict, self._retry,
                             what=f"{what} {self.uri(path)}")

    @classmethod
    def from_uri(cls, uri: str, options: Optional[Mapping[str, str]] = None
                 ) -> "ObjectStoreFileIO":
        scheme, bucket, prefix, account, creds = parse_object_store_uri(uri)
        store, description, secrets, endpoint = build_store(
            scheme, bucket, account, creds, options or {})
        return cls(store, scheme, bucket, prefix, description, secrets, endpoint)

    def __repr__(self) -> str:
        return f"ObjectStoreFileIO({self.uri(self.root)!r}, {self.description})"

    # --- naming --------------------------------------------------------------------------
    def uri(self, path: str) -> str:
        return f"{self.scheme}://{path}"

    def _key(self, path: str) -> str:
        if not path.startswith(self.bucket + "/"):
            raise UnsafePathError(f"{path} is not in bucket {self.bucket} of this table")
        return path[len(self.bucket) + 1:]

    def _scrub(self, text: str) -> str:
        for s in self._secrets:
            text = text.replace(s, "***")
        return text

    def _error(self, op: str, path: str, e: BaseException) -> ObjectStoreError:
        reason = _first_line(e)
        retries = getattr(e, "paimon_retries", 0)
        if retries:   # retried here, not in obstore (whose message counted them)
            reason += f" (after {retries} retries)"
        if "NoSuchBucket" in str(e):
            reason = f"bucket {self.bucket!r} does not exist"
        elif "ContainerNotFound" in str(e):   # Azure
            reason = f"container {self.bucket!r} does not exist"
        elif "169.254.169.254" in str(e) or "169.254.170.2" in str(e):
            # No credentials anywhere: obstore asked the cloud instance metadata, in vain.
            reason = ("no credentials found (none given, and the cloud instance metadata "
                      "service gave none): give them with --option s3.access-key=... --option "
                      "s3.secret-key=... (in Python: storage options of those names) or as "
                      "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY")
        elif any(c in str(e) for c in ("InvalidAccessKeyId", "SignatureDoesNotMatch",
                                       "AccessDenied", "403 Forbidden")):
            reason = f"access denied (check the credentials): {reason}"
        elif "error sending request" in str(e) or "Connect" in str(e):
            reason = f"cannot reach the endpoint: {reason}"
        return ObjectStoreError(self._scrub(
            f"{self.description}: {op} {self.uri(path)} failed: {reason}"))

    def _remember_size(self, path: str, size: int) -> None:
        if len(self._sizes) >= _SIZES_MAX:   # a long-running writer: forget, HEAD if asked
            self._sizes.clear()
        self._sizes[path] = size

    # --- reading -------------------------------------------------------------------------
    def read_bytes(self, path: str) -> bytes:
        return self._get_whole(path)[0]

    def read_bytes_versioned(self, path: str) -> Tuple[bytes, Optional[str]]:
        # The GET's own ETag (else size and last-modified, as `file_versions` lists them):
        # what a later listing shows for this very object version. A snapshot file read
        # before expiration lists its directory (the horizon, the first chunk's count) is
        # then not read again by the re-check and the next chunk (audit issue26h F1: up to
        # two more GETs per held snapshot). A server whose GET and LIST spell one ETag
        # differently only costs those reads again. An override of read_bytes (a wrapper,
        # fault injection, tests) is the one read: no version then.
        if getattr(self.read_bytes, "__func__", None) is not _OWN_READ:
            return self.read_bytes(path), None
        data, meta = self._get_whole(path)
        if meta is None or int(meta.get("size", -1)) != len(data):
            return data, None
        return data, _version(meta)

    def _get_whole(self, path: str) -> Tuple[bytes, Optional[Dict[str, Any]]]:
        """One GET of the whole object: (its bytes, the response's metadata)."""
        import obstore
        _bill(self.scheme, "GET")   # counted when asked: a 404 is a request too
        try:
            key = self._key(path)

            def get(st):
                result = obstore.get(st, key)
                meta = getattr(result, "meta", None)
                return bytes(result.bytes()), (dict(meta) if meta is not None else None)
            data, meta = self._request("read", path, get)
            _bill(self.scheme, "GET", 0, read=len(data))
            return data, meta
        except FileNotFoundError as e:
            if "NoSuchBucket" in str(e) or "ContainerNotFound" in str(e):
                raise self._error("read", path, e) from None
            raise FileNotFoundError(f"{self.uri(path)} not found") from None
        except Exception as e:  # noqa: BLE001
            raise self._error("read", path, e) from None

    def read_bytes_at_most(self, path: str, limit: int) -> bytes:
        """One GET: its metadata (the object's size) comes before its body, which is read
        only when it holds at most `limit` bytes (dropping the result unread closes the
        response). A ranged GET would also be one request, but answers 416 for an empty
        object and Azure has no suffix ranges; a HEAD first would be two."""
        import obstore
        _bill(self.scheme, "GET")
        key = self._key(path)

        def get(st):
            result = obstore.get(st, key)
            size = int(result.meta["size"])
            return size, (bytes(result.bytes()) if size <= limit else None)
        try:
            size, data = self._request("read", path, get)
        except FileNotFoundError as e:
            if "NoSuchBucket" in str(e) or "ContainerNotFound" in str(e):
                raise self._error("read", path, e) from None
            raise FileNotFoundError(f"{self.uri(path)} not found") from None
        except Exception as e:  # noqa: BLE001
            raise self._error("read", path, e) from None
        if data is None:
            raise FileTooLargeError(path, size)
        _bill(self.scheme, "GET", 0, read=len(data))
        return data

    def _head(self, path: str):
        import obstore
        _bill(self.scheme, "HEAD")
        key = self._key(path)
        try:
            return self._request("check", path, lambda st: obstore.head(st, key))
        except FileNotFoundError as e:
            if "NoSuchBucket" in str(e):
                raise self._error("check", path, e) from None
            return None
        except Exception as e:  # noqa: BLE001
            raise self._error("check", path, e) from None

    def exists(self, path: str) -> bool:
        """Whether an object is at `path`, or objects below `path/` (a "directory"). A name
        that can only be a file (snapshot-N, tag-..., data files, ...) costs one HEAD; any
        other absent name also costs one LIST."""
        if self._head(path) is not None:
            return True
        if _FILE_NAME.search(path.rsplit("/", 1)[-1]):
            return False
        import obstore
        key = self._key(path.rstrip("/") + "/")
        try:
            page = self._list(path + "/", key)
        except Exception as e:  # noqa: BLE001
            raise self._error("list", path + "/", e) from None
        return bool(page["objects"] or page["common_prefixes"])

    def file_size(self, path: str) -> int:
        size = self._sizes.get(path)
        if size is not None:
            return size
        meta = self._head(path)
        if meta is None:
            raise FileNotFoundError(f"{self.uri(path)} not found")
        return meta["size"]

    def list_status(self, directory: str) -> List[FileStatus]:
        import obstore
        directory = directory.rstrip("/")
        prefix = self._key(directory + "/") if directory != self.bucket else ""
        try:
            listing = self._list(directory + "/", prefix or None)
        except Exception as e:  # noqa: BLE001 - a missing bucket is 404 too: say so
            raise self._error("list", directory + "/", e) from None
        out = []
        for p in listing["common_prefixes"]:
            p = p.rstrip("/")
            out.append(FileStatus(f"{self.bucket}/{p}", p.rsplit("/", 1)[-1], 0, 0, True))
        for m in listing["objects"]:
            key = m["path"]
            if key.endswith("/") or key == prefix:
                continue  # a directory marker written by another tool
            mtime = m.get("last_modified")
            ms = int(mtime.timestamp() * 1000) if mtime is not None else 0
            out.append(FileStatus(f"{self.bucket}/{key}", key.rsplit("/", 1)[-1],
                                  int(m["size"]), ms, False))
        return out

    def _list(self, directory: str, prefix: Optional[str]):
        """One delimited listing (obstore pages it: one LIST per 1,000 entries, billed)."""
        import obstore
        try:
            listing = self._request("list", directory,
                                    lambda st: obstore.list_with_delimiter(st, prefix))
        except Exception:
            _bill(self.scheme, "LIST")
            raise
        n = len(listing["objects"]) + len(listing["common_prefixes"])
        _bill(self.scheme, "LIST", max(1, -(-n // _LIST_PAGE)))
        return listing

    def file_versions(self, directory: str) -> Optional[Dict[str, str]]:
        """name -> ETag (else size and last-modified) of each object directly below."""
        import obstore
        directory = directory.rstrip("/")
        prefix = self._key(directory + "/") if directory != self.bucket else ""
        try:
            listing = self._list(directory + "/", prefix or None)
        except Exception as e:  # noqa: BLE001
            raise self._error("list", directory + "/", e) from None
        out: Dict[str, str] = {}
        for m in listing["objects"]:
            key = m["path"]
            if key.endswith("/") or key == prefix:
                continue
            out[key.rsplit("/", 1)[-1]] = _version(m)
        return out

    # --- writing -------------------------------------------------------------------------
    def mkdirs(self, directory: str) -> None:
        """Nothing to do: object stores have no directories (and we write no markers)."""

    def _put(self, path: str, data: bytes, mode: Optional[str] = None) -> None:
        import obstore
        key = self._key(path)
        multipart = len(data) > _SINGLE_PUT_MAX
        _bill(self.scheme, "PUT", 2 + -(-len(data) // _MULTIPART_CHUNK)
              if multipart else 1, written=len(data))
        if mode is not None or multipart:
            # obstore retries these, as before: a conditional create's outcome after a lost
            # answer is the caller's to establish (try_create_atomic reads the object back),
            # never a blind retry of ours; a multipart upload retries part by part.
            kwargs: Dict[str, Any] = {"use_multipart": multipart}
            if mode is not None:
                kwargs["mode"] = mode
            obstore.put(self.store, key, data, **kwargs)
            return
        # One PUT of the whole object: the same bytes again are the same object.
        self._request("write", path, lambda st: obstore.put(st, key, data,
                                                             use_multipart=False))

    def write_new(self, path: str, data: bytes) -> None:
        try:
            self._put(path, bytes(data))
        except Exception as e:  # noqa: BLE001
            raise self._error("write", path, e) from None
        self._remember_size(path, len(data))

    def overwrite_atomic(self, path: str, data: bytes) -> None:
        # A PUT replaces an object atomically: readers see the old or the new one.
        try:
            self._put(path, bytes(data))
        except Exception as e:  # noqa: BLE001
            raise self._error("write", path, e) from None
        self._sizes.pop(path, None)

    def try_create_atomic(self, path: str, data: bytes,
                          precondition: Optional[Callable[[], bool]] = None,
                          single_writer: bool = False) -> bool:
        """A conditional PUT. A store that answers "not supported" is an error
        (AtomicCreateUnsupportedError naming `commit.single-writer`) unless the caller declares
        a single writer: then, and only for this call, the object is created by check-then-put.
        Every call asks the store again: one odd reply never turns the condition off."""
        from obstore.exceptions import AlreadyExistsError
        data = bytes(data)
        if precondition is not None and not precondition():
            return False
        try:
            self._put(path, data, mode="create")
        except AlreadyExistsError:
            # Lost the race, or a retry of our own PUT whose first answer was lost: only
            # then is the object byte for byte ours (snapshots carry a unique commit user).
            try:
                if self.read_bytes(path) == data:
                    self._remember_size(path, len(data))
                    return True
            except FileNotFoundError:
                pass
            return False
        except Exception as e:  # noqa: BLE001
            if not _not_supported(e):
                raise self._error("create", path, e) from None
            reason = self._scrub(_first_line(e))
            with _probe_lock:   # the next commit probes again instead of trusting the old answer
                _probe_results.pop((self._identity[0], self._identity[1], self.root), None)
            if not single_writer:
                raise AtomicCreateUnsupportedError(
                    f"{self.description} rejected the conditional create of {self.uri(path)} "
                    f"({reason}): without it, several writers could publish the same snapshot "
                    f"and all but one commit would be lost silently, so nothing was created. "
                    f"Declare '{SINGLE_WRITER_OPTION}' = 'true' in the table or commit options "
                    f"if only one process ever commits to this table.") from None
            log.warning("%s rejects conditional writes (%s); creating %s by check-then-write, "
                        "as '%s' declares a single writer", self.description, reason,
                        self.uri(path), SINGLE_WRITER_OPTION)
            return self._check_then_put(path, data)
        self._remember_size(path, len(data))
        return True

    def _check_then_put(self, path: str, data: bytes) -> bool:
        if self.exists(path):
            return False
        self.write_new(path, data)
        return True

    def check_atomic_create(self) -> None:
        """Prove once per table root and process that the store refuses a second
        create-if-absent of one key; raise AtomicCreateUnsupportedError otherwise."""
        key = (self._identity[0], self._identity[1], self.root)
        with _probe_lock:
            if key not in _probe_results:
                _probe_results[key] = self._probe()
            problem = _probe_results[key]
        if problem is not None:
            raise AtomicCreateUnsupportedError(
                f"{self.description} cannot guarantee an atomic create-if-absent under "
                f"{self.uri(self.root)} ({problem}): with several writers, commits could be "
                f"lost silently, so nothing was published. Use a store that honours "
                f"conditional writes, or declare '{SINGLE_WRITER_OPTION}' = 'true' in the "
                f"table or commit options if only one process ever commits to this table.")

    def _probe(self) -> Optional[str]:
        from obstore.exceptions import AlreadyExistsError
        path = f"{self.root}/.atomic-create-probe-{uuid.uuid4()}"
        first, second = b"probe-1 " + uuid.uuid4().bytes, b"probe-2 " + uuid.uuid4().bytes
        try:
            try:
                self._put(path, first, mode="create")
            except AlreadyExistsError:
                pass  # a retried first PUT: the second one below still decides
            try:
                self._put(path, second, mode="create")
            except AlreadyExistsError:
                log.debug("%s honours create-if-absent under %s", self.description,
                          self.uri(self.root))
                return None
            return "a second create of one key succeeded: the store ignores If-None-Match"
        except Exception as e:  # noqa: BLE001
            if _not_supported(e):
                return f"conditional writes are rejected: {self._scrub(_first_line(e))}"
            raise self._error("create", path, e) from None
        finally:
            try:  # whatever happened, the probe object may exist: remove it (through the gate)
                self.delete_quietly(path)
            except Exception as e:  # noqa: BLE001 - an unreachable store already raised
                log.debug("could not remove %s: %s", self.uri(path), e)

    def open_output_stream(self, path: str):
        return _CountingWriter(self, path)

    def open_input_file(self, path: str):
        """The whole object in memory (one GET): parquet readers seek around the footer,
        and each seek on a remote file would be another request."""
        import obstore
        import pyarrow as pa
        _bill(self.scheme, "GET")
        key = self._key(path)
        try:
            data = self._request("read", path, lambda st: obstore.get(st, key).bytes())
            _bill(self.scheme, "GET", 0, read=len(data))
            return pa.BufferReader(pa.py_buffer(data))
        except FileNotFoundError:
            raise FileNotFoundError(f"{self.uri(path)} not found") from None
        except Exception as e:  # noqa: BLE001
            raise self._error("read", path, e) from None

    def read_parquet(self, path: str):
        """One GET, then pyarrow reads the bytes natively (threads are safe on a buffer)."""
        import pyarrow.parquet as pq
        with self.open_input_file(path) as f:
            return pq.read_table(f)

    # --- deleting (the gate is in FileIO) ----------------------------------------------
    def _describe(self, path: str) -> str:
        return self.uri(path)

    def _unlink(self, norm: str) -> bool:
        """Delete one object. S3 answers 204 whether or not it existed: True either way."""
        import obstore
        _bill(self.scheme, "DELETE")
        key = self._key(norm)
        try:
            self._request("delete", norm, lambda st: obstore.delete(st, key))
        except FileNotFoundError:
            return False
        except Exception as e:  # noqa: BLE001
            log.warning("could not delete %s: %s", self.uri(norm), self._scrub(_first_line(e)))
            return False
        self._sizes.pop(norm, None)
        return True

    def _delete_requests(self, keys: int) -> int:
        """Requests obstore makes to delete `keys` keys at once: S3 one DeleteObjects (a
        POST) per batch, Azure one blob batch per 256, GCS one DELETE per key (object_store
        has no batch delete for it)."""
        if self.scheme in AZURE_SCHEMES:
            return -(-keys // 256)
        if self.scheme in GCS_SCHEMES:
            return keys
        return 1

    def _unlink_many(self, checked: List[str]) -> List[str]:
        """Up to 1,000 keys per request (the gate checked every path before the first
        request). On a failed batch, its keys are retried one by one."""
        import obstore
        done: List[str] = []
        for i in range(0, len(checked), _DELETE_BATCH):
            chunk = checked[i:i + _DELETE_BATCH]
            _bill(self.scheme, "DELETE", self._delete_requests(len(chunk)))
            keys = [self._key(p) for p in chunk]
            try:
                self._request("delete", self.root + "/",
                              lambda st, keys=keys: obstore.delete(st, keys))
            except Exception as e:  # noqa: BLE001
                log.warning("batched delete of %d objects under %s failed (%s); deleting "
                            "them one by one", len(chunk), self.uri(self.root),
                            self._scrub(_first_line(e)))
                done.extend(p for p in chunk if self._unlink(p))
                continue
            for p in chunk:
                self._sizes.pop(p, None)
            done.extend(chunk)
        return done


# `read_bytes` as ObjectStoreFileIO defines it (`read_bytes_versioned` versions only its own
# reads: not an override, nor a wrapper set on an instance).
_OWN_READ = ObjectStoreFileIO.read_bytes


def _version(meta: Mapping[str, Any]) -> str:
    """An object's cache validator, from a listing's entry or a GET's metadata alike: its
    ETag, else its size and last-modified time."""
    return meta.get("e_tag") or f"{meta['size']}:{meta.get('last_modified')}"


def _not_supported(e: BaseException) -> bool:
    from obstore.exceptions import NotSupportedError
    text = str(e)
    return isinstance(e, NotSupportedError) or "501" in text and "Not Implemented" in text \
        or "NotImplemented" in text


# --- our own retries ---------------------------------------------------------------------

def _without_retries(store) -> Tuple[Any, adaptive.RetryPolicy]:
    """A twin of `store` (same configuration, credentials and client options) with obstore's
    retries off, and the retry policy `store` had, for `adaptive.call` to follow. A store
    that cannot be rebuilt that way is used as it is: obstore keeps retrying inside (the
    limit then only bounds what is in flight)."""
    rc = getattr(store, "retry_config", None)
    if rc is None and hasattr(store, "retry_config"):
        policy = _OBSTORE_RETRY_DEFAULTS
    elif rc is not None:
        backoff = rc.get("backoff") or {}
        d = _OBSTORE_RETRY_DEFAULTS

        def seconds(v, default):
            return v.total_seconds() if isinstance(v, datetime.timedelta) else default
        policy = adaptive.RetryPolicy(
            retries=int(rc.get("max_retries", d.retries)),
            timeout_s=seconds(rc.get("retry_timeout"), d.timeout_s),
            init_s=seconds(backoff.get("init_backoff"), d.init_s),
            max_s=seconds(backoff.get("max_backoff"), d.max_s),
            base=float(backoff.get("base", d.base)))
    else:
        return store, adaptive.RetryPolicy(retries=0)
    try:
        twin = type(store)(config=store.config, client_options=store.client_options,
                           prefix=store.prefix, credential_provider=store.credential_provider,
                           retry_config={"max_retries": 0,
                                         "retry_timeout": datetime.timedelta(
                                             seconds=policy.timeout_s)})
    except Exception as e:  # noqa: BLE001 - a store of another kind: obstore retries inside
        log.debug("cannot rebuild %r without retries (%s): obstore retries inside", store, e)
        return store, adaptive.RetryPolicy(retries=0)
    return twin, policy


_STATUS = re.compile(r"Server returned non-2xx status code: (\d{3})")
_HTTP_KIND = re.compile(r"HttpError \{\s*kind: (\w+)")


def _verdict(e: BaseException) -> adaptive.Verdict:
    """What an obstore error (retries off) means for the retry loop and the limit, as
    object_store's own retry reads it: 503 and 429 are the store pushing back, as is a
    timeout; another 5xx or a connection that failed or broke is a passing fault; anything
    else (404, 403, 412, ...) is an answer."""
    if isinstance(e, FileNotFoundError):
        return adaptive.Verdict.DONE   # the store served it: a 404 is an answer
    text = str(e)
    m = _STATUS.search(text)
    if m:
        status = int(m.group(1))
        if status in (429, 503):
            return adaptive.Verdict.CONGESTED
        return adaptive.Verdict.RETRY if status >= 500 else adaptive.Verdict.FAIL
    m = _HTTP_KIND.search(text)
    if m:
        kind = m.group(1)
        if kind == "Timeout":
            return adaptive.Verdict.CONGESTED
        if kind in ("Connect", "Request", "Interrupted"):
            return adaptive.Verdict.RETRY
    return adaptive.Verdict.FAIL
