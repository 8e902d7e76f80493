"""Print the benchmark table from benchmarks/results/*.json; with --update-readme, replace the
table between the bench-table markers in README.md."""
import argparse
import glob
import json
import os
import re

HERE = os.path.dirname(os.path.abspath(__file__))


def _fmt(v):
    if isinstance(v, float):
        return f"{v:.3g}"
    return str(v)


def table() -> str:
    lines = ["| benchmark | measured | target | result | verdict |",
             "|---|---|---|---|---|"]
    for path in sorted(glob.glob(os.path.join(HERE, "results", "*.json"))):
        with open(path) as f:
            d = json.load(f)
        name = d.get("benchmark", os.path.basename(path)[:-5])
        targets = d.get("targets") or {}
        if not targets:
            lines.append(f"| `{name}` | {d.get('description', '')} | | | "
                         f"{d.get('verdict', '?')} |")
        for key, t in targets.items():
            verdict = "PASS" if t.get("pass") else "FAIL"
            lines.append(f"| `{name}` {key} | {t.get('metric', '')} | ≤ {_fmt(t.get('target'))} | "
                         f"{_fmt(t.get('value'))} | {verdict} |")
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
