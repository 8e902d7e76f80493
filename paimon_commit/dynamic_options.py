"""Dynamic table options: options given when a table is opened (`Table.open(path,
options={...})`), which override the options stored in the table's schema for that handle
only and are never written to the table (Paimon's dynamic options, `Table.copy(options)`).

They are checked as `Table.create` checks the options it stores: a name close to one of
Paimon's is a warning with the suggestion (tables carry options of engines this library does
not know, so unknown names are not refused), a bad value is an OptionError naming the option
as given, before any I/O. Two kinds of keys are refused: storage options (`s3.endpoint`,
...: they say how the table is reached and go in `storage_options=`), and options that fix
the table's layout, which Paimon does not let a dynamic option change either.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any, Dict, Mapping, Optional

from .errors import OptionError
from .format.schema import TableSchema
from .option_names import check_table_option_names
from .options import OPTIONS, validate_options

__all__ = ["IMMUTABLE_OPTION_NAMES", "check_dynamic_options", "with_dynamic_options",
           "check_branch_options", "check_changelog_producer", "refuse_storage_options",
           "is_storage_option", "check_commit_options", "refuse_other_changelog_producer"]

# Paimon's CoreOptions marked @Immutable (master of 2026): a table's layout, fixed when it is
# created. Paimon refuses a dynamic option that changes one ("Change '...' is not supported
# yet"), and `bucket` too ("Cannot change bucket number through dynamic options").
IMMUTABLE_OPTION_NAMES = frozenset("""
    type bucket-key bucket-function.type data-file.path-directory merge-engine
    sequence.snapshot-ordering aggregation.remove-record-on-delete
    partial-update.remove-record-on-delete partial-update.remove-record-on-sequence-group
    rowkind.field primary-key primary-key.nullable partition dynamic-bucket.initial-buckets
    force-lookup row-tracking.enabled data-evolution.enabled index-file-in-data-file-dir
    blob-field blob-descriptor-field blob-view-field pk-clustering-override
""".split()) | {"bucket"}


# Options that select the branch a handle acts on (Paimon's `branch` makes the handle that
# branch's; the scan.*-branch ones read another branch): this library handles the main
# branch only, and a handle silently on main would roll back or expire main's snapshots.
BRANCH_OPTION_NAMES = frozenset("""
    scan.fallback-branch scan.primary-branch scan.fallback-delta-branch
    scan.fallback-snapshot-branch
""".split())

# Options that select what a read returns (Paimon's copy() time-travels to them).
TIME_TRAVEL_OPTION_NAMES = frozenset("""
    scan.snapshot-id scan.tag-name scan.timestamp-millis scan.timestamp scan.watermark
    scan.version scan.creation-time-millis scan.file-creation-time-millis
    incremental-between incremental-between-timestamp incremental-to-auto-tag
""".split())

# Options that decide a file's directory: readers build it from the table's stored options,
# so a handle's own value would write files no other reader finds.
PATH_OPTION_NAMES = frozenset({"partition.default-name", "partition.legacy-name"})
# Their values when unset (store.check_layout_history compares them across schemas so).
PATH_OPTION_DEFAULTS = {"partition.default-name": "__DEFAULT_PARTITION__",
                        "partition.legacy-name": "true"}
_PATH_DEFAULTS = PATH_OPTION_DEFAULTS

# Credential-like parts of Hadoop-style keys this library does not map itself
# (fs.s3a.bucket.<b>.secret.key, fs.azure.account.oauth2.client.secret, fs.oss.*, ...).
_SECRET_WORDS = ("secret", "password", "key", "token", "credential", "sas")


def is_storage_option(key: str) -> bool:
    """True for a key that says how storage is reached (or holds a credential): it belongs
    in `storage_options=`, never in the table's options (which every reader can read)."""
    from .io.object_store_config import STORAGE_OPTION_NAMES
    k = key.lower()
    if k in STORAGE_OPTION_NAMES or k.startswith(("aws_", "google_", "azure_",
                                                  "fs.azure.account.key.", "fs.oss.")):
        return True
    return k.startswith("fs.") and any(w in k for w in _SECRET_WORDS)


def refuse_storage_options(options: Mapping[str, Any], what: str, why: str) -> None:
    """OptionError naming the first storage key (never its value)."""
    for key in options:
        if is_storage_option(str(key)):
            raise OptionError(
                f"{what}: {key!r} is a storage option, not a table option: give it as "
                f"storage_options={{{key!r}: ...}} {why}")


def check_branch_options(options: Mapping[str, Any], what: str,
                         prefix: str = "") -> None:
    """Refuse a branch other than main (before any I/O). `prefix`: stripped from a key before
    it is recognised (Spark's `paimon.`); the message names the key as given."""
    for key, value in options.items():
        name, value = str(key), str(value)
        if prefix and name.startswith(prefix):
            name = name[len(prefix):]
        if (name == "branch" and value != "main") or name in BRANCH_OPTION_NAMES:
            raise OptionError(
                f"{what}: option {key!r} = {value!r}: branches are not supported: this "
                f"library reads and writes the main branch only (remove the option to act "
                f"on main)")


def check_changelog_producer(options: Mapping[str, Any], primary_keys, what: str,
                             stored: Optional[Mapping[str, Any]] = None) -> None:
    """Paimon refuses a changelog producer on a table without primary keys; here it would
    also make expiration drop the files the table's changelogs read.

    With the table's `stored` options (a handle's or a commit's options over an existing
    table), a producer other than the table's is refused on every kind of table: the
    changelogs already written were produced with the table's value, and expiration decides
    by the producer which of their lists and files they still read (with none, the deltas
    and the APPEND files they delete). A handle saying `input` over a table whose
    changelogs were written with none deleted what every long-lived changelog reads."""
    value = options.get("changelog-producer")
    if value is None:
        return
    if not primary_keys and str(value).lower() != "none":
        raise OptionError(
            f"{what}: option 'changelog-producer' = {value!r} needs a table with primary "
            f"keys: an append table has none (only 'none' is allowed)")
    if stored is not None:
        refuse_other_changelog_producer(value, stored.get("changelog-producer"), what)


def refuse_other_changelog_producer(value: Any, stored: Any, what: str) -> None:
    """OptionError when `value` (a producer given for a handle, a commit or an expiration)
    is not the table's `stored` one (unset: none)."""
    table = str(stored if stored is not None else "none")
    if str(value).strip().lower() != table.strip().lower():
        raise OptionError(
            f"{what}: option 'changelog-producer' = {value!r} differs from the table's "
            f"{table!r}: the table's changelogs were written with its own producer, and "
            f"expiration keeps the files they read by it (change it for the table, not for "
            f"one handle)")


def check_commit_options(options: Mapping[str, str], schema: TableSchema, what: str) -> None:
    """Options given to one commit (new_commit(options=...), a Spark write's options): no
    branch, no changelog producer on an append table, no option that moves files."""
    check_branch_options(options, what)
    check_changelog_producer(options, schema.primary_keys, what, schema.options)
    for key in sorted(PATH_OPTION_NAMES & set(options)):
        if not _same_value(key, schema.options, str(options[key])):
            raise OptionError(
                f"{what}: option {key!r} = {options[key]!r} is not supported: it decides "
                f"where files are written, which the table's options fix")


def _same_value(key: str, stored: Mapping[str, str], value: str) -> bool:
    now = stored.get(key, _PATH_DEFAULTS[key])
    if key == "partition.legacy-name":
        return now.strip().lower() == value.strip().lower()
    return now == value


def _strings(options: Mapping[str, Any]) -> Dict[str, str]:
    # Paimon's values are strings; a Python bool is 'true'/'false' as Paimon writes them.
    return {str(k): str(v).lower() if isinstance(v, bool) else str(v)
            for k, v in options.items()}


def check_dynamic_options(options: Optional[Mapping[str, Any]],
                          what: str = "Table.open") -> Dict[str, str]:
    """The dynamic options as strings, checked before any I/O: storage options are refused
    (they belong in `storage_options=`), a near miss of a Paimon name is a warning, and each
    value this library reads is parsed (an OptionError names the option and the value as
    given). Cross-option rules and layout options need the stored options: see
    `with_dynamic_options`."""
    if not options:
        return {}
    if not isinstance(options, Mapping):
        raise OptionError(f"{what}: options must be a mapping of table option names to "
                          f"values, got {type(options).__name__}")
    dynamic = _strings(options)
    refuse_storage_options(dynamic, what, "(options= are table options, as in Table.create)")
    check_branch_options(dynamic, what)
    for key, value in dynamic.items():
        if key in TIME_TRAVEL_OPTION_NAMES:
            # Paimon's copy() time-travels to them; read_arrow reads the latest snapshot
            # unless told otherwise, so accepting them would read the wrong data silently.
            raise OptionError(
                f"{what}: option {key!r} = {value!r} is not supported as a table option "
                f"(the handle would read the latest snapshot): read a snapshot or a tag "
                f"with read_arrow(snapshot_id=...) or read_arrow(tag=...)")
    check_table_option_names(dynamic, "table option",
                             "kept for this handle; nothing reads it", stacklevel=4)
    for key, value in dynamic.items():
        if key in OPTIONS:
            OPTIONS[key].value({key: value})   # OptionError: "option 'key' = 'value': ..."
    return dynamic


def with_dynamic_options(schema: TableSchema, dynamic: Mapping[str, str],
                         table: str) -> TableSchema:
    """`schema` with `dynamic` over its options (a copy, never written). Refuses a change of a
    layout option and a combination the cross-option rules refuse (OptionError)."""
    stored = schema.options
    for key, value in dynamic.items():
        if key in PATH_OPTION_NAMES and not _same_value(key, stored, value):
            now = repr(stored[key]) if key in stored else "not set"
            raise OptionError(
                f"table option {key!r} = {value!r} cannot be given when opening {table} "
                f"(it is {now} there): it decides the directories files are written to, "
                f"and every other reader looks for them where the table's options say")
        if key in IMMUTABLE_OPTION_NAMES and stored.get(key) != value:
            now = repr(stored[key]) if key in stored else "not set"
            raise OptionError(
                f"table option {key!r} = {value!r} cannot be given when opening {table} "
                f"(it is {now} there): it fixes the table's layout, which only the table's "
                f"creation sets")
    merged = {**stored, **dynamic}
    check_changelog_producer(dynamic, schema.primary_keys, f"opening {table}", stored)
    try:
        validate_options(merged)
    except OptionError as e:
        raise OptionError(f"{e} (with the options given when opening {table})") from None
    return replace(schema, options=merged)
