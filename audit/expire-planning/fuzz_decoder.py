"""Differential fuzz: the compiled manifest / manifest-list readers (file_refs.py, with the
header cache and zstd context of avro_container.py) against plain fastavro, on manifests
written by fastavro as another engine would: Paimon's schemas with fields shuffled, unions
null-first or null-second, optional fields dropped, extra fields of every Avro type added,
long strings, negative numbers, every codec, many blocks (small sync interval), and the
same header reused with a different sync marker.

Run: PYTHONPATH=$PWD .venv/bin/python audit/fuzz_decoder.py [iterations]
Prints the first mismatch (and exits 1) or a summary with how often the compiled path ran.
"""
import copy
import io
import random
import sys

import fastavro

from paimon_commit.format import file_refs, manifest as M
from paimon_commit.format.avro_container import raw_blocks

rnd = random.Random(int(sys.argv[2]) if len(sys.argv) > 2 else 7)
N = int(sys.argv[1]) if len(sys.argv) > 1 else 300
CODECS = ["null", "deflate", "zstandard", "snappy"]

_names = [0]


def extra_type(depth=0):
    _names[0] += 1
    n = _names[0]
    choices = ["int", "long", "float", "double", "boolean", "string", "bytes", "null"]
    if depth < 2:
        choices += ["map", "array", "enum", "fixed", "record", "union"]
    t = rnd.choice(choices)
    if t == "map":
        return {"type": "map", "values": extra_type(depth + 1)}
    if t == "array":
        return {"type": "array", "items": extra_type(depth + 1)}
    if t == "enum":
        return {"type": "enum", "name": f"E{n}", "symbols": ["A", "B", "C"]}
    if t == "fixed":
        return {"type": "fixed", "name": f"F{n}", "size": rnd.randint(0, 9)}
    if t == "record":
        return {"type": "record", "name": f"R{n}",
                "fields": [{"name": f"x{i}", "type": extra_type(depth + 1)}
                           for i in range(rnd.randint(0, 3))]}
    if t == "union":
        return ["null", rnd.choice(["long", "string", "bytes", "double"])]
    return t


def value(t):
    if isinstance(t, list):
        b = rnd.choice(t)
        return value(b)
    if isinstance(t, dict):
        k = t["type"]
        if "logicalType" in t:
            return rnd.randint(0, 2**41)
        if isinstance(k, (dict, list)):
            return value(k)
        if k == "map":
            return {rs(): value(t["values"]) for _ in range(rnd.randint(0, 3))}
        if k == "array":
            return [value(t["items"]) for _ in range(rnd.randint(0, 3))]
        if k == "enum":
            return rnd.choice(t["symbols"])
        if k == "fixed":
            return bytes(rnd.getrandbits(8) for _ in range(t["size"]))
        if k == "record":
            return {f["name"]: value(f["type"]) for f in t["fields"]}
        return value(k)
    return {"int": lambda: rnd.randint(-2**31, 2**31 - 1),
            "long": lambda: rnd.choice([0, -1, 63, 64, -65, 2**40, -2**63, 2**63 - 1,
                                        rnd.randint(-2**62, 2**62)]),
            "float": lambda: rnd.random(), "double": lambda: rnd.random(),
            "boolean": lambda: rnd.random() < .5, "string": rs, "bytes": rb,
            "null": lambda: None}[t]()


def rs():
    n = rnd.choice([0, 1, 5, 62, 63, 64, 65, 127, 128, 300, 9000])
    return "".join(rnd.choice("abcé€😀/x-_.") for _ in range(n))


def rb():
    return bytes(rnd.getrandbits(8) for _ in range(rnd.choice([0, 1, 63, 64, 200])))


def mutate(schema, required):
    s = copy.deepcopy(schema)

    def fix(rec, req):
        fields = []
        for f in rec["fields"]:
            t = f["type"]
            if isinstance(t, list) and rnd.random() < .5:
                f["type"] = list(reversed(t))       # null second
                f.pop("default", None)
            if isinstance(t, list) and f["name"] not in req and rnd.random() < .25:
                continue                                # dropped optional field
            if isinstance(t, dict) and t.get("type") == "record":
                fix(t, req)
            fields.append(f)
        for i in range(rnd.randint(0, 3)):
            fields.append({"name": f"_EXTRA_{_names[0]}_{i}", "type": extra_type()})
        rnd.shuffle(fields)
        rec["fields"] = fields
    fix(s, required)
    return s


REQ = {"_VERSION", "_KIND", "_PARTITION", "_BUCKET", "_FILE", "_FILE_NAME", "_FILE_SIZE",
       "_LEVEL", "_EXTRA_FILES", "_NUM_ADDED_FILES", "_NUM_DELETED_FILES"}


def record(schema):
    r = value(schema)
    r["_VERSION"] = 2
    if "_KIND" in r:
        r["_KIND"] = rnd.choice([0, 1])
    return r


def write(schema, recs, codec, interval):
    buf = io.BytesIO()
    fastavro.writer(buf, fastavro.parse_schema(schema), recs, codec=codec,
                    sync_interval=interval)
    return buf.getvalue()


def expected_entries(data):
    return M._file_refs(fastavro.reader(io.BytesIO(data)), "x")


def expected_list(data):
    return [M.ManifestRef(r["_FILE_NAME"], r["_FILE_SIZE"], r["_NUM_ADDED_FILES"],
                          r["_NUM_DELETED_FILES"]) for r in fastavro.reader(io.BytesIO(data))]


def norm_entry(e):
    return e._replace(extra_files=tuple(e.extra_files or ()))


stats = {"compiled": 0, "fallback": 0, "cases": 0}
for it in range(N):
    kind = rnd.choice(["entry", "list"])
    base = M.MANIFEST_ENTRY_SCHEMA if kind == "entry" else M.MANIFEST_FILE_META_SCHEMA
    schema = mutate(base, REQ)
    recs = [record(schema) for _ in range(rnd.choice([1, 2, 7, 40]))]
    codec = rnd.choice(CODECS)
    data = write(schema, recs, codec, rnd.choice([1, 50, 16000]))
    for variant in range(2):
        if variant == 1:   # same header, another sync marker
            data = write(schema, recs, codec, rnd.choice([1, 16000]))
        stats["cases"] += 1
        raw = raw_blocks(data)
        comp = raw is not None and (file_refs.compile_reader if kind == "entry"
                                    else file_refs.compile_list_reader)(raw[0]) is not None
        stats["compiled" if comp else "fallback"] += 1
        if kind == "entry":
            got = [norm_entry(e) for e in M.decode_manifest_files(data, "x")]
            exp = [norm_entry(e) for e in expected_entries(data)]
        else:
            got = M.decode_manifest_list_refs(data, "x")
            exp = expected_list(data)
        if got != exp:
            print("MISMATCH", kind, codec, "iteration", it)
            for a, b in zip(got, exp):
                if a != b:
                    print(" got", a, "\n exp", b)
                    break
            print(len(got), len(exp))
            sys.exit(1)
print("no mismatch", stats)
