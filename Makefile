# zkbroker: `make run` starts a 3-broker cluster on an embedded ZooKeeper,
# `make test` runs the whole suite, `make bench` prints the benchmark figures.
# Every target installs what it needs first, and does nothing it has already done.

SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
# `make run` installs only what running needs (zkbroker itself); `make test` adds the test
# clients, linters, PySpark and the other extras.
RUN_STAMP := $(VENV)/.installed-run
STAMP := $(VENV)/.installed-test
BENCH_STAMP := $(VENV)/.installed-bench
# kafkajs for tests/integration/test_kafkajs.py (Node.js clients are tested too).
JS_STAMP := tests/js/node_modules/.package-lock.json
SUDO := $(shell [ "$$(id -u)" -eq 0 ] || echo sudo)
APT_UPDATED := $(VENV)/.apt-updated
PYTEST_ARGS ?=
# `make run KAFKA_VERSION=2.8` emulates another release than the default (3.9).
KAFKA_VERSION ?=

.PHONY: run test lint unit bench bench-image fuzz chaos report run-deps system-deps clean docker-test

run: run-deps $(RUN_STAMP)
	$(VENV)/bin/zkbroker run --brokers 3 --host 127.0.0.1 --port 9092 \
	  $(if $(KAFKA_VERSION),--kafka-version $(KAFKA_VERSION))

# pytest keeps core files; when it dies by a signal, gdb prints every thread's backtrace from
# them before `make test` fails with pytest's status (scripts/ci/pytest-with-cores.sh).
test: system-deps $(STAMP) $(JS_STAMP) lint
	scripts/ci/pytest-with-cores.sh $(VENV)/bin/pytest $(PYTEST_ARGS)

# The long robustness run (tests/robustness): 1,000,000 mutated frames and hundreds of
# hypothesis examples per API version; prints its seed first and its figures last.
# ZKBROKER_FUZZ_SEED=<seed> replays a run, ZKBROKER_FUZZ_FRAMES=<n> changes the budget.
fuzz: system-deps $(STAMP)
	ZKBROKER_FUZZ=long $(VENV)/bin/pytest tests/robustness -m robustness -s $(PYTEST_ARGS)

# The long chaos run (tests/integration/test_chaos.py): 20 rounds of crashed leaders and cut-off
# hosts against three zkbroker processes on three hosts the test builds (needs root and
# iproute2); prints its seed and what each round did. ZKBROKER_CHAOS_ROUNDS=<n> changes the
# rounds, ZKBROKER_CHAOS_SEED=<seed> replays a run's choices. `make test` runs 3 rounds.
ZKBROKER_CHAOS_ROUNDS ?= 20
chaos: system-deps $(STAMP)
	ZKBROKER_CHAOS_ROUNDS=$(ZKBROKER_CHAOS_ROUNDS) $(VENV)/bin/pytest \
	  tests/integration/test_chaos.py -s $(PYTEST_ARGS)

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
	$(PY) bench/partial_requests.py
	$(PY) bench/analytics.py
	$(PY) bench/data_plane.py
	$(PY) bench/replication.py
	$(PY) bench/request_path.py
	$(PY) bench/cold_start.py

# The image, docker-compose.yml and ZkBrokerContainer on a real Docker engine: installs Debian's
# docker.io, mmdebstrap and docker-compose if missing, starts a private dockerd when no engine
# answers (and stops it, also on failure), builds the image (on a base made from Debian packages
# when no registry answers), then runs tests/docker. See scripts/docker/docker-test.sh.
DOCKER_PACKAGES := docker.io mmdebstrap docker-compose
docker-test: system-deps $(STAMP)
	$(call apt_install,$(DOCKER_PACKAGES))
	scripts/docker/docker-test.sh $(PYTEST_ARGS)

# The image in Confluent's place (issue 44's targets): testcontainers' KafkaContainer ready and a
# three-broker compose file in Confluent's convention healthy, beside the image's own cluster.
bench-image: system-deps $(STAMP) $(BENCH_STAMP)
	$(call apt_install,$(DOCKER_PACKAGES))
	scripts/docker/with-engine.sh $(PY) bench/image_dropin.py

# Capture analytics on Spark: example captures of two releases -> `zkbroker report` -> a page.
REPORT_EXAMPLE := $(VENV)/report-example
report: system-deps $(STAMP)
	rm -rf $(REPORT_EXAMPLE)
	$(PY) examples/report_captures.py $(REPORT_EXAMPLE)/captures
	$(VENV)/bin/zkbroker report $(REPORT_EXAMPLE)/captures/kafka-3.9 \
	  --baseline $(REPORT_EXAMPLE)/captures/kafka-2.8 --out $(REPORT_EXAMPLE)/out
	@echo "open $(REPORT_EXAMPLE)/out/report.html (summary: $(REPORT_EXAMPLE)/out/summary.json)"

# Debian/Ubuntu packages. Running needs Python's venv module and ZooKeeper (which brings Java);
# the tests also need kcat, Node.js and MIT Kerberos (the GSSAPI tests' KDC, kinit and kcat's
# Cyrus SASL GSSAPI plugin; libkrb5-dev builds the gssapi package of the security extra), and
# gdb (backtraces from the core file of a pytest that crashed), iproute2 (the hosts a test
# builds from network namespaces).
RUN_PACKAGES := python3-venv zookeeper default-jre-headless
TEST_PACKAGES := kcat nodejs npm libkrb5-dev krb5-kdc krb5-admin-server krb5-user \
  libsasl2-modules-gssapi-mit gdb iproute2
define apt_install
	@missing=""; \
	for pkg in $(1); do \
	  case $$pkg in \
	    python3-venv) python3 -c 'import ensurepip, venv' 2>/dev/null && continue ;; \
	    zookeeper) { [ -n "$$ZOOKEEPER_HOME" ] || [ -f /usr/share/java/zookeeper.jar ]; } && continue ;; \
	    default-jre-headless) command -v java >/dev/null && continue ;; \
	    nodejs) command -v node >/dev/null && continue ;; \
	    libkrb5-dev) command -v krb5-config >/dev/null && continue ;; \
	    krb5-kdc) [ -x /usr/sbin/krb5kdc ] && continue ;; \
	    krb5-admin-server) [ -x /usr/sbin/kadmin.local ] && continue ;; \
	    krb5-user) command -v kinit >/dev/null && continue ;; \
	    libsasl2-modules-gssapi-mit) ls /usr/lib/*/sasl2/libgssapiv2.so* >/dev/null 2>&1 && continue ;; \
	    docker.io) command -v dockerd >/dev/null && continue ;; \
	    *) command -v $$pkg >/dev/null && continue ;; \
	  esac; \
	  missing="$$missing $$pkg"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:$$missing"; \
	  $(SUDO) apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -q --no-install-recommends $$missing; \
	fi
endef

run-deps:
	$(call apt_install,$(RUN_PACKAGES))

system-deps:
	$(call apt_install,$(RUN_PACKAGES) $(TEST_PACKAGES))

$(PY):
	python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))' || \
	  { echo "zkbroker needs Python 3.11 or newer (found $$(python3 --version))"; exit 1; }
	python3 -m venv $(VENV)

$(RUN_STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install -q --upgrade pip
	@echo "installing zkbroker into $(VENV)"
	$(PY) -m pip install --progress-bar on -e .
	touch $@

# Everything the suite uses: the test clients, linters, PySpark (a large download: pip shows
# its progress), trustme, gssapi and testcontainers. The Debian packages come first: gssapi
# builds against libkrb5-dev.
$(STAMP): pyproject.toml | $(PY) system-deps
	$(PY) -m pip install -q --upgrade pip
	@echo "installing zkbroker with its test, report, security and docker extras into $(VENV)"
	$(PY) -m pip install --progress-bar on -e '.[dev,report,security,docker]'
	touch $@ $(RUN_STAMP)

# What only the benchmarks use (DuckDB, the analytics benchmark's reference), kept out of
# `make test`.
$(BENCH_STAMP): pyproject.toml $(STAMP)
	$(PY) -m pip install -q -e '.[dev,report,security,docker,bench]'
	touch $@

$(JS_STAMP): tests/js/package.json tests/js/package-lock.json
	npm ci --prefix tests/js --no-audit --no-fund --loglevel=error

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache *.egg-info tests/js/node_modules
