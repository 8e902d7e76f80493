"""Print the benchmark table from benchmarks/results/*.json; with --update-readme, replace the
table between the bench-table markers in README.md."""
import argparse
import glob
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


sys.path.insert(0, HERE)
from _common import honest  # noqa: E402


def _fmt(v, target=None):
    """Three significant digits; more where three would show a value that missed its target
    as the target itself (11.015 against 11 printed "11 ... FAIL")."""
    if isinstance(v, float):
        out = f"{v:.3g}"
        digits = 3
        while target is not None and v != target and float(out) == target and digits < 8:
            digits += 1
            out = f"{v:.{digits}g}"
        return out
    return str(v)


def _measured_on(t, d) -> str:
    """The machine column of one target: its own run's where the results file kept it from
    an earlier run (`measured`, bench_scale --ops), else the file's."""
    m = t.get("measured")
    if not m:
        return _machine(d)
    return f"{_machine({'environment': m})}, run of {m.get('timestamp_utc') or '?'}"


def _machine(d) -> str:
    """Where and under what load a result was measured (a ratio from a loaded machine is not
    a result: benchmarks/_common.honest withholds its verdict)."""
    env = d.get("environment") or {}
    cpus = env.get("cpu_count") or d.get("cpu_count")
    before = env.get("loadavg_1min_before", d.get("loadavg_1min_before"))
    after = env.get("loadavg_1min_after", d.get("loadavg_1min_after"))
    load = "/".join(_fmt(x) for x in (before, after) if x is not None) or "?"
    foreign = env.get("foreign_load")
    # (the load after counts the run's own workers; what decides is the others' share)
    others = "" if foreign is None else f", others {_fmt(foreign)} during"
    return f"{cpus or '?'} cores, load {load}{others}"


def _verdict(t) -> str:
    if t.get("pass") is None:
        idle = t.get("pass_if_idle")
        return "no verdict (loaded)" + ("" if idle is None else
                                        f"; {'PASS' if idle else 'FAIL'} if it were idle")
    return "PASS" if t.get("pass") else "FAIL"


#: The 16-core column (issue 26 item 6): results of benchmarks/device_16core.sh on a lent
#: 16-core machine, under the same file names; empty where none was run.
SIXTEEN = os.path.join(HERE, "results", "16core")


def _load(path: str):
    try:
        with open(path) as f:
            return honest(json.load(f))   # results measured under load show no verdict
    except (OSError, ValueError):
        return None


def table() -> str:
    lines = ["| benchmark | measured | target | 2 cores: result | verdict | machine (1-min load "
             "before/after) | 16 cores: result | verdict | machine |",
             "|---|---|---|---|---|---|---|---|---|"]
    for path in sorted(glob.glob(os.path.join(HERE, "results", "*.json"))):
        d = _load(path)
        if d is None:
            continue
        wide = _load(os.path.join(SIXTEEN, os.path.basename(path))) or {}
        wide_targets = wide.get("targets") or {}
        name = d.get("benchmark", os.path.basename(path)[:-5])
        targets = d.get("targets") or {}
        if not targets:
            lines.append(f"| `{name}` | {d.get('description', '')} | | | "
                         f"{d.get('verdict', '?')} | {_machine(d)} | | | |")
        for key, t in targets.items():
            w = wide_targets.get(key)
            col16 = (f"{_fmt(w.get('value'))} | {_verdict(w)} | {_machine(wide)}" if w else
                     "| |")
            lines.append(f"| `{name}` {key} | {t.get('metric', '')} | ≤ {_fmt(t.get('target'))} | "
                         f"{_fmt(t.get('value'), t.get('target'))} | {_verdict(t)} | "
                         f"{_measured_on(t, d)} | {col16} |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--update-readme", action="store_true")
    args = ap.parse_args()
    t = table()
    print(t)
    if args.update_readme:
        readme = os.path.join(HERE, "..", "README.md")
        with open(readme) as f:
            text = f.read()
        text = re.sub(r"<!-- bench-table -->.*<!-- /bench-table -->",
                      f"<!-- bench-table -->\n{t}\n<!-- /bench-table -->", text, flags=re.S)
        with open(readme, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
