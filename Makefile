# Two entry points that work on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test soak java bench clean

java:
	@command -v java >/dev/null 2>&1 || (apt-get update -qq && apt-get install -y -qq openjdk-17-jre-headless)

$(STAMP): setup.cfg setup.py
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test,spark,bench]'
	touch $(STAMP)

test: java $(STAMP)
	$(PY) -m pytest -q -p no:cacheprovider tests

demo: java $(STAMP)
	$(PY) -m paimon_commit.demo

# The full fault matrix, kill trials and concurrency soak (a reduced, seeded set runs in `test`).
soak: java $(STAMP)
	PAIMON_COMMIT_FULL_FAULTS=1 $(PY) -m pytest -q -p no:cacheprovider tests/faults

bench: java $(STAMP)
	$(PY) benchmarks/bench_commit.py
	$(PY) benchmarks/bench_expire.py
	$(PY) benchmarks/bench_orphan.py
	$(PY) benchmarks/bench_spark_write.py
	$(PY) benchmarks/report.py --update-readme

clean:
	rm -rf $(VENV) demo-warehouse build *.egg-info
