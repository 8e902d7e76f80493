"""A manifest list whose records carry only _FILE_NAME / _FILE_SIZE (no _NUM_ADDED_FILES /
_NUM_DELETED_FILES), as a minimal third-party writer might produce. Before 879cb87's range
(0f76a62) decode_manifest_list_refs read it (planners need only names); now it raises
CorruptMetadataError, so expiration/orphan cleanup stop on such a table.
Paimon Java and pypaimon always write both counts (checked: audit/java_manifests.py), so
this matters only for other writers.

Run: PYTHONPATH=<tree> .venv/bin/python audit/list_without_counts.py
"""
import io

import fastavro

from paimon_commit.format import manifest as M

schema = {"type": "record", "name": "ManifestFileMeta", "fields": [
    {"name": "_VERSION", "type": "int"}, {"name": "_FILE_NAME", "type": "string"},
    {"name": "_FILE_SIZE", "type": "long"}]}
buf = io.BytesIO()
fastavro.writer(buf, fastavro.parse_schema(schema),
                [{"_VERSION": 2, "_FILE_NAME": "manifest-x-0", "_FILE_SIZE": 10}],
                codec="null")
try:
    print(M.decode_manifest_list_refs(buf.getvalue(), "manifest-list-x"))
except Exception as e:  # noqa: BLE001
    print(type(e).__name__, e)
