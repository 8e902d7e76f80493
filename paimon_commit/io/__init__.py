"""Storage of one table root, and the one door every deletion goes through.

- `base.py`: the FileIO contract and the deletion gate (`_check_inside` before any remove);
- `local.py`, `arrow.py` (HDFS and other pyarrow file systems), `object_store.py` (S3, GCS,
  Azure through obstore): the storages, chosen by scheme and imported only when used, so that
  none of them imports another;
- `deletion.py`: how operations delete (ordered steps through the gate, finishable);
- `uri.py`: schemes and the one parser of a URI's user-info.
"""
from __future__ import annotations

from typing import Dict, Optional

from .base import FileIO, FileStatus, walk_files
from .uri import OBJECT_STORE_SCHEMES, redact_uri

__all__ = ["FileIO", "FileStatus", "walk_files", "for_path", "redact_uri",
           "OBJECT_STORE_SCHEMES"]


def for_path(table_path: str, options: Optional[Dict[str, str]] = None) -> FileIO:
    """The storage of a table root: a local path or `file://` URI gets LocalFileIO; object
    stores (s3://, gs://, az://, abfs://) get ObjectStoreFileIO; anything else (hdfs://, …)
    goes through pyarrow.fs. A storage option that looks like a typo of one this library
    reads (`s3.endpiont`) is an OptionError, before any I/O."""
    if options:
        from .object_store_config import check_storage_options
        check_storage_options(options)
    if "://" not in table_path or table_path.startswith("file://"):
        from .local import LocalFileIO
        local = table_path[len("file://"):] if table_path.startswith("file://") else table_path
        return LocalFileIO(local)
    scheme = table_path.split("://", 1)[0].lower()
    if scheme in OBJECT_STORE_SCHEMES:
        from .object_store import ObjectStoreFileIO
        return ObjectStoreFileIO.from_uri(table_path, options or {})
    from .arrow import PyArrowFileIO
    return PyArrowFileIO.from_uri(table_path)
