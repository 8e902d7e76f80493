"""Object-store configuration: Paimon's and Hadoop's option names mapped to obstore's, the
credentials of a URI's user-info, retries, and the store built from them."""
from __future__ import annotations

import base64
import datetime
import json
import logging
import os
import urllib.parse
from typing import Any, Dict, Mapping, Optional, Tuple

from ..errors import OptionError
from .uri import GCS_SCHEMES, S3_SCHEMES, redact_uri, split_credentials

log = logging.getLogger(__name__)

__all__ = ["storage_options", "build_store", "STORAGE_OPTION_NAMES", "check_storage_options"]

# Paimon's (and Hadoop S3A's, and pypaimon's) option names -> obstore's S3 config keys.
_S3_OPTIONS = {
    "s3.endpoint": "endpoint", "fs.s3a.endpoint": "endpoint", "fs.s3.endpoint": "endpoint",
    "s3.access-key": "access_key_id", "s3.access.key": "access_key_id",
    "fs.s3a.access.key": "access_key_id", "fs.s3.accesskeyid": "access_key_id",
    "s3.secret-key": "secret_access_key", "s3.secret.key": "secret_access_key",
    "fs.s3a.secret.key": "secret_access_key", "fs.s3.accesskeysecret": "secret_access_key",
    "s3.session-token": "token", "s3.session.token": "token",
    "fs.s3a.session.token": "token", "fs.s3.securitytoken": "token",
    "s3.region": "region", "s3.endpoint.region": "region", "fs.s3a.endpoint.region": "region",
    "fs.s3a.region": "region", "fs.s3.region": "region",
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


_STORAGE_PREFIXES = ("s3.", "fs.s3a.", "fs.s3.", "fs.gs.", "gcs.", "gs.", "fs.azure.", "azure.",
                     "aws_", "google_", "azure_", "object-store.")


_RETRY_OPTIONS = ("object-store.max-retries", "object-store.retry-timeout-seconds")
# Every storage option name this library reads (obstore's own aws_*/google_*/azure_* keys are
# checked by obstore when the store is built, before any request).
STORAGE_OPTION_NAMES = frozenset(
    set(_S3_OPTIONS) | set(_S3_PATH_STYLE) | set(_GCS_OPTIONS) | set(_AZURE_OPTIONS)
    | set(_RETRY_OPTIONS))
_NATIVE_PREFIXES = ("aws_", "google_", "azure_")
_AZURE_ACCOUNT_KEY = "fs.azure.account.key."   # fs.azure.account.key.<account>.<host> = key
# Paimon's own storage prefixes: a key under one of them that we do not read is a typo or an
# option this library does not support (Hadoop's fs.* keys are many; only a near miss of one
# of ours is refused outside the command line).
_PAIMON_STORAGE_PREFIXES = ("s3.", "gs.", "gcs.", "azure.", "object-store.")


def _storage_problem(key: str, strict: bool, what: str) -> Optional[str]:
    """Why `key` is not a storage option this library reads (None when it is, or when it is
    left alone outside `strict` mode)."""
    from ..option_names import CORE_OPTION_NAMES, OTHER_PAIMON_OPTION_NAMES, closest_name
    from ..options import OPTIONS
    k = key.lower()
    if k in STORAGE_OPTION_NAMES or k.startswith(_NATIVE_PREFIXES) \
            or (k.startswith(_AZURE_ACCOUNT_KEY) and k.count(".") >= 4):
        return None
    # Hadoop has hundreds of fs.* keys (fs.azure.account.auth.type, ...): outside the command
    # line only a very near miss of one of ours is taken for a typo.
    cutoff = 0.9 if not strict and k.startswith("fs.") else 0.8
    near = closest_name(k, STORAGE_OPTION_NAMES, cutoff=cutoff)
    if near is not None:
        return f"unknown {what} {key!r}: did you mean {near!r}?"
    if not strict:
        if k.startswith(_PAIMON_STORAGE_PREFIXES):
            log.warning("storage option %r is not one this library reads: ignored", key)
        return None
    if key in OPTIONS or key in CORE_OPTION_NAMES or key in OTHER_PAIMON_OPTION_NAMES:
        return (f"{what} {key!r} is a table option, not a storage option: storage options "
                f"set how the table is reached (s3.endpoint, s3.access-key, ...; see README "
                f"Storage)")
    return (f"unknown {what} {key!r}: storage options are those of README Storage "
            f"(s3.endpoint, s3.access-key, fs.s3a.endpoint, gs.service-account-file, "
            f"azure.account-name, object-store.max-retries, ...) and obstore's "
            f"aws_*/google_*/azure_* keys")


def check_storage_options(options: Optional[Mapping[str, Any]], strict: bool = False,
                          what: str = "storage option") -> None:
    """Refuse (OptionError, before any I/O) a storage option this library does not read and
    that looks like a typo of one it does (`s3.endpiont`), or, `strict` (the command line's
    `--option`, which takes storage options only), any option it does not read. Outside strict
    mode other unknown keys are left alone (a Paimon catalog's s3.* settings for Hadoop, or
    Spark's mixed option maps), with a logged warning for s3.*/gs.*/azure.* ones."""
    for key in (options or {}):
        problem = _storage_problem(str(key), strict, what)
        if problem:
            raise OptionError(problem)


def storage_options(options: Mapping[str, str], path: Optional[str] = None) -> Dict[str, str]:
    """The storage options among `options` (Paimon's `s3.*`, Hadoop's `fs.s3a.*`, ...), plus
    the credentials of `path`'s user-info (uri.split_credentials: they win over the options,
    as when the path is opened directly), so that a credential-free path and these options
    reach the same store (Spark ships both to its executors)."""
    out = {str(k): str(v) for k, v in options.items()
           if str(k).lower().startswith(_STORAGE_PREFIXES)}
    if path:
        out = split_credentials(path, out)[1]
    return out


def _first(e: BaseException) -> str:
    return (str(e).strip().splitlines() or [type(e).__name__])[0]


# How obstore finds S3 credentials other than the instance metadata: a key in the options or
# the environment, a web identity or container credentials, or unsigned requests by request.
_S3_CREDENTIAL_KEYS = ("access_key_id", "skip_signature", "web_identity_token_file",
                       "container_credentials_relative_uri", "container_credentials_full_uri",
                       "metadata_endpoint")


def _is_aws(endpoint: str) -> bool:
    """AWS's own endpoint (on EC2 the instance metadata is where credentials come from)."""
    host = urllib.parse.urlsplit(endpoint if "://" in endpoint else f"//{endpoint}").hostname
    return bool(host) and (host.endswith(".amazonaws.com") or host.endswith(".amazonaws.com.cn"))


def _s3_credentials_given(config: Mapping[str, str]) -> bool:
    for key in _S3_CREDENTIAL_KEYS:
        value = config.get(key) or config.get(f"aws_{key}") \
            or os.environ.get(f"AWS_{key.upper()}")
        if value and (key != "skip_signature" or _truthy(value)):
            return True
    return False


def _truthy(value: str) -> bool:
    return str(value).strip().lower() in ("true", "1", "yes")


def _boolean(name: str, value: str) -> bool:
    """A boolean storage option, as Paimon and Hadoop read one: `true` or `false` (any
    case). Anything else was meant as something and is refused, never read as false."""
    v = str(value).strip().lower()
    if v not in ("true", "false"):
        raise OptionError(f"storage option {name!r} = {value!r} must be true or false")
    return v == "true"


def _given_name(options: Mapping[str, Any], lower_key: str) -> str:
    """The spelling the user gave for a (lower-cased) option key."""
    return next((str(k) for k in options if str(k).lower() == lower_key), lower_key)


# obstore's complaints about credentials that come in halves, and the half that is missing.
_MISSING = {"missing accesskeyid": ("secret_access_key", "access_key_id"),
            "missing secretaccesskey": ("access_key_id", "secret_access_key")}
_OUR_NAMES = {"access_key_id": "s3.access-key", "secret_access_key": "s3.secret-key"}


def _config_problem(error: BaseException, options: Mapping[str, Any], config: Mapping[str, str],
                    store_name: str, scheme: str, bucket: str, secrets) -> str:
    """One line saying which storage option obstore refused, in the user's spelling."""
    raw = _first(error)
    first = raw
    for secret in secrets:
        first = first.replace(secret, "***")
    low = first.lower().replace(" ", "")
    user = {str(k).lower(): str(k) for k in options}

    def given(obstore_key: str) -> Optional[str]:
        for k, v in _S3_OPTIONS.items():
            if v == obstore_key and k in user:
                return user[k]
        native = f"aws_{obstore_key}"
        return user.get(native) or (user.get(obstore_key) if obstore_key in user else None)
    for marker, (have, lacking) in _MISSING.items():
        if marker.replace(" ", "") in low:
            have_name = given(have) or _OUR_NAMES[have]
            return (f"storage option {have_name!r} is given without "
                    f"{_OUR_NAMES[lacking]!r} for {scheme}://{bucket}: S3 credentials need "
                    f"both (or neither, with AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)")
    if "asboolean" in low:
        value = raw.split('"')[1] if raw.count('"') >= 2 else None
        names = [user.get(k, k) for k, v in config.items() if value is not None and v == value]
        if names:
            shown = f" = {value!r}" if value not in secrets else ""
            return f"storage option {names[0]!r}{shown} must be true or false"
    return (f"the {store_name} storage options for {scheme}://{bucket} are refused: "
            f"{first.removeprefix('Generic ').strip()}")


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


def build_store(scheme: str, bucket: str, account: Optional[str],
                 creds: Optional[Tuple[str, str]], options: Mapping[str, str]):
    """The obstore store and a credential-free description of where it points."""
    from obstore.store import AzureStore, GCSStore, S3Store
    lower = {str(k).lower(): str(v) for k, v in options.items()}
    client: Dict[str, object] = {}
    if scheme in S3_SCHEMES:
        config = _native_options(lower, _S3_OPTIONS, "aws_")
        for k in _S3_PATH_STYLE:
            if k in lower:
                config["virtual_hosted_style_request"] = \
                    "false" if _boolean(_given_name(options, k), lower[k]) else "true"
        if creds:
            config["access_key_id"], config["secret_access_key"] = creds
        endpoint = config.get("endpoint") or config.get("aws_endpoint_url") \
            or config.get("aws_endpoint") or os.environ.get("AWS_ENDPOINT_URL") \
            or os.environ.get("AWS_ENDPOINT")
        kind, cls = "s3", S3Store
        if endpoint and not _is_aws(endpoint) and not _s3_credentials_given(config):
            # obstore would go on to the cloud instance-metadata address (169.254.169.254) for
            # credentials: a request to a third host, that fails as "access denied".
            raise OptionError(
                f"no credentials found for s3://{bucket} (endpoint {redact_uri(endpoint)}): "
                f"give them with --option s3.access-key=... --option s3.secret-key=... (in "
                f"Python: storage options of those names), in the URI "
                f"(s3://KEY:SECRET@{bucket}/...) or as AWS_ACCESS_KEY_ID and "
                f"AWS_SECRET_ACCESS_KEY; for a bucket that needs none, aws_skip_signature=true")
    elif scheme in GCS_SCHEMES:
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
    from obstore.exceptions import BaseError, UnknownConfigurationKeyError
    secrets = [v for k, v in config.items()
               if v and len(v) >= 4 and any(w in k for w in _SECRET_WORDS)
               and not k.endswith("skip_signature")]   # a boolean, not a signature
    if creds:
        secrets += [c for c in creds if c]
    store_name = {"s3": "S3", "gcs": "GCS", "azure": "Azure"}[kind]
    try:
        store = cls(bucket, config=config or None, client_options=client or None,
                    retry_config=_retry_config(lower))
    except UnknownConfigurationKeyError as e:   # an aws_*/google_*/azure_* key obstore lacks
        bad = next((k for k in config if f"'{k}'" in str(e)), None)
        raise OptionError(f"unknown storage option {bad!r}: not a key of obstore's "
                          f"{store_name} store (see README Storage)" if bad else
                          f"unknown storage option: {_first(e)}") from None
    except BaseError as e:
        # obstore refuses the configuration before any request (a secret key without an
        # access key, "maybe" for a boolean, an unreadable service-account file, ...): bad
        # input, in one line naming the option, never the raw error (nor a secret).
        raise OptionError(_config_problem(e, options, config, store_name, scheme, bucket,
                                          secrets)) from None
    where = redact_uri(endpoint) if endpoint else "default endpoint"
    if kind == "azure" and config.get("account_name"):
        where += f", account {config['account_name']}"
    return store, f"{kind} store at {where}", secrets, endpoint or ""
