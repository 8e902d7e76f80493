"""Reading never crashes the process. pyarrow 19 aborted some processes at exit (SIGABRT)
after a threaded parquet read from a Python file object; reads now go through pyarrow's own
file systems."""
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest

from conftest import make_rows, write

# The abort was intermittent: the soak (PAIMON_COMMIT_FULL_FAULTS=1) samples 30 processes.
PROCESSES = 30 if os.environ.get("PAIMON_COMMIT_FULL_FAULTS") == "1" else 12
READ = "import sys; from paimon_commit import Table; print(Table.open(sys.argv[1]).read_arrow().num_rows)"


@pytest.mark.slow
def test_fresh_processes_read_and_exit_cleanly(table, table_path):
    for i in range(4):
        write(table, make_rows(range(i * 1000, i * 1000 + 1000), hr=i))

    def run(_):
        return subprocess.run([sys.executable, "-c", READ, str(table_path)],
                              capture_output=True, text=True, timeout=120)
    with ThreadPoolExecutor(3) as pool:
        results = list(pool.map(run, range(PROCESSES)))
    assert [r.returncode for r in results] == [0] * PROCESSES, \
        [r.stderr[-500:] for r in results if r.returncode]
    assert {r.stdout.strip() for r in results} == {"4000"}
