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

__all__ = ["IMMUTABLE_OPTION_NAMES", "check_dynamic_options", "with_dynamic_options"]

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
    from .io.object_store_config import STORAGE_OPTION_NAMES
    dynamic = _strings(options)
    for key in dynamic:
        k = key.lower()
        if k in STORAGE_OPTION_NAMES or k.startswith(("aws_", "google_", "azure_",
                                                      "fs.azure.account.key.")):
            raise OptionError(
                f"{what}: {key!r} is a storage option, not a table option: give it as "
                f"storage_options={{{key!r}: ...}} (options= are table options, as in "
                f"Table.create)")
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
        if key in IMMUTABLE_OPTION_NAMES and stored.get(key) != value:
            now = repr(stored[key]) if key in stored else "not set"
            raise OptionError(
                f"table option {key!r} = {value!r} cannot be given when opening {table} "
                f"(it is {now} there): it fixes the table's layout, which only the table's "
                f"creation sets")
    merged = {**stored, **dynamic}
    try:
        validate_options(merged)
    except OptionError as e:
        raise OptionError(f"{e} (with the options given when opening {table})") from None
    return replace(schema, options=merged)
