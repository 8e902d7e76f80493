"""Helpers every benchmark script shares: environment facts and writing the results JSON."""
import json
import os
import shutil
import time
from typing import Any, Callable, Dict, List, Optional


def loadavg() -> Optional[float]:
    """1-minute load average: the machine is shared, so every result records it."""
    try:
        return round(os.getloadavg()[0], 2)
    except (AttributeError, OSError):
        return None


def _machine_busy_s() -> Optional[float]:
    """CPU-seconds the whole machine has been busy since boot (Linux /proc/stat)."""
    try:
        with open("/proc/stat") as f:
            user, nice, system, _idle, _iowait, irq, softirq, steal = \
                (int(x) for x in f.readline().split()[1:9])
        return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError):
        return None


def _own_cpu_s() -> Optional[float]:
    """CPU-seconds this process and every process it started have used: itself and the
    children it reaped (os.times), plus each live descendant with the children it reaped
    (/proc/PID/stat: worker pools, forkservers, subprocesses still running)."""
    t = os.times()
    total = t.user + t.system + t.children_user + t.children_system
    try:
        tick = os.sysconf("SC_CLK_TCK")
        parent, cpu = {}, {}
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            try:
                with open(f"/proc/{name}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue   # (gone meanwhile)
            pid = int(name)
            parent[pid] = int(fields[1])
            cpu[pid] = sum(int(x) for x in fields[11:15]) / tick  # utime stime cutime cstime
    except (OSError, ValueError, IndexError):
        return None
    me = os.getpid()
    for pid in cpu:
        p, seen = parent.get(pid), 0
        while p and p != me and seen < 64:   # (a descendant at any depth)
            p, seen = parent.get(p), seen + 1
        if p == me and pid != me:
            total += cpu[pid]
    return total


class ForeignLoad:
    """The average number of cores other processes kept busy while a benchmark ran: the
    machine's busy CPU time (/proc/stat) less what this process and its descendants used,
    over the wall time. The 1-minute load average after a run counts the benchmark's own
    worker processes and threads (a compaction on every core reads as a loaded machine);
    this does not. None where /proc is not there (then the load after the run decides)."""

    def __init__(self) -> None:
        self._t0 = time.monotonic()
        self._busy0 = _machine_busy_s()
        self._own0 = _own_cpu_s()

    def value(self) -> Optional[float]:
        wall = time.monotonic() - self._t0
        busy, own = _machine_busy_s(), _own_cpu_s()
        if None in (busy, own, self._busy0, self._own0) or wall <= 0:
            return None
        return round(max(0.0, (busy - self._busy0) - (own - self._own0)) / wall, 2)


#: Started when a benchmark script imports this module, i.e. at its start; `finish` records
#: it (environment.foreign_load).
_FOREIGN = ForeignLoad()


def load_limit(cpus: Optional[int] = None) -> float:
    """The 1-minute load above which a ratio measures the machine, not the code: 1.5 on two
    cores, 0.75 per core elsewhere (a quiet machine still runs the benchmark's own threads)."""
    cpus = cpus or os.cpu_count() or 1
    return 1.5 if cpus <= 2 else 0.75 * cpus


def _loads(result: Dict[str, Any]) -> List[float]:
    """The loads that decide: the 1-minute load before the run (all of it someone else's),
    and during it the cores other processes kept busy (`foreign_load`) where measured, else
    the 1-minute load after (which also counts the run's own workers)."""
    env = result.get("environment") or {}
    during = env.get("foreign_load")
    if not isinstance(during, (int, float)):
        during = env.get("loadavg_1min_after", result.get("loadavg_1min_after"))
    return [x for x in (env.get("loadavg_1min_before", result.get("loadavg_1min_before")),
                        during)
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
        what = "1-min load" if max(loads) != (result["environment"].get("foreign_load")) \
            else "other processes' load during the run"
        result["verdict"] = (f"NO VERDICT: {what} {max(loads)} > {limit:g} on {cpus} cores; "
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
    env = result.setdefault("environment", {})
    if "foreign_load" not in env:
        env["foreign_load"] = _FOREIGN.value()
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


# --- another library's threads (the ours_thread sides of bench_orphan and bench_expire) ------------
OTHER_PERIOD_S = 0.005   # the background work sleeps this long between two small operations
OTHER_ROWS = 512


def _os_threads() -> int:
    """Threads of this process, native ones included (pyarrow's pool is not in threading)."""
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        import threading
        return threading.active_count()


class OtherThreads:
    """Threads of another library alive and working in this process, as in a Spark driver,
    a notebook kernel or an Airflow worker: (a) one idle daemon thread (blocked on an event)
    and (b) a daemon thread that, every OTHER_PERIOD_S (5 ms), builds a 512-row table with
    pa.Table.from_pydict (holds the GIL briefly), aggregates it with
    Table.group_by().aggregate() (Acero: runs on pyarrow's CPU thread pool, whose threads it
    starts) and sums a pyarrow.compute expression over it: about 0.1-0.3 ms of work per
    5 ms, a few percent of one core, so it measures an operation in a process that has other
    threads (GIL hand-offs, a live thread pool, no safe fork), not one starved of CPU.
    start() returns once the first operation is done (pyarrow's pool is up); stop() ends
    both threads and returns what ran meanwhile."""

    def __init__(self, period_s: float = OTHER_PERIOD_S) -> None:
        import threading
        self.period_s = period_s
        self._stop = threading.Event()
        self._ready = threading.Event()
        self._ops = 0
        self._error: Optional[str] = None
        self._threads = [
            threading.Thread(target=self._stop.wait, daemon=True, name="bench-idle"),
            threading.Thread(target=self._work, daemon=True, name="bench-pyarrow")]
        self._ops_at_start = 0
        self.threads_at_start = 0

    def _work(self) -> None:
        try:
            import pyarrow as pa
            import pyarrow.compute as pc
            keys = [i % 16 for i in range(OTHER_ROWS)]
            vals = list(range(OTHER_ROWS))
            while not self._stop.is_set():
                t = pa.Table.from_pydict({"k": keys, "v": vals})
                t.group_by("k").aggregate([("v", "sum")])
                pc.sum(pc.multiply(t.column("v"), 3)).as_py()
                self._ops += 1
                self._ready.set()
                self._stop.wait(self.period_s)
        except Exception as e:  # noqa: BLE001 - reported by stop(), never silently
            self._error = repr(e)
        finally:
            self._ready.set()

    def start(self) -> "OtherThreads":
        for t in self._threads:
            t.start()
        self._ready.wait()
        if self._error:
            raise RuntimeError(f"the background pyarrow thread failed: {self._error}")
        self._ops_at_start = self._ops
        self.threads_at_start = _os_threads()
        return self

    def stop(self) -> Dict[str, Any]:
        ops = self._ops - self._ops_at_start
        self._stop.set()
        for t in self._threads:
            t.join()
        if self._error:
            raise RuntimeError(f"the background pyarrow thread failed: {self._error}")
        return {"threads_at_start": self.threads_at_start, "background_ops": ops}
