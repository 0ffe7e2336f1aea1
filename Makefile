# zkbroker: `make run` starts a 3-broker cluster on an embedded ZooKeeper,
# `make test` runs the whole suite, `make bench` prints the benchmark figures.
# Every target installs what it needs first, and does nothing it has already done.

SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
BENCH_STAMP := $(VENV)/.installed-bench
# kafkajs for tests/integration/test_kafkajs.py (Node.js clients are tested too).
JS_STAMP := tests/js/node_modules/.package-lock.json
SUDO := $(shell [ "$$(id -u)" -eq 0 ] || echo sudo)
APT_UPDATED := $(VENV)/.apt-updated
PYTEST_ARGS ?=
# `make run` emulates Kafka 3.9, the last ZooKeeper-mode release, so today's clients negotiate
# their newest admin versions; `make run KAFKA_VERSION=2.8` emulates another release.
KAFKA_VERSION ?= 3.9

.PHONY: run test lint unit bench fuzz report system-deps clean

run: system-deps $(STAMP)
	$(VENV)/bin/zkbroker run --brokers 3 --host 127.0.0.1 --port 9092 --kafka-version $(KAFKA_VERSION)

test: system-deps $(STAMP) $(JS_STAMP) lint
	$(VENV)/bin/pytest $(PYTEST_ARGS)

# The long robustness run (tests/robustness): 1,000,000 mutated frames and hundreds of
# hypothesis examples per API version; prints its seed first and its figures last.
# ZKBROKER_FUZZ_SEED=<seed> replays a run, ZKBROKER_FUZZ_FRAMES=<n> changes the budget.
fuzz: system-deps $(STAMP)
	ZKBROKER_FUZZ=long $(VENV)/bin/pytest tests/robustness -m robustness -s $(PYTEST_ARGS)

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports

unit: $(STAMP)
	$(VENV)/bin/pytest tests/unit $(PYTEST_ARGS)

bench: system-deps $(STAMP) $(BENCH_STAMP)
	$(PY) bench/codec.py
	$(PY) bench/create_topics.py
	$(PY) bench/configs.py
	$(PY) bench/controller.py
	$(PY) bench/capture.py
	$(PY) bench/heavy_requests.py
	$(PY) bench/analytics.py
	$(PY) bench/data_plane.py

# Capture analytics on Spark: example captures of two releases -> `zkbroker report` -> a page.
REPORT_EXAMPLE := $(VENV)/report-example
report: system-deps $(STAMP)
	rm -rf $(REPORT_EXAMPLE)
	$(PY) examples/report_captures.py $(REPORT_EXAMPLE)/captures
	$(VENV)/bin/zkbroker report $(REPORT_EXAMPLE)/captures/kafka-3.9 \
	  --baseline $(REPORT_EXAMPLE)/captures/kafka-2.8 --out $(REPORT_EXAMPLE)/out
	@echo "open $(REPORT_EXAMPLE)/out/report.html (summary: $(REPORT_EXAMPLE)/out/summary.json)"

# Debian/Ubuntu packages: Python's venv module, ZooKeeper (brings Java), kcat and Node.js for
# the tests.
system-deps:
	@missing=""; \
	python3 -c 'import ensurepip, venv' 2>/dev/null || missing="$$missing python3-venv"; \
	if [ -z "$$ZOOKEEPER_HOME" ] && [ ! -f /usr/share/java/zookeeper.jar ]; then missing="$$missing zookeeper"; fi; \
	command -v java >/dev/null || missing="$$missing default-jre-headless"; \
	command -v kcat >/dev/null || missing="$$missing kcat"; \
	command -v npm >/dev/null || missing="$$missing nodejs npm"; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  $(SUDO) apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends $$missing; \
	fi

$(PY):
	python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))' || \
	  { echo "zkbroker needs Python 3.11 or newer (found $$(python3 --version))"; exit 1; }
	python3 -m venv $(VENV)

$(STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev,report]'
	touch $@

# What only the benchmarks use (DuckDB, the analytics benchmark's reference), kept out of
# `make test`.
$(BENCH_STAMP): pyproject.toml $(STAMP)
	$(PY) -m pip install -q -e '.[dev,report,bench]'
	touch $@

$(JS_STAMP): tests/js/package.json tests/js/package-lock.json
	npm ci --prefix tests/js --no-audit --no-fund --loglevel=error

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache *.egg-info tests/js/node_modules
