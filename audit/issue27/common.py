"""Shared set-up for issue27 audit scripts (repair, scoped and inventory-fed orphan cleanup):
small tables in real temp dirs, the CLI run as a real subprocess."""
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
for p in (ROOT, os.path.join(ROOT, "tests")):
    if p not in sys.path:
        sys.path.insert(0, p)

import pyarrow as pa  # noqa: E402
from paimon_commit import Table  # noqa: E402

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])
OLD_MS = int(time.time() * 1000) - 3 * 86400_000   # 3 days ago


def new_table(name="t", options=None, base=None, schema=SCHEMA, partition_keys=None):
    base = base or tempfile.mkdtemp(prefix="audit27-")
    path = os.path.join(base, "wh", "db.db", name)
    opts = {"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "1000",
            "snapshot.time-retained": "1 ms"}
    opts.update(options or {})
    kw = {"partition_keys": partition_keys} if partition_keys else {}
    return Table.create(path, schema, options=opts, **kw)


def write_rows(table, data, commit_user="u", schema=None):
    """Commit one snapshot of `data` (a dict of columns)."""
    w = table.new_writer()
    w.write_arrow(pa.table(data, schema=schema or SCHEMA))
    msgs = w.prepare_commit()
    with table.new_commit(commit_user=commit_user) as c:
        return c.commit(msgs)


def write(table, start, n=3, commit_user="u"):
    return write_rows(table, {"id": list(range(start, start + n)),
                              "v": [f"r{i}" for i in range(start, start + n)]}, commit_user)


def files(root):
    return {os.path.relpath(os.path.join(d, f), root)
            for d, _, fs in os.walk(root) for f in fs}


def data_files(root):
    return {f for f in files(root) if "bucket-" in f}


def age_all(root, ms=OLD_MS):
    """Every file and directory under root last modified at `ms` (as if written long ago)."""
    for d, ds, fs in os.walk(root):
        for x in fs + ds:
            os.utime(os.path.join(d, x), (ms / 1000, ms / 1000), follow_symlinks=False)
    os.utime(root, (ms / 1000, ms / 1000))


def cli(*args, stdin=None, check=False):
    """Run `python -m paimon_commit ARGS` as a subprocess; (rc, stdout, stderr)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    p = subprocess.run([sys.executable, "-m", "paimon_commit", *args], input=stdin,
                       capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)
    if check and p.returncode != 0:
        raise RuntimeError(f"cli {args} rc={p.returncode}: {p.stderr[-2000:]}")
    return p.returncode, p.stdout, p.stderr


def cli_json(*args, **kw):
    rc, out, err = cli(*args, "--json", **kw)
    try:
        return rc, json.loads(out), err
    except ValueError:
        return rc, out, err


def rows(table_path):
    """Rows of the latest snapshot, read by a fresh handle (or the error)."""
    try:
        return Table.open(table_path).read_arrow().num_rows
    except Exception as e:  # noqa: BLE001
        return f"{type(e).__name__}: {str(e)[:200]}"


def edit_schema_options(table_path, **opts):
    """Set options in the newest schema file in place (what another engine's table has)."""
    sd = os.path.join(table_path, "schema")
    last = max(os.listdir(sd), key=lambda n: int(n.split("-")[1]))
    p = os.path.join(sd, last)
    doc = json.load(open(p))
    doc.setdefault("options", {}).update(opts)
    with open(p, "w") as f:
        json.dump(doc, f)


def plant_orphan(directory, name="data-00000000-0000-0000-0000-00000000dead-0.parquet"):
    """An unreferenced file in `directory` (an orphan to be found), returned as its path."""
    os.makedirs(directory, exist_ok=True)
    p = os.path.join(directory, name)
    with open(p, "wb") as f:
        f.write(b"orphan")
    return p


def orphan_clean(path, *extra, stdin=None):
    """`remove-orphan-files PATH --older-than-duration '1 d' EXTRA --json`; (rc, doc, err)."""
    return cli_json("remove-orphan-files", path, "--older-than-duration", "1 d", *extra,
                    stdin=stdin)


def check_problems(path):
    """`check --json`: (rc, [problem dicts])."""
    rc, doc, err = cli_json("check", path)
    if not isinstance(doc, dict):
        return rc, [f"check output not JSON: {doc!r} {err[-300:]}"]
    return rc, doc.get("problems", [])


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
