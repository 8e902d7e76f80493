"""Table URIs: schemes, and the one parser of a URI's user-info (credentials, Azure's
container@account).

Everything that reads user-info goes through `parse_uri`: `redact_uri` (what messages, results
and logs print), `parse_object_store_uri` (how obstore is reached) and `split_credentials`
(a credential-free URI plus the options that carry its credentials, for callers that derive
and print more paths from it: the CLI, warehouse maintenance, Spark)."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Dict, Mapping, Optional, Tuple
from urllib.parse import unquote

from ..errors import PaimonCommitError

__all__ = ["OBJECT_STORE_SCHEMES", "S3_SCHEMES", "GCS_SCHEMES", "AZURE_SCHEMES", "ParsedUri",
           "parse_uri", "redact_uri", "redact_uris_in", "parse_object_store_uri",
           "split_credentials",
           "S3_KEY_OPTION", "S3_SECRET_OPTION"]

S3_SCHEMES = ("s3", "s3a", "s3n")
GCS_SCHEMES = ("gs", "gcs")
AZURE_SCHEMES = ("az", "abfs", "abfss", "azure")
OBJECT_STORE_SCHEMES = frozenset(S3_SCHEMES + GCS_SCHEMES + AZURE_SCHEMES)
# Where split_credentials puts an s3:// URI's key and secret (Paimon's option names).
S3_KEY_OPTION, S3_SECRET_OPTION = "s3.access-key", "s3.secret-key"


@dataclass(frozen=True)
class ParsedUri:
    """A URI split at its user-info. `shown` is the URI without credentials: what may be
    printed. `user`/`password` are percent-decoded; `user_info` is the text as given."""
    scheme: str                 # lower case; "" for a plain path
    authority: str              # host, bucket, `container` or `container@account`
    path: str                   # after the authority, without the leading "/"
    user_info: Optional[str]    # credentials as given (None: none)
    user: Optional[str]
    password: Optional[str]
    shown: str

    @property
    def credentials(self) -> Optional[Tuple[str, str]]:
        """(key, secret) of the user-info, if it holds any."""
        if self.user_info is None:
            return None
        return self.user or "", self.password or ""


def _split_user_info(scheme: str, rest: str) -> Tuple[Optional[str], str]:
    """(user-info or None, the rest after it)."""
    authority = rest.split("/", 1)[0]
    if scheme in OBJECT_STORE_SCHEMES and ":" in authority and "@" in rest:
        # A bucket or container name never holds ':'; so a ':' before the first '/' starts a
        # KEY:SECRET user-info, which runs to the first '@' even past a '/' (AWS secrets hold
        # '/' and '+', often pasted unencoded): no part of it may be taken for a path. (An
        # '@' in a secret must be percent-encoded, as in any URI: AWS secrets have none.)
        user_info, _, after = rest.partition("@")
        return user_info, after
    if "@" in authority:
        user_info, host = authority.rsplit("@", 1)
        return user_info, rest[len(user_info) + 1:]
    return None, rest


def parse_uri(uri: str) -> ParsedUri:
    """Split `uri` at its user-info (the one parser of it; see the module docstring).

    What counts as credentials: in s3:// URIs every user-info (`s3://KEY:SECRET@bucket/p`,
    `s3://KEY@bucket/p`); elsewhere a user-info with a password (`hdfs://user:pw@nn/p` is shown
    as `hdfs://user@nn/p`; gs:// and az:// lose all of `key:secret@`). Azure's
    `abfss://container@account.dfs.core.windows.net/p` has no credentials: it stays as is."""
    text = str(uri)
    if "://" not in text:
        return ParsedUri("", "", text, None, None, None, text)
    given_scheme, rest = text.split("://", 1)
    scheme = given_scheme.lower()
    user_info, after = _split_user_info(scheme, rest)
    authority, sep, path = after.partition("/")
    if user_info is not None and scheme in AZURE_SCHEMES and ":" not in user_info:
        # abfss://container@account.dfs.core.windows.net/path: not credentials
        authority = f"{user_info}@{authority}"
        user_info = None
    user = password = None
    shown_info = ""
    if user_info is not None:
        key, colon, secret = user_info.partition(":")
        user, password = unquote(key), (unquote(secret) if colon else None)
        if scheme not in OBJECT_STORE_SCHEMES and not colon:
            user_info = None                  # hdfs://user@namenode: a user name only
            shown_info = f"{key}@"
        elif scheme not in OBJECT_STORE_SCHEMES:
            shown_info = f"{key}@"            # the user stays, the password goes
    shown = f"{given_scheme}://{shown_info}{authority}{sep}{path}"
    return ParsedUri(scheme, authority, path, user_info, user, password, shown)


def redact_uri(uri: str) -> str:
    """`uri` without credentials in its user-info (`s3://key:secret@bucket/p` ->
    `s3://bucket/p`). Azure's `abfss://container@account...` keeps its container."""
    return parse_uri(uri).shown


_URI_IN_TEXT = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"]+")


def redact_uris_in(text: str) -> str:
    """`text` with every URI in it redacted (for messages quoting arguments as given, such
    as argparse's "unrecognized arguments: ...")."""
    return _URI_IN_TEXT.sub(lambda m: redact_uri(m.group(0)), text)


def parse_object_store_uri(uri: str) -> Tuple[str, str, str, Optional[str], Optional[Tuple[str, str]]]:
    """(scheme, bucket, prefix, azure account, user-info credentials) of an object-store URI."""
    p = parse_uri(uri)
    authority, account = p.authority, None
    if p.scheme in AZURE_SCHEMES and "@" in authority:
        # abfss://container@account.dfs.core.windows.net/path
        authority, host = authority.split("@", 1)
        account = host.split(".", 1)[0]
    if not authority:
        raise PaimonCommitError(f"{p.shown}: no bucket in the object-store URI")
    return p.scheme, authority, p.path.strip("/"), account, p.credentials


def split_credentials(uri: str, options: Optional[Mapping[str, str]] = None
                      ) -> Tuple[str, Dict[str, str]]:
    """(`uri` without credentials, `options` plus the options carrying them).

    A caller that prints paths derived from a URI (tables of a warehouse, a pattern's matches,
    Spark executors' tasks) works on the credential-free URI and reaches the storage with
    these options. An s3:// URI's key and secret become `s3.access-key` / `s3.secret-key`,
    replacing those options if given (the URI names the credentials of this very path, as
    when it is opened directly); other schemes read no credentials from user-info, except
    what `shown` keeps (an HDFS user name)."""
    p = parse_uri(uri)
    out = {str(k): str(v) for k, v in (options or {}).items()}
    if p.scheme in S3_SCHEMES and p.user_info is not None:
        out[S3_KEY_OPTION], out[S3_SECRET_OPTION] = p.credentials
    return p.shown, out
