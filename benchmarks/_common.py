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


def load_limit(cpus: Optional[int] = None) -> float:
    """The 1-minute load above which a ratio measures the machine, not the code: 1.5 on two
    cores, 0.75 per core elsewhere (a quiet machine still runs the benchmark's own threads)."""
    cpus = cpus or os.cpu_count() or 1
    return 1.5 if cpus <= 2 else 0.75 * cpus


def _loads(result: Dict[str, Any]) -> List[float]:
    env = result.get("environment") or {}
    return [x for x in (env.get("loadavg_1min_before", result.get("loadavg_1min_before")),
                        env.get("loadavg_1min_after", result.get("loadavg_1min_after")))
            if isinstance(x, (int, float))]


def honest(result: Dict[str, Any]) -> Dict[str, Any]:
    """Withhold the verdict of a run measured on a loaded machine: every target keeps its
    measured value, but neither PASS nor FAIL is claimed (`pass` None) and the verdict says
    why; the load and the machine's cores are recorded for the README table either way."""
    cpus = (result.get("environment") or {}).get("cpu_count") or os.cpu_count()
    limit = load_limit(cpus)
    loads = _loads(result)
    result.setdefault("environment", {}).setdefault("cpu_count", cpus)
    if loads and max(loads) > limit:
        result["verdict"] = (f"NO VERDICT: 1-min load {max(loads)} > {limit:g} on {cpus} cores; "
                             f"rerun on an idle machine")
        for t in (result.get("targets") or {}).values():
            if isinstance(t, dict):
                if t.get("pass") is not None:   # (a second look keeps the first's)
                    t["pass_if_idle"] = t["pass"]
                t["pass"] = None
    return result


#: Set on a machine where pypaimon cannot be installed (the 16-core device machine: no network,
#: and pypaimon's polars does not fit the 64 MiB it may carry): pypaimon's read of our tables is
#: skipped and the results say so (`reader_check`); every other check still runs, and the
#: 2-core runs, which are the verdict, read with pypaimon as always.
NO_PYPAIMON = os.environ.get("PAIMON_BENCH_NO_PYPAIMON") == "1"


def reader_check() -> str:
    """What the results record about pypaimon's read of our tables."""
    return ("skipped: PAIMON_BENCH_NO_PYPAIMON=1 (pypaimon not installable here)" if NO_PYPAIMON
            else "pypaimon reads our tables")


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
    code is 1 when a correctness check failed (tables kept for inspection), else 0. A run on
    a loaded machine gets no verdict (`honest`)."""
    out = write_results(honest(result), out)
    print(f"verdict: {result['verdict']}; results written to {out}")
    if errors:
        print(f"tables kept for inspection under {run_dir}")
        return 1
    if keep:
        print(f"tables kept under {run_dir}")
    else:
        remove(run_dir)
    return 0
