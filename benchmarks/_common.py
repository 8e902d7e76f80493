"""Helpers every benchmark script shares: environment facts and writing the results JSON."""
import json
import os
from typing import Any, Dict, Optional


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
