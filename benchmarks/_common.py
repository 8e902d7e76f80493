"""Helpers every benchmark script shares: environment facts and writing the results JSON."""
import json
import os
import shutil
from typing import Any, Callable, Dict, List, Optional


def loadavg() -> Optional[float]:
    """1-minute load average: the machine is shared, so every result records it."""
    try:
        return round(os.getloadavg()[0], 2)
    except (AttributeError, OSError):
        return None


def ours_version() -> Optional[str]:
    try:
        import paimon_commit
        return getattr(paimon_commit, "__version__", None)
    except Exception:  # noqa: BLE001
        return None


def safe_version(dist: str) -> Optional[str]:
    try:
        from importlib.metadata import version
        return version(dist)
    except Exception:  # noqa: BLE001
        return None


def write_results(result: Dict[str, Any], out: str) -> str:
    """Write the JSON atomically (a half-written file would break benchmarks/report.py)."""
    out = os.path.abspath(out)
    os.makedirs(os.path.dirname(out), exist_ok=True)
    tmp = out + ".tmp"
    with open(tmp, "w") as f:
        json.dump(result, f, indent=2)
        f.write("\n")
    os.replace(tmp, out)
    return out


def _rmtree(path: str) -> None:
    shutil.rmtree(path, ignore_errors=True)


def finish(result: Dict[str, Any], out: str, run_dir: str, errors: List[str], keep: bool,
           remove: Callable[[str], None] = _rmtree) -> int:
    """Write the results, report the verdict, and keep or remove the run's tables; the exit
    code is 1 when a correctness check failed (tables kept for inspection), else 0."""
    out = write_results(result, out)
    print(f"verdict: {result['verdict']}; results written to {out}")
    if errors:
        print(f"tables kept for inspection under {run_dir}")
        return 1
    if keep:
        print(f"tables kept under {run_dir}")
    else:
        remove(run_dir)
    return 0
