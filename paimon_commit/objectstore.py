"""Object stores (S3 and S3-compatible servers, GCS, Azure Blob) through `obstore`.

Why obstore: it exposes the stores' conditional create (`put(..., mode="create")`: S3
`If-None-Match: *`, GCS `ifGenerationMatch=0`, Azure `If-None-Match: *`), which is what makes
publishing `snapshot-N` safe with several writers and no lock; pyarrow's S3FileSystem has no
conditional put and emulates directories (marker objects, a HEAD before reads).

Request economy: a metadata file is one PUT (never multipart), a read is one GET (404 means
FileNotFoundError, no HEAD first), directories do not exist (no markers, `mkdirs` is free),
a listing is one delimited LIST per 1,000 entries with sizes and last-modified times, and
deletes go in batches of up to 1,000 keys.

Paths are `bucket/key` strings (`container/key` on Azure): the table root is `bucket/prefix`,
and the deletion gate refuses anything that is not strictly below it.
"""
from __future__ import annotations

import base64
import datetime
import json
import logging
import os
import re
import threading
import uuid
from typing import Callable, Dict, Iterable, List, Mapping, Optional, Tuple
from urllib.parse import unquote

from .errors import CommitFailedError, OptionError, PaimonCommitError, UnsafePathError
from .fileio import FileIO, FileStatus

log = logging.getLogger(__name__)

__all__ = ["ObjectStoreFileIO", "ObjectStoreError", "AtomicCreateUnsupportedError",
           "redact_uri", "storage_options", "SINGLE_WRITER_OPTION"]

#: Declared in options.py as CoreOptions.COMMIT_SINGLE_WRITER; repeated here for messages.
SINGLE_WRITER_OPTION = "commit.single-writer"

_S3_SCHEMES = ("s3", "s3a", "s3n")
_GCS_SCHEMES = ("gs", "gcs")
_AZURE_SCHEMES = ("az", "abfs", "abfss", "azure")

# Names that are files in a Paimon table, never directories: exists() needs no LIST for them.
_FILE_NAME = re.compile(r"^(snapshot|changelog|schema)-\d+$|^(tag|consumer|manifest|index|stat)-"
                        r"|\.(parquet|orc|avro)$|^(LATEST|EARLIEST)$|^\.")
_SIZES_MAX = 100_000          # sizes of files this process wrote, remembered at most
_DELETE_BATCH = 1000          # S3 DeleteObjects takes at most 1,000 keys
_SINGLE_PUT_MAX = 64 << 20    # below this a file is one PUT (S3 allows 5 GiB)
_WRITER_BUFFER = 16 << 20     # data files up to this size are one PUT, larger ones multipart


class ObjectStoreError(PaimonCommitError, OSError):
    """A request to an object store failed (unreachable endpoint, credentials refused,
    missing bucket, ...). The message names the store and the path, never a credential."""


class AtomicCreateUnsupportedError(CommitFailedError):
    """The store does not honour create-if-absent: several writers could publish the same
    snapshot id and all but one commit would be lost silently."""


# --- configuration -----------------------------------------------------------------------

# Paimon's (and Hadoop S3A's, and pypaimon's) option names -> obstore's S3 config keys.
_S3_OPTIONS = {
    "s3.endpoint": "endpoint", "fs.s3a.endpoint": "endpoint", "fs.s3.endpoint": "endpoint",
    "s3.access-key": "access_key_id", "s3.access.key": "access_key_id",
    "fs.s3a.access.key": "access_key_id", "fs.s3.accesskeyid": "access_key_id",
    "s3.secret-key": "secret_access_key", "s3.secret.key": "secret_access_key",
    "fs.s3a.secret.key": "secret_access_key", "fs.s3.accesskeysecret": "secret_access_key",
    "s3.session-token": "token", "s3.session.token": "token",
    "fs.s3a.session.token": "token", "fs.s3.securitytoken": "token",
    "s3.region": "region", "fs.s3a.endpoint.region": "region", "fs.s3a.region": "region",
    "fs.s3.region": "region",
}
_S3_PATH_STYLE = ("s3.path.style.access", "fs.s3a.path.style.access")
_GCS_OPTIONS = {
    "fs.gs.auth.service.account.json.keyfile": "service_account_path",
    "gcs.service-account-file": "service_account_path",
    "gs.service-account-file": "service_account_path",
    "gcs.service-account-key": "service_account_key",
    "gs.service-account-key": "service_account_key",
}
_AZURE_OPTIONS = {
    "azure.account-name": "account_name", "fs.azure.account.name": "account_name",
    "azure.account-key": "account_key", "azure.sas-token": "sas_key",
    "fs.azure.sas.token": "sas_key", "azure.endpoint": "endpoint",
}
_SECRET_WORDS = ("secret", "key", "token", "password", "credential", "sas", "signature")


def redact_uri(uri: str) -> str:
    """`uri` without credentials in its user-info (`s3://key:secret@bucket/p` ->
    `s3://bucket/p`). Azure's `abfss://container@account...` keeps its container."""
    if "://" not in uri:
        return uri
    scheme, rest = uri.split("://", 1)
    authority, sep, tail = rest.partition("/")
    if "@" in authority:
        userinfo, host = authority.rsplit("@", 1)
        if ":" in userinfo or scheme.lower() in _S3_SCHEMES:
            authority = host
    return f"{scheme}://{authority}{sep}{tail}"


_STORAGE_PREFIXES = ("s3.", "fs.s3a.", "fs.s3.", "fs.gs.", "gcs.", "gs.", "fs.azure.", "azure.",
                     "aws_", "google_", "azure_", "object-store.")


def storage_options(options: Mapping[str, str], path: Optional[str] = None) -> Dict[str, str]:
    """The storage options among `options` (Paimon's `s3.*`, Hadoop's `fs.s3a.*`, ...), plus
    the credentials of `path`'s user-info, so that a credential-free path and these options
    reach the same store (Spark ships both to its executors)."""
    out = {str(k): str(v) for k, v in options.items()
           if str(k).lower().startswith(_STORAGE_PREFIXES)}
    if path and "://" in path:
        scheme = path.split("://", 1)[0].lower()
        authority = path.split("://", 1)[1].split("/", 1)[0]
        if scheme in _S3_SCHEMES and "@" in authority:
            key, _, secret = authority.rsplit("@", 1)[0].partition(":")
            out.setdefault("s3.access-key", unquote(key))
            out.setdefault("s3.secret-key", unquote(secret))
    return out


def _truthy(value: str) -> bool:
    return str(value).strip().lower() in ("true", "1", "yes")


def _retry_config(options: Mapping[str, str]) -> dict:
    try:
        retries = int(options.get("object-store.max-retries", 5))
        timeout_s = float(options.get("object-store.retry-timeout-seconds", 60))
    except ValueError as e:
        raise OptionError(f"object-store.max-retries / object-store.retry-timeout-seconds: "
                          f"expected a number ({e})") from None
    return {"max_retries": retries,
            "retry_timeout": datetime.timedelta(seconds=timeout_s),
            "backoff": {"init_backoff": datetime.timedelta(milliseconds=100),
                        "max_backoff": datetime.timedelta(seconds=5), "base": 2.0}}


def _parse(uri: str) -> Tuple[str, str, str, Optional[str], Optional[Tuple[str, str]]]:
    """(scheme, bucket, prefix, azure account, user-info credentials) of an object-store URI."""
    scheme, rest = uri.split("://", 1)
    scheme = scheme.lower()
    authority, _, prefix = rest.partition("/")
    creds = None
    account = None
    if "@" in authority:
        userinfo, host = authority.rsplit("@", 1)
        if scheme in _AZURE_SCHEMES and ":" not in userinfo:
            # abfss://container@account.dfs.core.windows.net/path
            account = host.split(".", 1)[0]
            authority = userinfo
        else:
            key, _, secret = userinfo.partition(":")
            creds = (unquote(key), unquote(secret))
            authority = host
    if not authority:
        raise PaimonCommitError(f"{redact_uri(uri)}: no bucket in the object-store URI")
    prefix = prefix.strip("/")
    return scheme, authority, prefix, account, creds


def _native_options(lower: Mapping[str, str], names: Mapping[str, str],
                    native_prefix: str) -> Dict[str, str]:
    """obstore settings from Paimon/Hadoop option names (`names`) and obstore's own keys
    (`native_prefix`, e.g. `aws_`), which pass through unchanged."""
    out: Dict[str, str] = {}
    for k, v in lower.items():
        if k in names:
            out[names[k]] = v
        elif k.startswith(native_prefix):
            out[k] = v
    return out


def _gcs_base_url(config: Mapping[str, str]) -> Optional[str]:
    """Where obstore's GCSStore will send requests when not to Google (an emulator or another
    GCS-compatible endpoint), found as obstore finds it: an explicit base URL, else the
    `gcs_base_url` of the service-account JSON (file or inline key; options before
    environment). It names the store in messages and keys the probe per endpoint."""
    url = config.get("google_base_url") or os.environ.get("GOOGLE_BASE_URL")
    if url:
        return url
    key = config.get("service_account_key") or config.get("google_service_account_key")
    path = next((config[k] for k in ("service_account_path", "google_service_account_path",
                                     "google_service_account") if config.get(k)), None)
    if not key and not path:
        key = os.environ.get("GOOGLE_SERVICE_ACCOUNT_KEY")
        path = os.environ.get("GOOGLE_SERVICE_ACCOUNT") \
            or os.environ.get("GOOGLE_SERVICE_ACCOUNT_PATH")
    try:
        if key:
            return json.loads(key).get("gcs_base_url")
        if path:
            with open(path) as f:
                return json.load(f).get("gcs_base_url")
    except (OSError, ValueError, AttributeError):
        pass   # obstore reports an unreadable service account itself, naming the file
    return None


def _build_store(scheme: str, bucket: str, account: Optional[str],
                 creds: Optional[Tuple[str, str]], options: Mapping[str, str]):
    """The obstore store and a credential-free description of where it points."""
    from obstore.store import AzureStore, GCSStore, S3Store
    lower = {str(k).lower(): str(v) for k, v in options.items()}
    client: Dict[str, object] = {}
    if scheme in _S3_SCHEMES:
        config = _native_options(lower, _S3_OPTIONS, "aws_")
        for k in _S3_PATH_STYLE:
            if k in lower:
                config["virtual_hosted_style_request"] = \
                    "false" if _truthy(lower[k]) else "true"
        if creds:
            config["access_key_id"], config["secret_access_key"] = creds
        endpoint = config.get("endpoint") or config.get("aws_endpoint_url") \
            or config.get("aws_endpoint") or os.environ.get("AWS_ENDPOINT_URL") \
            or os.environ.get("AWS_ENDPOINT")
        kind, cls = "s3", S3Store
    elif scheme in _GCS_SCHEMES:
        config = _native_options(lower, _GCS_OPTIONS, "google_")
        endpoint = _gcs_base_url(config)
        kind, cls = "gcs", GCSStore
    else:
        config = _native_options(lower, _AZURE_OPTIONS, "azure_")
        for k, v in lower.items():
            if k.startswith("fs.azure.account.key.") and k.count(".") >= 4:
                # fs.azure.account.key.<account>.dfs.core.windows.net = <key>
                config["account_name"] = k[len("fs.azure.account.key."):].split(".", 1)[0]
                config["account_key"] = v
        if account and "account_name" not in config:
            config["account_name"] = account
        key = config.get("account_key") or config.get("azure_storage_account_key")
        if key:   # obstore's own message would be a raw "Invalid Access Key" with no path
            try:
                base64.b64decode(key, validate=True)
            except ValueError:
                raise OptionError(
                    f"Azure: the account key of {config.get('account_name') or 'the account'} "
                    f"(container {bucket}) is not base64: copy it as the Azure portal shows it "
                    f"(Access keys)") from None
        # Every spelling obstore reads, so that an http:// endpoint gets allow_http.
        endpoint = config.get("endpoint") or config.get("azure_storage_endpoint") \
            or config.get("azure_endpoint") or os.environ.get("AZURE_STORAGE_ENDPOINT") \
            or os.environ.get("AZURE_ENDPOINT")
        if _truthy(config.get("azure_storage_use_emulator",
                              os.environ.get("AZURE_STORAGE_USE_EMULATOR", ""))):
            if endpoint:   # obstore would silently go to AZURITE_BLOB_STORAGE_URL instead
                raise OptionError(
                    f"Azure: the emulator setting (azure_storage_use_emulator / "
                    f"AZURE_STORAGE_USE_EMULATOR) ignores the endpoint {redact_uri(endpoint)}: "
                    f"either set AZURITE_BLOB_STORAGE_URL=<http://host:port> with the emulator "
                    f"setting, or drop it and give azure.endpoint=<http://host:port/account> "
                    f"with azure.account-name and azure.account-key")
            endpoint = os.environ.get("AZURITE_BLOB_STORAGE_URL") or "http://127.0.0.1:10000"
        kind, cls = "azure", AzureStore
    if endpoint and endpoint.lower().startswith("http://"):
        client["allow_http"] = True
    store = cls(bucket, config=config or None, client_options=client or None,
                retry_config=_retry_config(lower))
    secrets = [v for k, v in config.items()
               if v and len(v) >= 4 and any(w in k for w in _SECRET_WORDS)]
    if creds:
        secrets += [c for c in creds if c]
    where = redact_uri(endpoint) if endpoint else "default endpoint"
    if kind == "azure" and config.get("account_name"):
        where += f", account {config['account_name']}"
    return store, f"{kind} store at {where}", secrets, endpoint or ""


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
        self._conditional_put = True

    @classmethod
    def from_uri(cls, uri: str, options: Optional[Mapping[str, str]] = None
                 ) -> "ObjectStoreFileIO":
        scheme, bucket, prefix, account, creds = _parse(uri)
        store, description, secrets, endpoint = _build_store(
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
        if "NoSuchBucket" in str(e):
            reason = f"bucket {self.bucket!r} does not exist"
        elif "ContainerNotFound" in str(e):   # Azure
            reason = f"container {self.bucket!r} does not exist"
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
        import obstore
        try:
            return bytes(obstore.get(self.store, self._key(path)).bytes())
        except FileNotFoundError as e:
            if "NoSuchBucket" in str(e) or "ContainerNotFound" in str(e):
                raise self._error("read", path, e) from None
            raise FileNotFoundError(f"{self.uri(path)} not found") from None
        except Exception as e:  # noqa: BLE001
            raise self._error("read", path, e) from None

    def _head(self, path: str):
        import obstore
        try:
            return obstore.head(self.store, self._key(path))
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
        try:
            page = obstore.list_with_delimiter(self.store, self._key(path.rstrip("/") + "/"))
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
            listing = obstore.list_with_delimiter(self.store, prefix or None)
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

    def file_versions(self, directory: str) -> Optional[Dict[str, str]]:
        """name -> ETag (else size and last-modified) of each object directly below."""
        import obstore
        directory = directory.rstrip("/")
        prefix = self._key(directory + "/") if directory != self.bucket else ""
        try:
            listing = obstore.list_with_delimiter(self.store, prefix or None)
        except Exception as e:  # noqa: BLE001
            raise self._error("list", directory + "/", e) from None
        out: Dict[str, str] = {}
        for m in listing["objects"]:
            key = m["path"]
            if key.endswith("/") or key == prefix:
                continue
            out[key.rsplit("/", 1)[-1]] = m.get("e_tag") or \
                f"{m['size']}:{m.get('last_modified')}"
        return out

    # --- writing -------------------------------------------------------------------------
    def mkdirs(self, directory: str) -> None:
        """Nothing to do: object stores have no directories (and we write no markers)."""

    def _put(self, path: str, data: bytes, mode: Optional[str] = None) -> None:
        import obstore
        kwargs = {"use_multipart": len(data) > _SINGLE_PUT_MAX}
        if mode is not None:
            kwargs["mode"] = mode
        obstore.put(self.store, self._key(path), data, **kwargs)

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
                          precondition: Optional[Callable[[], bool]] = None) -> bool:
        from obstore.exceptions import AlreadyExistsError
        data = bytes(data)
        if precondition is not None and not precondition():
            return False
        if not self._conditional_put:
            return self._check_then_put(path, data)
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
            if _not_supported(e):
                log.warning("%s rejects conditional writes (%s); creating %s by "
                            "check-then-write, which is safe for a single writer only",
                            self.description, self._scrub(_first_line(e)), self.uri(path))
                self._conditional_put = False
                return self._check_then_put(path, data)
            raise self._error("create", path, e) from None
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
        try:
            return pa.BufferReader(pa.py_buffer(obstore.get(self.store,
                                                            self._key(path)).bytes()))
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
    def _check_inside(self, path: str) -> str:
        if not isinstance(path, str) or not path:
            raise UnsafePathError(f"refusing to touch {path!r}: not a path")
        norm = path[:-1] if path.endswith("/") else path
        parts = norm.split("/")
        if ".." in parts or "." in parts or "" in parts:
            raise UnsafePathError(f"refusing path with '..', '.' or an empty segment: {path}")
        if norm == self.root:
            raise UnsafePathError(f"refusing to delete the table root {self.uri(self.root)}")
        if not norm.startswith(self.root + "/"):
            raise UnsafePathError(
                f"refusing to touch {path}: outside the table root {self.uri(self.root)}")
        if norm != path:
            raise UnsafePathError(f"refusing to delete {path} as a file: it names a directory")
        return norm

    def _unlink(self, norm: str) -> bool:
        """Delete one object. S3 answers 204 whether or not it existed: True either way."""
        import obstore
        try:
            obstore.delete(self.store, self._key(norm))
        except FileNotFoundError:
            return False
        except Exception as e:  # noqa: BLE001
            log.warning("could not delete %s: %s", self.uri(norm), self._scrub(_first_line(e)))
            return False
        self._sizes.pop(norm, None)
        return True

    def _unlink_many(self, checked: List[str]) -> List[str]:
        """Up to 1,000 keys per request (the gate checked every path before the first
        request). On a failed batch, its keys are retried one by one."""
        import obstore
        done: List[str] = []
        for i in range(0, len(checked), _DELETE_BATCH):
            chunk = checked[i:i + _DELETE_BATCH]
            try:
                obstore.delete(self.store, [self._key(p) for p in chunk])
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


def _not_supported(e: BaseException) -> bool:
    from obstore.exceptions import NotSupportedError
    text = str(e)
    return isinstance(e, NotSupportedError) or "501" in text and "Not Implemented" in text \
        or "NotImplemented" in text
