# zkbroker: a whole ZooKeeper-mode Kafka cluster in one container (Java and ZooKeeper inside,
# the embedded ZooKeeper `zkbroker run` starts), for integration tests in any language.
#
#   docker build -t zkbroker .
#   docker run --rm -p 127.0.0.1:9092-9094:9092-9094 zkbroker     # 3 brokers, Kafka 3.9
#
# BASE is the Debian image both stages start from: the official one by default; where no
# registry can be reached, scripts/docker/build-base.sh makes a stand-in from Debian packages
# (`--build-arg BASE=zkbroker-local/debian:bookworm-slim`). Variables, listeners and the
# healthcheck: README.md, "Docker and testcontainers". With Confluent's or Bitnami's variables
# instead (KAFKA_ZOOKEEPER_CONNECT, KAFKA_CFG_*, ZOOKEEPER_*, ZOO_*), one broker or one ZooKeeper
# in their images' place, testcontainers' Kafka modules included: README.md, "Replacing a
# ZooKeeper-mode Kafka image" (scripts/docker/build-image.sh tags zkbroker:<Kafka release>).
#
# Layers: the apt, venv and dependency layers change only with the dependency list; a source
# edit rebuilds the package stage and the image's last layer alone (zkbroker's package, a few
# MB; bench/README.md gives the measured rebuild times).
ARG BASE=debian:bookworm-slim

# ---- python: Debian's Python with two virtual environments, zkbroker's and the build tools'.
# EXTRA_CA_CERTS: PEM text of CAs pip must trust besides its own (a TLS-intercepting proxy's);
# used by the build stages only, never part of the final image.
FROM ${BASE} AS python
ARG EXTRA_CA_CERTS=
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1 PIP_ROOT_USER_ACTION=ignore \
    PIP_CERT=/opt/build-ca.pem
RUN apt-get update -qq \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3 python3-venv >/dev/null \
 && rm -rf /var/lib/apt/lists/* \
 && python3 -m venv /opt/zkbroker \
 && python3 -m venv /opt/build-tools \
 && { cat "$(/opt/build-tools/bin/python -c 'from pip._vendor import certifi; print(certifi.where())')"; \
      printf '%s\n' "$EXTRA_CA_CERTS"; } > /opt/build-ca.pem \
 && /opt/build-tools/bin/pip install -q "setuptools>=77"

# ---- requirements: the dependency list alone, so editing the rest of pyproject.toml (markers,
# linters, extras) does not invalidate the dependency layer below.
FROM python AS requirements
COPY pyproject.toml /src/
RUN python3 -c 'import tomllib; d = tomllib.load(open("/src/pyproject.toml", "rb")); print("\n".join(d["project"]["dependencies"]))' > /requirements.txt

# ---- deps: zkbroker's venv with its dependencies alone: a cached layer until the dependency
# list changes.
FROM python AS deps
COPY --from=requirements /requirements.txt /tmp/requirements.txt
# --use-pep517: sdists (pure-sasl) become wheels, not egg-info installs.
RUN /opt/zkbroker/bin/pip install -q --use-pep517 -r /tmp/requirements.txt

# ---- venv: the same venv without pip and setuptools, as the runtime stage copies it.
FROM deps AS venv
RUN /opt/zkbroker/bin/pip uninstall -q -y pip setuptools

# ---- package: zkbroker's wheel, installed under /stage (the package, its dist-info and the
# `zkbroker` script, as they go under /opt/zkbroker). The only stage a source edit rebuilds:
# the build context (.dockerignore) in one COPY; setuptools' PEP 517 hook called directly with
# the build tools' setuptools (no isolation, no download: `pip wheel` adds 3 s of subprocesses
# for the same wheel); pip installs it and compiles its bytecode.
FROM deps AS package
COPY . /src/
RUN cd /src \
 && /opt/build-tools/bin/python -c 'from setuptools import build_meta; build_meta.build_wheel("/tmp/dist")' >/dev/null \
 && /opt/zkbroker/bin/pip install -q --no-deps --root /stage /tmp/dist/zkbroker-*.whl

# ---- runtime: Python, a headless JRE and Debian's ZooKeeper jars, the venv; no sources.
FROM ${BASE}
# Documentation, man pages and translations stay out of every package installed here.
RUN printf '%s\n' 'path-exclude=/usr/share/doc/*' 'path-include=/usr/share/doc/*/copyright' \
      'path-exclude=/usr/share/man/*' 'path-exclude=/usr/share/info/*' \
      'path-exclude=/usr/share/locale/*' 'path-exclude=/usr/share/lintian/*' \
      > /etc/dpkg/dpkg.cfg.d/zkbroker-slim \
 && mkdir -p /usr/share/man/man1 \
 && apt-get update -qq \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      python3 openjdk-17-jre-headless libzookeeper-java >/dev/null \
 && apt-get clean \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/* /var/cache/debconf/*-old /var/log/* \
 && useradd --system --create-home --home-dir /var/lib/zkbroker --shell /usr/sbin/nologin \
      --uid 10001 zkbroker
COPY --from=venv /opt/zkbroker /opt/zkbroker
COPY scripts/docker/entrypoint.sh /usr/local/bin/zkbroker-docker-entrypoint
COPY scripts/docker/zkbroker-zk /usr/local/bin/zkbroker-zk
COPY scripts/docker/healthcheck.py /opt/zkbroker/healthcheck.py
# In Confluent's or Bitnami's place (README.md, "Replacing a ZooKeeper-mode Kafka image"): their
# start scripts (/etc/confluent/docker/run, configure, ensure, launch; Bitnami's run.sh and
# entrypoint.sh paths link to the same start) and the command names testcontainers' Kafka
# modules call (zookeeper-server-start, kafka-server-start, kafka-configs, with and without .sh).
# Writable by the image's user: /etc/confluent/docker (testcontainers overwrite `ensure`),
# /etc/kafka (configure writes there) and the data directories of both images. `hostname -i`
# (testcontainers' start scripts) is Debian's essential hostname package, checked here.
COPY scripts/docker/confluent/ /etc/confluent/docker/
COPY scripts/docker/bin/ /usr/local/bin/
RUN hostname --version >/dev/null 2>&1 \
 && for name in zookeeper-server-start kafka-server-start kafka-configs; do \
      ln -s "$name" "/usr/local/bin/$name.sh"; done \
 && mkdir -p /etc/kafka /var/lib/kafka/data /var/lib/zookeeper/data /var/lib/zookeeper/log \
      /bitnami/kafka/data /bitnami/zookeeper/data \
 && for role in kafka zookeeper; do \
      mkdir -p "/opt/bitnami/scripts/$role" \
      && ln -s /etc/confluent/docker/run "/opt/bitnami/scripts/$role/run.sh" \
      && ln -s /usr/local/bin/zkbroker-docker-entrypoint "/opt/bitnami/scripts/$role/entrypoint.sh"; \
    done \
 && chown -R zkbroker:zkbroker /etc/confluent /etc/kafka /var/lib/kafka /var/lib/zookeeper /bitnami
ENV PATH=/opt/zkbroker/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    ZKBROKER_BROKERS=3 \
    ZKBROKER_KAFKA_VERSION=3.9 \
    ZKBROKER_LISTEN_HOST=0.0.0.0 \
    ZKBROKER_PORT=9092 \
    ZKBROKER_ADVERTISED_HOST=127.0.0.1 \
    ZKBROKER_EXTERNAL_PROTOCOL=PLAINTEXT \
    ZKBROKER_INTERNAL_PORT=29092 \
    ZKBROKER_ARGS=
USER zkbroker
WORKDIR /var/lib/zkbroker
EXPOSE 2181 9092 9093 9094 29092 29093 29094
# Short interval: testcontainers (Node) and compose's service_healthy wait on it. The start
# period covers a Confluent-role broker waiting up to 40 s for its ZooKeeper (ensure).
HEALTHCHECK --interval=2s --timeout=3s --start-period=60s --retries=3 \
  CMD ["/opt/zkbroker/bin/python", "/opt/zkbroker/healthcheck.py"]
ENTRYPOINT ["/usr/local/bin/zkbroker-docker-entrypoint"]
# Last, so a source edit changes this layer alone (root-owned, as COPY leaves files).
COPY --from=package /stage/ /
