"""Table URIs: schemes, and the one parser of a URI's user-info (credentials, Azure's
container@account). Every message and result prints a URI through `redact_uri`."""
from __future__ import annotations

from typing import Optional, Tuple
from urllib.parse import unquote

from ..errors import PaimonCommitError

__all__ = ["OBJECT_STORE_SCHEMES", "S3_SCHEMES", "GCS_SCHEMES", "AZURE_SCHEMES", "redact_uri",
           "parse_object_store_uri"]

S3_SCHEMES = ("s3", "s3a", "s3n")
GCS_SCHEMES = ("gs", "gcs")
AZURE_SCHEMES = ("az", "abfs", "abfss", "azure")
OBJECT_STORE_SCHEMES = frozenset(S3_SCHEMES + GCS_SCHEMES + AZURE_SCHEMES)


def redact_uri(uri: str) -> str:
    """`uri` without credentials in its user-info (`s3://key:secret@bucket/p` ->
    `s3://bucket/p`). Azure's `abfss://container@account...` keeps its container."""
    if "://" not in uri:
        return uri
    scheme, rest = uri.split("://", 1)
    authority, sep, tail = rest.partition("/")
    if "@" in authority:
        userinfo, host = authority.rsplit("@", 1)
        if ":" in userinfo or scheme.lower() in S3_SCHEMES:
            authority = host
    return f"{scheme}://{authority}{sep}{tail}"


def parse_object_store_uri(uri: str) -> Tuple[str, str, str, Optional[str], Optional[Tuple[str, str]]]:
    """(scheme, bucket, prefix, azure account, user-info credentials) of an object-store URI."""
    scheme, rest = uri.split("://", 1)
    scheme = scheme.lower()
    authority, _, prefix = rest.partition("/")
    creds = None
    account = None
    if "@" in authority:
        userinfo, host = authority.rsplit("@", 1)
        if scheme in AZURE_SCHEMES and ":" not in userinfo:
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
