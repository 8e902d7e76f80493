"""The set-up of audit/issue27/common.py, shared by these scripts (loaded from there under another
module name: each audit directory's scripts import `common`)."""
import importlib.util
import os

_spec = importlib.util.spec_from_file_location(
    "_audit_common_issue27_25f", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "issue27",
                                     "common.py"))
_shared = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_shared)
globals().update({k: v for k, v in vars(_shared).items() if not k.startswith("__")})


def add_schema_with_options(table_path, **opts):
    """A new schema file (id + 1) with `opts` set, as Paimon's ALTER TABLE ... SET writes it."""
    import json
    sd = os.path.join(table_path, "schema")
    last = max(os.listdir(sd), key=lambda n: int(n.split("-")[1]))
    doc = json.load(open(os.path.join(sd, last)))
    doc["id"] = doc.get("id", int(last.split("-")[1])) + 1
    doc.setdefault("options", {}).update(opts)
    with open(os.path.join(sd, f"schema-{doc['id']}"), "w") as f:
        json.dump(doc, f)
    return doc["id"]
